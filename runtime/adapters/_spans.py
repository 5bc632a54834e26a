"""Where a JSON value sits inside the text it arrived in, so it can be sent back byte for byte.

Only called on text that already parsed; the standard decoder measures each value.
"""

from __future__ import annotations

import json
import re

_decode_at = json.JSONDecoder().raw_decode
_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _member_start(text: str, at: int, key: str) -> int | None:
    """Start of the value of `key` in the object beginning at `at` (None if absent)."""
    at = _skip_space(text, at)
    if text[at] != "{":
        return None
    at = _skip_space(text, at + 1)
    while text[at] != "}":
        name, at = _decode_at(text, at)
        at = _skip_space(text, _skip_space(text, at) + 1)
        if name == key:
            return at
        _, at = _decode_at(text, at)
        at = _skip_space(text, at)
        if text[at] == ",":
            at = _skip_space(text, at + 1)
    return None


def _element_texts(text: str, at: int) -> list[str]:
    """The exact text of each element of the array beginning at `at`."""
    at = _skip_space(text, at)
    if text[at] != "[":
        raise ValueError("not an array")
    at = _skip_space(text, at + 1)
    found: list[str] = []
    while text[at] != "]":
        _, end = _decode_at(text, at)
        found.append(text[at:end])
        at = _skip_space(text, end)
        if text[at] == ",":
            at = _skip_space(text, at + 1)
    return found


def _path_start(text: str, path: tuple[str, ...]) -> int | None:
    """Where the value reached by following object keys `path` from the root starts."""
    at: int | None = 0
    for key in path:
        at = _member_start(text, at, key) if at is not None else None
    return at


def value_text(text: str, path: tuple[str, ...]) -> str | None:
    """The exact text of the value reached by following object keys `path` from the root."""
    at = _path_start(text, path)
    if at is None:
        return None
    _, end = _decode_at(text, at)
    return text[at:end]


def array_element_texts(text: str, path: tuple[str, ...]) -> list[str] | None:
    """The exact text of each element of the array reached by `path` (None if it is absent)."""
    at = _path_start(text, path)
    return _element_texts(text, at) if at is not None else None
