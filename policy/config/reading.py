"""Reading one configuration entry's fields as their declarations say: the reader's checks.

`EntryReader` reads a field of a Lua table by its declared type and collects what is wrong in
the words `policy check` shows; `EntryReader.read_entry` reads every declared field of a section
in order (a field required by another's value only when that value holds, an optional one only
when given) and the undeclared ones as the section says. The plugin loader (`policy.plugins`)
adds what is not a field's own rule — a provider's address, a data source's credentials, a
server's URL — beside it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache, partial
from typing import Any

from policy.config.fields import Field, FieldType, Section, UnknownFields
from policy.config.guid import parse_guid
from policy.config.settings import describe, parse_choice
from policy.configuration import SecretValue
from policy.lua_sandbox import LuaFunction, LuaTable
from policy.suggest import HintBudget

FieldCheck = Callable[[Any, list[str]], None]
"""A rule beyond the field's own, run right after the field is read (value, problems)."""

_SKIP_ENTRY = UnknownFields.SKIP_ENTRY  # enum members are slow to look up on their class
_SECRET_NAME = re.compile(r"(?i)auth|token|secret|passw|key|cookie|credential")
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

    def read_entry(
        self, section: Section, checks: Mapping[str, FieldCheck] | None = None
    ) -> dict[str, Any]:
        """Every declared field by name, in declared order: its value, its default when it is
        not read, None when it is wrong; then the undeclared fields as the section says."""
        values: dict[str, Any] = {}
        given = self.table.entries
        for declared in section.fields:
            name = declared.name
            if declared.required:
                pass
            elif declared.required_when:
                if not all(values.get(n) == v for n, v in declared.required_when):
                    values[name] = _absent(declared)
                    continue
            elif given.get(name) is None:
                values[name] = _absent(declared)
                continue
            values[name] = value = _READERS[declared.type](self, declared)
            if checks and name in checks:
                checks[name](value, self.problems)
        if section.unknown_fields is _SKIP_ENTRY:
            self._refuse_unknown(section.field_names)
        return values

    def read_fields(self, declared: Sequence[Field]) -> list[Any]:
        """Several fields' values in order, each as `read` gives it."""
        return [_READERS[field.type](self, field) for field in declared]

    def read(self, declared: Field) -> Any:
        """One field's value as its declaration says it is read; None when it is wrong."""
        reader = _READERS.get(declared.type)
        if reader is None:
            raise ValueError(f"{declared.name}: a {declared.type} field is read by its own code")
        return reader(self, declared)

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
            near = near_choice(given, choices, self.hints)
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
                        f"{', '.join(choices)}{near_choice(word, choices, self.hints)}"
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

    def _refuse_unknown(self, known: frozenset[str]) -> None:
        for key in self.table.entries:
            if key not in known:  # perhaps a filter or pin misspelled: never ignored
                hint = self.hints.did_you_mean(str(key), known) if self.hints else ""
                self.problems.append(
                    f"unknown field {describe(key)}{hint} (known: {', '.join(sorted(known))})"
                )


def _nested_section(declared: Field) -> Section:
    return Section(declared.name, declared.doc, declared.fields, True, _SKIP_ENTRY)


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
    FieldType.TABLE: EntryReader._table,
}
"""How each type is read; FLAG_MAP and SECRET fields are read by the loader's own code."""


def _absent(declared: Field) -> Any:
    """The value of a field that is not read: its default, else its type's empty value."""
    if declared.default is not None:
        return declared.default
    if declared.type in _EMPTY_MAPS:
        return {}
    return _EMPTY.get(declared.type)


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


def near_choice(value: Any, choices: tuple[str, ...], hints: HintBudget | None) -> str:
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
