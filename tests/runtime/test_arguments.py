"""The argument reader refuses what it cannot use, with a message the model can correct from."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from runtime.arguments import ArgumentError, ArgumentReader, arguments_object, is_arguments_object

BERLIN = ZoneInfo("Europe/Berlin")
TIME_RANGES = ["day", "week", "month", "year"]
FIRST_PAGE = "to get the first page"


def reader(**arguments: Any) -> ArgumentReader:
    """Arguments as they arrive from a model: through JSON."""
    return ArgumentReader(json.loads(json.dumps(arguments)))


def refusal(call: Any) -> str:
    with pytest.raises(ArgumentError) as caught:
        call()
    return str(caught.value)


# -- required strings ------------------------------------------------------------------------------


def test_a_required_string_comes_through_trimmed() -> None:
    assert reader(query="  rust async  ").read_string("query") == "rust async"


@pytest.mark.parametrize("arguments", [{}, {"query": None}])
def test_a_missing_query_is_refused(arguments: dict[str, Any]) -> None:
    assert refusal(lambda: reader(**arguments).read_string("query")) == (
        "Missing required argument 'query'."
    )


def test_a_query_which_is_no_string_is_refused_without_offering_to_leave_it_out() -> None:
    message = refusal(lambda: reader(query=5).read_string("query"))
    assert message == "Argument 'query' must be a string, but was 5."
    assert "Leave it out" not in message


def test_an_empty_required_string_is_refused_as_empty() -> None:
    message = refusal(lambda: reader(query="   ").read_string("query"))
    assert message == "Argument 'query' must be a non-empty string, but was \"   \"."


def test_the_error_names_the_argument() -> None:
    with pytest.raises(ArgumentError) as caught:
        reader(query=1).read_string("query")
    assert caught.value.argument == "query"
    assert isinstance(caught.value, ValueError)


# -- optional strings and lines --------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [{}, {"language": None}])
def test_an_argument_left_out_or_null_is_not_set(arguments: dict[str, Any]) -> None:
    assert reader(**arguments).optional_string("language", "to search in any language") is None


def test_a_language_which_is_no_string_is_refused() -> None:
    message = refusal(
        lambda: reader(language=["de"]).optional_string("language", "to search in any language")
    )
    assert message == (
        "Argument 'language' must be a string, but was [\"de\"]. "
        "Leave it out to search in any language."
    )


def test_an_optional_string_may_be_empty_after_trimming() -> None:
    assert reader(note="  ").optional_string("note", "for none") == ""


def test_a_line_comes_through_trimmed() -> None:
    assert reader(title="  Release plan ").optional_line("title", 20, "for all") == "Release plan"
    assert reader(title=" x ").read_line("title", 5) == "x"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("  ", "Argument 'title' must not be empty."),
        ("x" * 21, "Argument 'title' must be at most 20 characters long, but had 21."),
        (
            "two\nlines",
            "Argument 'title' must not contain control characters such as line breaks. "
            "Write it as a single line.",
        ),
        ("tab\there", "must not contain control characters"),
    ],
)
def test_an_empty_or_long_or_broken_line_is_refused(value: str, reason: str) -> None:
    message = refusal(lambda: reader(title=value).optional_line("title", 20, "for all pages"))
    assert reason in message
    assert message.endswith(" Leave it out for all pages.")


def test_a_required_line_is_refused_without_a_leave_out_hint() -> None:
    message = refusal(lambda: reader(title="a\nb").read_line("title", 20))
    assert "single line" in message
    assert "Leave it out" not in message


# -- positive integers -----------------------------------------------------------------------------


def test_a_positive_integer_comes_through() -> None:
    assert reader(page=3).optional_positive_int("page", FIRST_PAGE) == 3
    assert reader(page=2**31 - 1).optional_positive_int("page", FIRST_PAGE) == 2**31 - 1


@pytest.mark.parametrize(
    ("raw", "shown"),
    [("0", "0"), ("-1", "-1"), ("2.5", "2.5"), ('"5"', '"5"'), ("true", "true"), ("2.0", "2.0")],
)
def test_a_wrong_page_is_refused_with_what_arrived(raw: str, shown: str) -> None:
    arguments = ArgumentReader(json.loads(f'{{"page": {raw}}}'))
    assert refusal(lambda: arguments.optional_positive_int("page", FIRST_PAGE)) == (
        f"Argument 'page' must be a positive integer, but was {shown}. "
        "Leave it out to get the first page."
    )


def test_a_number_beyond_32_bits_is_refused() -> None:
    message = refusal(lambda: reader(limit=2**31).optional_positive_int("limit", "for 5"))
    assert "must be a positive integer, but was 2147483648." in message


# -- booleans --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_comes_through_as_it_is(value: bool) -> None:
    assert reader(exact=value).optional_boolean("exact", "to match loosely") is value


@pytest.mark.parametrize(("value", "shown"), [("true", '"true"'), (1, "1"), ("yes", '"yes"')])
def test_anything_but_a_boolean_is_refused(value: Any, shown: str) -> None:
    assert refusal(lambda: reader(exact=value).optional_boolean("exact", "to match loosely")) == (
        f"Argument 'exact' must be true or false, but was {shown}. Leave it out to match loosely."
    )


# -- dates -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-09-01", datetime(2026, 9, 1, 0, 0, tzinfo=BERLIN)),
        ("2026-09-01T14:30", datetime(2026, 9, 1, 14, 30, tzinfo=BERLIN)),
        ("2026-09-01T14:30:05", datetime(2026, 9, 1, 14, 30, 5, tzinfo=BERLIN)),
        ("2026-09-01T14:30:05.1234567", datetime(2026, 9, 1, 14, 30, 5, 123456, tzinfo=BERLIN)),
        ("2026-01-15T08:00", datetime(2026, 1, 15, 8, 0, tzinfo=BERLIN)),
    ],
)
def test_a_date_without_an_offset_is_read_in_the_time_zone_of_the_user(
    text: str, expected: datetime
) -> None:
    read = reader(since=text).optional_date("since", BERLIN, "for any time")
    assert read == expected
    assert read is not None and read.utcoffset() == expected.utcoffset()


def test_a_date_in_summer_and_winter_gets_the_offset_of_its_day() -> None:
    summer = reader(d="2026-07-01").optional_date("d", BERLIN, "")
    winter = reader(d="2026-01-01").optional_date("d", BERLIN, "")
    assert summer is not None and summer.utcoffset() == timedelta(hours=2)
    assert winter is not None and winter.utcoffset() == timedelta(hours=1)


def test_an_offset_is_kept_and_z_means_utc() -> None:
    with_offset = reader(d="2026-09-01T14:30+05:30").optional_date("d", BERLIN, "")
    utc = reader(d="2026-09-01T14:30:00Z").optional_date("d", BERLIN, "")
    assert with_offset == datetime(2026, 9, 1, 14, 30, tzinfo=timezone(timedelta(hours=5.5)))
    assert with_offset is not None and with_offset.utcoffset() == timedelta(hours=5, minutes=30)
    assert utc == datetime(2026, 9, 1, 14, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    "value", ["yesterday", "01.09.2026", "2026-9-1", "2026-02-30", 20260901, "2026-09-01T25:00"]
)
def test_a_date_in_another_form_is_refused(value: Any) -> None:
    message = refusal(lambda: reader(since=value).optional_date("since", BERLIN, "for any time"))
    assert message == (
        "Argument 'since' must be a date such as 2026-09-01, or a date with a time of day such as "
        f"2026-09-01T14:30, but was {json.dumps(value)}. Leave it out for any time."
    )


# -- choices ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", TIME_RANGES)
def test_every_offered_time_range_is_accepted(value: str) -> None:
    assert reader(time_range=f" {value} ").optional_choice("time_range", TIME_RANGES, "") == value


@pytest.mark.parametrize(
    ("value", "shown"), [("", '""'), ("Day", '"Day"'), ("decade", '"decade"'), (5, "5")]
)
def test_a_wrong_time_range_is_refused_with_the_values_that_would_do(
    value: Any, shown: str
) -> None:
    message = refusal(
        lambda: reader(time_range=value).optional_choice(
            "time_range", TIME_RANGES, "for results of any age"
        )
    )
    assert message == (
        f"Argument 'time_range' must be one of day, week, month, year, but was {shown}. "
        "Leave it out for results of any age."
    )


def test_a_required_choice_is_refused_without_a_hint_and_missing_is_missing() -> None:
    assert refusal(lambda: reader(mode="x").read_choice("mode", ["a", "b"])) == (
        "Argument 'mode' must be one of a, b, but was \"x\"."
    )
    assert (
        refusal(lambda: reader().read_choice("mode", ["a"])) == "Missing required argument 'mode'."
    )
    assert reader(mode=" b").read_choice("mode", ["a", "b"]) == "b"


@pytest.mark.parametrize("arguments", [{}, {"ids": None}])
def test_a_list_left_out_is_not_set(arguments: dict[str, Any]) -> None:
    assert reader(**arguments).optional_choices("ids", ["a", "b"], "to search all") is None


def test_offered_values_come_through_once_each_in_their_order() -> None:
    read = reader(ids=[" c", "a", "c ", "a"]).optional_choices("ids", ["a", "b", "c"], "for all")
    assert read == ["c", "a"]


@pytest.mark.parametrize(("value", "shown"), [([], "[]"), ("a", '"a"'), ({"a": 1}, '{"a": 1}')])
def test_an_empty_list_or_no_list_is_refused_with_the_values_that_would_do(
    value: Any, shown: str
) -> None:
    message = refusal(
        lambda: reader(ids=value).optional_choices("ids", ["a", "b"], "to search all data sources")
    )
    assert message == (
        f"Argument 'ids' must be a list of one or more of a, b, but was {shown}. "
        "Leave it out to search all data sources."
    )


@pytest.mark.parametrize(
    ("item", "shown"), [("A", '"A"'), ("zzz", '"zzz"'), (None, "null"), (1, "1")]
)
def test_a_value_not_offered_is_refused_on_its_own(item: Any, shown: str) -> None:
    message = refusal(
        lambda: reader(ids=["a", item]).optional_choices("ids", ["a", "b"], "to search all")
    )
    assert message == (
        f"Every value of argument 'ids' must be one of a, b, but one was {shown}. "
        "Leave it out to search all."
    )


# -- echo ------------------------------------------------------------------------------------------


def test_a_guid_is_repeated_back_whole() -> None:
    guid = "0f8fad5b-d9cb-469f-a165-70867728950e"
    message = refusal(lambda: reader(id=guid).optional_choice("id", ["x"], "for all"))
    assert f'but was "{guid}".' in message


def test_a_long_value_is_shortened_in_the_message() -> None:
    value = "a" * 100
    message = refusal(lambda: reader(time_range=value).optional_choice("time_range", ["day"], ""))
    shown = json.dumps(value)[:40] + "..."
    assert f"but was {shown}." in message
    assert "a" * 50 not in message


def test_non_ascii_is_repeated_back_literally() -> None:
    message = refusal(lambda: reader(q=["größe"]).read_string("q"))
    assert '["größe"]' in message


# -- the arguments are a JSON object (one rule: adapters, executor, traces) -------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ("{}", {}),
        ("", {}),
        ("   ", {}),
        ("\n\t ", {}),
        (' {"a": [1, {"b": null}]} ', {"a": [1, {"b": None}]}),
    ],
)
def test_blank_text_is_no_arguments_and_an_object_is_read(text: str, expected: Any) -> None:
    assert arguments_object(text) == expected
    assert is_arguments_object(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "The arguments must be a JSON object."),
        ('"a"', "The arguments must be a JSON object."),
        ("null", "The arguments must be a JSON object."),
        ("3", "The arguments must be a JSON object."),
        ("{x", "Expecting property name"),
        ("[" * 100_000, "nested too deeply"),
    ],
)
def test_anything_but_an_object_is_refused_saying_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        arguments_object(text)
    assert not is_arguments_object(text)


@pytest.mark.parametrize(
    ("text", "argument", "message"),
    [
        ('{"q": "\\ud800"}', "q", "Argument 'q' holds a lone surrogate"),
        ('{"q": {"deep": ["ok", "\\udfff"]}}', "q", "Argument 'q' holds a lone surrogate"),
        ('{"q": {"\\ud800": 1}}', "q", "Argument 'q' holds a lone surrogate"),
        ('{"\\udbff": 1}', "\\udbff", "The argument name '\\udbff' holds a lone surrogate"),
        ('{"q": "\ud800"}', "q", "Argument 'q' holds a lone surrogate"),
    ],
)
def test_text_that_is_no_unicode_is_refused_naming_the_argument(
    text: str, argument: str, message: str
) -> None:
    with pytest.raises(ArgumentError, match=re.escape(message)) as refused:
        arguments_object(text)
    assert refused.value.argument == argument
    assert "write it as Unicode text" in str(refused.value)
    assert arguments_object(text, unicode_only=False), "traces read it, to write it escaped"
    assert is_arguments_object(text), "the executor refuses it, naming the argument"


def test_surrogate_pairs_and_escaped_backslashes_are_unicode() -> None:
    assert arguments_object('{"e": "\\ud83d\\ude00", "p": "C:\\\\user"}') == {
        "e": "\U0001f600",
        "p": "C:\\user",
    }
