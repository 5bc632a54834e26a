"""Run a rule's regular expression only near the words every one of its matches contains.

A pattern that starts with a word boundary or an alternation of phrases makes `re` try it at
every position: 20–50 passes of that kind cost a page 30–100 times what `str.lower()` does.
Every rule names its anchors — literal substrings one of which each of its matches holds within
`lead` characters of its start — and `str.find` (C) finds them; the pattern runs only in the
windows around them. An anchor made of letters only stands for a whole word (a run of letters)
in its rules' matches, so when the text's set of words lacks it, it is not searched at all; a
rule that matches inside a run of letters ("USAIgnore") says `within_words`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_LINE_END_SLACK = 200
"""A window's end moves on to the next line break (this far at most), so `$` and look-aheads see
a real line end rather than the window's."""


class AnchorIndex:
    """Where anchors occur in one (lowercased) text; rules sharing an anchor search it once."""

    __slots__ = ("_positions", "_text", "_words")

    def __init__(self, text: str, words: frozenset[str] | None = None) -> None:
        self._text = text
        self._words = words
        self._positions: dict[str, list[int]] = {}

    def positions(self, anchor: str) -> list[int]:
        found = self._positions.get(anchor)
        if found is None:
            found = []
            text = self._text
            position = text.find(anchor)
            while position >= 0:
                found.append(position)
                position = text.find(anchor, position + 1)
            self._positions[anchor] = found
        return found

    def _absent(self, anchor: str) -> bool:
        return self._words is not None and anchor.isalpha() and anchor not in self._words

    def windows(
        self, anchors: tuple[str, ...], lead: int, reach: int, within_words: bool = False
    ) -> list[tuple[int, int]]:
        """Merged [start, end) spans around every anchor occurrence."""
        starts = sorted(
            p
            for anchor in anchors
            if within_words or not self._absent(anchor)
            for p in self.positions(anchor)
        )
        if not starts:
            return []
        text = self._text
        length = len(text)
        merged: list[tuple[int, int]] = []
        for position in starts:
            start = max(0, position - lead)
            end = min(length, position + reach)
            if end < length:
                line_end = text.find("\n", end, end + _LINE_END_SLACK)
                end = line_end if line_end >= 0 else min(length, end + _LINE_END_SLACK)
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged


def finditer(
    pattern: re.Pattern[str],
    subject: str,
    index: AnchorIndex,
    anchors: tuple[str, ...],
    lead: int,
    reach: int,
    within_words: bool = False,
) -> Iterator[re.Match[str]]:
    """The pattern's matches in `subject` near the anchors (all of them, when no anchors)."""
    if not anchors:
        yield from pattern.finditer(subject)
        return
    for start, end in index.windows(anchors, lead, reach, within_words):
        yield from pattern.finditer(subject, start, end)
