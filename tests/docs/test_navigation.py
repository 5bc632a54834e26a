"""Each section of the site introduces its pages: every page in a section's table of contents is
also linked from the section's own text (a sentence or a table row saying what it is for), so a
page added to the toctree alone — a title in the sidebar and nothing more — fails here.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e._kit import ROOT

DOCS = ROOT / "docs"
SECTIONS = ["administrators", "developers", "security"]
_TOCTREE = re.compile(r"^```\{toctree\}\n(.*?)^```", re.M | re.S)


def _toctree_entries(text: str) -> list[str]:
    entries = []
    for block in _TOCTREE.findall(text):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith(":"):
                entries.append(line)
    return entries


@pytest.mark.parametrize("section", SECTIONS)
def test_every_page_of_a_section_is_introduced_on_its_index(section: str) -> None:
    text = (DOCS / section / "index.md").read_text(encoding="utf-8")
    entries = _toctree_entries(text)
    assert entries, f"docs/{section}/index.md has no toctree"
    prose = _TOCTREE.sub("", text)
    linked = set(re.findall(r"\]\(([^)#\s]+?)\.md(?:#[^)]*)?\)", prose))
    assert [entry for entry in entries if entry not in linked] == []


@pytest.mark.parametrize("section", SECTIONS)
def test_every_page_of_a_section_is_in_its_toctree(section: str) -> None:
    entries = _toctree_entries((DOCS / section / "index.md").read_text(encoding="utf-8"))
    pages = sorted(p.stem for p in (DOCS / section).glob("*.md") if p.stem != "index")
    assert sorted(entries) == pages
