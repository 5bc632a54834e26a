"""The documentation site: Sphinx with MyST (Markdown), built by `sphinx-build -W docs <out>`.

Sphinx + MyST rather than MkDocs: Sphinx is actively maintained (MkDocs has had no release since
2024), MyST's `{include}` brings CHANGELOG.md and bench/README.md into the site without a copy,
and `-W` turns every broken link, reference and anchor into an error. The build needs no network:
the theme (Furo) ships its assets and no extension fetches anything.
"""

from __future__ import annotations

import posixpath
from typing import Any

project = "toolpolicy"
author = "toolpolicy contributors"
copyright = "toolpolicy contributors"

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

myst_heading_anchors = 4
"""`[text](page.md#a-heading)` finds headings down to `####`, as GitHub's anchors do."""
nitpicky = True
"""A reference that names nothing is a warning, and `-W` makes it an error."""

html_theme = "furo"
html_title = "toolpolicy"
html_static_path: list[str] = []
html_copy_source = False
html_show_sourcelink = False

_PAGES_OF_FILES = {
    "CHANGELOG.md": "changelog",
    "bench/README.md": "benchmarks",
}
"""The repository's files outside docs/ that a page includes whole, by the page that holds them."""


def _links_to_included_files(app: Any, docname: str, source: list[str]) -> None:
    """A link written for the repository (`../CHANGELOG.md#a-heading`, right on GitHub) goes to
    the page that includes that file: the site has no copy of it."""
    here = posixpath.dirname(docname)
    for file, page in _PAGES_OF_FILES.items():
        written = posixpath.relpath(posixpath.join("..", file), here or ".")
        source[0] = source[0].replace(
            f"]({written})", f"]({posixpath.relpath(page, here or '.')}.md)"
        )
        source[0] = source[0].replace(
            f"]({written}#", f"]({posixpath.relpath(page, here or '.')}.md#"
        )


def setup(app: Any) -> dict[str, bool]:
    app.connect("source-read", _links_to_included_files)
    return {"parallel_read_safe": True}
