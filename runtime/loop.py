"""The one tool-calling loop every provider API runs through.

It asks the adapter for rounds, streams the model's text as it arrives, runs the calls a round
asks for one after another, applies what each result demands to the chat, and ends with a final
answer that carries the collected sources. When the call or result budget is spent, the next round
offers no tools and tells the model to answer with what it has. Another harness (an agent mode,
say) implements `ToolCallingLoop`; the adapters stay as they are.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from policy import ConfidenceLevel, ProviderKind, ToolPolicyError
from policy._runtime_seam import (
    NO_SECRETS,
    EarlierProviderNames,
    ProviderFacts,
    SecretMask,
    given_provider,
)
from runtime.adapters.base import ToolCallingAdapter
from runtime.chat import Chat, ensure_provider_allowed
from runtime.executor import (
    INVALID_CALL_MESSAGE,
    RunnableTools,
    ToolCallOutcome,
    ToolExecutor,
    ToolInvocationTrace,
    TraceStatus,
    apply_call_demands,
    find_runnable,
    invalid_call_outcome,
)
from runtime.messages import (
    UNKNOWN_USAGE,
    RequestedCall,
    Round,
    RoundCompleted,
    Source,
    StopReason,
    Usage,
)
from runtime.sources import merge_sources
from runtime.trace_text import bounded_name
from runtime.tracing import attach as tracing_attach
from runtime.tracing import child_context, end_span, provider_name, start_span
from runtime.tracing import detach as tracing_detach

if TYPE_CHECKING:
    from runtime.approvals import ApprovalGate, PendingApproval, SuspendedTurn

_log = logging.getLogger(__name__)

_ROUND_SEPARATOR = "\n\n"
_NO_ANSWER_AFTER_LIMIT = (
    "The model did not return a final answer after completing the available tool calls."
)
_NO_ANSWER_AFTER_TOOL_CALL = "The model completed the tool call but did not return a final answer."
NO_ANSWER = "The provider returned no answer."
"""The notice for an empty first round that is no tool-calling failure: no tool was offered, or
the provider said why it stopped (cut at its output limit, filtered, refused)."""
MAX_PAUSED_CONTINUATIONS = 5
"""How often a paused turn (Anthropic `pause_turn`) is sent back to continue before the answer
ends as paused."""


@dataclass(frozen=True, slots=True)
class LoopLimits:
    """Budgets per streaming call (one user message), counted over all rounds."""

    max_tool_calls: int = 15
    max_tool_result_characters: int = 300_000

    def __post_init__(self) -> None:
        if self.max_tool_calls < 1 or self.max_tool_result_characters < 1:
            raise ValueError(
                "LoopLimits need at least 1 tool call and 1 result character, got "
                f"max_tool_calls={self.max_tool_calls}, "
                f"max_tool_result_characters={self.max_tool_result_characters}."
            )

    def final_answer_instruction(self, calls: int, result_characters: int) -> str | None:
        """The instruction for a round that must answer without tools, or None while in budget.

        The character budget is checked first: its message is the more useful one.
        """
        if result_characters > self.max_tool_result_characters:
            return (
                f"The maximum total of {self.max_tool_result_characters} characters across tool "
                "call results has been exceeded. Do not make any more tool calls. Provide the best "
                "possible final answer to the user based on the tool results already available."
            )
        if calls >= self.max_tool_calls:
            return (
                f"The maximum of {self.max_tool_calls} tool calls has been reached. No more tools "
                "are available. Provide the best possible final answer to the user based on the "
                "tool results already available."
            )
        return None


# -- events --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDeltaEvent:
    """A piece of answer text, to show as it arrives (fixed notices arrive this way too)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolRoundStarted:
    """The model asked for calls: emitted once per round, before the first of them runs.

    `tool_names` and `display_names` follow the order of the calls (a tool asked for twice is
    listed twice); `status_line` is the line an app shows while they run.
    """

    call_ids: tuple[str, ...]
    tool_names: tuple[str, ...]
    display_names: tuple[str, ...]

    @property
    def status_line(self) -> str:
        """ "Using tools: web_search, read_web_page" (each display name once, in order)."""
        names = list(dict.fromkeys(self.display_names))
        label = "Using tool" if len(names) == 1 else "Using tools"
        return f"{label}: {', '.join(names)}"


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A call is about to run; `arguments` are as a trace shows them (sensitive ones masked)."""

    call_id: str
    tool_name: str
    display_name: str
    arguments: dict[str, str]
    round: int = 0
    """The 1-based round whose model reply asked for this call."""


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A call ended (ran, failed, was refused or invalid); the trace says which and how long.

    `outcome` is the executor's outcome: what the result demands of the chat and the sources it
    cites (None for a call that was never run); its `content` is what the model read, with the
    values of the call's sensitive arguments masked as in the trace.
    """

    trace: ToolInvocationTrace
    outcome: ToolCallOutcome | None = None


