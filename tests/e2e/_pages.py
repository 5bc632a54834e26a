"""The pages whose examples the tests run: the README, the docs site, and what the site includes.

The site's pages are docs/**/*.md; a page that includes a repository file whole
(```{include} ../CHANGELOG.md```) shows that file's blocks too, so it is read as well, once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tests.e2e._kit import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
_INCLUDE = re.compile(r"^```\{include\}\s+(\S+)", re.M)


def pages() -> list[Path]:
    """The README first, then the site's pages and the files they include, each once."""
    found = [README, *sorted(DOCS.rglob("*.md"))]
    for page in list(found):
        for included in _INCLUDE.findall(page.read_text(encoding="utf-8")):
            found.append((page.parent / included).resolve())
    return list(dict.fromkeys(found))


def name(page: Path) -> str:
    """The page as a message names it: its path in the repository."""
    return page.relative_to(ROOT).as_posix()


def matches_shown(shown: Sequence[str], printed: Sequence[str]) -> bool:
    """A page's shown output against what a command printed: line-by-line equality, where a
    `...` line stands for any run of lines (also none)."""
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line.strip() == "..." else re.escape(line.rstrip()) + r"\n"
        for line in shown
    )
    return re.fullmatch(pattern, "".join(line.rstrip() + "\n" for line in printed)) is not None
