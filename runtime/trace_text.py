"""Text from a model or a client as traces, events, logs and decision records keep it.

Whatever a caller writes reaches the trace: a lone surrogate (`"\\ud800"` is legal JSON and a
legal Python string, but no UTF-8 text) makes a record that no JSON encoder writes, and megabytes
of argument names fill a log and rotate its earlier records out. So every such text is made
well-formed — each lone surrogate written as its escape, `\\ud800` — and bounded, cut with a
marker that says how much was left out. What the tool and the model get is never changed here.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MAX_ARGUMENTS",
    "MAX_NAME_CHARACTERS",
    "MAX_TEXT_CHARACTERS",
    "bounded_name",
    "bounded_text",
    "well_formed",
    "well_formed_value",
]

MAX_NAME_CHARACTERS = 256
"""A tool or argument name, a call id (an MCP tool's id, server and tool name, stays whole)."""
MAX_TEXT_CHARACTERS = 512
"""An argument's value, a call's status message."""
MAX_ARGUMENTS = 24
"""Arguments shown per call; the rest are counted under the name `…`."""


def well_formed(text: str) -> str:
    """`text` with each lone surrogate written as its escape (`\\ud800`): text every UTF-8
    encoder writes. Anything else is kept as it is."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def bounded_text(text: str, limit: int = MAX_TEXT_CHARACTERS) -> str:
    """`well_formed(text)` of at most `limit` characters, and past them a marker that says how
    many were left out (`… [1048576 more characters]`)."""
    if len(text) <= limit:
        return well_formed(text)
    return f"{well_formed(text[:limit])}… [{len(text) - limit} more characters]"


def bounded_name(name: str) -> str:
    """A name (tool, argument, call id) as traces show it: `bounded_text` to 256 characters."""
    return bounded_text(name, MAX_NAME_CHARACTERS)


def well_formed_value(value: Any) -> Any:
    """A JSON-like value (dicts, lists, tuples, strings, numbers) with every string in it, keys
    included, `well_formed`: for an encoder that met a lone surrogate."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, dict):
        return {well_formed_value(k): well_formed_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [well_formed_value(item) for item in value]
    return value