@dataclass(frozen=True, slots=True)
class FinalAnswer:
    """The end of the stream: everything shown as text, the sources, the first round's usage.

    `interrupted` is True when a round never completed (a failed request or a cancelled stream):
    the text shown so far stays, and nothing was added to it. `stop_reason` says why the last
    round ended: anything but COMPLETED means the answer is cut (MAX_TOKENS), filtered
    (CONTENT_FILTER), refused (REFUSAL) or still paused (PAUSED). `request_texts` are the texts
    the adapter recorded for later rounds (the model's turns and the tool results, as sent), for
    counting the tokens of what really went to the provider; the values of sensitive arguments
    in them are masked, as in traces.
    """

    text: str
    sources: tuple[Source, ...]
    usage: Usage
    interrupted: bool = False
    stop_reason: StopReason = StopReason.COMPLETED
    request_texts: tuple[str, ...] = ()
    pending_approvals: tuple[PendingApproval, ...] = ()
    """With `stop_reason` APPROVAL_REQUIRED: the calls that wait for a person's approval;
    resume the turn with `respond(..., approvals={call_id: Approval(...)})`."""


LoopEvent = TextDeltaEvent | ToolRoundStarted | ToolCallStarted | ToolCallFinished | FinalAnswer


class InvalidToolCallingResponse(ToolPolicyError):
    """Tools were offered, and the provider's first round said nothing, called nothing and
    claimed to be complete (an early stop or a round without tools is a plain empty answer)."""

    code = "invalid-tool-calling-response"

    def __init__(self, provider_name: str) -> None:
        super().__init__(
            f"The provider '{provider_name}' returned an invalid tool calling response. Check the "
            "provider's tool calling configuration and see the logs for details."
        )
        self.provider_name = provider_name


@dataclass(slots=True, init=False)
class LoopContext(EarlierProviderNames):
    """One streaming call: the chat it belongs to, what may run, and who answers.

    Built with `provider=ProviderFacts(...)`; `provider_kind=`, `provider_confidence=` and
    `provider_trusted=` are still taken in its place, and read back as properties.
    """

    chat: Chat
    runnable_tools: RunnableTools
    executor: ToolExecutor
    provider: ProviderFacts
    """Who answers: its kind, confidence, whether the organization trusts it."""
    provider_name: str
    model: str
    given_web_addresses: set[str]
    """Request keys given word for word so far (system prompt, user messages); grows with results."""
    trace: Any
    """(tracer, context of the response's span) when the response is traced, else None
    (`runtime.tracing`); rounds and tool calls become child spans of that span."""
    approvals: ApprovalGate | None
    """Which calls wait for a person's approval, and the answers given (None: no call does)."""
    resumed: SuspendedTurn | None
    """The turn stopped for approval that this call continues (None: a new turn)."""
    conversation_sha256: str
    """Of the messages this turn answers, kept with a turn stopped for approval."""

    def __init__(
        self,
        chat: Chat,
        runnable_tools: RunnableTools,
        executor: ToolExecutor,
        *,
        provider: ProviderFacts | None = None,
        provider_name: str = "",
        model: str = "",
        given_web_addresses: set[str] | None = None,
        trace: Any = None,
        approvals: ApprovalGate | None = None,
        resumed: SuspendedTurn | None = None,
        conversation_sha256: str = "",
        provider_kind: ProviderKind | None = None,
        provider_confidence: ConfidenceLevel | None = None,
        provider_trusted: bool = False,
    ) -> None:
        self.chat = chat
        self.runnable_tools = runnable_tools
        self.executor = executor
        self.provider = given_provider(
            "LoopContext", provider, provider_kind, provider_confidence, provider_trusted
        )
        self.provider_name = provider_name
        self.model = model
        self.given_web_addresses = set() if given_web_addresses is None else given_web_addresses
        self.trace = trace
        self.approvals = approvals
        self.resumed = resumed
        self.conversation_sha256 = conversation_sha256


