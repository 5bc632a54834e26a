"""Did-you-mean hints: the one place that decides which known name a mistyped one was meant to be.

A case slip wins (names are case-sensitive, so it is the likeliest mistake), then a name that
differs only in underscores (LLAMACPP → LLAMA_CPP), then the closest spelling by difflib's ratio.
"""

from __future__ import annotations

from collections.abc import Iterable

_CUTOFF = 0.75


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
    import difflib

    by_folded = {name.casefold(): name for name in names}
    found = difflib.get_close_matches(folded, list(by_folded), n=1, cutoff=_CUTOFF)
    return by_folded[found[0]] if found else None


def did_you_mean(wanted: str, known: Iterable[str]) -> str:
    """`; did you mean "X"?` for a near miss, else an empty string (to append to a message)."""
    match = closest_name(wanted, known)
    return f'; did you mean "{match}"?' if match else ""
