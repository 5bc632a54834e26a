"""The documentation site: Sphinx with MyST (Markdown), built by `sphinx-build -W docs <out>`.

Sphinx + MyST rather than MkDocs: Sphinx is actively maintained (MkDocs has had no release since
2024), MyST's `{include}` brings CHANGELOG.md and bench/README.md into the site without a copy,
and `-W` turns every broken link, reference and anchor into an error. The build needs no network:
the theme (Furo) ships its assets and no extension fetches anything.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from docutils import nodes

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
html_static_path = ["_static"]
html_css_files = ["tables.css"]
"""One rule: a table's cells may break a long name, so a wide table fits the page's column."""
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


def _links_between_included_files(
    app: Any, relative_path: Any, parent_docname: str, content: list[str]
) -> None:
    """A link from one included file to another, written for the repository
    (`bench/README.md#a-heading` in CHANGELOG.md), goes to the page that includes the other one.
    The pages that include files are at the site's top, where such a link is read from."""
    included = posixpath.normpath(posixpath.join("docs", Path(relative_path).as_posix()))
    here = posixpath.dirname(included)
    for file, page in _PAGES_OF_FILES.items():
        if file != included:
            written = posixpath.relpath(file, here or ".")
            content[0] = content[0].replace(f"]({written})", f"]({page}.md)")
            content[0] = content[0].replace(f"]({written}#", f"]({page}.md#")


_BREAK_IN_TEXT = re.compile(r"(?<=[^\s\d][._/|])(?=[^\s\d.,;:)\]])")
_BREAK_IN_CODE = re.compile(rf"{_BREAK_IN_TEXT.pattern}|(?<=[a-z])(?=[A-Z])")
_LONG_NAME = 13
"""Characters from which a name may break: `DataTools.EnableTools` may, `plugin.lua` may not."""


def _names_break_in_tables(app: Any, doctree: nodes.document, docname: str) -> None:
    """A long name in a table cell may break after a dot, an underscore, a slash or a bar, and a
    name in code also between the words of its camel case (`DataTools.<wbr>Minimum<wbr>Provider…`;
    `<wbr>`, which a copy leaves out), so a wide table fits the page's column instead of hiding its
    last columns behind a scroll bar at its foot. Short names and words of prose never break."""
    if app.builder.format != "html":
        return
    for table in doctree.findall(nodes.table):
        for text in list(table.findall(nodes.Text)):
            if isinstance(text.parent, nodes.FixedTextElement):
                continue
            pattern = _BREAK_IN_CODE if isinstance(text.parent, nodes.literal) else _BREAK_IN_TEXT
            parts = [""]
            for token in re.split(r"(\s+)", text.astext()):
                pieces = pattern.split(token) if len(token) >= _LONG_NAME else [token]
                parts[-1] += pieces[0]
                parts += pieces[1:]
            if len(parts) > 1:
                nodes_: list[nodes.Node] = [nodes.Text(parts[0])]
                for part in parts[1:]:
                    nodes_ += [nodes.raw("", "<wbr>", format="html"), nodes.Text(part)]
                text.parent.replace(text, nodes_)


def setup(app: Any) -> dict[str, bool]:
    app.connect("source-read", _links_to_included_files)
    app.connect("include-read", _links_between_included_files)
    app.connect("doctree-resolved", _names_break_in_tables)
    return {"parallel_read_safe": True}