def web_addresses_given_in(*texts: str) -> set[str]:
    """Request keys of the addresses written in the system prompt and user messages.

    The starting point of `LoopContext.given_web_addresses`.
    """
    from runtime.web.addresses import find_web_addresses

    return {key for text in texts for key in find_web_addresses(text)}


class ToolCallingLoop(Protocol):
    """The shared loop as an app can swap it (tests drive scripted adapters through it)."""

    def run(self, adapter: ToolCallingAdapter, context: LoopContext) -> AsyncIterator[LoopEvent]:
        """Drive the adapter to a final answer, yielding events an app can render."""
        ...


@dataclass(slots=True)
class _State:
    """What one streaming call has gathered so far."""

    calls: int = 0
    rounds: int = 0
    result_characters: int = 0
    sources: list[Source] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    has_spoken: bool = False
    usage: Usage = UNKNOWN_USAGE
    stop_reason: StopReason = StopReason.COMPLETED
    request_texts: tuple[str, ...] = ()
    hidden: SecretMask = NO_SECRETS
    """The values of every sensitive argument the model wrote so far (`sensitive_values`)."""
    waits: bool = False
    """The call just looked at waits for a person's approval: the turn stops before it."""
    pending: tuple[PendingApproval, ...] = ()

    def say(self, text: str) -> TextDeltaEvent:
        self.text.append(text)
        return TextDeltaEvent(text)

    def notice(self, notice: str) -> list[LoopEvent]:
        """A fixed notice, set apart from text already shown, and the end of the stream."""
        events: list[LoopEvent] = []
        if self.has_spoken:
            events.append(self.say(_ROUND_SEPARATOR))
        events.append(self.say(notice))
        events.append(self.final())
        return events

    def final(self, *, interrupted: bool = False) -> FinalAnswer:
        return FinalAnswer(
            "".join(self.text),
            tuple(self.sources),
            self.usage,
            interrupted,
            self.stop_reason,
            self.request_texts,
            self.pending,
        )


@dataclass(slots=True)
class _RoundOutcome:
    completed: Round | None = None
    spoke: bool = False


