"""Where the blocks of a Markdown text are: the units a prose passage may span, and what is code.

A web page (extracted to Markdown) or a plain-text result is judged block by block: a passage
runs to the end of its paragraph, heading, list item or table cell, not to the end of the page.
Code blocks and block quotes show text rather than say it (a security article quoting an
injection, a code sample), so signals inside them do not count. markdown-it-py (CommonMark)
finds the blocks; it runs only on texts in which a signal was found.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_UNIT_OPENERS = frozenset({"paragraph_open", "heading_open", "html_block", "tr_open"})
_SHOWN = frozenset({"fence", "code_block"})


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True, slots=True)
class ProseLayout:
    """Character ranges of a text's units (sorted, not overlapping) and of what only shows text."""

    units: tuple[tuple[int, int, bool], ...]
    """(start, end, is_table_row)."""
    shown: tuple[tuple[int, int], ...]

    def is_shown(self, position: int) -> bool:
        return any(start <= position < end for start, end in self.shown)

    def unit_at(self, text: str, position: int) -> tuple[int, int]:
        """The unit holding the position (a table row's cell), else the blank-line paragraph."""
        index = bisect_right(self.units, (position, len(text) + 1, True)) - 1
        if index >= 0:
            start, end, is_row = self.units[index]
            if start <= position < end:
                if is_row:
                    return _cell_at(text, position, start, end)
                return start, end
        return _paragraph_at(text, position)

    def next_unit(self, text: str, end: int) -> tuple[int, int] | None:
        """The unit after the one ending at `end`, if any."""
        index = bisect_right(self.units, (end, len(text) + 1, True))
        if index < len(self.units):
            start, unit_end, _ = self.units[index]
            return start, unit_end
        return None


def _paragraph_at(text: str, position: int) -> tuple[int, int]:
    start = text.rfind("\n\n", 0, position)
    end = text.find("\n\n", position)
    return (0 if start < 0 else start + 2), (len(text) if end < 0 else end)


def _cell_at(text: str, position: int, row_start: int, row_end: int) -> tuple[int, int]:
    start = text.rfind("|", row_start, position) + 1 or row_start
    end = text.find("|", position, row_end)
    return start, row_end if end < 0 else end


def layout_of(text: str) -> ProseLayout:
    line_starts = [0]
    position = text.find("\n")
    while position >= 0:
        line_starts.append(position + 1)
        position = text.find("\n", position + 1)
    line_starts.append(len(text) + 1)

    def span(lines: list[int]) -> tuple[int, int]:
        first, last = lines
        return line_starts[first], min(len(text), line_starts[min(last, len(line_starts) - 1)] - 1)

    units: list[tuple[int, int, bool]] = []
    shown: list[tuple[int, int]] = []
    for token in _parser().parse(text):
        if token.map is None:
            continue
        if token.type in _SHOWN or token.type == "blockquote_open":
            shown.append(span(token.map))
        elif token.type in _UNIT_OPENERS:
            start, end = span(token.map)
            units.append((start, end, token.type == "tr_open"))
    return ProseLayout(tuple(sorted(set(units))), tuple(shown))
