"""What may reach a terminal: text from outside, shown so that no control character acts.

A plugin's strings, an MCP server's tool names, a host's error, a model's answer and the
arguments it writes all end up in the `policy` command's output. A carriage return or line feed
in a value could print a fake `ok: 0 error(s)` line, an ESC sequence could rewrite the screen or
set the window title, BEL rings, a bidirectional override reorders what is read. So every
character that is not printable (Python's `str.isprintable`: C0 and C1 controls, DEL, line and
paragraph separators, format characters such as U+202E) is shown as its escape (`\\r`, `\\x1b`,
`\\u202e`). The one rule every text, table and JSON output of the command asks.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

from policy._patterns import LazyPattern

_PLAIN = re.compile(r"[\x20-\x7e]*")
_PLAIN_BLOCK = re.compile(r"[\x20-\x7e\n\t]*")


def _shown(text: str, kept: str) -> str:
    return "".join(c if c.isprintable() or c in kept else repr(c)[1:-1] for c in text)


def terminal_safe(value: object) -> str:
    """One value as it may appear on one line: every non-printable character escaped, line
    breaks and tabs included (a value never starts a line of its own)."""
    text = value if isinstance(value, str) else str(value)
    if _PLAIN.fullmatch(text):
        return text
    return _shown(text, "")


def terminal_text(text: str) -> str:
    """Text whose line breaks and tabs are its own (a model's answer, a rendered block): those
    stay, every other non-printable character is escaped."""
    if _PLAIN_BLOCK.fullmatch(text):
        return text
    return _shown(text, "\n\t")


def terminal_document(value: Any) -> Any:
    """A JSON-like document with every string in it (keys included) made `terminal_safe`, for
    renderers that place its values into text."""
    if isinstance(value, str):
        return terminal_safe(value)
    if isinstance(value, dict):
        return {terminal_document(k): terminal_document(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [terminal_document(item) for item in value]
    return value


def terminal_json(value: Any, *, indent: int | None = None) -> str:
    """JSON of `value` (non-ASCII kept literal) in which no character reaches the terminal raw:
    JSON already escapes C0 controls; DEL, C1 controls and format characters are written as
    `\\uXXXX` too. The parsed value is the same."""
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if _PLAIN_BLOCK.fullmatch(text):
        return text
    return "".join(c if c.isprintable() or c == "\n" else _json_escape(c) for c in text)


def terminal_yaml(value: Any) -> str:
    """Block-style YAML of `value`; when a string holds a character that must not reach the
    terminal raw, the document is written with every non-ASCII character escaped (YAML itself
    lets C1 controls' neighbours and format characters such as U+202E through)."""
    from ruamel.yaml import YAML

    def dumped(allow_unicode: bool) -> str:
        yaml = YAML()
        yaml.default_flow_style = False
        yaml.allow_unicode = allow_unicode
        buffer = io.StringIO()
        yaml.dump(value, buffer)
        return buffer.getvalue().rstrip("\n")

    text = dumped(True)
    if _PLAIN_BLOCK.fullmatch(text) or all(c.isprintable() or c == "\n" for c in text):
        return text
    return dumped(False)


def _json_escape(character: str) -> str:
    code = ord(character)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


# --- colour -------------------------------------------------------------------------------------

_SGR = {"red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m"}
_RESET = "\x1b[0m"
_MARKS: tuple[tuple[LazyPattern, dict[str, str]], ...] = (
    # a finding: `file:line: severity [code]: message`
    (
        LazyPattern(r"^((?:\S[^\n]*?: )?)(error|warning)((?: \[[\w.-]+\])?: )", re.M),
        {"error": "red", "warning": "yellow"},
    ),
    # `policy check`'s summary line
    (LazyPattern(r"^()(failed|ok)(: \d+ error)", re.M), {"failed": "red", "ok": "green"}),
    # `policy explain`: the verdict and each check's mark
    (
        LazyPattern(r"^(  )(NOT OFFERED|OFFERED)(\b)", re.M),
        {"NOT OFFERED": "red", "OFFERED": "green"},
    ),
    (LazyPattern(r"^(  \d+\. \[)(FAIL|pass)(\])", re.M), {"FAIL": "red", "pass": "green"}),
)


def colour_allowed(stream: object) -> bool:
    """Colour only on a terminal: never into a pipe or file, never with `NO_COLOR` set to
    anything (no-color.org) or `TERM=dumb`."""
    import os

    if os.environ.get("NO_COLOR", "") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def coloured(text: str) -> str:
    """Text already made terminal-safe, with its verdict words coloured: errors and failed
    checks red, warnings yellow, passes green. Only the layout's own positions are marked."""
    for pattern, colours in _MARKS:

        def paint(match: re.Match[str], colours: dict[str, str] = colours) -> str:
            return f"{match[1]}{_SGR[colours[match[2]]]}{match[2]}{_RESET}{match[3]}"

        text = pattern.sub(paint, text)
    return text