class SequentialToolCallingLoop:
    """The default loop: several calls per response are run one by one, never in parallel."""

    def __init__(self, limits: LoopLimits | None = None) -> None:
        self.limits = limits or LoopLimits()

    async def run(
        self, adapter: ToolCallingAdapter, context: LoopContext
    ) -> AsyncIterator[LoopEvent]:
        state = _State()
        first_round = True
        continuations = 0
        resumed = context.resumed
        if resumed is not None:
            first_round = False
            state.calls, state.rounds = resumed.calls_made, resumed.rounds
            state.result_characters = resumed.result_characters
            state.sources = list(resumed.sources)
            yield _round_started(resumed.calls, context)
            async for event in self._answer_calls(adapter, context, state, resumed.calls):
                yield event
            if state.waits:
                return
        while True:
            ensure_provider_allowed(context.chat, context.provider)
            instruction = self.limits.final_answer_instruction(state.calls, state.result_characters)
            outcome = _RoundOutcome()
            state.rounds += 1
            span = _round_span(context, state.rounds) if context.trace is not None else None
            failure: BaseException | None = None
            try:
                async for delta in _stream_round(adapter, instruction, first_round, state, outcome):
                    yield delta
            except BaseException as error:
                failure = error
                raise
            finally:
                if span is not None:
                    _end_round_span(span, outcome, failure)
            first_round = False
            completed = outcome.completed
            if completed is not None:
                state.stop_reason = completed.stop_reason
            if _continues_paused_turn(completed, continuations):
                continuations += 1
                adapter.record_assistant_turn()
                continue

            state.request_texts = tuple(map(state.hidden.text, adapter.recorded_request_texts))
            ending = _ending(state, outcome, instruction is not None, context)
            if ending is not None or completed is None:
                for event in ending or ():
                    yield event
                return
            adapter.record_assistant_turn()
            yield _round_started(completed.calls, context)
            async for event in self._answer_calls(adapter, context, state, completed.calls):
                yield event
            if state.waits:
                return

    async def _answer_calls(
        self,
        adapter: ToolCallingAdapter,
        context: LoopContext,
        state: _State,
        calls: tuple[RequestedCall, ...],
    ) -> AsyncIterator[LoopEvent]:
        """Answer a round's calls in order; at the first one that waits for approval, keep the
        turn in the chat store and end the stream (`StopReason.APPROVAL_REQUIRED`)."""
        for index, call in enumerate(calls):
            async for event in self._answer_call(adapter, context, state, call):
                yield event
            if state.waits:
                yield self._suspend(adapter, context, state, calls[index:])
                return

    def _suspend(
        self,
        adapter: ToolCallingAdapter,
        context: LoopContext,
        state: _State,
        remaining: tuple[RequestedCall, ...],
    ) -> FinalAnswer:
        """Keep the turn (what the adapter recorded, the calls not yet answered) and ask about
        the waiting call and every later one of the round that needs approval too."""
        from runtime.approvals import SuspendedTurn

        gate = context.approvals
        assert gate is not None
        pending: list[PendingApproval] = []
        for call in remaining:
            waiting = _approval_reason(context, call)
            if waiting is not None:
                tool_id, reason = waiting
                arguments = context.executor.traced_arguments(call, context.runnable_tools)
                pending.append(gate.pending(call, tool_id, reason, arguments))
        turn = SuspendedTurn(
            pending=tuple(pending),
            calls=remaining,
            turns=adapter.recorded_turns(),  # type: ignore[attr-defined]
            conversation_sha256=context.conversation_sha256,
            calls_made=state.calls,
            rounds=state.rounds,
            result_characters=state.result_characters,
            sources=tuple(state.sources),
        )
        context.chat.keep_suspended_turn(turn.to_json())
        state.pending = turn.pending
        state.stop_reason = StopReason.APPROVAL_REQUIRED
        state.request_texts = tuple(map(state.hidden.text, adapter.recorded_request_texts))
        return state.final()

    async def _answer_call(
        self,
        adapter: ToolCallingAdapter,
        context: LoopContext,
        state: _State,
        call: RequestedCall,
    ) -> AsyncIterator[LoopEvent]:
        """Answer one call of a round: invalid, over the budget, or run through the executor."""
        hidden = context.executor.sensitive_values(call, context.runnable_tools)
        if hidden:
            state.hidden = SecretMask(state.hidden.secrets | hidden.secrets)
        if not call.is_valid:
            state.calls += 1
            invalid = invalid_call_outcome(call.call_id, state.calls)
            state.result_characters += len(invalid.content)
            yield ToolCallFinished(invalid.trace)
            adapter.record_tool_result(call.call_id, invalid.content, is_error=True)
            return

        over_budget = self.limits.final_answer_instruction(state.calls, state.result_characters)
        if over_budget is not None:
            adapter.record_tool_result(call.call_id, over_budget, is_error=False)
            return

        if context.approvals is not None:
            refused = _unapproved(context, state, call)
            if state.waits:
                return
            if refused is not None:
                state.calls += 1
                state.result_characters += len(refused.content)
                yield ToolCallFinished(refused.trace, refused)
                adapter.record_tool_result(call.call_id, refused.content, is_error=True)
                return

        state.calls += 1
        found = find_runnable(context.runnable_tools, call.tool_name)
        tool_name = bounded_name(call.tool_name)
        yield ToolCallStarted(
            call_id=bounded_name(call.call_id),
            tool_name=tool_name,
            display_name=found[1].display_name if found else tool_name,
            arguments=context.executor.traced_arguments(call, context.runnable_tools),
            round=state.rounds,
        )
        span = token = None
        if context.trace is not None:
            span = _tool_span(context, call, state.rounds)
            token = tracing_attach(child_context(span, context.trace[1]))
        try:
            outcome = await context.executor.execute(
                call,
                context.runnable_tools,
                order=state.calls,
                chat=context.chat,
                provider=context.provider,
                given_web_addresses=frozenset(context.given_web_addresses),
            )
        except BaseException as error:
            if span is not None:
                tracing_detach(token)
                end_span(span, error)
            raise
        if span is not None:
            tracing_detach(token)
            _end_tool_span(span, outcome.trace)
        state.result_characters += len(outcome.content)
        _apply_demands(context, outcome)
        state.sources = merge_sources(state.sources, outcome.sources)
        shown = replace(outcome, content=hidden.text(outcome.content)) if hidden else outcome
        yield ToolCallFinished(outcome.trace, shown)
        adapter.record_tool_result(
            call.call_id, outcome.content, is_error=outcome.trace.status is not TraceStatus.SUCCESS
        )


