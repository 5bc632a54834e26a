"""Provider streams in the shape each host records them, replayed over loopback HTTP.

Each file in recorded/ is one response as the host streams it (its ids, extra members, comment
lines, SSE event names), covering what reasoning models and gateways send: OpenRouter's
`reasoning_details` (streamed in pieces and whole; Gemini 3's summary and encrypted entries at
one index kept apart), Groq's `reasoning` and raw `<think>` tags,
DeepSeek's `reasoning_content`, a whole non-streamed completion in one event, an error chunk,
Responses reasoning items with and without `encrypted_content`, truncation and refusals, Anthropic
server tools (web search with `pause_turn`, citations, code execution before a tool call), Cerebras
`reasoning` through the Hugging Face router, reasoning models that spend the whole output limit
thinking (through the loop: an early stop, no tool-calling error) and an empty reply when no tool
was offered. Every file is sent cut into odd-sized pieces (through UTF-8 sequences and JSON) and
line by line; each case asserts what the app sees and, byte for byte after parsing, what the next
request sends back (recorded/next_requests.json). Every request also passes the official SDKs'
request types (the provider server checks them when it stops).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from policy.configuration import ProviderConfig
from policy.vocabulary import ProviderKind
from runtime.adapters.anthropic import AnthropicAdapter
from runtime.adapters.chat_completions import ChatCompletionsAdapter
from runtime.adapters.responses import ResponsesAdapter
from runtime.loop import (
    NO_ANSWER,
    FinalAnswer,
    SequentialToolCallingLoop,
    TextDeltaEvent,
)
from runtime.messages import Round, RoundCompleted, StopReason, TextDelta
from runtime.providers import (
    ANTHROPIC,
    OPENAI_CHAT_COMPLETIONS,
    OPENAI_RESPONSES,
    HostProfile,
    ProviderUnavailable,
)
from runtime.providers.hosts import _CLOUD_HOSTS, host_profile_for
from tests.runtime._scripted_adapter import EchoTool, loop_context
from tests.servers.provider_scripts import (
    anthropic_text_message,
    chat_text,
    responses_completed,
    responses_message,
)
from tests.servers.provider_server import ProviderServer, Reply, running_provider_server
from tests.servers.provider_testkit import adapter_for
from tests.servers.sdk_request_types import sdk_problem

RECORDED = Path(__file__).parent / "recorded"
NEXT_REQUESTS: dict[str, list[Any]] = json.loads(
    (RECORDED / "next_requests.json").read_text(encoding="utf-8")
)
CHUNK_SIZES = [3, 17, None]
"""Bytes per write (None: line by line)."""


@dataclass(frozen=True)
class Case:
    fixture: str
    profile: HostProfile
    adapter: type[Any]
    model: str
    shown: str
    stop: StopReason
    calls: tuple[str, ...] = ()


_CHAT = ChatCompletionsAdapter
_OPENROUTER = _CLOUD_HOSTS[ProviderKind.OPEN_ROUTER]
_GROQ = _CLOUD_HOSTS[ProviderKind.GROQ]
_COMPLETED = StopReason.COMPLETED
CASES = [
    Case(
        "openrouter_claude_reasoning_details_streamed",
        _OPENROUTER,
        _CHAT,
        "anthropic/claude-sonnet-4.5",
        "Let me look that up.",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "openrouter_claude_whole_message",
        _OPENROUTER,
        _CHAT,
        "anthropic/claude-sonnet-4.5",
        "Checking the release notes.",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "openrouter_gemini_reasoning_details_whole",
        _OPENROUTER,
        _CHAT,
        "google/gemini-2.5-pro",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "openrouter_gemini3_summary_and_encrypted_at_one_index",
        _OPENROUTER,
        _CHAT,
        "google/gemini-3-pro-preview",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "groq_gpt_oss_reasoning",
        _GROQ,
        _CHAT,
        "openai/gpt-oss-120b",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "groq_qwen_think_tags",
        _GROQ,
        _CHAT,
        "qwen/qwen3-32b",
        "Grüß dich! Wie kann ich helfen? 😊",
        _COMPLETED,
    ),
    Case(
        "deepseek_reasoner_reasoning_content",
        _CLOUD_HOSTS[ProviderKind.DEEP_SEEK],
        _CHAT,
        "deepseek-reasoner",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "xai_grok_reasoning_content",
        _CLOUD_HOSTS[ProviderKind.X],
        _CHAT,
        "grok-3-mini",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "huggingface_cerebras_gpt_oss_reasoning",
        _CLOUD_HOSTS[ProviderKind.HUGGINGFACE],
        _CHAT,
        "openai/gpt-oss-120b:cerebras",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "google_gemini_content_filter",
        _CLOUD_HOSTS[ProviderKind.GOOGLE],
        _CHAT,
        "gemini-2.5-flash",
        "Here is an overview of the topic: ",
        StopReason.CONTENT_FILTER,
    ),
    Case(
        "mistral_length",
        _CLOUD_HOSTS[ProviderKind.MISTRAL],
        _CHAT,
        "mistral-small-latest",
        "Python 3.14 introduces template strings, a free-",
        StopReason.MAX_TOKENS,
    ),
    Case(
        "openai_chat_refusal",
        OPENAI_CHAT_COMPLETIONS,
        _CHAT,
        "gpt-4o",
        "I'm sorry, I can't help with that.",
        StopReason.REFUSAL,
    ),
    Case(
        "openai_responses_reasoning_encrypted",
        OPENAI_RESPONSES,
        ResponsesAdapter,
        "gpt-5-mini",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "openai_responses_reasoning_unresolvable",
        OPENAI_RESPONSES,
        ResponsesAdapter,
        "gpt-5-mini",
        "",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "openai_responses_incomplete",
        OPENAI_RESPONSES,
        ResponsesAdapter,
        "gpt-5-mini",
        "Python 3.14 adds t-strings, deferred anno",
        StopReason.MAX_TOKENS,
    ),
    Case(
        "anthropic_server_search_pause_turn",
        ANTHROPIC,
        AnthropicAdapter,
        "claude-sonnet-4-5",
        "I'll search for that.",
        StopReason.PAUSED,
    ),
    Case(
        "anthropic_code_execution_then_tool_use",
        ANTHROPIC,
        AnthropicAdapter,
        "claude-sonnet-4-5",
        "Σ is 5050. Now the release notes.",
        _COMPLETED,
        ("web_search",),
    ),
    Case(
        "anthropic_max_tokens",
        ANTHROPIC,
        AnthropicAdapter,
        "claude-sonnet-4-5",
        "1. Free-threaded build\n2. Template str",
        StopReason.MAX_TOKENS,
    ),
]
_SECOND_ROUND = {
    ChatCompletionsAdapter: lambda: Reply(chat_text("ok")),
    ResponsesAdapter: lambda: Reply([responses_completed([responses_message("ok")])]),
    AnthropicAdapter: lambda: Reply(anthropic_text_message("ok")),
}
_HISTORY = {
    ChatCompletionsAdapter: "messages",
    ResponsesAdapter: "input",
    AnthropicAdapter: "messages",
}
_CONVERSATION_ITEMS = {ChatCompletionsAdapter: 2, ResponsesAdapter: 2, AnthropicAdapter: 1}
"""System prompt and user message (Anthropic's system prompt is no message)."""


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderServer]:
    with running_provider_server() as running:
        yield running


