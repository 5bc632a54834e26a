"""Picks the adapter that speaks a client's wire API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.adapters.base import ToolCallingAdapter
from runtime.messages import Conversation
from runtime.providers.client import ProviderClient


def create_adapter(
    client: ProviderClient,
    conversation: Conversation,
    model: str,
    *,
    max_output_tokens: int | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> ToolCallingAdapter:
    """A fresh adapter for one streaming call (adapters are stateful: never share one).

    `extra_body` holds the provider's additional API parameters; the fields an adapter owns
    (model, messages/input, stream, tools, tool_choice, parallel_tool_calls, ...) stay its own.
    """
    wire_api = client.profile.wire_api
    if wire_api == "responses":
        from runtime.adapters.responses import ResponsesAdapter

        return ResponsesAdapter(
            client,
            conversation,
            model,
            max_output_tokens=max_output_tokens,
            extra_body=extra_body,
        )
    if wire_api == "anthropic":
        from runtime.adapters.anthropic import AnthropicAdapter

        return AnthropicAdapter(
            client,
            conversation,
            model,
            max_output_tokens=max_output_tokens,
            extra_body=extra_body,
        )
    from runtime.adapters.chat_completions import ChatCompletionsAdapter

    return ChatCompletionsAdapter(
        client, conversation, model, max_output_tokens=max_output_tokens, extra_body=extra_body
    )