def _approval_reason(context: LoopContext, call: RequestedCall) -> tuple[str, str] | None:
    """(tool id, why) when the call's tool needs a person's approval, else None (a call of a
    tool not offered is refused by the executor, never asked about)."""
    gate = context.approvals
    if gate is None or not call.is_valid:
        return None
    found = find_runnable(context.runnable_tools, call.tool_name)
    if found is None:
        return None
    reason = gate.reasons(found[0].id)
    return None if reason is None else (found[0].id, reason)


def _unapproved(context: LoopContext, state: _State, call: RequestedCall) -> ToolCallOutcome | None:
    """Before a call runs: None when it needs no approval or holds one; sets `state.waits` when
    it must wait; else the refusal the model reads (a denial, or an app that cannot wait)."""
    from runtime.approvals import denial_text
    from runtime.executor import not_run_outcome

    waiting = _approval_reason(context, call)
    gate = context.approvals
    if waiting is None or gate is None:
        return None
    answer = gate.answer(call)
    if answer is not None and answer.approved:
        return None
    arguments = context.executor.traced_arguments(call, context.runnable_tools)
    if answer is not None:
        text = denial_text(answer)
        return not_run_outcome(call, state.calls + 1, text, text, arguments)
    if not gate.can_wait:
        text = (
            f"This call needs a person's approval ({waiting[1]}), and this chat cannot keep "
            "calls waiting for one (its store or the provider adapter cannot keep the turn)."
        )
        return not_run_outcome(call, state.calls + 1, text, text, arguments)
    state.waits = True
    return None


async def _stream_round(
    adapter: ToolCallingAdapter,
    instruction: str | None,
    passes_on_usage: bool,
    state: _State,
    outcome: _RoundOutcome,
) -> AsyncIterator[TextDeltaEvent]:
    """Stream one round's text live; only the first round's usage describes the conversation."""
    async for event in adapter.execute_round(instruction, instruction is None):
        if isinstance(event, RoundCompleted):
            outcome.completed = event.round
            continue
        if passes_on_usage and event.usage.is_known:
            state.usage = _combine(state.usage, event.usage)
        if event.sources:
            state.sources = merge_sources(state.sources, event.sources)
        if event.content.strip():
            if not outcome.spoke and state.has_spoken:
                yield state.say(_ROUND_SEPARATOR)
            outcome.spoke = state.has_spoken = True
        if event.content:
            yield state.say(event.content)
    completed = outcome.completed
    if passes_on_usage and completed and not state.usage.is_known and completed.usage.is_known:
        state.usage = completed.usage


def _continues_paused_turn(completed: Round | None, continuations: int) -> bool:
    """A paused turn without calls is sent back as it is so the model goes on (Anthropic's
    `pause_turn` during long server-tool work), a bounded number of times."""
    return (
        completed is not None
        and completed.stop_reason is StopReason.PAUSED
        and not completed.calls
        and continuations < MAX_PAUSED_CONTINUATIONS
    )


def _round_started(calls: tuple[RequestedCall, ...], context: LoopContext) -> ToolRoundStarted:
    """The round's calls by id, tool name and the name a user reads."""
    display: list[str] = []
    for call in calls:
        found = find_runnable(context.runnable_tools, call.tool_name) if call.is_valid else None
        display.append(found[1].display_name if found else bounded_name(call.tool_name))
    return ToolRoundStarted(
        tuple(bounded_name(c.call_id) for c in calls),
        tuple(bounded_name(c.tool_name) for c in calls),
        tuple(display),
    )


