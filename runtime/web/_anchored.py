"""Run a rule's regular expression only near the words every one of its matches contains.

A pattern that starts with a word boundary or an alternation of phrases makes `re` try it at
every position: 20–50 passes of that kind cost a page 30–100 times what `str.lower()` does.
Every rule names its anchors — literal substrings one of which each of its matches holds within
`lead` characters of its start — and `str.find` (C) finds them; the pattern is tried only at
the at most `lead` + 1 positions before each of them (one `match` whose look-ahead prefix steps
over those positions in C), never over a whole window around them. An anchor made of letters only stands for a whole word (a run of letters)
in its rules' matches, so when the text's set of words lacks it, it is not searched at all, and
otherwise found as ` word ` among the text's `letter_marks` (one byte search that stops only at
whole words, where a search for the letters stops at every "ai" in "main" and "again"); a
rule that matches inside a run of letters ("USAIgnore") says `within_words`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ahocorasick_rs import BytesAhoCorasick


@dataclass(frozen=True, slots=True)
class Anchors:
    """A rule's anchors, split once for the cheapest test of presence: letter-only anchors that
    stand for whole words are looked up in the text's word set (one set intersection); the rest
    are grouped by their first character, and a group whose character the text lacks (one
    `in`, memchr) is not searched, nor one none of whose anchors has its runs of letters among
    the text's (`run_needles`). A group of several is searched in one pass (its first
    character, then the rests as a look-ahead: every start, overlapping ones too), not once
    per anchor."""

    words: frozenset[str]
    by_first: tuple[tuple[str, re.Pattern[str] | None, str, tuple[tuple[str, ...], ...]], ...]
    """(first character, the group's pattern or None for a lone anchor, the lone anchor, each
    anchor's `run_needles`)."""

    @classmethod
    def of(cls, anchors: tuple[str, ...], within_words: bool = False) -> Anchors:
        words = frozenset(a for a in anchors if not within_words and a.isascii() and a.isalpha())
        groups: dict[str, list[str]] = {}
        for anchor in dict.fromkeys(anchors):
            if anchor not in words:
                groups.setdefault(anchor[0], []).append(anchor)
        by_first: list[tuple[str, re.Pattern[str] | None, str, tuple[tuple[str, ...], ...]]] = []
        for first, group in groups.items():
            needles = tuple(run_needles(anchor) for anchor in group)
            if len(group) == 1:
                by_first.append((first, None, group[0], needles))
                continue
            rests = "|".join(re.escape(anchor[1:]) for anchor in group)
            by_first.append((first, _group_pattern(first, rests), "", needles))
        return cls(words, tuple(by_first))


_LETTER_RUN = re.compile("[a-z]+")


def run_needles(anchor: str) -> tuple[str, ...]:
    """What a text's `joined_runs` hold wherever the text holds `anchor`: each run of letters
    a-z in the anchor, with a space on each side where the anchor itself ends the run ("e-mail"
    needs a word ending in "e" and one starting with "mail"; "[inst]" the whole word "inst").
    The joined words are a quarter to two fifths of a text's length, and most texts lack them."""
    return tuple(
        f"{' ' if run.start() else ''}{run.group(0)}{' ' if run.end() < len(anchor) else ''}"
        for run in _LETTER_RUN.finditer(anchor)
    )


def joined_runs(words: Iterable[str]) -> str:
    """A text's runs of letters (its set of words), each framed by spaces: ` one two `."""
    return f" {' '.join(words)} "


@dataclass(frozen=True, slots=True)
class WordGates:
    """Which rules a text's words let run, for a whole rule set at once. A rule names groups of
    words and runs only when the text holds a word of each; every group is a bit, every word the
    bits of the groups holding it, so a text's words are looked up once (one intersection with
    the vocabulary), not once per group and rule: the fixed cost a short tool result pays."""

    vocabulary: frozenset[str]
    bits: Mapping[str, int]
    needs: tuple[int, ...]
    """Per rule, the bits of all its groups (0: no group, it always runs)."""
    _open: dict[int, tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)
    """The rules open for each set of met groups seen (few sets recur, text after text)."""

    @classmethod
    def of(cls, rules: Sequence[Sequence[frozenset[str]]]) -> WordGates:
        bits: dict[str, int] = {}
        needs: list[int] = []
        group_bit = 1
        for groups in rules:
            need = 0
            for group in groups:
                for word in group:
                    bits[word] = bits.get(word, 0) | group_bit
                need |= group_bit
                group_bit <<= 1
            needs.append(need)
        return cls(frozenset(bits), bits, tuple(needs))

    def open(self, words: frozenset[str] | None) -> tuple[int, ...]:
        """The numbers of the rules (in order) whose groups each hold a word of `words` (None:
        not known, every rule)."""
        met = -1
        if words is not None:
            met = 0
            for word in self.vocabulary & words:
                met |= self.bits[word]
        found = self._open.get(met)
        if found is None:
            found = tuple(number for number, need in enumerate(self.needs) if need & met == need)
            if len(self._open) < _MAX_PATTERNS:
                self._open[met] = found
        return found


_PATTERNS: dict[str, re.Pattern[str]] = {}
_MAX_PATTERNS = 4096
"""Compiled anchor patterns kept (the rules' and recent tool names')."""


def _compiled(source: str) -> re.Pattern[str]:
    pattern = _PATTERNS.get(source)
    if pattern is None:
        if len(_PATTERNS) >= _MAX_PATTERNS:
            _PATTERNS.clear()
        pattern = _PATTERNS[source] = re.compile(source)
    return pattern


def _group_pattern(first: str, rests: str) -> re.Pattern[str]:
    return _compiled(f"{re.escape(first)}(?=(?:{rests}))")


_NOT_A_LETTER = bytes(byte if 0x61 <= byte <= 0x7A else 0x20 for byte in range(256))


def letter_marks(lowered: str) -> bytes:
    """One byte per character of the (lowercased) text: the letter for a-z, a space for every
    other character (non-ASCII ones and lone surrogates too), with a space before and after:
    its words are the text's runs of letters, and a whole word is found as ` word `."""
    return b" " + lowered.encode("ascii", "replace").translate(_NOT_A_LETTER) + b" "


@dataclass(slots=True)
class WordFinder:
    """Every occurrence of a fixed vocabulary's words (the rules' word anchors) in one pass: an
    Aho-Corasick automaton (ahocorasick-rs, a DFA) over a text's letter marks, where a byte
    search per word scans the whole text once per word a rule asks for. ` word` is matched
    leftmost-longest at a space and kept when a space follows: the whole run of letters."""

    words: tuple[str, ...]
    vocabulary: frozenset[str]
    _automaton: BytesAhoCorasick | None = field(default=None, repr=False)

    @classmethod
    def of(cls, words: Iterable[str]) -> WordFinder:
        vocabulary = frozenset(words)
        return cls(tuple(sorted(vocabulary)), vocabulary)

    def find(self, letters: bytes) -> dict[str, list[int]]:
        """Each vocabulary word the letter marks hold, with its starts in the text."""
        automaton = self._automaton
        if automaton is None:
            from ahocorasick_rs import BytesAhoCorasick, Implementation, MatchKind

            automaton = self._automaton = BytesAhoCorasick(
                [f" {word}".encode("ascii") for word in self.words],
                matchkind=MatchKind.LeftmostLongest,
                implementation=Implementation.DFA,
            )
        found: dict[str, list[int]] = {}
        words = self.words
        for number, start, end in automaton.find_matches_as_indexes(letters):
            if letters[end] == 0x20:
                found.setdefault(words[number], []).append(start)
        return found


class AnchorIndex:
    """Where anchors occur in one (lowercased) text; rules sharing an anchor search it once.
    `letters` is the text's `letter_marks`, when the caller has them already; the words of
    `finder`'s vocabulary are found all at once, the first time one of them is asked for;
    `runs`, the text's `joined_runs`, rules out most other anchors without a search of the
    text (a search for several characters is far slower than one for its first)."""

    __slots__ = (
        "_finder",
        "_found",
        "_held_runs",
        "_holds",
        "_letters",
        "_positions",
        "_runs",
        "_text",
        "_words",
    )

    def __init__(
        self,
        text: str,
        words: frozenset[str] | None = None,
        letters: bytes | None = None,
        finder: WordFinder | None = None,
        runs: str | None = None,
    ) -> None:
        self._text = text
        self._words = words
        self._runs = runs
        self._held_runs: dict[str, bool] = {}
        self._letters = letters
        self._finder = finder
        self._found: dict[str, list[int]] | None = None
        self._positions: dict[str, list[int]] = {}
        self._holds: dict[str, bool] = {}

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

    def _may_hold(self, needles: tuple[str, ...]) -> bool:
        """False when the text's runs of letters show it cannot hold an anchor (`run_needles`)."""
        runs = self._runs
        if runs is None:
            return True
        held = self._held_runs
        for needle in needles:
            found = held.get(needle)
            if found is None:
                found = held[needle] = needle in runs
            if not found:
                return False
        return True

    def _holds_character(self, character: str) -> bool:
        held = self._holds.get(character)
        if held is None:
            held = self._holds[character] = character in self._text
        return held

    def starts(self, anchors: Anchors) -> list[int]:
        """Every occurrence of the anchors, in order."""
        present = anchors.words if self._words is None else anchors.words & self._words
        starts: list[int] = []
        for anchor in present:
            starts += self._word_positions(anchor)
        for first, pattern, anchor, needles in anchors.by_first:
            if not self._holds_character(first) or not any(map(self._may_hold, needles)):
                continue
            starts += self.positions(anchor) if pattern is None else self._group(pattern)
        starts.sort()
        return starts

    def _word_positions(self, word: str) -> list[int]:
        """Where the word stands as a whole run of letters (a substring search would also stop
        at every "ai" in "main" and "again"): ` word ` in the letter marks, whose first space
        stands one place before the text's first character."""
        key = f" {word}"
        found = self._positions.get(key)
        if found is not None:
            return found
        letters = self._letters
        if letters is None:
            letters = self._letters = letter_marks(self._text)
        finder = self._finder
        if finder is not None and word in finder.vocabulary:
            if self._found is None:
                self._found = finder.find(letters)
            found = self._positions[key] = self._found.get(word, [])
            return found
        needle = f"{key} ".encode("ascii")
        found = []
        position = letters.find(needle)
        while position >= 0:
            found.append(position)
            position = letters.find(needle, position + 1)
        self._positions[key] = found
        return found

    def _group(self, pattern: re.Pattern[str]) -> list[int]:
        found = self._positions.get(pattern.pattern)
        if found is None:
            found = [match.start() for match in pattern.finditer(self._text)]
            self._positions[pattern.pattern] = found
        return found


def finditer(
    pattern: re.Pattern[str],
    subject: str,
    index: AnchorIndex,
    anchors: Anchors | None,
    lead: int,
) -> list[re.Match[str]]:
    """The pattern's matches in `subject` near the anchors (all of them, when no anchors). With
    `lead` 0 every match starts at an anchor, so the pattern is only tried there (`match`, one
    attempt per occurrence); otherwise at the `lead` + 1 positions up to each anchor."""
    if anchors is None:
        return list(pattern.finditer(subject))
    starts = index.starts(anchors)
    if not starts:
        return []
    if lead == 0:
        return _matches_at(pattern, subject, starts)
    return _matches_before(pattern, subject, starts, lead)


_STARTS: dict[tuple[int, re.Pattern[str]], re.Pattern[str]] = {}


def _start_finder(pattern: re.Pattern[str], lead: int) -> re.Pattern[str]:
    """A pattern that, matched at a position, skips at most `lead` characters (in C) to the first
    place where `pattern` matches, and ends there (a look-ahead: it sees the whole text, as
    `pattern` does)."""
    finder = _STARTS.get((lead, pattern))
    if finder is None:
        if len(_STARTS) >= _MAX_PATTERNS:
            _STARTS.clear()
        finder = _STARTS[(lead, pattern)] = re.compile(
            rf"[\s\S]{{0,{lead}}}?(?=(?:{pattern.pattern}))", pattern.flags
        )
    return finder


def _matches_before(
    pattern: re.Pattern[str], subject: str, starts: list[int], lead: int
) -> list[re.Match[str]]:
    """Like `finditer` (leftmost, not overlapping) where every match starts at most `lead`
    characters before an anchor: the pattern is tried only at those starts, not at every
    position of a window around the anchor (its reach and the rest of its line)."""
    finder = _start_finder(pattern, lead)
    found: list[re.Match[str]] = []
    after = 0
    for position in starts:
        if position < after:
            continue
        start = finder.match(subject, max(after, position - lead))
        if start is None:
            continue
        match = pattern.match(subject, start.end())
        if match is not None:
            found.append(match)
            after = max(match.end(), start.end() + 1)
    return found


def _matches_at(pattern: re.Pattern[str], subject: str, starts: list[int]) -> list[re.Match[str]]:
    """Like `finditer` (leftmost, not overlapping) where every match starts at an anchor."""
    found: list[re.Match[str]] = []
    after = 0
    for position in starts:
        if position < after:
            continue
        match = pattern.match(subject, position)
        if match is not None:
            found.append(match)
            after = max(match.end(), position + 1)
    return found
