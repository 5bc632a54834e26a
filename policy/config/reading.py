"""Reading one configuration entry's fields as their declarations say: the reader's checks.

`EntryReader` reads a field of a Lua table by its declared type and collects what is wrong in
the words `policy check` shows; `EntryReader.read_entry` reads every declared field of a section
in order (a field required by another's value only when that value holds, an optional one only
when given, one toolpolicy does not check not at all; a wrong value of a field whose mistake is
ignored is a note in `ignored` and reads as its default) and the undeclared ones as the section
says. The plugin loader (`policy.plugins`) adds what is not a field's own rule — a provider's
address and key, a data source's mode, a server's URL — beside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from typing import Any

from policy._patterns import LazyPattern
from policy.config.fields import Field, FieldType, Mistake, Section, UnknownFields
from policy.config.guid import parse_guid
from policy.config.settings import describe, parse_choice
from policy.configuration import SecretValue
from policy.lua_sandbox import LuaFunction, LuaTable
from policy.suggest import HintBudget

_FieldCheck = Callable[[Any, list[str], Mapping[str, Any]], None]
"""A rule beyond the field's own, run right after the field is read (value, problems, the
values of the fields read before it)."""

_SKIP_ENTRY = UnknownFields.SKIP_ENTRY  # enum members are slow to look up on their class
_NEAR_MISS_SKIPS = UnknownFields.NEAR_MISS_SKIPS
_SECRET_NAME = LazyPattern(r"(?i)auth|token|secret|passw|key|cookie|credential")
_EMPTY: Mapping[FieldType, Any] = {
    FieldType.TEXT: "",
    FieldType.NONBLANK_TEXT: "",
    FieldType.TEXT_LIST: (),
}
_EMPTY_MAPS = frozenset(
    {FieldType.SECRET_TEXT_MAP, FieldType.PIN_MAP, FieldType.FLAG_MAP, FieldType.CHOICE_LIST_MAP}
)


class EntryReader:
    """Reads the fields of one configuration object, collecting what is wrong in `problems`."""

    def __init__(
        self,
        table: LuaTable,
        problems: list[str],
        prefix: str = "",
        hints: HintBudget | None = None,
    ) -> None:
        self.table = table
        self.problems = problems
        self.prefix = prefix
        self.hints = hints
        self.ignored: list[str] = []
        """What was wrong in fields whose mistake is ignored (read as their default)."""
        self.compat: list[str] = []
        """What toolpolicy read that AI Studio would read otherwise (a spelling it ignores)."""

    def read_entry(
        self,
        section: Section,
        checks: Mapping[str, _FieldCheck] | None = None,
        own: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """Every declared field by name, in declared order: its value, its default when it is
        not read, None when it is wrong; then the undeclared fields as the section says. A field
        toolpolicy does not check, or one in `own` (read by the caller, whose rule across fields
        decides whether), is its value as given."""
        values: dict[str, Any] = {}
        given = self.table.entries
        for name, how, reader, declared, conditions, absent in _plan(section, own):
            if how != _REQUIRED:
                if how == _WHEN:
                    for condition, wanted in conditions:
                        if values.get(condition) != wanted:
                            break
                    else:
                        conditions = ()
                    if conditions:  # a condition does not hold: not read
                        values[name] = {} if absent is _FRESH_MAP else absent
                        continue
                elif given.get(name) is None:
                    values[name] = {} if absent is _FRESH_MAP else absent
                    continue
                if how == _AS_GIVEN:
                    values[name] = given.get(name)
                    continue
            values[name] = value = reader(self, declared)
            if checks and name in checks:
                checks[name](value, self.problems, values)
        if section.unknown_fields is _SKIP_ENTRY:
            self._refuse_unknown(section.field_names)
        elif section.unknown_fields is _NEAR_MISS_SKIPS:
            self._refuse_near_misses(section.field_names)
        return values

    def _ignoring(self, declared: Field) -> Any:
        """A field whose mistake is ignored: its value, or (with a note) its declared default,
        None without one: as if it were not there."""
        problems, self.problems = self.problems, []
        try:
            value = _READERS[declared.type](self, declared)
            noted = self.problems
        finally:
            self.problems = problems
        if not noted:
            return value
        default = declared.default
        ignored = "ignored" if default is None else f"read as {_lua_text(default)}"
        self.ignored.extend(f"{note}; {ignored}" for note in noted)
        return default

    def read_fields(self, declared: Sequence[Field]) -> list[Any]:
        """Several fields' values in order, each as `read` gives it."""
        return [_READERS[field.type](self, field) for field in declared]

    def read(self, declared: Field) -> Any:
        """One field's value as its declaration says it is read; None when it is wrong."""
        return _READERS[declared.type](self, declared)

    def _table(self, declared: Field) -> dict[str, Any] | None:
        """A table with fields of its own, read as a section of one entry (required,
        required-when, an undeclared field is a problem); None when it is not such a table."""
        value = self.table.get(declared.name)
        if not isinstance(value, LuaTable) or (value.entries and value.is_sequence()):
            self._bad(declared.name, f"a table like {_lua_example(declared.example)}")
            return None
        before = len(self.problems)
        inner = EntryReader(value, self.problems, f"{self.prefix}{declared.name}.", self.hints)
        values = inner.read_entry(_nested_section(declared))
        return values if len(self.problems) == before else None

    def _bad(self, name: str, wanted: str) -> None:
        value = self.table.get(name)
        got = "missing" if value is None else f"is {describe(plain(value))}"
        self.problems.append(f"{self.prefix}{name} {got}; it must be {wanted}")

    def _guid(self, declared: Field) -> str | None:
        guid = parse_guid(self.table.get(declared.name))
        if guid is None:
            self._bad(declared.name, "a GUID")
        return guid

    def _string(self, declared: Field, blank_ok: bool) -> str | None:
        value = self.table.get(declared.name)
        if not (isinstance(value, str) and (blank_ok or value.strip())):
            self._bad(declared.name, "a string" if blank_ok else "a non-blank string")
            return None
        if declared.pattern and not re.fullmatch(declared.pattern, value):
            self.problems.append(f"{declared.name} {describe(value)} must be {declared.rule}")
        return value

    def _choice(self, declared: Field) -> str | None:
        given = self.table.get(declared.name)
        value = parse_choice(given, declared.choices)
        if value is None:
            choices = declared.choices
            near = _near_choice(given, choices, self.hints)
            self._bad(declared.name, f"one of {', '.join(choices)}{near}")
        return value

    def _whole_number(self, declared: Field) -> int | None:
        value = self.table.get(declared.name)
        low, high = declared.minimum, declared.maximum
        assert low is not None and high is not None
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and float(value).is_integer()
            and low <= value <= high
        ):
            return int(value)
        self._bad(declared.name, f"a whole number from {int(low)} to {int(high)}")
        return None

    def _number(self, declared: Field) -> float | None:
        value = self.table.get(declared.name)
        low, high = declared.minimum, declared.maximum
        assert low is not None and high is not None
        if isinstance(value, int | float) and not isinstance(value, bool) and low < value <= high:
            return float(value)
        self.problems.append(
            f"{declared.name} is {describe(plain(value))}; it must be a number "
            f"above {low:g} and at most {high:g}"
        )
        return None

    def _flag(self, declared: Field) -> bool:
        value = self.table.get(declared.name)
        if not isinstance(value, bool):
            self.problems.append(
                f"{declared.name} must be true or false, not {describe(plain(value))}"
            )
        return value is True

    def _texts(self, declared: Field) -> tuple[str, ...]:
        name = declared.name
        value = self.table.get(name)
        if not isinstance(value, LuaTable) or not value.is_sequence():
            self.problems.append(f'{name} must be a list of texts such as {{ "a", "b" }}')
            return ()
        items = value.sequence()
        if not all(isinstance(item, str) for item in items):
            self.problems.append(f"{name} must hold only texts")
            return ()
        return tuple(str(item) for item in items)

    def _secret_texts(self, declared: Field) -> dict[str, str | SecretValue]:
        """Plain texts, except that a secret-looking name needs an ENC:v1 value."""
        from policy.secrets import is_encrypted

        name = declared.name
        value = self.table.get(name)
        if not isinstance(value, LuaTable):
            self.problems.append(f'{name} must be a table {{ ["NAME"] = "value" }}')
            return {}
        found: dict[str, str | SecretValue] = {}
        for key, text in value.entries.items():
            if not isinstance(key, str) or not isinstance(text, str):
                self.problems.append(f"{name}[{describe(key)}] must be a text")
                continue
            if is_encrypted(text):
                secret = checked_secret(text, f"{name}[{describe(key)}]", self.problems)
                if secret is not None:
                    found[key] = secret
            elif _SECRET_NAME.search(key):
                self.problems.append(
                    f"{name}[{describe(key)}] looks like a secret and is not an ENC:v1: value; "
                    "plaintext secrets are refused (encrypt it with `policy encrypt`)"
                )
            else:
                found[key] = text
        return found

    def _choice_lists(self, declared: Field) -> dict[str, tuple[str, ...]]:
        name, choices = declared.name, declared.choices
        value = self.table.get(name)
        example = f'{{ ["name"] = {{ "{choices[0]}" }} }}'
        if not isinstance(value, LuaTable):
            self.problems.append(f"{name} must be a table like {example}")
            return {}
        found: dict[str, tuple[str, ...]] = {}
        for key, item in value.entries.items():
            words = item.sequence() if isinstance(item, LuaTable) and item.is_sequence() else None
            if not isinstance(key, str) or words is None:
                self.problems.append(f"{name}[{describe(key)}] must be a list like {example}")
                continue
            read = [parse_choice(word, choices) for word in words]
            for word, got in zip(words, read, strict=True):
                if got is None:
                    self.problems.append(
                        f"{name}[{describe(key)}]: {describe(plain(word))} is not one of "
                        f"{', '.join(choices)}{_near_choice(word, choices, self.hints)}"
                    )
            found[key] = tuple(choice for choice in choices if choice in read)
        return found

    def _pins(self, declared: Field) -> dict[str, str]:
        name = declared.name
        value = self.table.get(name)
        if not isinstance(value, LuaTable):
            self.problems.append(f'{name} must be a table {{ ["tool_name"] = "sha256:..." }}')
            return {}
        pins: dict[str, str] = {}
        for tool_name, pin in value.entries.items():
            if not (isinstance(tool_name, str) and isinstance(pin, str)):
                self.problems.append(
                    f"{name}[{describe(tool_name)}] must map a tool name to a "
                    '"sha256:<64 hex digits>" text'
                )
            elif not re.fullmatch(declared.pattern, pin.strip()):
                self.problems.append(
                    f"{name}[{describe(tool_name)}] = {describe(pin)} is not "
                    '"sha256:<64 lower-case hex digits>" (policy mcp pin prints them)'
                )
            else:
                pins[tool_name] = pin.strip()
        return pins

    def _secret(self, declared: Field) -> SecretValue | None:
        return checked_secret(
            self.table.get(declared.name),
            f"{self.prefix}{declared.name}",
            self.problems,
            required=declared.required or bool(declared.required_when),
        )

    def _flags(self, declared: Field) -> dict[str, bool]:
        """Name → true or false; a name is read in any case and with or without underscores
        (AI Studio only knows its own spelling: such a key is a note in `compat`)."""
        name, choices = declared.name, declared.choices
        value = self.table.get(name)
        if not isinstance(value, LuaTable):
            self.problems.append(f"{name} must be a table of name = true/false")
            return {}
        flags: dict[str, bool] = {}
        folded = {choice.replace("_", ""): choice for choice in choices}
        for key, flag in value.entries.items():
            meant = folded.get(str(key).replace("_", "").upper()) if isinstance(key, str) else None
            if meant is None:
                hint = self.hints.did_you_mean(str(key), choices) if self.hints else ""
                self.problems.append(
                    f"{name} key {describe(key)} is not one of the names{hint} "
                    f"(known: {', '.join(choices)})"
                )
            elif not isinstance(flag, bool):
                self.problems.append(
                    f"{name}.{key} must be true or false, not {describe(plain(flag))}"
                )
            else:
                if meant.upper() != str(key).upper():
                    self.compat.append(
                        f'{name} key "{key}" is read as {meant}; AI Studio only knows the '
                        f"spelling {meant} and ignores this key"
                    )
                flags[meant] = flag
        return flags

    def _refuse_near_misses(self, known: frozenset[str]) -> None:
        """Unknown fields that look like a known one misspelled (an AI Studio field toolpolicy
        does not know, with no near miss, is kept as it is)."""
        if self.hints is None:
            return
        for key in self.table.entries:
            if isinstance(key, str) and key not in known:
                meant = self.hints.closest_name(key, known)
                if meant is not None:
                    self.problems.append(
                        f'unknown field "{key}"; did you mean "{meant}"? (known: '
                        f"{', '.join(sorted(known))})"
                    )

    def _refuse_unknown(self, known: frozenset[str]) -> None:
        for key in self.table.entries:
            if key not in known:  # perhaps a filter or pin misspelled: never ignored
                hint = self.hints.did_you_mean(str(key), known) if self.hints else ""
                self.problems.append(
                    f"unknown field {describe(key)}{hint} (known: {', '.join(sorted(known))})"
                )


