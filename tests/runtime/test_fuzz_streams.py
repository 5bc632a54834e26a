"""Random and truncated streams through each accumulator and adapter: rounds fail, nothing crashes.

The only exceptions allowed out of an adapter are the documented `ProviderError` types.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.adapters.anthropic import AnthropicAccumulator, AnthropicAdapter
from runtime.adapters.anthropic import round_of as anthropic_round
from runtime.adapters.chat_completions import ChatCompletionAccumulator, ChatCompletionsAdapter
from runtime.adapters.responses import ResponsesAccumulator, ResponsesAdapter
from runtime.adapters.responses import round_of as responses_round
from runtime.messages import TextDelta
from runtime.providers import (
    ANTHROPIC,
    OPENAI_CHAT_COMPLETIONS,
    OPENAI_RESPONSES,
    ProviderError,
    RetryPolicy,
)
from tests.servers.provider_scripts import (
    MESSAGE_STOP,
    block_delta,
    block_start,
    block_stop,
    chat_call,
    chat_text,
    chat_usage,
    json_delta,
    message_delta,
    message_start,
    responses_call,
    responses_completed,
    responses_item_done,
    responses_message,
    responses_text,
    text_delta,
)
from tests.servers.provider_server import ProviderServer, Reply, running_provider_server
from tests.servers.provider_testkit import client_for, conversation, run_round, web_search_tool

EVENT_TYPES = [
    "response.output_text.delta",
    "response.output_text.annotation.added",
    "response.output_item.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "text_delta",
    "input_json_delta",
    "thinking_delta",
    "signature_delta",
    "tool_use",
    "thinking",
    "text",
    "function_call",
    "message",
    "url_citation",
]
KEYS = [
    "type", "index", "delta", "content_block", "message", "usage", "choices", "tool_calls", "id",
    "function", "name", "arguments", "content", "text", "partial_json", "signature", "thinking",
    "response", "output", "item", "output_index", "annotation", "title", "url", "stop_reason",
    "input_tokens", "prompt_tokens", "call_id", "reasoning_content", "error", "input",
]  # fmt: skip

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 5)
    | st.floats(allow_nan=False)
    | st.sampled_from(EVENT_TYPES)
    | st.text(max_size=8)
)
json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)
    ),
    max_leaves=30,
)
payloads = st.one_of(
    json_values.map(json.dumps),
    st.text(max_size=40),
    st.just("[DONE]"),
    json_values.map(json.dumps).map(lambda s: s[: len(s) // 2]),
)
ACCUMULATORS = [ChatCompletionAccumulator, ResponsesAccumulator, AnthropicAccumulator]


def _chat_stream() -> list[Any]:
    return [
        *chat_text("Let me ", "check."),
        chat_call(0, "call_1", "web_search", '{"query":'),
        chat_call(0, None, None, '"x"}'),
        chat_usage(100),
        "[DONE]",
    ]


def _responses_stream() -> list[Any]:
    items = [responses_message("Hi there"), responses_call("c1", "web_search", '{"query":"x"}')]
    return [
        *responses_text("Hi ", "there"),
        responses_item_done(0, items[0]),
        responses_item_done(1, items[1]),
        responses_completed(items, 50),
    ]


def _anthropic_stream() -> list[Any]:
    return [
        message_start(20)[1],
        block_start(0, {"type": "thinking", "thinking": ""})[1],
        block_delta(0, {"type": "signature_delta", "signature": "sig"})[1],
        block_stop(0)[1],
        block_start(1, {"type": "text", "text": ""})[1],
        text_delta(1, "Looking it up.")[1],
        block_stop(1)[1],
        block_start(2, {"type": "tool_use", "id": "t1", "name": "web_search", "input": {}})[1],
        json_delta(2, '{"query":')[1],
        json_delta(2, '"x"}')[1],
        block_stop(2)[1],
        message_delta("tool_use")[1],
        MESSAGE_STOP[1],
    ]


def _encode(events: list[Any]) -> list[str]:
    return [e if isinstance(e, str) else json.dumps(e) for e in events]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ACCUMULATORS), st.lists(payloads, max_size=25))
def test_random_payloads_never_raise(accumulator_type: type, stream: list[str]) -> None:
    accumulator = accumulator_type()
    for data in stream:
        delta = accumulator.feed(data)
        assert delta is None or isinstance(delta, TextDelta)
    message = accumulator.build()
    if isinstance(accumulator, ResponsesAccumulator) and message is not None:
        responses_round(message)
    if isinstance(accumulator, AnthropicAccumulator) and message is not None:
        anthropic_round(message)


@pytest.mark.parametrize("accumulator_type", ACCUMULATORS)
def test_deeply_nested_json_is_skipped(accumulator_type: type) -> None:
    accumulator = accumulator_type()
    assert accumulator.feed("[" * 100_000 + "]" * 100_000) is None
    assert accumulator.feed('{"type":' * 50_000) is None


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_truncated_anthropic_stream_is_a_failed_round(data: st.DataObject) -> None:
    events = _encode(_anthropic_stream())
    cut = data.draw(st.integers(0, len(events) - 2))  # never reaches message_delta/message_stop
    kept = events[:cut]
    if kept and data.draw(st.booleans()):
        kept[-1] = kept[-1][: data.draw(st.integers(0, len(kept[-1])))]
    accumulator = AnthropicAccumulator()
    for payload in kept:
        accumulator.feed(payload)
    assert accumulator.build() is None


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_truncated_responses_stream_is_a_failed_round(data: st.DataObject) -> None:
    events = _encode(_responses_stream())
    cut = data.draw(st.integers(0, 2))  # text deltas only: no item, no completed event
    accumulator = ResponsesAccumulator()
    for payload in events[:cut]:
        accumulator.feed(payload)
    assert accumulator.build() is None


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_truncated_chat_stream_keeps_what_arrived_whole(data: st.DataObject) -> None:
    events = _encode(_chat_stream())
    cut = data.draw(st.integers(0, len(events)))
    accumulator = ChatCompletionAccumulator()
    for payload in events[:cut]:
        accumulator.feed(payload)
    message = accumulator.build()
    if cut == 0:
        assert message is None
    else:
        assert message is not None
        assert message.content == "".join(["Let me ", "check."][: min(cut, 2)])


# -- through HTTP ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderServer]:
    with running_provider_server() as running:
        yield running


_ADAPTERS = [
    (OPENAI_CHAT_COMPLETIONS, ChatCompletionsAdapter, _chat_stream),
    (OPENAI_RESPONSES, ResponsesAdapter, _responses_stream),
    (ANTHROPIC, AnthropicAdapter, _anthropic_stream),
]
_sse_noise = st.lists(
    st.one_of(
        payloads.map(lambda p: "data: " + p.replace("\n", " ") + "\n\n"),
        st.text(max_size=30),
        st.sampled_from([":\n", "event: x\n", "data:\n\n", "\r\n", "id: 1\n", "retry: x\n"]),
    ),
    max_size=15,
).map("".join)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from(range(len(_ADAPTERS))),
    st.integers(0, 20),
    st.booleans(),
    _sse_noise,
)
def test_any_stream_ends_in_a_round_a_failed_round_or_a_provider_error(
    server: ProviderServer, which: int, cut: int, break_connection: bool, noise: str
) -> None:
    profile, adapter_type, stream = _ADAPTERS[which]
    events = _encode(stream())
    raw = "".join(f"data: {e}\n\n" for e in events[:cut]) + noise
    server.replies.clear()
    server.queue(Reply(raw=raw, break_after_events=break_connection))

    async def play() -> None:
        client = client_for(profile, server.base_url, retry=RetryPolicy(max_attempts=1))
        try:
            adapter = adapter_type(client, conversation(web_search_tool()), "m")
            outcome = await run_round(adapter)
            if outcome.round is not None:
                adapter.record_assistant_turn()
                for call in outcome.round.calls:
                    adapter.record_tool_result(call.call_id, "r", is_error=not call.is_valid)
        except ProviderError:
            pass
        finally:
            await client.aclose()

    asyncio.run(play())
