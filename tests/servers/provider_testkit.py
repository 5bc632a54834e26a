"""What the adapter and provider tests share: a tool to offer, clients aimed at the loopback
server, and a way to run one round to its end."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar

from policy.definitions import ToolDefinition, ToolFunction
from runtime.adapters.anthropic import AnthropicAdapter
from runtime.adapters.base import ToolCallingAdapter
from runtime.adapters.chat_completions import ChatCompletionsAdapter
from runtime.adapters.responses import ResponsesAdapter
from runtime.messages import ChatMessage, Conversation, Role, Round, RoundCompleted, TextDelta
from runtime.providers import HostProfile, ProviderClient, RetryPolicy, Timeouts
from runtime.schema import ParameterSchemaBuilder

API_KEY = "sk-test-0123456789abcdef"
FAST_RETRIES = RetryPolicy(
    max_attempts=3,
    initial_backoff_seconds=0.0,
    max_backoff_seconds=0.0,
    max_retry_after_seconds=1.0,
)


def web_search_tool(strict: bool = True) -> ToolDefinition:
    schema = (
        ParameterSchemaBuilder()
        .required_string("query", "What to search for.")
        .optional_integer("page", "Result page, starting at 1.")
        .build()
    )
    return ToolDefinition(
        id="web_search",
        implementation_key="web_search",
        function=ToolFunction(
            name="web_search",
            description_for_llm="Search the web.",
            strict=strict,
            parameters=schema,
        ),
    )


def conversation(*tools: ToolDefinition, prompt: str = "You are helpful.") -> Conversation:
    return Conversation(
        system_prompt=prompt,
        messages=[ChatMessage(Role.USER, "What is new in Python 3.14?")],
        tools=list(tools),
    )


def client_for(
    profile: HostProfile,
    base_url: str,
    *,
    retry: RetryPolicy = FAST_RETRIES,
    timeouts: Timeouts | None = None,
    api_key: str | None = API_KEY,
) -> ProviderClient:
    return ProviderClient(
        dataclasses.replace(profile, base_url=base_url),
        api_key,
        retry=retry,
        timeouts=timeouts,
        provider_name="Test provider",
    )


_Adapter = TypeVar("_Adapter", ChatCompletionsAdapter, ResponsesAdapter, AnthropicAdapter)


def adapter_for(
    adapter_class: type[_Adapter],
    profile: HostProfile,
    base_url: str,
    model: str,
    *,
    tools: Sequence[ToolDefinition] | None = None,
    max_output_tokens: int | None = None,
    extra_body: Mapping[str, Any] | None = None,
) -> _Adapter:
    """An adapter on the loopback server for the standard conversation (web_search on offer)."""
    offered = (web_search_tool(),) if tools is None else tools
    return adapter_class(
        client_for(profile, base_url),
        conversation(*offered),
        model,
        max_output_tokens=max_output_tokens,
        extra_body=extra_body,
    )


@dataclasses.dataclass
class RoundOutcome:
    deltas: list[TextDelta]
    round: Round | None

    @property
    def text(self) -> str:
        return "".join(d.content for d in self.deltas)

    @property
    def usages(self) -> list[int | None]:
        return [d.usage.input_tokens for d in self.deltas if d.usage.is_known]


async def run_round(
    adapter: ToolCallingAdapter, instruction: str | None = None, include_tools: bool = True
) -> RoundOutcome:
    deltas: list[TextDelta] = []
    completed: list[Round] = []
    events: AsyncIterator[object] = adapter.execute_round(instruction, include_tools)
    async for event in events:
        if isinstance(event, TextDelta):
            assert not completed, "a TextDelta arrived after RoundCompleted"
            deltas.append(event)
        elif isinstance(event, RoundCompleted):
            assert not completed, "two RoundCompleted in one round"
            completed.append(event.round)
    return RoundOutcome(deltas, completed[0] if completed else None)
