"""Whatever JSON a model writes, the argument reader answers with a value or an ArgumentError."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.arguments import ArgumentError, ArgumentReader, is_arguments_object
from runtime.executor import format_arguments, returned_web_addresses

NAMES = ("query", "page", "ids", "when", "flag", "mode")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=60),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
argument_objects = st.dictionaries(
    st.sampled_from(NAMES) | st.text(max_size=8), json_values, max_size=6
)

READS: tuple[Callable[[ArgumentReader], Any], ...] = (
    lambda r: r.read_string("query"),
    lambda r: r.optional_string("query", "for none"),
    lambda r: r.read_line("query", 30),
    lambda r: r.optional_line("query", 30, "for none"),
    lambda r: r.optional_positive_int("page", "for the first page"),
    lambda r: r.optional_boolean("flag", "for no"),
    lambda r: r.optional_date("when", ZoneInfo("Europe/Berlin"), "for any time"),
    lambda r: r.read_choice("mode", ["a", "b"]),
    lambda r: r.optional_choice("mode", ["a", "b"], "for a"),
    lambda r: r.optional_choices("ids", ["x", "y", "z"], "for all"),
)


@settings(max_examples=300, deadline=None)
@given(argument_objects)
def test_random_arguments_give_a_value_or_an_argument_error(arguments: dict[str, Any]) -> None:
    text = json.dumps(arguments, ensure_ascii=False)
    assert is_arguments_object(text)
    reader = ArgumentReader(json.loads(text))
    for read in READS:
        try:
            read(reader)
        except ArgumentError as error:
            assert error.argument in NAMES
            assert str(error).startswith(("Argument '", "Missing required", "Every value"))
            echo_part = str(error).split("but was ", 1)[-1]
            assert len(echo_part) < 200
    formatted = format_arguments(arguments, frozenset({"query"}))
    assert formatted.get("query", "*****") == "*****"
    returned_web_addresses(text, arguments)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_text_as_arguments_json_is_judged_without_an_exception(text: str) -> None:
    valid = is_arguments_object(text)
    if not text.strip():
        assert valid  # blank text is no arguments
        return
    try:
        parsed = json.loads(text)
    except ValueError:
        assert not valid
    else:
        assert valid == isinstance(parsed, dict)


def test_deeply_nested_arguments_are_judged_invalid_rather_than_crashing() -> None:
    assert not is_arguments_object("[" * 100_000)
    assert not is_arguments_object('{"a":' * 100_000)