async def _round(adapter: Any) -> tuple[str, Round | None]:
    shown: list[str] = []
    completed = None
    async for event in adapter.execute_round(None, True):
        if isinstance(event, TextDelta):
            shown.append(event.content)
        elif isinstance(event, RoundCompleted):
            completed = event.round
    return "".join(shown), completed


@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
@pytest.mark.parametrize("case", CASES, ids=[c.fixture for c in CASES])
async def test_a_recorded_stream_shows_what_it_should_and_goes_back_exactly(
    server: ProviderServer, case: Case, chunk_bytes: int | None
) -> None:
    server.reset()
    recorded = (RECORDED / f"{case.fixture}.sse").read_text(encoding="utf-8")
    server.queue(Reply(raw=recorded, chunk_bytes=chunk_bytes), _SECOND_ROUND[case.adapter]())
    adapter = adapter_for(case.adapter, case.profile, server.base_url, case.model)

    shown, completed = await _round(adapter)
    assert completed is not None
    assert (shown, completed.text_output, completed.stop_reason) == (
        case.shown,
        case.shown,
        case.stop,
    )
    assert tuple(c.tool_name for c in completed.calls) == case.calls
    assert all(c.is_valid for c in completed.calls)

    adapter.record_assistant_turn()
    for call in completed.calls:
        adapter.record_tool_result(call.call_id, "result")
    await _round(adapter)
    sent = server.bodies[1][_HISTORY[case.adapter]][_CONVERSATION_ITEMS[case.adapter] :]
    assert sent == NEXT_REQUESTS[case.fixture]


