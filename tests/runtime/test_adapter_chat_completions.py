"""Chat Completions adapter and its stream accumulator, over real HTTP and SSE on 127.0.0.1."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from policy.vocabulary import ProviderKind
from runtime.adapters.chat_completions import ChatCompletionAccumulator, ChatCompletionsAdapter
from runtime.messages import SourceOrigin
from runtime.providers import OPENAI_CHAT_COMPLETIONS, HostProfile, ProviderUnavailable
from runtime.providers.hosts import _CLOUD_HOSTS
from tests.servers.provider_scripts import chat_call, chat_chunk, chat_text, chat_usage
from tests.servers.provider_server import ProviderServer, Reply
from tests.servers.provider_testkit import (
    adapter_for,
    run_round,
    web_search_tool,
)

GROQ = _CLOUD_HOSTS[ProviderKind.GROQ]
HUGGING_FACE = _CLOUD_HOSTS[ProviderKind.HUGGINGFACE]


def _adapter(
    server: ProviderServer, profile: HostProfile = GROQ, **options: Any
) -> ChatCompletionsAdapter:
    return adapter_for(ChatCompletionsAdapter, profile, server.base_url, "test-model", **options)


def _call_round(name: str, arguments: str, call_id: str | None = "call_1") -> Reply:
    return Reply([chat_call(0, call_id, name, arguments), "[DONE]"])


# -- adapter -------------------------------------------------------------------------------------


async def test_every_round_passes_on_what_its_request_cost(server: ProviderServer) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "web_search", '{"query":"x"}'), chat_usage(1200)]),
        Reply([*chat_text("Done."), chat_usage(9800), "[DONE]"]),
    )
    adapter = _adapter(server)
    first = await run_round(adapter)
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "result")
    second = await run_round(adapter)
    assert first.usages == [1200]
    assert second.usages == [9800]
    assert first.round is not None and first.round.usage.input_tokens == 1200
    assert second.round is not None and second.round.text_output == "Done."


async def test_a_round_without_tool_calls_passes_its_usage_on_as_well(
    server: ProviderServer,
) -> None:
    server.queue(Reply([*chat_text("Hi"), chat_usage(321)]))
    outcome = await run_round(_adapter(server, tools=()))
    assert outcome.usages == [321]
    assert outcome.round is not None and outcome.round.calls == ()


async def test_a_round_which_offers_tools_asks_for_one_call_at_a_time(
    server: ProviderServer,
) -> None:
    server.queue(Reply(chat_text("Hi")))
    await run_round(_adapter(server))
    body = server.bodies[0]
    assert body["parallel_tool_calls"] is False
    assert body["stream"] is True
    assert "tool_choice" not in body
    assert b'"parallel_tool_calls":false' in server.requests[0].body


async def test_a_provider_which_rejects_the_question_is_not_asked_it(
    server: ProviderServer,
) -> None:
    server.queue(Reply(chat_text("Hi")))
    await run_round(_adapter(server, HUGGING_FACE))
    body = server.bodies[0]
    assert "parallel_tool_calls" not in body
    assert [t["function"]["name"] for t in body["tools"]] == ["web_search"]


async def test_a_round_without_tools_does_not_ask_about_tool_calls(server: ProviderServer) -> None:
    server.queue(Reply(chat_text("Final.")), Reply(chat_text("Again.")))
    adapter = _adapter(server)
    await run_round(adapter, "Answer now.", include_tools=False)
    await run_round(adapter)
    final, later = server.bodies
    assert "tools" not in final and "parallel_tool_calls" not in final
    assert final["messages"][0] == {
        "role": "system",
        "content": "You are helpful.\n\nAnswer now.",
    }
    assert later["messages"][0]["content"] == "You are helpful."
    assert later["parallel_tool_calls"] is False


async def test_additional_parameters_are_merged_but_cannot_override_the_adapter(
    server: ProviderServer,
) -> None:
    server.queue(Reply(chat_text("Hi")))
    extras = {"temperature": 0.2, "parallel_tool_calls": True, "tool_choice": "required"}
    await run_round(_adapter(server, extra_body=extras, max_output_tokens=77))
    body = server.bodies[0]
    assert body["temperature"] == 0.2
    assert body["parallel_tool_calls"] is False
    assert "tool_choice" not in body
    assert body["max_tokens"] == 77
    assert body["model"] == "test-model"


async def test_a_malformed_function_name_is_answered_but_never_sent_back(
    server: ProviderServer,
) -> None:
    server.queue(_call_round("web search!", '{"query":"x"}'), Reply(chat_text("ok")))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.round is not None
    (call,) = outcome.round.calls
    assert not call.is_valid
    adapter.record_assistant_turn()
    adapter.record_tool_result(call.call_id, "The tool call was invalid.", is_error=True)
    await run_round(adapter)
    sent = server.bodies[1]["messages"][-2]["tool_calls"][0]["function"]
    assert sent["name"] == "invalid_tool_call"
    assert b"web search!" not in server.requests[1].body


async def test_a_well_formed_unknown_name_goes_back_unchanged(server: ProviderServer) -> None:
    server.queue(_call_round("read_mail", "{}"), Reply(chat_text("ok")))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.round is not None and outcome.round.calls[0].is_valid
    assert outcome.round.calls[0].tool_name == "read_mail"
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "Tool 'read_mail' is not available.")
    await run_round(adapter)
    assert server.bodies[1]["messages"][-2]["tool_calls"][0]["function"]["name"] == "read_mail"


async def test_a_name_with_surrounding_space_becomes_the_tool_name(server: ProviderServer) -> None:
    server.queue(_call_round(" web_search ", '{"query":"x"}'))
    outcome = await run_round(_adapter(server))
    assert outcome.round is not None
    assert outcome.round.calls[0].tool_name == "web_search"
    assert outcome.round.calls[0].is_valid


async def test_broken_arguments_are_answered_but_never_sent_back(server: ProviderServer) -> None:
    server.queue(_call_round("web_search", '{"query": "x'), Reply(chat_text("ok")))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.round is not None and not outcome.round.calls[0].is_valid
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "The tool call was invalid.", is_error=True)
    await run_round(adapter)
    sent = server.bodies[1]["messages"][-2]["tool_calls"][0]["function"]
    assert sent == {"name": "web_search", "arguments": "{}"}


async def test_arguments_which_are_no_object_make_the_call_invalid(
    server: ProviderServer,
) -> None:
    server.queue(_call_round("web_search", "[1, 2]"))
    outcome = await run_round(_adapter(server))
    assert outcome.round is not None and not outcome.round.calls[0].is_valid


async def test_a_call_streamed_without_argument_text_is_valid_and_goes_back_as_an_object(
    server: ProviderServer,
) -> None:
    server.queue(Reply([chat_call(0, "call_1", "clock"), "[DONE]"]), Reply(chat_text("ok")))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.round is not None
    (call,) = outcome.round.calls
    assert call.is_valid and call.arguments_json == "{}"
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "12:00")
    await run_round(adapter)
    sent = server.bodies[1]["messages"][-2]["tool_calls"][0]["function"]
    assert sent == {"name": "clock", "arguments": "{}"}


async def test_a_missing_call_id_is_made_up_and_answered_under_it(server: ProviderServer) -> None:
    server.queue(_call_round("web_search", '{"query":"x"}', call_id=None), Reply(chat_text("ok")))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.round is not None
    call_id = outcome.round.calls[0].call_id
    assert re.fullmatch(r"call_[0-9a-f]{32}", call_id)
    adapter.record_assistant_turn()
    adapter.record_tool_result(call_id, "found it")
    await run_round(adapter)
    messages = server.bodies[1]["messages"]
    assert messages[-2]["tool_calls"][0]["id"] == call_id
    assert messages[-1] == {"role": "tool", "content": "found it", "tool_call_id": call_id}


async def test_each_result_is_one_tool_message_in_order(server: ProviderServer) -> None:
    server.queue(
        Reply(
            [
                chat_call(0, "call_a", "web_search", '{"query":"a"}'),
                chat_call(1, "call_b", "web_search", '{"query":"b"}'),
            ]
        ),
        Reply(chat_text("ok")),
    )
    adapter = _adapter(server)
    await run_round(adapter)
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_a", "A", is_error=True)
    adapter.record_tool_result("call_b", "B")
    await run_round(adapter)
    messages = server.bodies[1]["messages"]
    assert messages[-3]["role"] == "assistant"
    assert "content" not in messages[-3]
    assert [m["tool_call_id"] for m in messages[-2:]] == ["call_a", "call_b"]
    assert all("is_error" not in m for m in messages[-2:])
    assert adapter.recorded_request_texts == (
        'web_search{"query":"a"}',
        'web_search{"query":"b"}',
        "A",
        "B",
    )


async def test_reasoning_and_extra_call_fields_go_back_with_the_turn(
    server: ProviderServer,
) -> None:
    call = chat_call(0, "call_1", "web_search", '{"query":"x"}')
    call["choices"][0]["delta"]["tool_calls"][0]["extra_content"] = {"google": {"sig": "abc"}}
    server.queue(
        Reply([chat_chunk({"reasoning_content": "Let me think."}), *chat_text("Looking."), call]),
        Reply(chat_text("ok")),
    )
    adapter = _adapter(server, _CLOUD_HOSTS[ProviderKind.DEEP_SEEK])
    await run_round(adapter)
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "r")
    await run_round(adapter)
    turn = server.bodies[1]["messages"][-2]
    assert turn["content"] == "Looking."
    assert turn["reasoning_content"] == "Let me think."
    assert turn["tool_calls"][0]["extra_content"] == {"google": {"sig": "abc"}}


async def test_a_host_which_enforces_strict_mode_gets_the_converted_schema(
    server: ProviderServer,
) -> None:
    server.queue(Reply(chat_text("Hi")))
    await run_round(_adapter(server, OPENAI_CHAT_COMPLETIONS))
    body = server.bodies[0]
    function = body["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["query", "page"]
    assert body["stream_options"] == {"include_usage": True}
    assert body["parallel_tool_calls"] is False


async def test_a_host_which_does_not_enforce_strict_mode_gets_the_schema_as_written(
    server: ProviderServer,
) -> None:
    server.queue(Reply(chat_text("Hi")))
    await run_round(_adapter(server, GROQ))
    function = server.bodies[0]["tools"][0]["function"]
    assert function["strict"] is False
    assert function["parameters"]["required"] == ["query"]
    assert function["parameters"]["properties"]["page"]["type"] == "integer"


async def test_a_tool_which_opts_out_stays_out_of_strict_mode_everywhere(
    server: ProviderServer,
) -> None:
    server.queue(Reply(chat_text("Hi")))
    await run_round(_adapter(server, OPENAI_CHAT_COMPLETIONS, tools=(web_search_tool(False),)))
    function = server.bodies[0]["tools"][0]["function"]
    assert function["strict"] is False
    assert function["parameters"]["required"] == ["query"]


async def test_the_bearer_key_is_sent_in_the_header_only(server: ProviderServer) -> None:
    server.queue(Reply(chat_text("Hi")))
    await run_round(_adapter(server))
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-0123456789abcdef"
    assert b"sk-test" not in request.body


async def test_a_stream_which_said_nothing_is_a_failed_round(server: ProviderServer) -> None:
    server.queue(Reply(["[DONE]"]))
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.round is None
    adapter.record_assistant_turn()
    assert adapter.recorded_request_texts == ()


async def test_an_error_in_the_stream_is_a_provider_error_without_the_key(
    server: ProviderServer,
) -> None:
    server.queue(
        Reply([*chat_text("Partial"), {"error": {"message": "bad key sk-test-0123456789abcdef"}}])
    )
    with pytest.raises(ProviderUnavailable) as caught:
        await run_round(_adapter(server))
    assert "bad key *****" in str(caught.value)
    assert "sk-test" not in str(caught.value)


async def test_nothing_after_an_error_in_the_stream_reaches_the_user(
    server: ProviderServer,
) -> None:
    """Like the other adapters: the round ends at the host's error, later chunks are not shown."""
    server.queue(
        Reply([*chat_text("Partial"), {"error": {"message": "overloaded"}}, *chat_text(" more")])
    )
    shown: list[str] = []
    with pytest.raises(ProviderUnavailable, match="overloaded"):
        async for event in _adapter(server).execute_round(None, True):
            shown.append(getattr(event, "content", ""))
    assert "".join(shown) == "Partial"