_NESTED: dict[int, tuple[Field, Section]] = {}


def _nested_section(declared: Field) -> Section:
    """A table field's fields as a section of one entry, made once per field (`read_entry`
    works out how to read a section once, by its identity)."""
    kept = _NESTED.get(id(declared))
    if kept is None:
        section = Section(declared.name, declared.doc, declared.fields, True, _SKIP_ENTRY)
        kept = _NESTED[id(declared)] = (declared, section)
    return kept[1]


def _lua_example(example: Any) -> str:
    if not isinstance(example, Mapping):
        return "{ ... }"
    fields = ", ".join(f'["{k}"] = "{v}"' for k, v in example.items())
    return f"{{ {fields} }}"


_READERS: dict[FieldType, Callable[[EntryReader, Field], Any]] = {
    FieldType.GUID: EntryReader._guid,
    FieldType.TEXT: partial(EntryReader._string, blank_ok=True),
    FieldType.NONBLANK_TEXT: partial(EntryReader._string, blank_ok=False),
    FieldType.CHOICE: EntryReader._choice,
    FieldType.WHOLE_NUMBER: EntryReader._whole_number,
    FieldType.NUMBER: EntryReader._number,
    FieldType.BOOL: EntryReader._flag,
    FieldType.TEXT_LIST: EntryReader._texts,
    FieldType.SECRET_TEXT_MAP: EntryReader._secret_texts,
    FieldType.PIN_MAP: EntryReader._pins,
    FieldType.CHOICE_LIST_MAP: EntryReader._choice_lists,
    FieldType.FLAG_MAP: EntryReader._flags,
    FieldType.SECRET: EntryReader._secret,
    FieldType.TABLE: EntryReader._table,
}
"""How each type is read."""