def _ending(
    state: _State, outcome: _RoundOutcome, final_required: bool, context: LoopContext
) -> list[LoopEvent] | None:
    """The last events when this round ends the stream, or None when its calls are to be run."""
    completed = outcome.completed
    if completed is None:
        return [state.final(interrupted=True)]
    answered = outcome.spoke or bool(completed.text_output.strip())
    state.sources = merge_sources(state.sources, completed.sources)

    if any(not call.call_id.strip() for call in completed.calls):
        state.calls += 1
        trace = invalid_call_outcome("", state.calls).trace
        return [ToolCallFinished(trace), *state.notice(INVALID_CALL_MESSAGE)]
    if final_required:
        return [state.final()] if answered else state.notice(_NO_ANSWER_AFTER_LIMIT)
    if completed.calls:
        return None
    if answered:
        return [state.final()]
    if state.calls > 0:
        return state.notice(_NO_ANSWER_AFTER_TOOL_CALL)
    stopped = completed.stop_reason
    if not context.runnable_tools or stopped is not StopReason.COMPLETED:
        _log.warning(
            "Provider %r (model %r) returned an empty answer (%s).",
            context.provider_name,
            context.model,
            "no tools were offered"
            if stopped is StopReason.COMPLETED
            else f"it stopped early: {stopped.value}",
        )
        return state.notice(NO_ANSWER)
    _log.error(
        "Provider %r (model %r) answered the first round with neither text nor calls.",
        context.provider_name,
        context.model,
    )
    raise InvalidToolCallingResponse(context.provider_name)


def _round_span(context: LoopContext, number: int) -> Any:
    """A `chat {model}` span for one round (the model request), under the response's span."""
    active, parent = context.trace
    return start_span(
        active,
        f"chat {context.model}",
        parent,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider_name(context.provider.kind),
            "gen_ai.request.model": context.model,
            "toolpolicy.round": number,
        },
        client=True,
    )


def _end_round_span(span: Any, outcome: _RoundOutcome, failure: BaseException | None) -> None:
    completed = outcome.completed
    attributes: dict[str, Any] | None = None
    if completed is not None and span.is_recording():
        attributes = {"toolpolicy.round.tool_calls": len(completed.calls)}
        if completed.usage.input_tokens is not None:
            attributes["gen_ai.usage.input_tokens"] = completed.usage.input_tokens
        if completed.usage.output_tokens is not None:
            attributes["gen_ai.usage.output_tokens"] = completed.usage.output_tokens
    if isinstance(failure, GeneratorExit):
        failure = None
    end_span(span, failure, "" if completed is not None or failure else "interrupted", attributes)


def _tool_span(context: LoopContext, call: RequestedCall, number: int) -> Any:
    """An `execute_tool {tool}` span; its context is current while the tool runs, so what the
    tool calls (an MCP server, an instrumented HTTP client) carries the trace on."""
    active, parent = context.trace
    tool_name = bounded_name(call.tool_name)
    return start_span(
        active,
        f"execute_tool {tool_name}",
        parent,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool_name,
            "gen_ai.tool.call.id": bounded_name(call.call_id),
            "gen_ai.tool.type": "function",
            "toolpolicy.round": number,
        },
    )


def _end_tool_span(span: Any, trace: ToolInvocationTrace) -> None:
    failed = trace.status not in (TraceStatus.SUCCESS, TraceStatus.NONE)
    attributes = None
    if span.is_recording():
        attributes = {
            "toolpolicy.tool.id": trace.tool_id,
            "toolpolicy.tool.status": trace.status.value,
        }
    end_span(span, None, trace.status.value if failed else "", attributes)


def _apply_demands(context: LoopContext, outcome: ToolCallOutcome) -> None:
    apply_call_demands(context.chat, outcome)
    context.given_web_addresses.update(outcome.returned_web_addresses)


def _combine(held: Usage, arriving: Usage) -> Usage:
    """The latest known figure of each kind (a provider may report them on separate lines)."""
    return Usage(
        input_tokens=arriving.input_tokens
        if arriving.input_tokens is not None
        else held.input_tokens,
        output_tokens=arriving.output_tokens
        if arriving.output_tokens is not None
        else held.output_tokens,
    )
