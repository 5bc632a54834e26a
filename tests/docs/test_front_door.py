"""The README is the front door: short, its tour shows the Quickstart's plugin as it is, and it
leads into the site by reader and task.

The tour's Python block and its `policy explain` example run in tests/e2e (the README's snippets
and examples, as every page's); this file keeps what those do not: its length and that the plugin
it shows is the one the Quickstart and the tour's commands load.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
QUICKSTART_PLUGIN = ROOT / "examples" / "quickstart" / "plugin.lua"


def test_the_readme_is_under_250_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) < 250


def test_the_tours_plugin_is_the_quickstarts_as_it_is() -> None:
    blocks = re.findall(r"^```lua\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    assert len(blocks) == 1
    assert blocks[0] in QUICKSTART_PLUGIN.read_text(encoding="utf-8")


def test_the_readme_links_every_section_of_the_site() -> None:
    text = README.read_text(encoding="utf-8")
    for page in (
        "docs/quickstart.md",
        "docs/administrators/index.md",
        "docs/developers/index.md",
        "docs/security/index.md",
        "bench/README.md",
        "CHANGELOG.md",
        "docs/architecture.md",
    ):
        assert f"]({page})" in text, page
