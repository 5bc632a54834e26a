"""Running one tool call through the real executor, as the loop does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from policy.vocabulary import ConfidenceLevel, ProviderKind
from runtime.chat import Chat, MemoryChatStore
from runtime.execution import ExecutableTool
from runtime.executor import ToolCallOutcome, ToolExecutor
from runtime.messages import RequestedCall


async def executor_call(
    executor: ToolExecutor,
    tool: ExecutableTool,
    arguments: Mapping[str, Any],
    *,
    chat: Chat | None = None,
    given: frozenset[str] = frozenset(),
    confidence: ConfidenceLevel = ConfidenceLevel.MEDIUM,
) -> ToolCallOutcome:
    definition = tool.definition
    call = RequestedCall("call-1", definition.function.name, json.dumps(arguments))
    return await executor.execute(
        call,
        [(definition, tool)],
        order=1,
        provider_kind=ProviderKind.OPEN_AI,
        provider_confidence=confidence,
        chat=chat or Chat.open("chat-1", MemoryChatStore()),
        given_web_addresses=given,
    )
