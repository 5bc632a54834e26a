"""Every ```python block of the README and of the docs site runs as shown, as a user runs it from
the repository root.

The pages are `tests.e2e._pages.pages()`: the site's and the repository files they include.

Each block is one `python -c` process (examples/ on the path, as for examples/embedding.py). The
home and data folders point into a temporary folder, so a snippet that saves user settings or
chats never touches the real ones; the blocks that talk to a provider find the loopback server in
TOOLPOLICY_BASE_URL, as the examples do. No block may leave a file in the working directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e._kit import ROOT
from tests.e2e._pages import name, pages
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply


@dataclass(frozen=True)
class _Snippet:
    page: str
    line: int
    code: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _snippets(page: Path) -> list[_Snippet]:
    found: list[_Snippet] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    start: int | None = None
    for number, text in enumerate(lines, start=1):
        if text.strip() == "```python":
            start = number
        elif text.strip() == "```" and start is not None:
            found.append(_Snippet(name(page), start, "\n".join(lines[start : number - 1]) + "\n"))
            start = None
    return found


_PAGES = pages()
_SNIPPETS = [snippet for page in _PAGES for snippet in _snippets(page)]


def test_the_pages_have_python_snippets() -> None:
    """The README's sections move into the site's pages: the snippets move with them."""
    assert len(_SNIPPETS) >= 20


def test_the_site_pages_are_read_with_what_they_include() -> None:
    names = {name(page) for page in _PAGES}
    assert {"docs/administrators/plugin-lua.md", "CHANGELOG.md", "bench/README.md"} <= names


@pytest.mark.parametrize("snippet", _SNIPPETS, ids=[s.where for s in _SNIPPETS])
def test_a_readme_snippet_runs(snippet: _Snippet, server: ProviderServer, tmp_path: Path) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "calculator", '{"expression":"6 * 7"}')]),
        Reply(chat_text("6 * 7 is 42.")),
    )
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLPOLICY_") and "API_KEY" not in k
    }
    environment.update(
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        TMPDIR=str(tmp_path),
        PYTHONPATH=os.pathsep.join([str(ROOT / "examples"), str(ROOT)]),
        TOOLPOLICY_BASE_URL=server.base_url,
    )
    before = sorted(p.name for p in ROOT.iterdir())
    done = subprocess.run(
        [sys.executable, "-c", snippet.code],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, f"{snippet.where} failed:\n{done.stderr}"
    assert sorted(p.name for p in ROOT.iterdir()) == before, f"{snippet.where} wrote here"
    if "SequentialToolCallingLoop(" in snippet.code:
        assert "6 * 7 is 42." in done.stdout
        assert server.bodies, "the loop snippet asked no provider"
