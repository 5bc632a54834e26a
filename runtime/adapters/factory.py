"""Picks the adapter that speaks a client's wire API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from runtime.adapters.base import ToolCallingAdapter
from runtime.messages import Conversation
from runtime.providers.client import ProviderClient
from runtime.providers.hosts import WireApi


class _AdapterClass(Protocol):
    def __call__(
        self,
        client: ProviderClient,
        conversation: Conversation,
        model: str,
        *,
        max_output_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> ToolCallingAdapter: ...


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
    adapter_class = _adapter_class(client.profile.wire_api)
    return adapter_class(
        client, conversation, model, max_output_tokens=max_output_tokens, extra_body=extra_body
    )


def _adapter_class(wire_api: WireApi) -> _AdapterClass:
    """Imported on first use, so a process that speaks one API never loads the others."""
    if wire_api == "responses":
        from runtime.adapters.responses import ResponsesAdapter

        return ResponsesAdapter
    if wire_api == "anthropic":
        from runtime.adapters.anthropic import AnthropicAdapter

        return AnthropicAdapter
    from runtime.adapters.chat_completions import ChatCompletionsAdapter

    return ChatCompletionsAdapter
