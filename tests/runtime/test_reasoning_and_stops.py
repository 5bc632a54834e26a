"""Reasoning split off the answer and stop reasons, read by each accumulator from its payloads."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.adapters.anthropic import AnthropicAccumulator
from runtime.adapters.anthropic import round_of as anthropic_round
from runtime.adapters.chat_completions import ChatCompletionAccumulator
from runtime.adapters.responses import ResponsesAccumulator
from runtime.adapters.responses import round_of as responses_round
from runtime.messages import StopReason
from tests.servers.provider_scripts import (
    MESSAGE_STOP,
    block_start,
    chat_chunk,
    message_delta,
    message_start,
    responses_completed,
    text_delta,
)


def _chat(*contents: str) -> Any:
    accumulator = ChatCompletionAccumulator()
    payloads = [json.dumps(chat_chunk({"content": c})) for c in contents] + ["[DONE]"]
    shown = "".join(delta.content for p in payloads if (delta := accumulator.feed(p)) is not None)
    message = accumulator.build()
    assert message is not None
    return shown, message


THINKING = "<think>\nplan the answer\n</think>\n\nThe answer."


@given(st.lists(st.integers(1, len(THINKING) - 1), max_size=6, unique=True))
def test_a_leading_think_block_never_shows_wherever_the_chunks_are_cut(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(THINKING)]
    pieces = [THINKING[a:b] for a, b in itertools.pairwise(bounds)]
    shown, message = _chat(*pieces)
    assert shown == message.content == "The answer."
    assert message.think == "\nplan the answer\n"


@pytest.mark.parametrize(
    ("pieces", "answer"),
    [
        (["<html> is a tag"], "<html> is a tag"),
        (["<", "b>bold</b>"], "<b>bold</b>"),
        (["Use <think>", " tags like this"], "Use <think> tags like this"),
        (["  ", "\n", "Hi"], "  \nHi"),
        (["<thi"], "<thi"),
    ],
)
def test_text_that_only_looks_like_a_think_block_is_answer_text(
    pieces: list[str], answer: str
) -> None:
    shown, message = _chat(*pieces)
    assert shown == message.content == answer
    assert message.think == ""


def test_an_unfinished_think_block_is_reasoning_not_answer() -> None:
    shown, message = _chat("<think>still thinking when the stream e", "nded")
    assert shown == "" and message.content is None
    assert message.think == "still thinking when the stream ended"


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("stop", StopReason.COMPLETED),
        ("tool_calls", StopReason.COMPLETED),
        ("length", StopReason.MAX_TOKENS),
        ("content_filter", StopReason.CONTENT_FILTER),
    ],
)
def test_chat_completions_finish_reasons(finish: str, stop: StopReason) -> None:
    accumulator = ChatCompletionAccumulator()
    chunk = chat_chunk({"content": "x"})
    chunk["choices"][0]["finish_reason"] = finish
    accumulator.feed(json.dumps(chunk))
    message = accumulator.build()
    assert message is not None and message.stop_reason is stop


def test_a_refusal_delta_is_shown_and_is_a_refusal() -> None:
    accumulator = ChatCompletionAccumulator()
    delta = accumulator.feed(json.dumps(chat_chunk({"refusal": "I can't help with that."})))
    assert delta is not None and delta.content == "I can't help with that."
    message = accumulator.build()
    assert message is not None and message.stop_reason is StopReason.REFUSAL


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", StopReason.COMPLETED),
        ("tool_use", StopReason.COMPLETED),
        ("stop_sequence", StopReason.COMPLETED),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("model_context_window_exceeded", StopReason.MAX_TOKENS),
        ("pause_turn", StopReason.PAUSED),
        ("refusal", StopReason.REFUSAL),
    ],
)
def test_anthropic_stop_reasons(reason: str, stop: StopReason) -> None:
    accumulator = AnthropicAccumulator()
    for _, event in (
        message_start(),
        block_start(0, {"type": "text", "text": ""}),
        text_delta(0, "Hi"),
        message_delta(reason),
        MESSAGE_STOP,
    ):
        accumulator.feed(json.dumps(event))
    message = accumulator.build()
    assert message is not None
    assert anthropic_round(message).stop_reason is stop


def _responses(event: dict[str, Any]) -> Any:
    accumulator = ResponsesAccumulator()
    accumulator.feed(json.dumps(event))
    response = accumulator.build()
    assert response is not None and accumulator.protocol_error is None
    return responses_round(response)


def test_responses_incomplete_for_the_output_limit_or_a_filter() -> None:
    cut = responses_completed([])
    cut["type"] = "response.incomplete"
    cut["response"].update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    assert _responses(cut).stop_reason is StopReason.MAX_TOKENS
    cut["response"]["incomplete_details"] = {"reason": "content_filter"}
    assert _responses(cut).stop_reason is StopReason.CONTENT_FILTER


def test_a_responses_refusal_part_is_a_refusal_and_shown() -> None:
    refusal = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    round_ = _responses(responses_completed([refusal]))
    assert (round_.text_output, round_.stop_reason) == (
        "I can't help with that.",
        StopReason.REFUSAL,
    )