_REQUIRED, _WHEN, _OPTIONAL, _AS_GIVEN = range(4)
"""How `read_entry` reads a field: always; when its conditions hold; when given; as given."""
_FRESH_MAP = object()
"""The value of a map field that is not read: a new empty dict each time."""
_Plan = tuple[
    tuple[str, int, Callable[[EntryReader, Field], Any], Field, tuple[tuple[str, str], ...], Any],
    ...,
]
_PLANS: dict[tuple[int, frozenset[str]], tuple[Section, _Plan]] = {}


def _plan(section: Section, own: frozenset[str]) -> _Plan:
    """How each field of `section` is read (with the caller reading `own`), worked out once per
    section: an entry is read per configuration load, the declaration does not change."""
    kept = _PLANS.get((id(section), own))
    if kept is not None:
        return kept[1]
    plan = tuple(
        (
            declared.name,
            _AS_GIVEN
            if declared.name in own or not declared.checked
            else _REQUIRED
            if declared.required
            else _WHEN
            if declared.required_when
            else _OPTIONAL,
            EntryReader._ignoring
            if declared.mistake is Mistake.IGNORED
            else _READERS[declared.type],
            declared,
            declared.required_when,
            _FRESH_MAP if declared.type in _EMPTY_MAPS else _absent(declared),
        )
        for declared in section.fields
    )
    _PLANS[(id(section), own)] = (section, plan)  # the section kept: its id stays its own
    return plan


