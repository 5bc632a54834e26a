"""Did-you-mean hints: the one place that decides which known name a mistyped one was meant to be.

A case slip wins (names are case-sensitive, so it is the likeliest mistake), then a name that
differs only in underscores (LLAMACPP → LLAMA_CPP), then the one name that has it as a whole
word (HTTP → STREAMABLE_HTTP), then the closest spelling by difflib's ratio.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

_CUTOFF = 0.75
MAX_HINTS = 100
"""Did-you-mean searches one `HintBudget` allows (one plugin's load, one lint run)."""


def closest_name(wanted: str, known: Iterable[str]) -> str | None:
    """The known name `wanted` most likely meant, or None when none is close."""
    names = [name for name in dict.fromkeys(known) if name != wanted]
    folded = wanted.strip().casefold()
    for name in names:
        if name.casefold() == folded:
            return name
    squeezed = folded.replace("_", "").replace("-", "")
    for name in names:
        if name.casefold().replace("_", "").replace("-", "") == squeezed:
            return name
    wholes = [name for name in names if folded in name.casefold().replace("-", "_").split("_")]
    if len(wholes) == 1 and folded:
        return wholes[0]
    by_folded = {name.casefold(): name for name in names}
    if not any(_may_be_close(folded, name) for name in by_folded):
        return None
    import difflib

    found = difflib.get_close_matches(folded, list(by_folded), n=1, cutoff=_CUTOFF)
    return by_folded[found[0]] if found else None


def _may_be_close(wanted: str, name: str) -> bool:
    """Whether `name` passes the two bounds `difflib.get_close_matches` tries before a ratio
    (`real_quick_ratio` on the lengths, `quick_ratio` on the letters in common), computed as
    difflib computes them: a name that fails both cannot be the closest, so most misses need
    no difflib at all (importing it and comparing cost a command more than the hint)."""
    total = len(wanted) + len(name)
    if not total or 2.0 * min(len(wanted), len(name)) / total < _CUTOFF:
        return False
    left = Counter(name)
    common = 0
    for letter in wanted:
        if left[letter] > 0:
            left[letter] -= 1
            common += 1
    return 2.0 * common / total >= _CUTOFF


def did_you_mean(wanted: str, known: Iterable[str]) -> str:
    """`; did you mean "X"?` for a near miss, else an empty string (to append to a message)."""
    match = closest_name(wanted, known)
    return f'; did you mean "{match}"?' if match else ""


class HintBudget:
    """Did-you-mean hints for at most `limit` names, then none.

    Each search compares a name with every known one, and a hostile plugin can hand back
    200,000 unknown names: unbudgeted, that is a minute of work in the parent, outside every
    sandbox cap. Nobody mistypes a hundred names, so past the budget a name is reported as
    unknown without a hint."""

    __slots__ = ("left",)

    def __init__(self, limit: int = MAX_HINTS) -> None:
        self.left = limit

    def closest_name(self, wanted: str, known: Iterable[str]) -> str | None:
        """`closest_name` while the budget lasts, else None."""
        if self.left <= 0:
            return None
        self.left -= 1
        return closest_name(wanted, known)

    def did_you_mean(self, wanted: str, known: Iterable[str]) -> str:
        """`did_you_mean` while the budget lasts, else an empty string."""
        match = self.closest_name(wanted, known)
        return f'; did you mean "{match}"?' if match else ""
