"""An in-process ToolCallingAdapter that plays scripted rounds and records what the loop did.

It implements our own adapter protocol (no HTTP is involved), so the loop can be tested alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from policy.definitions import ToolDefinition, ToolFunction
from policy.provider_facts import ProviderFacts
from policy.tools import DefinedTool
from policy.vocabulary import ConfidenceLevel, ProviderKind, ToolOutboundData
from runtime.chat import Chat, MemoryChatStore
from runtime.execution import ToolExecutionContext, ToolExecutionResult
from runtime.executor import ToolExecutor
from runtime.loop import LoopContext
from runtime.messages import (
    AdapterEvent,
    RequestedCall,
    Round,
    RoundCompleted,
    Source,
    TextDelta,
    Usage,
)

#: A scripted round: the events to yield; a round without RoundCompleted is a failed round.
ScriptedRound = list[AdapterEvent]


def text(content: str, usage: Usage | None = None, sources: tuple[Source, ...] = ()) -> TextDelta:
    return TextDelta(content, sources=sources, usage=usage or Usage())


def completed(
    text_output: str = "",
    *calls: RequestedCall,
    sources: tuple[Source, ...] = (),
    usage: Usage | None = None,
) -> RoundCompleted:
    return RoundCompleted(Round(text_output, tuple(calls), sources, usage or Usage()))


def call(call_id: str, name: str, arguments: str = "{}", *, valid: bool = True) -> RequestedCall:
    return RequestedCall(call_id, name, arguments, valid)


@dataclass
class ScriptedAdapter:
    rounds: list[ScriptedRound]
    log: list[tuple[Any, ...]] = field(default_factory=list)
    requests: list[tuple[str | None, bool]] = field(default_factory=list)

    async def execute_round(
        self, final_response_instruction: str | None, include_tools: bool
    ) -> AsyncIterator[AdapterEvent]:
        self.requests.append((final_response_instruction, include_tools))
        self.log.append(("round", final_response_instruction, include_tools))
        if not self.rounds:
            raise AssertionError("The loop asked for a round the script does not have.")
        for event in self.rounds.pop(0):
            yield event

    def record_assistant_turn(self) -> None:
        self.log.append(("turn",))

    def record_tool_result(self, call_id: str, content: str, is_error: bool = False) -> None:
        self.log.append(("result", call_id, content, is_error))

    @property
    def recorded_request_texts(self) -> Sequence[str]:
        return [str(entry) for entry in self.log if entry[0] != "round"]

    @property
    def results(self) -> list[tuple[Any, ...]]:
        return [entry for entry in self.log if entry[0] == "result"]


class EchoTool(DefinedTool):
    """A real executable tool: returns what `respond` makes of the arguments and records contexts."""

    def __init__(
        self,
        name: str,
        respond: Any = None,
        *,
        display_name: str | None = None,
        sensitive: frozenset[str] = frozenset(),
        outbound_data: ToolOutboundData = ToolOutboundData.NONE,
        enforces: bool = False,
        effects: tuple[str, ...] | None = None,
    ) -> None:
        definition = ToolDefinition(
            id=name,
            implementation_key=name,
            function=ToolFunction(name=name, description_for_llm=f"The {name} tool."),
            effects=effects,
        )
        super().__init__(definition, display_name or name.title(), outbound_data, enforces)
        self._respond = respond or (lambda args: ToolExecutionResult(text_content=f"ok {args}"))
        self._sensitive = sensitive
        self.contexts: list[ToolExecutionContext] = []
        self.arguments: list[Mapping[str, Any]] = []

    @property
    def sensitive_trace_argument_names(self) -> frozenset[str]:
        return self._sensitive

    @property
    def returns_untrusted_external_content(self) -> bool:
        return False

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        self.contexts.append(context)
        self.arguments.append(arguments)
        result: ToolExecutionResult = self._respond(arguments)
        return result

    def runnable(self) -> tuple[ToolDefinition, EchoTool]:
        return (self.definition, self)


def loop_context(
    *tools: EchoTool,
    chat: Chat | None = None,
    confidence: ConfidenceLevel = ConfidenceLevel.MEDIUM,
    provider_kind: ProviderKind = ProviderKind.OPEN_AI,
    provider_name: str = "Company OpenAI",
    model: str = "gpt-test",
) -> LoopContext:
    """One streaming call's context with `tools` runnable through the real executor."""
    return LoopContext(
        chat=chat or Chat.open("chat-1", MemoryChatStore()),
        runnable_tools=[tool.runnable() for tool in tools],
        executor=ToolExecutor(),
        provider=ProviderFacts(provider_kind, confidence),
        provider_name=provider_name,
        model=model,
    )