def test_every_recorded_stream_is_replayed() -> None:
    replayed = (
        {c.fixture for c in CASES}
        | {c.fixture for c in EMPTY_EARLY_STOPS}
        | {EMPTY_WITHOUT_TOOLS.fixture}
        | {"openrouter_error_chunk", "anthropic_citations_end_turn"}
    )
    assert replayed == {p.stem for p in RECORDED.glob("*.sse")}
    assert set(NEXT_REQUESTS) == {c.fixture for c in CASES}


@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
async def test_a_recorded_error_chunk_is_the_hosts_error_with_its_code(
    server: ProviderServer, chunk_bytes: int | None
) -> None:
    server.reset()
    recorded = (RECORDED / "openrouter_error_chunk.sse").read_text(encoding="utf-8")
    server.queue(Reply(raw=recorded, chunk_bytes=chunk_bytes))
    adapter = adapter_for(
        ChatCompletionsAdapter, _OPENROUTER, server.base_url, "deepseek/deepseek-r1"
    )
    with pytest.raises(ProviderUnavailable) as caught:
        await _round(adapter)
    assert "Token limit reached (code 400)" in str(caught.value)
    assert "invalid tool calling" not in str(caught.value)


def test_reasoning_models_ask_for_encrypted_reasoning_and_plain_models_do_not(
    server: ProviderServer,
) -> None:
    from runtime.messages import Conversation

    def include(model: str, extra: dict[str, Any] | None = None) -> Any:
        adapter = adapter_for(
            ResponsesAdapter, OPENAI_RESPONSES, server.base_url, model, extra_body=extra
        )
        body = adapter.request_body(None, True)
        assert sdk_problem("/v1/responses", body) is None
        return json.loads(body).get("include")

    assert include("gpt-5-mini") == ["reasoning.encrypted_content"]
    assert include("o4-mini-2025-04-16") == ["reasoning.encrypted_content"]
    assert include("gpt-4.1") is None
    assert include("gpt-5-chat-latest") is None
    assert include("my-deployment", {"reasoning": {"effort": "low"}}) == [
        "reasoning.encrypted_content"
    ]
    assert include("o3", {"include": ["web_search_call.action.sources"]}) == [
        "web_search_call.action.sources",
        "reasoning.encrypted_content",
    ]
    assert Conversation  # the standard conversation is built by adapter_for


@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
async def test_a_paused_server_search_continues_and_its_citations_go_back_verbatim(
    server: ProviderServer, chunk_bytes: int | None
) -> None:
    server.reset()
    paused = (RECORDED / "anthropic_server_search_pause_turn.sse").read_text(encoding="utf-8")
    cited = (RECORDED / "anthropic_citations_end_turn.sse").read_text(encoding="utf-8")
    server.queue(
        Reply(raw=paused, chunk_bytes=chunk_bytes),
        Reply(raw=cited, chunk_bytes=chunk_bytes),
        _SECOND_ROUND[AnthropicAdapter](),
    )
    adapter = adapter_for(AnthropicAdapter, ANTHROPIC, server.base_url, "claude-sonnet-4-5")
    _, first = await _round(adapter)
    assert first is not None and first.stop_reason is StopReason.PAUSED
    adapter.record_assistant_turn()
    shown, second = await _round(adapter)
    assert second is not None
    assert (shown, second.stop_reason) == ("Python 3.14 adds template strings.", _COMPLETED)
    assert server.bodies[1]["messages"][1:] == NEXT_REQUESTS["anthropic_server_search_pause_turn"]
    adapter.record_assistant_turn()
    await _round(adapter)
    cited_turn = server.bodies[2]["messages"][-1]
    citation_line = next(line for line in cited.splitlines() if "citations_delta" in line)
    citation = json.loads(citation_line.removeprefix("data: "))["delta"]["citation"]
    assert cited_turn == {
        "role": "assistant",
        "content": [
            {
                "citations": [citation],
                "type": "text",
                "text": "Python 3.14 adds template strings.",
            }
        ],
    }


