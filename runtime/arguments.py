"""Reading the arguments a model wrote into a tool call.

Model arguments are untrusted: nothing is converted or guessed ("5" is no number, 0 is no page).
A wrong value is refused with an `ArgumentError` whose message the model can correct itself from:
it names the argument, repeats what arrived (cut to 40 characters) and says what would be valid,
and for an optional argument that leaving it out is always possible.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any

from policy import ToolPolicyError

_ECHO_MAX_CHARACTERS = 40
_INT32_MAX = 2**31 - 1

_DATE_PATTERN = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})"
    r"(?::(?P<second>\d{2})(?:\.(?P<fraction>\d{1,7}))?)?"
    r"(?P<zone>Z|[+-]\d{2}:\d{2})?)?",
    re.ASCII,
)
_DATE_EXPECTATION = (
    "must be a date such as 2026-09-01, or a date with a time of day such as 2026-09-01T14:30"
)


def arguments_object(text: str, *, unicode_only: bool = True) -> dict[str, Any]:
    """A tool call's arguments text read as the object it must be: the one rule, which the
    provider adapters (is the call valid?), the executor and traces ask.

    Blank text (empty or whitespace only) is no arguments, `{}`: a provider may stream a call of
    a tool without parameters with no argument text at all. Anything else must be JSON whose root
    is an object; otherwise a `ValueError` says why (the JSON decoder's message, or that the root
    is no object). Every name and string in it must be Unicode text: JSON may escape a lone
    surrogate (`"\\ud800"`), which no UTF-8 encoder writes, so a tool would fail on it (an MCP
    server's session drops with it) — an `ArgumentError` names the argument. Traces pass
    `unicode_only=False`: they write such text escaped (`runtime.trace_text`)."""
    if not text.strip():
        return {}
    try:
        parsed = json.loads(text)
    except RecursionError as error:
        raise ValueError("The arguments are nested too deeply.") from error
    if not isinstance(parsed, dict):
        raise ValueError("The arguments must be a JSON object.")
    if unicode_only and not _is_unicode(text):
        problem = _first_not_unicode(parsed)
        if problem is not None:
            raise problem
    return parsed


def is_arguments_object(text: str) -> bool:
    """Whether `text` is an arguments object (blank text counts: it is `{}`); whether its text is
    Unicode the executor judges, with a message naming the argument."""
    try:
        arguments_object(text, unicode_only=False)
    except ValueError:
        return False
    return True


_NOT_UNICODE = (
    "holds a lone surrogate (such as \\ud800), which is no Unicode text; "
    "write it as Unicode text (a surrogate only as half of a pair)."
)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_unicode(text: str) -> bool:
    """Whether JSON text certainly decodes to Unicode text: no `\\u` escape, no lone surrogate."""
    return "\\u" not in text and (text.isascii() or _encodes(text))


def _first_not_unicode(arguments: dict[str, Any]) -> ArgumentError | None:
    from runtime.trace_text import bounded_name

    for name, value in arguments.items():
        if not _encodes(name):
            shown = bounded_name(name)
            return ArgumentError(shown, f"The argument name '{shown}' {_NOT_UNICODE}")
        pending = [value]
        while pending:
            item = pending.pop()
            if isinstance(item, str):
                bad = not _encodes(item)
            elif isinstance(item, dict):
                bad = not all(_encodes(key) for key in item)
                pending.extend(item.values())
            else:
                bad = False
                if isinstance(item, list):
                    pending.extend(item)
            if bad:
                return ArgumentError(name, f"Argument '{bounded_name(name)}' {_NOT_UNICODE}")
    return None


class ArgumentError(ToolPolicyError, ValueError):
    """A model argument that cannot be used; the message is meant for the model to read."""

    code = "argument"

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


def echo(value: Any) -> str:
    """The value's JSON text as the model wrote it, cut to 40 characters plus "..."."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = "a value that cannot be written as JSON"
    if len(text) > _ECHO_MAX_CHARACTERS:
        return text[:_ECHO_MAX_CHARACTERS] + "..."
    return text


def _choices_text(allowed: Sequence[str]) -> str:
    return ", ".join(allowed)


def has_control_character(text: str) -> bool:
    """Whether `text` holds a control character (line breaks and tabs included)."""
    return any(unicodedata.category(ch) == "Cc" for ch in text)


class ArgumentReader:
    """Reads one call's arguments. Absent and JSON null both count as left out."""

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self._arguments = arguments

    def _value(self, name: str) -> Any:
        return self._arguments.get(name)

    def _refuse_optional(self, name: str, reason: str, when_left_out: str) -> ArgumentError:
        hint = f" {when_left_out.strip()}" if when_left_out.strip() else ""
        return ArgumentError(name, f"{reason} Leave it out{hint}.")

    # -- strings -------------------------------------------------------------------------------

    def read_string(self, name: str) -> str:
        """A required, non-empty string, trimmed."""
        value = self._value(name)
        if value is None:
            raise ArgumentError(name, f"Missing required argument '{name}'.")
        if not isinstance(value, str):
            raise ArgumentError(name, f"Argument '{name}' must be a string, but was {echo(value)}.")
        trimmed = value.strip()
        if not trimmed:
            raise ArgumentError(
                name, f"Argument '{name}' must be a non-empty string, but was {echo(value)}."
            )
        return trimmed

    def optional_string(self, name: str, when_left_out: str) -> str | None:
        """An optional string, trimmed (may be "")."""
        value = self._value(name)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self._refuse_optional(
                name, f"Argument '{name}' must be a string, but was {echo(value)}.", when_left_out
            )
        return value.strip()

    def read_line(self, name: str, max_characters: int) -> str:
        """A required single line of text, trimmed, at most `max_characters` long."""
        text = self.read_string(name)
        problem = _line_problem(name, text, max_characters)
        if problem:
            raise ArgumentError(name, problem)
        return text

    def optional_line(self, name: str, max_characters: int, when_left_out: str) -> str | None:
        """An optional single line of text, trimmed, non-empty, at most `max_characters` long."""
        text = self.optional_string(name, when_left_out)
        if text is None:
            return None
        problem = _line_problem(name, text, max_characters)
        if problem:
            raise self._refuse_optional(name, problem, when_left_out)
        return text

    # -- numbers and flags ---------------------------------------------------------------------

    def optional_positive_int(self, name: str, when_left_out: str) -> int | None:
        """A JSON integer from 1 to 2,147,483,647; no strings, fractions or booleans."""
        value = self._value(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _INT32_MAX:
            raise self._refuse_optional(
                name,
                f"Argument '{name}' must be a positive integer, but was {echo(value)}.",
                when_left_out,
            )
        return value

    def optional_boolean(self, name: str, when_left_out: str) -> bool | None:
        """JSON true or false only; "true", 1 and "yes" are refused."""
        value = self._value(name)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self._refuse_optional(
                name,
                f"Argument '{name}' must be true or false, but was {echo(value)}.",
                when_left_out,
            )
        return value

    # -- dates ---------------------------------------------------------------------------------

    def optional_date(
        self, name: str, user_time_zone: tzinfo, when_left_out: str
    ) -> datetime | None:
        """A date or date-time; without an offset it is read in the user's time zone.

        Accepted: 2026-09-01, 2026-09-01T14:30, …:05, …:05.1234567, each optionally followed by
        an offset (+02:00) or Z. A bare date means midnight in the user's time zone.
        """
        value = self._value(name)
        if value is None:
            return None
        parsed = _parse_date(value.strip(), user_time_zone) if isinstance(value, str) else None
        if parsed is None:
            raise self._refuse_optional(
                name,
                f"Argument '{name}' {_DATE_EXPECTATION}, but was {echo(value)}.",
                when_left_out,
            )
        return parsed

    # -- choices -------------------------------------------------------------------------------

    def read_choice(self, name: str, allowed: Sequence[str]) -> str:
        """A required value out of `allowed`, compared exactly after trimming."""
        value = self._value(name)
        if value is None:
            raise ArgumentError(name, f"Missing required argument '{name}'.")
        choice = _exact_choice(value, allowed)
        if choice is None:
            raise ArgumentError(
                name,
                f"Argument '{name}' must be one of {_choices_text(allowed)}, "
                f"but was {echo(value)}.",
            )
        return choice

    def optional_choice(self, name: str, allowed: Sequence[str], when_left_out: str) -> str | None:
        """An optional value out of `allowed`, compared exactly after trimming."""
        value = self._value(name)
        if value is None:
            return None
        choice = _exact_choice(value, allowed)
        if choice is None:
            raise self._refuse_optional(
                name,
                f"Argument '{name}' must be one of {_choices_text(allowed)}, "
                f"but was {echo(value)}.",
                when_left_out,
            )
        return choice

    def optional_choices(
        self, name: str, allowed: Sequence[str], when_left_out: str
    ) -> list[str] | None:
        """A non-empty list of values out of `allowed`; duplicates dropped, the model's order kept."""
        value = self._value(name)
        if value is None:
            return None
        if not isinstance(value, list) or not value:
            raise self._refuse_optional(
                name,
                f"Argument '{name}' must be a list of one or more of {_choices_text(allowed)}, "
                f"but was {echo(value)}.",
                when_left_out,
            )
        chosen: list[str] = []
        for item in value:
            choice = _exact_choice(item, allowed)
            if choice is None:
                raise self._refuse_optional(
                    name,
                    f"Every value of argument '{name}' must be one of {_choices_text(allowed)}, "
                    f"but one was {echo(item)}.",
                    when_left_out,
                )
            if choice not in chosen:
                chosen.append(choice)
        return chosen


def _exact_choice(value: Any, allowed: Iterable[str]) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed if trimmed in allowed else None


def _line_problem(name: str, text: str, max_characters: int) -> str | None:
    if not text:
        return f"Argument '{name}' must not be empty."
    if len(text) > max_characters:
        return (
            f"Argument '{name}' must be at most {max_characters} characters long, "
            f"but had {len(text)}."
        )
    if has_control_character(text):
        return (
            f"Argument '{name}' must not contain control characters such as line breaks. "
            "Write it as a single line."
        )
    return None


def _parse_date(text: str, user_time_zone: tzinfo) -> datetime | None:
    match = _DATE_PATTERN.fullmatch(text)
    if match is None:
        return None
    part = match.groupdict()
    fraction = (part["fraction"] or "").ljust(6, "0")[:6]
    zone: tzinfo = user_time_zone
    if part["zone"] == "Z":
        zone = UTC
    elif part["zone"]:
        sign = -1 if part["zone"][0] == "-" else 1
        hours, minutes = int(part["zone"][1:3]), int(part["zone"][4:6])
        if hours > 14 or minutes > 59:
            return None
        zone = timezone(sign * timedelta(hours=hours, minutes=minutes))
    try:
        return datetime(
            int(part["year"]),
            int(part["month"]),
            int(part["day"]),
            int(part["hour"] or 0),
            int(part["minute"] or 0),
            int(part["second"] or 0),
            int(fraction),
            tzinfo=zone,
        )
    except ValueError:
        return None
