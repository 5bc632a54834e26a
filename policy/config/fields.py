"""What one field of a `CONFIG` section is: the declaration every consumer reads.

A `Field` says what values it takes (`FieldType`, choices, bounds, a pattern), whether it is
required (always, or when another field has a value), its default, what it means and what a
mistake in it does (`Mistake`). A `Section` is one `CONFIG[...]` list of such entries and says
whether a skipped entry is an error (it may have tightened the policy) or a warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field
from enum import StrEnum
from typing import Any

from policy._dataclass import dataclass


class FieldType(StrEnum):
    """The shape of a field's value, as the reader checks it and the schema describes it."""

    GUID = "guid"
    TEXT = "text"
    """Any string, blank included."""
    NONBLANK_TEXT = "nonblank_text"
    CHOICE = "choice"
    """One of `choices`, in any case."""
    WHOLE_NUMBER = "whole_number"
    """A whole number from `minimum` to `maximum`."""
    NUMBER = "number"
    """A number above `minimum` and at most `maximum`."""
    BOOL = "bool"
    SECRET = "secret"
    """An `ENC:v1:` value that decrypts."""
    TEXT_LIST = "text_list"
    SECRET_TEXT_MAP = "secret_text_map"
    """Name → text; a secret-looking name needs an `ENC:v1:` value."""
    PIN_MAP = "pin_map"
    """MCP tool name → `sha256:<64 lower-case hex digits>`."""
    FLAG_MAP = "flag_map"
    """Name (one of `choices`) → true or false."""
    CHOICE_LIST_MAP = "choice_list_map"
    """Name → a list of `choices` (in any case)."""
    TABLE = "table"
    """A table with fields of its own (`fields`)."""


class Mistake(StrEnum):
    """What a wrong value of a field does to its entry."""

    SKIPS_ENTRY = "skips_entry"
    """The whole entry is left out (never applied with this field silently dropped)."""
    IGNORED = "ignored"
    """The field is read as its default, with a warning; the entry applies."""
    NOT_CHECKED = "not_checked"
    """An AI Studio field toolpolicy keeps as given and does not act on."""


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a configuration entry."""

    name: str
    type: FieldType
    doc: str
    required: bool = False
    required_when: tuple[tuple[str, str], ...] = ()
    """(field, value) pairs: required when every one of those fields has that value (in any
    case); not read otherwise."""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    pattern: str = ""
    """A regular expression the whole value must match (Python and ECMA-262 read it alike)."""
    rule: str = ""
    """What `pattern` asks for, in words: how a message names a value that does not match."""
    default: Any = None
    example: Any = None
    """A valid value as JSON-like data (what `policy schema` validates)."""
    mistake: Mistake = Mistake.SKIPS_ENTRY
    fields: tuple[Field, ...] = ()

    @property
    def checked(self) -> bool:
        return self.mistake is not Mistake.NOT_CHECKED


class UnknownFields(StrEnum):
    """What an entry's field that is not declared does."""

    KEPT = "kept"
    """Kept as given (an AI Studio field toolpolicy does not know)."""
    NEAR_MISS_SKIPS = "near_miss_skips"
    """Kept, unless it looks like a declared field misspelled: then the entry is skipped."""
    SKIP_ENTRY = "skip_entry"
    """Any undeclared field skips the entry (it may be a filter or pin misspelled)."""


@dataclass(frozen=True, slots=True)
class Section:
    """One `CONFIG[...]` list of entries: its fields in reading order and its failure rule."""

    name: str
    doc: str
    fields: tuple[Field, ...]
    fails_closed: bool
    """A skipped entry is an error: it may have held what tightens the policy (a filter, a pin,
    a capability override), and a provider or server that silently vanished does not do what
    was written. Otherwise a skipped entry is a warning: it offers nothing."""
    unknown_fields: UnknownFields = UnknownFields.KEPT
    field_names: frozenset[str] = field(init=False, repr=False, compare=False)
    _by_name: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {declared.name: declared for declared in self.fields}
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "field_names", frozenset(by_name))

    def __getitem__(self, name: str) -> Field:
        return self._by_name[name]

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)
