"""A part of a hand-written documentation page that a module writes from the data it owns, so
the page shows that data without a copy to keep up.

The part sits between two comment lines that name the module writing it:

    <!-- BEGIN written by `python -m policy.cli_examples`: change policy/cli_examples.py instead -->
    ...
    <!-- END written by `python -m policy.cli_examples` -->

Everything outside them is the page's own text and is kept as written. `shown_part` is what a
page shows there now (a test compares it with what the data says), `write_part` is the command
line each such module runs as its `__main__`. (A page written whole from data, as the plugin.lua
reference is, needs no marks: `policy.config.reference`.)
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["marks", "shown_part", "with_part", "write_part"]


def marks(writer: str) -> tuple[str, str]:
    """The BEGIN and END lines around the part `python -m writer` writes."""
    source = writer.replace(".", "/") + ".py"
    return (
        f"<!-- BEGIN written by `python -m {writer}`: change {source} instead -->",
        f"<!-- END written by `python -m {writer}` -->",
    )


def _bounds(lines: list[str], writer: str) -> tuple[int, int] | str:
    """The line indexes of the two marks, or what is wrong with them."""
    begin, end = marks(writer)
    begins = [i for i, line in enumerate(lines) if line.strip() == begin]
    ends = [i for i, line in enumerate(lines) if line.strip() == end]
    if len(begins) != 1 or len(ends) != 1 or begins[0] > ends[0]:
        return (
            f"expected the line {begin!r} once, and after it the line {end!r} once "
            f"(found {len(begins)} and {len(ends)}); add the two lines where the part belongs"
        )
    return begins[0], ends[0]


def shown_part(text: str, writer: str) -> str | None:
    """What the page shows between the marks of `writer` (None when it has no such part)."""
    lines = text.splitlines()
    bounds = _bounds(lines, writer)
    if isinstance(bounds, str):
        return None
    return "\n".join(lines[bounds[0] + 1 : bounds[1]]).strip("\n") + "\n"


def with_part(text: str, writer: str, part: str) -> str:
    """The page with `part` between the marks of `writer`; ValueError when the marks are not
    there once each, in order."""
    lines = text.splitlines()
    bounds = _bounds(lines, writer)
    if isinstance(bounds, str):
        raise ValueError(bounds)
    begin, end = bounds
    middle = ["", *part.strip("\n").splitlines(), ""]
    return "\n".join([*lines[: begin + 1], *middle, *lines[end:]]) + "\n"


def write_part(arguments: Sequence[str], writer: str, part: str, default: Path) -> int:
    """`python -m writer [PAGE ...]`: write `part` into each page given (`default`, relative to
    the repository root, when none is). Nothing is written unless every page has its marks."""
    targets = [Path(name) for name in arguments] or [default]
    pages: dict[Path, str] = {}
    for path in targets:
        if not path.is_file():
            where = "run it from the repository root, or name the page" if not arguments else ""
            print(f"Error: {path}: no such file{'; ' + where if where else ''}", file=sys.stderr)
            return 2
        text = path.read_text(encoding="utf-8")
        try:
            pages[path] = with_part(text, writer, part)
        except ValueError as problem:
            print(f"Error: {path}: {problem}", file=sys.stderr)
            return 2
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")
    return 0
