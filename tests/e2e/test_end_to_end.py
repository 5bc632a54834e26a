"""Policy + runtime + the example tools against each loopback provider, as an app runs them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policy import Policy, load_policy
from policy.configuration import ProviderConfig
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool
from policy.vocabulary import ConfidenceLevel
from runtime import (
    Chat,
    ChatMessage,
    ChatRequirementError,
    ChatRuntime,
    FinalAnswer,
    ProviderError,
    Role,
    TextDeltaEvent,
    ToolCallFinished,
    ToolCallStarted,
    ToolExecutionResult,
    ToolsOffered,
    TraceStatus,
)
from runtime.chat import SqliteChatStore
from runtime.web.addresses import request_key
from tests.e2e._kit import (
    API_KEY,
    NOTES_URL,
    OPENAI_ID,
    ORGANIZATION,
    VLLM_ID,
    InternalNotesTool,
    anthropic_provider,
    client,
    organization_provider,
)
from tests.servers.provider_scripts import (
    MESSAGE_STOP,
    anthropic_text_message,
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
    responses_message,
    responses_text,
    text_delta,
)
from tests.servers.provider_server import ProviderServer, Reply

EXAMPLE_TOOLS = ("calculator", "current_time")
"""Selected in this order; offered in catalog order."""
QUESTION = ChatMessage(Role.USER, "What is (17 + 4) * 3? See https://docs.example.org/math")


async def _run(
    policy: Policy,
    chat: Chat,
    provider: ProviderConfig,
    messages: list[ChatMessage] | None = None,
    selected: tuple[str, ...] = EXAMPLE_TOOLS,
) -> list[Any]:
    events: list[Any] = []
    async with client(provider) as provider_client:
        async for event in ChatRuntime(policy).respond(
            chat,
            provider,
            messages or [QUESTION],
            selected_tool_ids=selected,
            system_prompt="You are the Example Corp assistant.",
            client=provider_client,
        ):
            events.append(event)
    return events


def _final(events: list[Any]) -> FinalAnswer:
    assert isinstance(events[-1], FinalAnswer)
    return events[-1]


def _traces(events: list[Any]) -> list[tuple[str, TraceStatus, Any]]:
    """(tool id, status, result) of each call; a JSON result as the object the tool returned."""
    return [
        (
            e.trace.tool_id,
            e.trace.status,
            e.trace.json_result if e.trace.json_result is not None else e.trace.result,
        )
        for e in events
        if isinstance(e, ToolCallFinished)
    ]


CALC_RESULT = '{"expression":"(17 + 4) * 3","result":63}'


# --- Chat Completions (the organization's vLLM) -------------------------------------------------


async def test_chat_completions_two_rounds_with_a_tool_call(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(
        Reply(
            [chat_call(0, "call_1", "calculator", '{"expression":"(17 + 4) * 3"}'), chat_usage(90)]
        ),
        Reply([*chat_text("It is ", "63."), chat_usage(140)]),
    )
    events = await _run(policy, chat, organization_provider(policy, VLLM_ID, server))

    offered = events[0]
    assert isinstance(offered, ToolsOffered) and offered.tool_ids == EXAMPLE_TOOLS
    assert dict(offered.left_out) == {"semantic_search": "nothing to offer in this request"}
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(s.tool_name, s.display_name, s.arguments) for s in started] == [
        ("calculator", "Calculator", {"expression": "(17 + 4) * 3"})
    ]
    assert _traces(events) == [
        ("calculator", TraceStatus.SUCCESS, {"expression": "(17 + 4) * 3", "result": 63})
    ]
    final = _final(events)
    assert final.text == "It is 63." and not final.interrupted
    assert final.usage.input_tokens == 90, "only the first round's prompt describes the chat"

    first, second = server.bodies
    assert first["model"] == "Qwen/Qwen2.5-72B-Instruct"
    assert [t["function"]["name"] for t in first["tools"]] == list(EXAMPLE_TOOLS)
    assert first["parallel_tool_calls"] is False
    system = first["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are the Example Corp assistant.\n\n# Tool usage")
    assert "## Tool `current_time`" in system["content"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "calculator"
    assert second["messages"][-1] == {
        "role": "tool",
        "content": CALC_RESULT,
        "tool_call_id": "call_1",
    }


async def test_chat_completions_two_calls_in_one_round_get_two_tool_messages(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(
        Reply(
            [
                chat_call(0, "call_a", "current_time", '{"time_zone":"Asia/Tokyo"}'),
                chat_call(1, "call_b", "calculator", '{"expression":"2 ** 10"}'),
            ]
        ),
        Reply(chat_text("Done.")),
    )
    events = await _run(policy, chat, organization_provider(policy, VLLM_ID, server))

    traces = _traces(events)
    assert [(t[0], t[1]) for t in traces] == [
        ("current_time", TraceStatus.SUCCESS),
        ("calculator", TraceStatus.SUCCESS),
    ]
    assert traces[0][2]["time_zone"] == "Asia/Tokyo"
    tool_messages = [m for m in server.bodies[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("call_a", json.dumps(traces[0][2], separators=(",", ":"))),
        ("call_b", '{"expression":"2 ** 10","result":1024}'),
    ]
    assert _final(events).text == "Done."


async def test_a_bad_argument_reaches_the_model_as_a_failure_it_can_correct(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "calculator", '{"expression":"__import__(\'os\')"}')]),
        Reply(chat_text("Sorry.")),
    )
    events = await _run(policy, chat, organization_provider(policy, VLLM_ID, server))

    ((tool_id, status, result),) = _traces(events)
    assert (tool_id, status) == ("calculator", TraceStatus.ERROR)
    assert result.startswith("Tool execution failed: Argument 'expression'")
    assert "names, calls and other operators are not" in result
    assert server.bodies[1]["messages"][-1]["content"] == result


async def test_429_with_retry_after_is_waited_out_then_answered(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(
        Reply(status=429, headers={"Retry-After": "0"}, body='{"error":{"message":"slow down"}}'),
        Reply(chat_text("Hello.")),
    )
    events = await _run(policy, chat, organization_provider(policy, VLLM_ID, server))

    assert _final(events).text == "Hello."
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


async def test_a_stream_cut_mid_round_ends_with_a_clear_error_and_no_retry(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(Reply(chat_text("Let me ", "check"), break_after_events=True))
    provider = organization_provider(policy, VLLM_ID, server)
    events: list[Any] = []
    with pytest.raises(ProviderError, match="broke off while the answer was streaming"):
        async with client(provider) as provider_client:
            async for event in ChatRuntime(policy).respond(
                chat, provider, [QUESTION], selected_tool_ids=EXAMPLE_TOOLS, client=provider_client
            ):
                events.append(event)

    shown = "".join(e.text for e in events if isinstance(e, TextDeltaEvent))
    assert shown == "Let me check", "text already streamed stays and is never repeated"
    assert len(server.requests) == 1


# --- Responses (the organization's OpenAI entry) ------------------------------------------------

REASONING_ITEM: dict[str, Any] = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [],
    "encrypted_content": "gAAAAB\u00e9+/x==",
}


async def test_responses_reasoning_item_goes_back_byte_for_byte(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    call = responses_call("call_1", "calculator", '{"expression":"(17 + 4) * 3"}')
    server.queue(
        Reply([responses_completed([REASONING_ITEM, call], input_tokens=70)]),
        Reply([*responses_text("63"), responses_completed([responses_message("63")])]),
    )
    provider = organization_provider(policy, OPENAI_ID, server)
    events = await _run(policy, chat, provider)

    assert _final(events).text == "63"
    first, second = server.requests
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    assert [t["name"] for t in first.json["tools"]] == list(EXAMPLE_TOOLS)
    sent_as = json.dumps(REASONING_ITEM).encode()
    assert sent_as in second.body, "the reasoning item must go back exactly as it came"
    assert second.json["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": CALC_RESULT,
    }


# --- Anthropic Messages -------------------------------------------------------------------------

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxjZ3+/=="


def _thinking_then_two_calls() -> list[object]:
    return [
        message_start(80),
        block_start(0, {"type": "thinking", "thinking": ""}),
        block_delta(0, {"type": "thinking_delta", "thinking": "Two tools, "}),
        block_delta(0, {"type": "thinking_delta", "thinking": "one turn."}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        block_stop(0),
        block_start(1, {"type": "text", "text": ""}),
        text_delta(1, "Checking."),
        block_stop(1),
        block_start(2, {"type": "tool_use", "id": "toolu_1", "name": "current_time", "input": {}}),
        json_delta(2, '{"time_zone": "Europe/Berlin"}'),
        block_stop(2),
        block_start(3, {"type": "tool_use", "id": "toolu_2", "name": "calculator", "input": {}}),
        json_delta(3, '{"expression": "1/0"}'),
        block_stop(3),
        message_delta("tool_use"),
        MESSAGE_STOP,
    ]


async def test_anthropic_thinking_echoed_and_both_results_in_one_user_message(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(Reply(_thinking_then_two_calls()), Reply(anthropic_text_message("Done.")))
    events = await _run(policy, chat, anthropic_provider(server))

    assert _final(events).text == "Checking.\n\nDone."
    first, second = server.requests
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == API_KEY
    assert first.json["system"].startswith("You are the Example Corp assistant.")
    messages = second.json["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Two tools, one turn.",
        "signature": SIGNATURE,
    }
    assert json.dumps(SIGNATURE).encode() in second.body
    results = messages[2]["content"]
    assert [(r["tool_use_id"], r.get("is_error", False)) for r in results] == [
        ("toolu_1", False),
        ("toolu_2", True),
    ]
    assert json.loads(results[0]["content"])["time_zone"] == "Europe/Berlin"
    assert (
        results[1]["content"]
        == "Tool execution failed: Argument 'expression': Division by zero is undefined."
    )


# --- chat requirements --------------------------------------------------------------------------


async def test_a_provider_below_what_an_earlier_result_demanded_is_refused_before_sending(
    policy: Policy, chat: Chat, server: ProviderServer, notes_tool: InternalNotesTool, tmp_path: Any
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply(chat_text("The plan: hire two engineers.")),
    )
    vllm = organization_provider(policy, VLLM_ID, server)
    answered = await _run(policy, chat, vllm, selected=("internal_notes",))
    assert _final(answered).text == "The plan: hire two engineers."
    assert chat.required_provider_confidence is ConfidenceLevel.HIGH
    assert request_key(NOTES_URL) in chat.known_web_addresses

    reopened = Chat.open(chat.id, SqliteChatStore(tmp_path / "chats.sqlite3"))
    assert reopened.required_provider_confidence is ConfidenceLevel.HIGH
    openai = organization_provider(policy, OPENAI_ID, server)
    before = len(server.requests)
    with pytest.raises(ChatRequirementError) as refused:
        await _run(policy, reopened, openai, selected=("internal_notes",))
    assert "HIGH" in str(refused.value) and "LOW" in str(refused.value)
    assert len(server.requests) == before, "no request may reach a refused provider"


async def test_a_result_that_tightens_the_chat_stops_the_same_call_before_the_next_round(
    policy: Policy, chat: Chat, server: ProviderServer, notes_tool: InternalNotesTool
) -> None:
    server.queue(
        Reply([responses_completed([responses_call("call_1", "internal_notes", "{}")])]),
        Reply([responses_completed([responses_message("never sent")])]),
    )
    openai = organization_provider(policy, OPENAI_ID, server)
    with pytest.raises(ChatRequirementError, match="HIGH or higher"):
        await _run(policy, chat, openai, selected=("internal_notes",))
    assert len(server.requests) == 1
    assert len(notes_tool.given) == 1


async def test_tools_get_the_addresses_given_in_prompt_messages_and_earlier_results(
    policy: Policy, chat: Chat, server: ProviderServer, notes_tool: InternalNotesTool
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply([chat_call(0, "call_2", "internal_notes", "{}")]),
        Reply(chat_text("ok")),
    )
    history = [
        QUESTION,
        ChatMessage(Role.ASSISTANT, "Try https://model-made.example.org/up"),
        ChatMessage(Role.USER, "Read it."),
    ]
    await _run(
        policy, chat, organization_provider(policy, VLLM_ID, server), history, ("internal_notes",)
    )

    first, second = notes_tool.given
    assert request_key("https://docs.example.org/math") in first
    assert request_key("https://model-made.example.org/up") not in first
    assert request_key(NOTES_URL) not in first
    assert request_key(NOTES_URL) in second, "an earlier tool result's address counts as given"


async def test_a_tool_the_organization_switched_off_is_not_offered(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(Reply(chat_text("Hi.")))
    openai = organization_provider(policy, OPENAI_ID, server)
    events = await _run(policy, chat, openai, selected=("web_search", "calculator"))

    assert events[0].tool_ids == ("calculator",)
    assert [t["name"] for t in server.bodies[0]["tools"]] == ["calculator"]


async def test_a_broken_organization_plugin_offers_no_tools_but_the_chat_goes_on(
    example_tools: Any, server: ProviderServer, chat: Chat, tmp_path: Any
) -> None:
    broken = tmp_path / "broken" / "plugin.lua"
    broken.parent.mkdir()
    broken.write_text('ID = "x"\nCONFIG = {\n')
    policy = load_policy(org=[ORGANIZATION, broken], tools=list(example_tools.create_tools()))
    assert policy.configuration.fails_closed
    server.queue(Reply(chat_text("Hi without tools.")))
    provider = organization_provider(policy, VLLM_ID, server)
    events = await _run(policy, chat, provider)

    assert events[0].tool_ids == ()
    assert "tools" not in server.bodies[0]
    assert _final(events).text == "Hi without tools."


async def test_a_definition_without_an_implementation_is_left_out_with_the_reason(
    example_tools: Any, server: ProviderServer, chat: Chat
) -> None:
    data_only = DefinedTool(
        ToolDefinition(
            id="lookup_order",
            implementation_key="lookup_order",
            function=ToolFunction(name="lookup_order", description_for_llm="Find an order."),
            effects=(),  # declared, so the example organization's flow rule may offer it
            system_prompt_instructions="Look orders up before answering about them.",
        )
    )
    policy = load_policy(org=[ORGANIZATION], tools=[*example_tools.create_tools(), data_only])
    server.queue(Reply(chat_text("ok")))
    provider = organization_provider(policy, VLLM_ID, server)
    events = await _run(policy, chat, provider, selected=("lookup_order", "calculator"))

    assert events[0].tool_ids == ("calculator",)
    assert ("lookup_order", "no implementation that can run is registered") in events[0].left_out
    assert [t["function"]["name"] for t in server.bodies[0]["tools"]] == ["calculator"]
    assert "lookup_order" not in server.bodies[0]["messages"][0]["content"]


@pytest.mark.parametrize(
    ("messages", "says"),
    [
        ([], "; got 0 message(s)."),
        (
            [QUESTION, ChatMessage(Role.ASSISTANT, "63")],
            "; got 2 message(s), the last from assistant.",
        ),
    ],
)
async def test_respond_needs_the_users_message_last(
    policy: Policy, chat: Chat, server: ProviderServer, messages: list[ChatMessage], says: str
) -> None:
    provider = organization_provider(policy, VLLM_ID, server)
    with pytest.raises(ValueError, match="the user's message last") as refused:
        async for _ in ChatRuntime(policy).respond(chat, provider, messages):
            pass
    assert says in str(refused.value)
    assert server.requests == []


async def test_one_tool_id_given_as_a_bare_string_is_refused_not_split_into_letters(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    provider = organization_provider(policy, VLLM_ID, server)
    with pytest.raises(ValueError, match="selected_tool_ids") as refused:
        async for _ in ChatRuntime(policy).respond(
            chat, provider, [QUESTION], selected_tool_ids="calculator"
        ):
            pass
    assert "['calculator']" in str(refused.value)
    assert server.requests == []


class _Dice(DefinedTool):
    """A tool written to the documented contract only (docs/developers/tools.md): `DefinedTool` (the `Tool` protocol) plus
    `execute`; no trace or content-trust members."""

    def __init__(self) -> None:
        super().__init__(
            ToolDefinition(
                id="dice",
                implementation_key="dice",
                function=ToolFunction(name="dice", description_for_llm="Roll a die."),
                effects=(),  # the documented tool contract declares its effects
            )
        )

    async def execute(self, arguments: Any, context: Any) -> ToolExecutionResult:
        return ToolExecutionResult(json_content={"rolled": 4})


class _NoExecute(DefinedTool):
    """Forgot `execute`."""


async def test_a_tool_with_only_the_documented_members_is_offered_and_runs(
    example_tools: Any, server: ProviderServer, chat: Chat
) -> None:
    policy = load_policy(org=[ORGANIZATION], tools=[*example_tools.create_tools(), _Dice()])
    server.queue(
        Reply([chat_call(0, "call_1", "dice", "{}"), chat_usage(50)]),
        Reply([*chat_text("You rolled 4."), chat_usage(60)]),
    )
    events = await _run(
        policy, chat, organization_provider(policy, VLLM_ID, server), selected=("dice",)
    )

    assert events[0].tool_ids == ("dice",)
    assert _traces(events) == [("dice", TraceStatus.SUCCESS, {"rolled": 4})]
    assert _final(events).text == "You rolled 4."


async def test_a_tool_lacking_execute_is_left_out_naming_the_member(
    example_tools: Any, server: ProviderServer, chat: Chat
) -> None:
    forgetful = _NoExecute(
        ToolDefinition(
            id="forgetful",
            implementation_key="forgetful",
            function=ToolFunction(name="forgetful", description_for_llm="Does nothing."),
            effects=(),
        )
    )
    policy = load_policy(org=[ORGANIZATION], tools=[*example_tools.create_tools(), forgetful])
    server.queue(Reply(chat_text("ok")))
    events = await _run(
        policy, chat, organization_provider(policy, VLLM_ID, server), selected=("forgetful",)
    )

    assert events[0].tool_ids == ()
    assert ("forgetful", "its implementation lacks execute") in events[0].left_out


# --- wire choice --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("wire_api", "path"),
    [("chat_completions", "/v1/chat/completions"), ("responses", "/v1/responses")],
)
async def test_respond_speaks_the_wire_api_asked_for(
    policy: Policy,
    chat: Chat,
    server: ProviderServer,
    monkeypatch: pytest.MonkeyPatch,
    wire_api: Any,
    path: str,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    answer = (
        Reply(chat_text("63"))
        if wire_api == "chat_completions"
        else Reply([*responses_text("63"), responses_completed([responses_message("63")])])
    )
    server.queue(answer)
    provider = organization_provider(policy, OPENAI_ID, server)
    events = [
        e
        async for e in ChatRuntime(policy).respond(
            chat, provider, [QUESTION], selected_tool_ids=EXAMPLE_TOOLS, wire_api=wire_api
        )
    ]
    assert _final(events).text == "63"
    assert [r.path for r in server.requests] == [path]


async def test_a_host_that_speaks_one_api_refuses_the_other(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    from runtime.providers import ProviderConfigurationError

    provider = organization_provider(policy, VLLM_ID, server)
    with pytest.raises(ProviderConfigurationError, match="speaks only the chat_completions API"):
        async for _ in ChatRuntime(policy).respond(
            chat, provider, [QUESTION], wire_api="responses"
        ):
            pass
    assert server.requests == []


async def test_a_client_of_another_wire_api_is_refused_before_sending(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    provider = organization_provider(policy, OPENAI_ID, server)
    async with client(provider) as responses_client:
        with pytest.raises(ValueError, match="wire_api='chat_completions'"):
            async for _ in ChatRuntime(policy).respond(
                chat, provider, [QUESTION], client=responses_client, wire_api="chat_completions"
            ):
                pass
    assert server.requests == []
