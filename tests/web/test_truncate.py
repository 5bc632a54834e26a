"""Markdown truncation: marker, break positions, the length bound."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from runtime.web.truncate import TRUNCATION_MARKER, truncate_markdown


def test_the_marker_is_exactly_as_specified() -> None:
    assert TRUNCATION_MARKER == "[Page content truncated]"
    assert len(TRUNCATION_MARKER) == 24


def test_text_that_fits_comes_back_unchanged() -> None:
    text = "short\n\ntext  "
    assert truncate_markdown(text, len(text)) == text
    assert truncate_markdown(text, 1000) == text


def test_a_tiny_limit_cuts_hard_without_marker() -> None:
    assert truncate_markdown("x" * 100, 24) == "x" * 24
    assert truncate_markdown("x" * 100, 5) == "xxxxx"
    assert truncate_markdown("x" * 100, 0) == ""
    assert truncate_markdown("x" * 100, 25) == "x" * 25


def test_at_exactly_the_room_of_the_marker_only_the_marker_remains() -> None:
    assert truncate_markdown("x" * 100, 26) == "\n\n" + TRUNCATION_MARKER


def test_the_cut_prefers_the_last_paragraph_break() -> None:
    markdown = "a" * 40 + "\n\n" + "b" * 30 + "\n" + "c" * 100
    result = truncate_markdown(markdown, 100)
    # limit = 74: the last blank line (40) is past limit/2 (37), so it wins over the line break.
    assert result == "a" * 40 + "\n\n" + TRUNCATION_MARKER


def test_a_paragraph_break_too_early_falls_back_to_the_last_line_break() -> None:
    markdown = "a" * 10 + "\n\n" + "b" * 40 + "\n" + "c" * 100
    result = truncate_markdown(markdown, 100)
    assert result == "a" * 10 + "\n\n" + "b" * 40 + "\n\n" + TRUNCATION_MARKER


def test_without_usable_breaks_the_cut_is_hard_at_the_limit() -> None:
    markdown = "x\n" + "y" * 200
    result = truncate_markdown(markdown, 100)
    assert result == ("x\n" + "y" * 200)[:74] + "\n\n" + TRUNCATION_MARKER
    assert len(result) == 100


def test_trailing_whitespace_before_the_marker_is_trimmed() -> None:
    markdown = "a" * 50 + "   \n\n" + "b" * 200
    assert truncate_markdown(markdown, 100) == "a" * 50 + "\n\n" + TRUNCATION_MARKER


def test_a_negative_limit_is_refused_with_the_value() -> None:
    with pytest.raises(ValueError, match="-1"):
        truncate_markdown("text", -1)


@given(st.text(alphabet="ab \n", max_size=400), st.integers(min_value=0, max_value=300))
@example("x" * 40, 25)
def test_the_result_never_exceeds_the_limit(markdown: str, max_characters: int) -> None:
    result = truncate_markdown(markdown, max_characters)
    assert len(result) <= max_characters
    if len(markdown) > max_characters >= len(TRUNCATION_MARKER) + 2:
        assert result.endswith("\n\n" + TRUNCATION_MARKER)
