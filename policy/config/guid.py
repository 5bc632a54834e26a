"""The GUID rule: which spellings of a configuration id are read, and the one form kept.

A plugin's `ID` and every entry's `Id` are read like .NET reads a GUID (8-4-4-4-12, in braces,
in parentheses, or 32 hex digits; any case) and kept as lower-case 8-4-4-4-12; the
configuration ids a device fetches, the folders they are delivered to and their status records
are that canonical form.
"""

from __future__ import annotations

import re
from typing import Any

from policy._patterns import LazyPattern

_HEX = "[0-9a-fA-F]"
_DASHED = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_SPELLINGS = rf"{_DASHED}|\{{{_DASHED}\}}|\({_DASHED}\)|{_HEX}{{32}}"
_ANY_SPELLING = re.compile(rf"^(?:{_SPELLINGS})$")
_CANONICAL = LazyPattern(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

GUID_SCHEMA_PATTERN = f"^({_SPELLINGS})$"
"""The spellings `parse_guid` reads, as a JSON Schema pattern (ECMA-262 reads it the same)."""

GUID_EXAMPLE = "8f3b1c2e-0d4a-4c8e-9b1f-2a3c4d5e6f70"
TEMPLATE_GUID = "00000000-0000-0000-0000-000000000000"
"""The all-zero GUID the templates carry: never a plugin's own ID."""


def parse_guid(value: Any) -> str | None:
    """A GUID in any of .NET's plain forms, as lower-case 8-4-4-4-12; else None."""
    if not isinstance(value, str) or not _ANY_SPELLING.match(value.strip()):
        return None
    digits = re.sub(r"[^0-9a-fA-F]", "", value).lower()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def is_canonical_guid(text: str) -> bool:
    """Whether `text` is a GUID in the one form kept: lower-case 8-4-4-4-12."""
    return _CANONICAL.match(text) is not None
