"""Anthropic Messages adapter and its stream accumulator, over real HTTP and SSE on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.adapters.anthropic import AnthropicAccumulator, AnthropicAdapter, round_of
from runtime.messages import ChatMessage, Conversation, Role
from runtime.providers import ANTHROPIC, ProviderUnavailable
from tests.servers.provider_scripts import (
    MESSAGE_STOP,
    anthropic_text_message,
    block_delta,
    block_start,
    block_stop,
    json_delta,
    message_delta,
    message_start,
    text_delta,
)
from tests.servers.provider_server import ProviderServer, Reply
from tests.servers.provider_testkit import (
    adapter_for,
    client_for,
    run_round,
)

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds/+==" * 3


def _adapter(server: ProviderServer, **options: Any) -> AnthropicAdapter:
    return adapter_for(AnthropicAdapter, ANTHROPIC, server.base_url, "claude-test", **options)


def _thinking_and_two_calls() -> list[object]:
    return [
        message_start(1500),
        block_start(0, {"type": "thinking", "thinking": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "The user wants "}),
        block_delta(0, {"type": "thinking_delta", "thinking": "news."}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        block_stop(0),
        block_start(1, {"type": "redacted_thinking", "data": "EmwKAhgB..."}),
        block_stop(1),
        block_start(2, {"type": "text", "text": ""}),
        text_delta(2, "Let me look."),
        block_stop(2),
        block_start(3, {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": {}}),
        json_delta(3, '{"query": '),
        json_delta(3, '"python"}'),
        block_stop(3),
        block_start(4, {"type": "tool_use", "id": "toolu_2", "name": "web_search", "input": {}}),
        json_delta(4, '{"query": "3.14"}'),
        block_stop(4),
        message_delta("tool_use"),
        MESSAGE_STOP,
    ]


# -- adapter -------------------------------------------------------------------------------------


async def test_every_round_passes_on_what_its_request_carried(server: ProviderServer) -> None:
    server.queue(Reply(_thinking_and_two_calls()), Reply(anthropic_text_message("Done.", 4200)))
    adapter = _adapter(server)
    first = await run_round(adapter)
    adapter.record_assistant_turn()
    adapter.record_tool_result("toolu_1", "r1")
    adapter.record_tool_result("toolu_2", "r2")
    second = await run_round(adapter)
    assert first.usages == [1500]
    assert second.usages == [4200]


async def test_the_text_still_goes_out_next_to_the_usage(server: ProviderServer) -> None:
    server.queue(Reply(anthropic_text_message("Hello there", 30)))
    outcome = await run_round(_adapter(server))
    assert outcome.text == "Hello there"
    assert outcome.usages == [30]
    assert outcome.round is not None and outcome.round.text_output == "Hello there"


async def test_cached_input_counts_toward_what_the_request_carried(server: ProviderServer) -> None:
    events = anthropic_text_message("x")
    events[0] = message_start(5, cache_read_input_tokens=1000, cache_creation_input_tokens=20)
    server.queue(Reply(events))
    outcome = await run_round(_adapter(server))
    assert outcome.usages == [1025]


async def test_the_turn_goes_back_unchanged_and_all_results_in_one_message(
    server: ProviderServer,
) -> None:
    server.queue(Reply(_thinking_and_two_calls()), Reply(anthropic_text_message("Done.")))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.text == "Let me look."
    assert outcome.round is not None
    assert [(c.call_id, c.arguments_json, c.is_valid) for c in outcome.round.calls] == [
        ("toolu_1", '{"query":"python"}', True),
        ("toolu_2", '{"query":"3.14"}', True),
    ]
    adapter.record_assistant_turn()
    adapter.record_tool_result("toolu_1", "Tool execution failed: boom", is_error=True)
    adapter.record_tool_result("toolu_2", "found")
    await run_round(adapter)
    messages = server.bodies[1]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": "The user wants news.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": "EmwKAhgB..."},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": {"query": "python"}},
        {"type": "tool_use", "id": "toolu_2", "name": "web_search", "input": {"query": "3.14"}},
    ]
    assert messages[2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": "Tool execution failed: boom",
            "is_error": True,
        },
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "found"},
    ]
    texts = adapter.recorded_request_texts
    assert [json.loads(t) for t in texts[:5]] == messages[1]["content"]
    assert texts[5:] == ("Tool execution failed: boom", "found")


async def test_the_request_shape_and_headers(server: ProviderServer) -> None:
    server.queue(Reply(anthropic_text_message("x")))
    await run_round(
        _adapter(server, extra_body={"temperature": 0.1, "tool_choice": {"type": "any"}})
    )
    request = server.requests[0]
    body = request.json
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-test-0123456789abcdef"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert body["max_tokens"] == 4096 and body["stream"] is True
    assert body["system"] == "You are helpful."
    assert body["temperature"] == 0.1 and "tool_choice" not in body
    assert body["tools"][0]["input_schema"]["required"] == ["query"]
    assert body["tools"][0]["strict"] is True


async def test_max_tokens_of_the_additional_parameters_replaces_the_default(
    server: ProviderServer,
) -> None:
    server.queue(Reply(anthropic_text_message("x")), Reply(anthropic_text_message("x")))
    await run_round(_adapter(server, extra_body={"max_tokens": 16000}))
    await run_round(_adapter(server, max_output_tokens=900))
    assert [b["max_tokens"] for b in server.bodies] == [16000, 900]


async def test_a_final_round_leaves_tools_out_and_adds_the_instruction(
    server: ProviderServer,
) -> None:
    server.queue(Reply(anthropic_text_message("x")))
    await run_round(_adapter(server), "Answer now.", include_tools=False)
    body = server.bodies[0]
    assert "tools" not in body
    assert body["system"] == "You are helpful.\n\nAnswer now."


async def test_a_final_round_after_tool_calls_keeps_tools_defined_but_forbids_calling_them(
    server: ProviderServer,
) -> None:
    server.queue(Reply(_thinking_and_two_calls()), Reply(anthropic_text_message("Done.")))
    adapter = _adapter(server)
    await run_round(adapter)
    adapter.record_assistant_turn()
    adapter.record_tool_result("toolu_1", "r1")
    adapter.record_tool_result("toolu_2", "r2")
    await run_round(adapter, "Answer now.", include_tools=False)
    first, final = server.bodies
    assert final["tools"] == first["tools"]
    assert final["tool_choice"] == {"type": "none"}
    assert "tool_choice" not in first
    assert final["system"] == "You are helpful.\n\nAnswer now."


async def test_system_messages_of_the_conversation_join_the_system_prompt(
    server: ProviderServer,
) -> None:
    server.queue(Reply(anthropic_text_message("x")))
    talk = Conversation(
        "Base.", [ChatMessage(Role.SYSTEM, "Extra."), ChatMessage(Role.USER, "Hi")], []
    )
    await run_round(AnthropicAdapter(client_for(ANTHROPIC, server.base_url), talk, "m"))
    body = server.bodies[0]
    assert body["system"] == "Base.\n\nExtra."
    assert body["messages"] == [{"role": "user", "content": "Hi"}]
    assert "tools" not in body


async def test_an_error_event_is_a_provider_error(server: ProviderServer) -> None:
    error = (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    server.queue(Reply([message_start(), error]))
    with pytest.raises(ProviderUnavailable, match="overloaded_error: Overloaded"):
        await run_round(_adapter(server))


async def test_a_stream_cut_off_mid_sentence_is_a_failed_round(server: ProviderServer) -> None:
    events = anthropic_text_message("The answer is")[:3]
    server.queue(Reply(events))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.text == "The answer is"
    assert outcome.round is None
    adapter.record_assistant_turn()
    assert adapter.recorded_request_texts == ()


# -- accumulator ---------------------------------------------------------------------------------


def _feed(*events: object) -> tuple[AnthropicAccumulator, list[object]]:
    accumulator = AnthropicAccumulator()
    out = []
    for event in events:
        payload = event[1] if isinstance(event, tuple) else event
        out.append(accumulator.feed(payload if isinstance(payload, str) else json.dumps(payload)))
    return accumulator, out


def test_a_text_block_is_the_fragments_it_arrived_in() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "text", "text": "", "citations": None}),
        text_delta(0, "Hel"),
        text_delta(0, "lo"),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None
    assert message.blocks == ({"type": "text", "text": "Hello", "citations": None},)


def test_the_text_is_shown_while_it_is_being_written() -> None:
    _, deltas = _feed(
        block_start(0, {"type": "text", "text": ""}), text_delta(0, "a"), text_delta(0, "b")
    )
    assert [d.content for d in deltas if d is not None] == ["a", "b"]  # type: ignore[attr-defined]


def test_thinking_never_reaches_the_user() -> None:
    accumulator, deltas = _feed(*_thinking_and_two_calls())
    shown = "".join(d.content for d in deltas if d is not None)  # type: ignore[attr-defined]
    assert shown == "Let me look."
    message = accumulator.build()
    assert message is not None
    assert round_of(message).text_output == "Let me look."


def test_a_thinking_block_keeps_its_signature() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "thinking", "thinking": ""}),
        block_delta(0, {"type": "signature_delta", "signature": "first"}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None and message.blocks[0]["signature"] == SIGNATURE


def test_a_thinking_block_without_signature_still_writes_one() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "thinking", "thinking": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "hm"}),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None
    assert message.blocks[0] == {"type": "thinking", "thinking": "hm", "signature": ""}


def test_a_redacted_thinking_block_goes_back_untouched() -> None:
    seed = {"type": "redacted_thinking", "data": "abc", "future_field": [1, {"x": None}]}
    accumulator, _ = _feed(block_start(0, seed), block_stop(0), MESSAGE_STOP)
    message = accumulator.build()
    assert message is not None and message.blocks == (seed,)


def test_a_tool_use_collects_its_arguments_from_fragments() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "tool_use", "id": "t", "name": "web_search", "input": {}}),
        json_delta(0, '{"que'),
        json_delta(0, 'ry": "x", "page": 2}'),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None
    assert message.blocks[0]["input"] == {"query": "x", "page": 2}
    (call,) = round_of(message).calls
    assert json.loads(call.arguments_json) == {"query": "x", "page": 2} and call.is_valid


def test_a_tool_without_arguments_gets_an_empty_object() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "tool_use", "id": "t", "name": "list_all"}),
        json_delta(0, ""),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None
    assert message.blocks[0]["input"] == {}
    assert round_of(message).calls[0].arguments_json == "{}"


def test_arguments_which_never_parsed_make_the_call_invalid_while_the_block_stays_well_formed() -> (
    None
):
    accumulator, _ = _feed(
        block_start(0, {"type": "tool_use", "id": "t", "name": "web_search", "input": {}}),
        json_delta(0, '{"query": "x'),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None
    assert message.blocks[0]["input"] == {}
    (call,) = round_of(message).calls
    assert call.arguments_json == '{"query": "x' and not call.is_valid


def test_a_tool_use_without_id_or_name_is_dropped() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "tool_use", "id": "", "name": "web_search"}),
        block_start(1, {"type": "tool_use", "id": "t", "name": " "}),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None and round_of(message).calls == ()


def test_a_block_whose_closing_event_never_came_is_still_finished() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "text", "text": ""}), text_delta(0, "x"), MESSAGE_STOP
    )
    message = accumulator.build()
    assert message is not None and message.blocks[0]["text"] == "x"


def test_blocks_come_back_in_the_order_they_were_indexed() -> None:
    accumulator, _ = _feed(
        block_start(1, {"type": "text", "text": ""}),
        text_delta(1, "second"),
        block_start(0, {"type": "text", "text": ""}),
        text_delta(0, "first"),
        MESSAGE_STOP,
    )
    message = accumulator.build()
    assert message is not None
    assert [b["text"] for b in message.blocks] == ["first", "second"]


def test_a_text_delta_for_an_unopened_block_opens_one() -> None:
    accumulator, _ = _feed(text_delta(3, "orphan"), json_delta(4, "{}"), MESSAGE_STOP)
    message = accumulator.build()
    assert message is not None and message.blocks == ({"type": "text", "text": "orphan"},)


def test_a_message_which_only_ended_with_a_stop_reason_counts_as_finished() -> None:
    accumulator, _ = _feed(
        block_start(0, {"type": "text", "text": ""}), text_delta(0, "x"), message_delta()
    )
    message = accumulator.build()
    assert message is not None and message.blocks == ({"type": "text", "text": "x"},)


def test_a_stream_cut_off_mid_sentence_builds_nothing() -> None:
    accumulator, _ = _feed(
        message_start(), block_start(0, {"type": "text", "text": ""}), text_delta(0, "The")
    )
    assert accumulator.build() is None


def test_the_message_start_states_what_the_request_carried() -> None:
    accumulator, deltas = _feed(message_start(777))
    assert deltas[0] is not None and deltas[0].usage.input_tokens == 777  # type: ignore[attr-defined]
    assert accumulator.usage.input_tokens == 777


def test_the_message_delta_states_nothing_about_the_request() -> None:
    accumulator, deltas = _feed(message_start(10), message_delta(output_tokens=500), MESSAGE_STOP)
    assert deltas[1:] == [None, None]
    message = accumulator.build()
    assert message is not None
    assert message.usage.input_tokens == 10 and message.usage.output_tokens is None