def _absent(declared: Field) -> Any:
    """The value of a field that is not read: its default, else its type's empty value."""
    if declared.default is not None:
        return declared.default
    if declared.type in _EMPTY_MAPS:
        return {}
    return _EMPTY.get(declared.type)


def _lua_text(value: Any) -> str:
    """A default as the administrator writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return describe(value)


def checked_secret(
    value: Any, name: str, problems: list[str], required: bool = False
) -> SecretValue | None:
    """An `ENC:v1:` value that decrypts with the configured secret, else None and why."""
    from policy.secrets import SECRET_SOURCES, configured_secret, is_encrypted

    if value is None:
        if required:
            problems.append(f"{name} is missing; it must be an ENC:v1: value")
        return None
    if not is_encrypted(value):
        problems.append(
            f"{name} is not an ENC:v1: value; plaintext secrets are refused "
            "(encrypt it with `policy encrypt`)"
        )
        return None
    secret = configured_secret()
    if secret is None:
        problems.append(
            f"{name} cannot be decrypted: no encryption secret is configured ({SECRET_SOURCES})"
        )
        return None
    problem = _decryption_problem(value, secret)
    if problem is not None:
        problems.append(f"{name} cannot be decrypted: {problem}")
        return None
    return SecretValue(value)


@lru_cache(maxsize=256)
def _decryption_problem(value: str, secret: str) -> str | None:
    """Why `value` does not decrypt (None = it does). Cached: key derivation costs ~10 ms and a
    configuration is reloaded often; only the verdict is kept, never the plaintext."""
    from policy.secrets import SecretError, decrypt

    try:
        decrypt(value, secret)
    except SecretError as error:
        return error.message
    return None


def _near_choice(value: Any, choices: tuple[str, ...], hints: HintBudget | None) -> str:
    """A did-you-mean for a mistyped name (LLAMACPP → LLAMA_CPP, HTTP → STREAMABLE_HTTP)."""
    if not isinstance(value, str) or hints is None:
        return ""
    meant = hints.closest_name(value, choices)
    return f" (did you mean {meant}?)" if meant else ""


def plain(value: Any) -> Any:
    """Lua data as plain Python: sequences → tuples, other tables → dicts, functions → a marker."""
    if isinstance(value, LuaTable):
        if value.is_sequence():
            return tuple(plain(v) for v in value.sequence())
        return {k: plain(v) for k, v in value.entries.items()}
    if isinstance(value, LuaFunction):
        where = f" defined at {value.location}" if value.location else ""
        return f"<function{where}>"
    return value