async def test_an_error_next_to_a_choice_which_finished_with_error_is_a_provider_error(
    server: ProviderServer,
) -> None:
    """OpenRouter reports a failure mid-stream as a chunk with `error` and finish_reason "error"."""
    failed = chat_chunk(
        error={"code": 502, "message": "upstream overloaded"},
        choices=[{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
    )
    server.queue(Reply([*chat_text("Partial"), failed]))
    with pytest.raises(ProviderUnavailable, match="upstream overloaded"):
        await run_round(_adapter(server))


@pytest.mark.parametrize("finish_reason", [None, "stop", "length"])
async def test_an_error_next_to_an_unfinished_choice_is_a_provider_error_with_its_code(
    server: ProviderServer, finish_reason: str | None
) -> None:
    """Recorded gateway shape: `error` beside a choice whose finish_reason is null (or anything)."""
    failed = chat_chunk(
        error={"code": 400, "message": "Token limit reached sk-test-0123456789abcdef"},
        choices=[{"index": 0, "delta": {"content": ""}, "finish_reason": finish_reason}],
    )
    server.queue(Reply([*chat_text("Partial"), failed]))
    with pytest.raises(ProviderUnavailable) as caught:
        await run_round(_adapter(server))
    assert "Token limit reached ***** (code 400)" in str(caught.value)
    assert "sk-test" not in str(caught.value)


async def test_a_null_error_member_is_no_error(server: ProviderServer) -> None:
    server.queue(Reply([chat_chunk({"content": "Fine"}, error=None), "[DONE]"]))
    outcome = await run_round(_adapter(server))
    assert outcome.round is not None and outcome.text == "Fine"


# -- accumulator ---------------------------------------------------------------------------------


def _feed(*chunks: object) -> ChatCompletionAccumulator:
    accumulator = ChatCompletionAccumulator()
    for chunk in chunks:
        accumulator.feed(chunk if isinstance(chunk, str) else json.dumps(chunk))
    return accumulator


def _delta_calls(*fragments: dict[str, object]) -> dict[str, object]:
    return chat_chunk({"tool_calls": list(fragments)})


def test_arguments_spread_over_many_fragments_become_one_call() -> None:
    message = _feed(
        chat_call(0, "call_1", "web_search", ""),
        chat_call(0, None, None, '{"que'),
        chat_call(0, None, None, 'ry":"py'),
        chat_call(0, None, None, 'thon"}'),
    ).build()
    assert message is not None
    (call,) = message.calls
    assert (call.call_id, call.name, call.arguments) == (
        "call_1",
        "web_search",
        '{"query":"python"}',
    )


def test_two_calls_written_at_the_same_time_stay_apart() -> None:
    message = _feed(
        chat_call(0, "a", "web_search", '{"query":'),
        chat_call(1, "b", "read_web_page", '{"url":'),
        chat_call(0, None, None, '"x"}'),
        chat_call(1, None, None, '"y"}'),
    ).build()
    assert message is not None
    assert [(c.call_id, c.arguments) for c in message.calls] == [
        ("a", '{"query":"x"}'),
        ("b", '{"url":"y"}'),
    ]


def test_a_provider_which_sends_no_index_still_gets_a_whole_call() -> None:
    message = _feed(
        chat_call(None, "a", "web_search", '{"query":'),
        chat_call(None, None, None, '"x"}'),
        chat_call(None, "b", "web_search", "{}"),
        chat_call(None, "a", None, ""),
    ).build()
    assert message is not None
    assert [(c.call_id, c.arguments) for c in message.calls] == [
        ("a", '{"query":"x"}'),
        ("b", "{}"),
    ]


def test_a_later_empty_value_never_erases_an_id_or_name() -> None:
    message = _feed(chat_call(0, "a", "web_search", "{}"), chat_call(0, "", "", "")).build()
    assert message is not None
    assert (message.calls[0].call_id, message.calls[0].name) == ("a", "web_search")


def test_a_whole_call_in_one_fragment_works_just_as_well() -> None:
    message = _feed(chat_call(0, "a", "web_search", '{"query":"x"}')).build()
    assert message is not None and message.calls[0].arguments == '{"query":"x"}'


def test_text_and_a_tool_call_in_the_same_round_both_survive() -> None:
    message = _feed(*chat_text("Let me ", "look."), chat_call(0, "a", "web_search", "{}")).build()
    assert message is not None
    assert message.content == "Let me look."
    assert len(message.calls) == 1


def test_content_sent_as_parts_is_read_as_text() -> None:
    accumulator = ChatCompletionAccumulator()
    delta = accumulator.feed(
        json.dumps(
            chat_chunk(
                {"content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}]}
            )
        )
    )
    assert delta is not None and delta.content == "Hello"
    message = accumulator.build()
    assert message is not None and message.content == "Hello"


def test_reasoning_travels_separately_from_the_answer() -> None:
    accumulator = ChatCompletionAccumulator()
    assert accumulator.feed(json.dumps(chat_chunk({"reasoning_content": "hmm"}))) is None
    accumulator.feed(json.dumps(chat_chunk({"content": "Answer"})))
    message = accumulator.build()
    assert message is not None
    assert (message.content, message.reasoning) == ("Answer", {"reasoning_content": "hmm"})


def test_a_tool_which_takes_nothing_gets_an_empty_object() -> None:
    message = _feed(chat_call(0, "a", "list_things"), chat_call(1, "b", "other", "")).build()
    assert message is not None
    assert [c.arguments for c in message.calls] == ["{}", "{}"]


def test_a_round_without_text_has_no_content_at_all() -> None:
    message = _feed(chat_call(0, "a", "web_search", "{}")).build()
    assert message is not None and message.content is None


def test_a_stream_which_said_nothing_builds_nothing() -> None:
    assert _feed("[DONE]", "", "not json", chat_usage(5)).build() is None


def test_unparsable_lines_are_skipped() -> None:
    message = _feed("{broken", *chat_text("ok"), "[1,2]", "null", "[DONE]").build()
    assert message is not None and message.content == "ok"


def test_usage_is_read_from_a_line_without_choices_and_next_to_text() -> None:
    accumulator = ChatCompletionAccumulator()
    chunk = chat_chunk({"content": "last"}, usage={"prompt_tokens": 40, "completion_tokens": 2})
    delta = accumulator.feed(json.dumps(chunk))
    assert delta is not None and delta.content == "last" and delta.usage.input_tokens == 40


def test_sources_of_the_provider_travel_with_their_line() -> None:
    accumulator = ChatCompletionAccumulator()
    chunk = chat_chunk(
        {"content": "Python 3.14 is out."},
        search_results=[{"title": "What's new", "url": "https://docs.python.org/3.14/whatsnew"}],
    )
    delta = accumulator.feed(json.dumps(chunk))
    assert delta is not None
    assert [(s.title, s.url, s.origin) for s in delta.sources] == [
        ("What's new", "https://docs.python.org/3.14/whatsnew", SourceOrigin.LLM)
    ]
    again = accumulator.feed(json.dumps(chunk))
    assert again is not None and again.sources == ()
    message = accumulator.build()
    assert message is not None and len(message.sources) == 1


def test_groq_usage_is_read_from_its_own_field() -> None:
    accumulator = ChatCompletionAccumulator()
    chunk = chat_chunk({}, x_groq={"usage": {"prompt_tokens": 88, "completion_tokens": 3}})
    delta = accumulator.feed(json.dumps(chunk))
    assert delta is not None and delta.usage.input_tokens == 88


def test_a_usage_repeated_on_every_line_is_passed_on_once() -> None:
    accumulator = ChatCompletionAccumulator()
    usage = {"prompt_tokens": 50, "completion_tokens": 1}
    first = accumulator.feed(json.dumps(chat_chunk({"content": "a"}, usage=usage)))
    second = accumulator.feed(json.dumps(chat_chunk({"content": "b"}, usage=usage)))
    assert first is not None and first.usage.input_tokens == 50
    assert second is not None and not second.usage.is_known
