"""Spec-conformance audit of the three adapters: odd input a host or an app may hand them."""

from __future__ import annotations

from runtime.adapters.anthropic import AnthropicAdapter
from runtime.adapters.chat_completions import ChatCompletionsAdapter
from runtime.adapters.responses import ResponsesAdapter
from runtime.messages import ChatMessage, Conversation, Role
from runtime.providers import ANTHROPIC, OPENAI_CHAT_COMPLETIONS, OPENAI_RESPONSES
from tests.servers.provider_scripts import (
    anthropic_text_message,
    chat_call,
    chat_text,
    responses_completed,
    responses_message,
)
from tests.servers.provider_server import ProviderServer, Reply
from tests.servers.provider_testkit import adapter_for, client_for, run_round

LONE_SURROGATE = "half an emoji \ud83d"
"""A code point valid in a JSON escape (`\\ud83d`) but not in UTF-8 on its own."""


async def test_a_lone_surrogate_the_model_wrote_goes_back_as_the_same_json_escape(
    server: ProviderServer,
) -> None:
    server.queue(
        Reply([*chat_text(LONE_SURROGATE), chat_call(0, "call_1", "web_search", '{"query":"x"}')]),
        Reply(chat_text("Done.")),
    )
    adapter = adapter_for(
        ChatCompletionsAdapter, OPENAI_CHAT_COMPLETIONS, server.base_url, "gpt-test"
    )
    first = await run_round(adapter)
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "result " + LONE_SURROGATE)
    second = await run_round(adapter)
    assert first.text == LONE_SURROGATE and second.text == "Done."
    resent = server.bodies[1]["messages"]
    assert resent[-2]["content"] == LONE_SURROGATE
    assert resent[-1]["content"] == "result " + LONE_SURROGATE


async def test_a_lone_surrogate_in_the_conversation_reaches_every_host_unchanged(
    server: ProviderServer,
) -> None:
    chat = Conversation("You are helpful.", [ChatMessage(Role.USER, LONE_SURROGATE)])
    server.queue(
        Reply(chat_text("ok")),
        Reply([responses_completed([responses_message("ok")])]),
        Reply(anthropic_text_message("ok")),
    )
    adapters = [
        ChatCompletionsAdapter(client_for(OPENAI_CHAT_COMPLETIONS, server.base_url), chat, "m"),
        ResponsesAdapter(client_for(OPENAI_RESPONSES, server.base_url), chat, "m"),
        AnthropicAdapter(client_for(ANTHROPIC, server.base_url), chat, "m"),
    ]
    for adapter in adapters:
        outcome = await run_round(adapter)
        assert outcome.round is not None and outcome.round.text_output == "ok"
    chat_body, responses_body, anthropic_body = server.bodies
    assert chat_body["messages"][-1]["content"] == LONE_SURROGATE
    assert responses_body["input"][-1]["content"] == LONE_SURROGATE
    assert anthropic_body["messages"][-1]["content"] == LONE_SURROGATE