EMPTY_EARLY_STOPS = [
    Case(
        "deepseek_reasoner_length_while_reasoning",
        _CLOUD_HOSTS[ProviderKind.DEEP_SEEK],
        _CHAT,
        "deepseek-reasoner",
        NO_ANSWER,
        StopReason.MAX_TOKENS,
    ),
    Case(
        "openai_responses_incomplete_while_reasoning",
        OPENAI_RESPONSES,
        ResponsesAdapter,
        "gpt-5-mini",
        NO_ANSWER,
        StopReason.MAX_TOKENS,
    ),
    Case(
        "anthropic_max_tokens_while_thinking",
        ANTHROPIC,
        AnthropicAdapter,
        "claude-sonnet-4-5",
        NO_ANSWER,
        StopReason.MAX_TOKENS,
    ),
]
"""Reasoning models that spend the whole output limit thinking: nothing said, nothing called."""


async def _loop_answer(
    server: ProviderServer, case: Case, chunk_bytes: int | None, *, offered: bool
) -> FinalAnswer:
    """Play a recorded first round through the real loop, web_search offered or nothing."""
    server.reset()
    recorded = (RECORDED / f"{case.fixture}.sse").read_text(encoding="utf-8")
    server.queue(Reply(raw=recorded, chunk_bytes=chunk_bytes))
    adapter = adapter_for(
        case.adapter,
        case.profile,
        server.base_url,
        case.model,
        tools=None if offered else (),
    )
    context = loop_context(*([EchoTool("web_search")] if offered else []), model=case.model)
    events = [e async for e in SequentialToolCallingLoop().run(adapter, context)]
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert "".join(e.text for e in events if isinstance(e, TextDeltaEvent)) == final.text
    assert len(server.requests) == 1
    assert bool(server.bodies[0].get("tools")) is offered
    return final


@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
@pytest.mark.parametrize("case", EMPTY_EARLY_STOPS, ids=[c.fixture for c in EMPTY_EARLY_STOPS])
async def test_a_first_round_cut_while_reasoning_is_an_early_stop_not_a_tool_calling_error(
    server: ProviderServer, case: Case, chunk_bytes: int | None
) -> None:
    final = await _loop_answer(server, case, chunk_bytes, offered=True)
    assert (final.text, final.stop_reason, final.interrupted) == (case.shown, case.stop, False)


_OLLAMA = host_profile_for(
    ProviderConfig(
        id="0d4f3a1e-0000-4000-8000-000000000002",
        name="Local Ollama",
        kind=ProviderKind.SELF_HOSTED,
        model="qwen3:8b",
        host="OLLAMA",
        hostname="http://localhost:11434",
    )
)
EMPTY_WITHOUT_TOOLS = Case(
    "ollama_empty_reply_without_tools", _OLLAMA, _CHAT, "qwen3:8b", NO_ANSWER, _COMPLETED
)


@pytest.mark.parametrize("chunk_bytes", CHUNK_SIZES)
async def test_an_empty_reply_when_no_tool_was_offered_is_a_plain_answer(
    server: ProviderServer, chunk_bytes: int | None
) -> None:
    final = await _loop_answer(server, EMPTY_WITHOUT_TOOLS, chunk_bytes, offered=False)
    assert (final.text, final.stop_reason, final.interrupted) == (NO_ANSWER, _COMPLETED, False)
    assert "tool" not in final.text.lower()
