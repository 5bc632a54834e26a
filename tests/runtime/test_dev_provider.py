"""The dev provider's script: what each last message makes it answer, as Chat Completions events;
and the runtime's own adapters for all three wire APIs in a conversation with it over HTTP on
127.0.0.1 (a call, its result, the answer quoting it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.adapters.anthropic import AnthropicAdapter
from runtime.adapters.base import ToolCallingAdapter
from runtime.adapters.chat_completions import ChatCompletionsAdapter
from runtime.adapters.responses import ResponsesAdapter
from runtime.dev_provider import STAND_IN_NOTE
from runtime.dev_provider.script import chat_completions_events as scripted_events
from runtime.dev_provider.server import app
from runtime.messages import ChatMessage, Conversation, Role
from runtime.providers import ANTHROPIC, OPENAI_CHAT_COMPLETIONS, OPENAI_RESPONSES, HostProfile
from tests.servers.loopback import running_app
from tests.servers.provider_testkit import client_for, run_round, web_search_tool


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def _body(*messages: dict[str, Any], tools: tuple[str, ...] = ("calculator",)) -> dict[str, Any]:
    return {
        "model": "dev",
        "stream": True,
        "messages": list(messages),
        "tools": [_tool(t) for t in tools],
    }


def _user(text: Any) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _text(events: list[Any]) -> str:
    assert events[-1] == "[DONE]"
    return "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1] if e["choices"])


def _finish(events: list[Any]) -> str:
    return str(events[-2]["choices"][0]["finish_reason"])


def test_call_tool_with_arguments_calls_it() -> None:
    events = scripted_events(_body(_user('call calculator {"expression": "6 * 7"}')))
    call = events[0]["choices"][0]["delta"]["tool_calls"][0]
    assert call["id"] == "call_1" and call["function"]["name"] == "calculator"
    assert json.loads(call["function"]["arguments"]) == {"expression": "6 * 7"}
    assert _finish(events) == "tool_calls"


def test_call_without_arguments_calls_with_an_empty_object() -> None:
    events = scripted_events(_body(_user("Call calculator")))
    assert events[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_a_tool_not_offered_is_not_called_and_the_answer_names_the_offered_ones() -> None:
    events = scripted_events(
        _body(_user("call web_search {}"), tools=("calculator", "current_time"))
    )
    assert _text(events) == (
        "web_search is not offered in this request, so I cannot call it. "
        "Tools offered: calculator, current_time."
    )
    assert _finish(events) == "stop"


def test_arguments_that_are_not_a_json_object_are_named() -> None:
    assert "are not JSON (Expecting value)" in _text(
        scripted_events(_body(_user("call calculator expression=6*7")))
    )
    assert "must be a JSON object" in _text(scripted_events(_body(_user("call calculator [1]"))))


def test_a_tool_result_is_quoted_under_the_tool_that_gave_it() -> None:
    events = scripted_events(
        _body(
            _user("call calculator {}"),
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "calculator", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"result":42}'},
        )
    )
    assert _text(events) == 'calculator answered: {"result":42}'


def test_a_second_call_in_one_chat_gets_its_own_id() -> None:
    earlier = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "calculator", "arguments": "{}"},
            }
        ],
    }
    result = {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    events = scripted_events(
        _body(_user("call calculator {}"), earlier, result, _user("call calculator {}"))
    )
    assert events[0]["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_2"


def test_any_other_message_is_echoed_saying_it_is_a_stand_in() -> None:
    text = _text(scripted_events(_body(_user([{"type": "text", "text": "Hello"}]), tools=())))
    assert text.startswith('You wrote: "Hello".')
    assert STAND_IN_NOTE in text and "Tools offered: none." in text
    assert 'call TOOL {"argument": "value"}' in text


_WIRE_APIS = [
    (ChatCompletionsAdapter, OPENAI_CHAT_COMPLETIONS),
    (ResponsesAdapter, OPENAI_RESPONSES),
    (AnthropicAdapter, ANTHROPIC),
]


@pytest.fixture(scope="module")
def base_url() -> Any:
    with running_app(app()) as running:
        yield running.url("/v1")


def _adapter(
    adapter_class: type[ToolCallingAdapter], profile: HostProfile, base_url: str, message: str
) -> ToolCallingAdapter:
    conversation = Conversation(
        system_prompt="", messages=[ChatMessage(Role.USER, message)], tools=[web_search_tool()]
    )
    return adapter_class(client_for(profile, base_url), conversation, "dev")


@pytest.mark.parametrize(
    ("adapter_class", "profile"), _WIRE_APIS, ids=lambda p: getattr(p, "__name__", "")
)
async def test_each_wire_api_calls_the_tool_and_quotes_its_result(
    adapter_class: type[ToolCallingAdapter], profile: HostProfile, base_url: str
) -> None:
    adapter = _adapter(adapter_class, profile, base_url, 'call web_search {"query": "tool policy"}')
    first = await run_round(adapter)
    assert first.round is not None
    (call,) = first.round.calls
    assert (call.call_id, call.tool_name) == ("call_1", "web_search")
    assert json.loads(call.arguments_json) == {"query": "tool policy"}
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "3 results")
    second = await run_round(adapter)
    assert second.round is not None and second.round.calls == ()
    assert second.text == "web_search answered: 3 results"


@pytest.mark.parametrize(
    ("adapter_class", "profile"), _WIRE_APIS, ids=lambda p: getattr(p, "__name__", "")
)
async def test_each_wire_api_echoes_any_other_message(
    adapter_class: type[ToolCallingAdapter], profile: HostProfile, base_url: str
) -> None:
    outcome = await run_round(_adapter(adapter_class, profile, base_url, "Hello"))
    assert outcome.text.startswith('You wrote: "Hello".')
    assert "Tools offered: web_search." in outcome.text
