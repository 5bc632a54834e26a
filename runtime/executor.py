"""Running one tool call: find the tool, run it, and turn whatever happens into an outcome.

Every call gets an answer the model can read and a trace the user can inspect. An unknown tool or
an intentional policy block is BLOCKED, any other failure is ERROR ("Tool execution failed: …");
only a SUCCESS can demand anything of the chat, because only then did something reach the model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from policy import (
    ConfidenceLevel,
    DataSecurity,
    Effect,
    ProviderKind,
    ToolDefinition,
    ToolOutboundData,
)
from policy._runtime_seam import (
    MASK,
    NO_SECRETS,
    OutboundDataRestriction,
    SecretMask,
    given_provider,
    is_outbound_data_allowed,
    mask_in_logs,
)
from runtime.arguments import arguments_object
from runtime.execution import (
    ContentQuotingError,
    ExecutableTool,
    ToolExecutionBlocked,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolServices,
    given_services,
    returns_untrusted_content,
    sensitive_argument_names,
)
from runtime.messages import RequestedCall, Source
from runtime.trace_text import MAX_ARGUMENTS, bounded_name, bounded_text

if TYPE_CHECKING:
    from policy import ChatHoldings, FlowConflict, FlowRule, Tool, ToolEffects
    from policy._runtime_seam import ProviderFacts
    from runtime.chat import Chat, ChatHolding
    from runtime.quotas import CallQuota
    from runtime.web.guard import GuardScope, PromptInjectionGuard

_log = logging.getLogger(__name__)

INVALID_CALL_MESSAGE = "The tool call was invalid."
_INVALID_CALL_TOOL_NAME = "Invalid tool call"
_FAILURE_PREFIX = "Tool execution failed: "
_CONTENT_LEFT_OUT = "(what it wrote is content: recorded only with content logging)"

RunnableTools = Sequence[tuple[ToolDefinition, ExecutableTool]]


class IndexedRunnable(tuple[tuple[ToolDefinition, ExecutableTool], ...]):
    """Runnable tools indexed by function name once, for a caller that runs many calls against
    the same tools (the MCP gateway's view): finding a call's tool and naming the offered ones
    then cost the same for 1 or 1,000 tools. The first tool of a name is the one found, as
    `find_runnable` finds it in a plain sequence."""

    by_name: dict[str, tuple[ToolDefinition, ExecutableTool]]
    names: frozenset[str]

    def __new__(cls, tools: Iterable[tuple[ToolDefinition, ExecutableTool]]) -> IndexedRunnable:
        indexed = super().__new__(cls, tools)
        by_name: dict[str, tuple[ToolDefinition, ExecutableTool]] = {}
        for pair in indexed:
            by_name.setdefault(pair[0].function.name, pair)
        indexed.by_name = by_name
        indexed.names = frozenset(by_name)
        return indexed


def _offered_names(runnable: RunnableTools) -> frozenset[str]:
    """The function names of the runnable tools."""
    if isinstance(runnable, IndexedRunnable):
        return runnable.names
    return frozenset(d.function.name for d, _ in runnable)


class TraceStatus(StrEnum):
    NONE = "NONE"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    BLOCKED = "BLOCKED"


@dataclass(frozen=True, slots=True)
class ToolInvocationTrace:
    """What the user may see of one call. `result` and `json_result` are never persisted."""

    order: int
    tool_id: str
    tool_name: str
    call_id: str
    status: TraceStatus
    was_executed: bool
    status_message: str
    arguments: Mapping[str, str]
    """Top-level arguments as text; sensitive ones are `MASK`."""
    result: str
    json_result: Any = None
    status_message_without_content: str | None = None
    """`status_message` as a log kept without content shows it, when the failure quoted what the
    tool's upstream wrote (`ContentQuotingError`); None when the message is the tool's own."""

    def __post_init__(self) -> None:
        """A trace's names and message are fit for a log whoever wrote them (a client's tool
        name, a server's error text): well-formed and bounded (`runtime.trace_text`)."""
        for field in ("tool_id", "tool_name", "call_id"):
            object.__setattr__(self, field, bounded_name(getattr(self, field)))
        object.__setattr__(self, "status_message", bounded_text(self.status_message))
        if self.status_message_without_content is not None:
            shown = bounded_text(self.status_message_without_content)
            object.__setattr__(self, "status_message_without_content", shown)

    @property
    def logged_status_message(self) -> str:
        """The message as a log without content keeps it."""
        if self.status_message_without_content is None:
            return self.status_message
        return self.status_message_without_content


@dataclass(frozen=True, slots=True)
class InjectionSeen:
    """The prompt-injection guard removed passages from what one call returned to the model:
    from which source, by which rules, how many. Never the removed text."""

    source_kind: str
    """`web_content` (a fetched page) or `tool_content` (anything else a tool brought in)."""
    source: str
    """The source's label as logs show it: a page's address (user info and parameter values
    masked) or the tool's id."""
    rule_ids: tuple[str, ...]
    """The filter's rules that matched, each once, in the order they were found."""
    removed: int
    """How many passages were removed."""


@dataclass(frozen=True, slots=True)
class ToolCallOutcome:
    """The model's answer for one call plus what it demands of the chat (nothing unless SUCCESS)."""

    content: str
    trace: ToolInvocationTrace
    required_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    required_data_security: DataSecurity = DataSecurity.NOT_SPECIFIED
    required_outbound_data_restriction: OutboundDataRestriction | None = None
    outbound_data_source_id: str = ""
    sources: tuple[Source, ...] = ()
    returned_web_addresses: tuple[str, ...] = ()
    """Request keys of addresses in a successful result that the call's arguments did not name."""
    injections: tuple[InjectionSeen, ...] = ()
    """What the guard removed from the result (only a SUCCESS reports any: only then did the
    rest reach the model)."""
    brought: tuple[ChatHolding, ...] = ()
    """What the result brought into the chat for the flow rule (only a SUCCESS whose content
    reached the model brings anything): each effect with the call and source."""
    structured_content: dict[str, Any] | None = None
    """The result's structured content (`ToolExecutionResult.structured_content`), secrets
    masked; only a SUCCESS has any."""


def apply_call_demands(chat: Chat, outcome: ToolCallOutcome) -> None:
    """What a call's result brought in tightens the chat: the one rule `respond` and the MCP
    gateway both follow (requirements only ever tighten; addresses it returned count as given;
    what it brought for the flow rule and an injection the guard removed are held for the
    chat's life, with their source)."""
    if outcome.brought:
        chat.add_holdings(outcome.brought)
    if outcome.injections:
        from runtime.chat import ChatHolding, HoldingKind

        chat.add_holdings(
            ChatHolding(
                HoldingKind.INJECTION_SEEN,
                outcome.trace.tool_id,
                seen.source,
                outcome.trace.call_id,
            )
            for seen in outcome.injections
        )
    chat.require_provider_confidence(outcome.required_provider_confidence)
    chat.require_data_security(outcome.required_data_security)
    chat.require_outbound_data_restriction(
        outcome.required_outbound_data_restriction, outcome.outbound_data_source_id
    )
    if outcome.returned_web_addresses:
        chat.add_known_web_addresses(outcome.returned_web_addresses)


def format_arguments(
    arguments: Mapping[str, Any],
    sensitive_names: frozenset[str] | None = frozenset(),
    hidden: SecretMask | None = None,
) -> dict[str, str]:
    """Top-level arguments as text for a trace: sensitive ones masked whole, and their values
    masked wherever another argument quotes them, in every spelling (`hidden`, the call's
    `sensitive_values`, computed here when not given); strings as they are, other values as
    JSON; names and values well-formed and bounded (`runtime.trace_text`: at most 24
    arguments, the rest counted under `…`).

    `sensitive_names=None` masks every value (a call of a tool nobody knows)."""
    if hidden is None:
        hidden = sensitive_values(arguments, sensitive_names) if sensitive_names else NO_SECRETS
    formatted: dict[str, str] = {}
    for index, (name, value) in enumerate(arguments.items()):
        if index == MAX_ARGUMENTS:
            formatted["…"] = f"{len(arguments) - MAX_ARGUMENTS} more arguments not shown"
            break
        shown = bounded_name(name)
        if shown in formatted:  # two long names cut to the same text both stay shown
            shown = f"{shown} #{index + 1}"
        if sensitive_names is None or name in sensitive_names:
            formatted[shown] = MASK
        elif isinstance(value, str):
            formatted[shown] = bounded_text(hidden.text(value))
        else:
            formatted[shown] = bounded_text(hidden.text(json.dumps(value, ensure_ascii=False)))
    return formatted


def sensitive_values(
    arguments: Mapping[str, Any], sensitive_names: frozenset[str] | None
) -> SecretMask:
    """The one rule for sensitive arguments in free text: every string and number inside each
    sensitive argument's value, whatever its JSON type (keys of nested objects included), masked
    in every spelling and however short. Trace messages, the results traces and events show, and
    `FinalAnswer.request_texts` ask it; `format_arguments` masks the same arguments whole and
    these values inside the others.

    `sensitive_names=None` covers every argument (a call of a tool nobody knows)."""
    if sensitive_names is None:
        chosen = list(arguments.values())
    else:
        chosen = [arguments[name] for name in sensitive_names if name in arguments]
    return SecretMask.of(_argument_texts(chosen), min_characters=1) if chosen else NO_SECRETS


def find_runnable(
    runnable: RunnableTools, tool_name: str
) -> tuple[ToolDefinition, ExecutableTool] | None:
    """The runnable tool whose function has exactly this name."""
    if isinstance(runnable, IndexedRunnable):
        return runnable.by_name.get(tool_name)
    for definition, tool in runnable:
        if definition.function.name == tool_name:
            return definition, tool
    return None


_KnownTools = Callable[[str], "Tool | None"]
"""The registered tool behind a function name, offered in this request or not (None: unknown)."""


async def _recordable() -> str | None:
    """Without a decision log every call may run."""
    return None


def _no_known_tools(_function_name: str) -> Tool | None:
    return None


def _traced_sensitive_names(
    tool_name: str, runnable: RunnableTools, known: _KnownTools = _no_known_tools
) -> frozenset[str] | None:
    """The argument names a trace masks for a call of `tool_name`: by the definition of the tool
    so named, whether or not it is offered; None (mask every argument) for a tool nobody knows."""
    found = find_runnable(runnable, tool_name)
    tool = found[1] if found else known(tool_name)
    return None if tool is None else sensitive_argument_names(tool)


def _redacted_call_arguments(
    call: RequestedCall, runnable: RunnableTools, known: _KnownTools = _no_known_tools
) -> dict[str, str]:
    """A call's arguments as a trace shows them, before it runs (unreadable arguments: {})."""
    sensitive = _traced_sensitive_names(call.tool_name, runnable, known)
    try:
        return format_arguments(
            arguments_object(call.arguments_json, unicode_only=False), sensitive
        )
    except ValueError:
        return {}


def _call_sensitive_values(
    call: RequestedCall, runnable: RunnableTools, known: _KnownTools = _no_known_tools
) -> SecretMask:
    """`sensitive_values` of a call as the model wrote it; arguments that cannot be read are
    masked whole when the tool has a sensitive argument (or nobody knows the tool)."""
    sensitive = _traced_sensitive_names(call.tool_name, runnable, known)
    if sensitive is not None and not sensitive:
        return NO_SECRETS
    try:
        return sensitive_values(
            arguments_object(call.arguments_json, unicode_only=False), sensitive
        )
    except ValueError:
        return SecretMask.of([call.arguments_json], min_characters=1)


def invalid_call_outcome(call_id: str, order: int) -> ToolCallOutcome:
    """The answer to a call the provider sent malformed; it demands nothing."""
    _log.warning("Invalid tool call (id %r, order %d).", bounded_name(call_id), order)
    trace = ToolInvocationTrace(
        order=order,
        tool_id="",
        tool_name=_INVALID_CALL_TOOL_NAME,
        call_id=call_id,
        status=TraceStatus.ERROR,
        was_executed=False,
        status_message=INVALID_CALL_MESSAGE,
        arguments={},
        result=INVALID_CALL_MESSAGE,
    )
    return ToolCallOutcome(INVALID_CALL_MESSAGE, trace)


_RESTRICTION_NAMES = {
    OutboundDataRestriction.ONLY_CONFIGURED_SERVICES: "only configured services",
    OutboundDataRestriction.ONLY_LINKS_FROM_CHAT: "only links from the chat",
    OutboundDataRestriction.UNRESTRICTED: "unrestricted",
}
_OUTBOUND_DATA_NAMES = {
    ToolOutboundData.THIRD_PARTY_QUERIES: "sends queries to third-party services",
    ToolOutboundData.MODEL_CHOSEN_ADDRESSES: "sends requests to addresses the AI chooses",
}


class ToolExecutor:
    """Runs calls against the runnable tools of one request.

    `settings_for(tool_id)` gives a tool's resolved setting values; `services` are the shared
    objects tools may use (the chat of the call is set as `services.chat`); `mailbox_name(id)`
    names the mailbox behind an outbound-data restriction, None when it was removed since;
    `known_tools(name)` is the registered tool behind a function name whether or not it is
    offered (the registry's `tool_named`), so a call of a tool not offered is traced masked by
    its definition. `decision_log_failure()` says (waiting at most its bound for room in the
    log's queue: `QueuedSink.admission`) why a call's decision record cannot be kept, or None:
    while it says so no tool runs. `flow` (the registry) gives each tool's effects and the flow
    rule: what a result brings is held by the chat, and under BLOCK a call in conflict with
    what the chat holds at that moment is refused before it runs (without it, a tool's own
    declared effects are held and no call is refused for its flow). `quota` counts each call
    that is about to run against the person's `DataGateway.CallLimits` and refuses one over its
    limit, saying when the next is possible.
    """

    def __init__(
        self,
        settings_for: Callable[[str], Mapping[str, str]] | None = None,
        services: ToolServices | None = None,
        mailbox_name: Callable[[str], str | None] | None = None,
        known_tools: _KnownTools | None = None,
        decision_log_failure: Callable[[], Awaitable[str | None]] | None = None,
        flow: FlowRules | None = None,
        quota: CallQuota | None = None,
    ) -> None:
        self._flow = flow
        self._quota = quota
        self._settings_for = settings_for or (lambda _tool_id: {})
        self._decision_log_failure = decision_log_failure or _recordable
        self._services = given_services(services, "ToolExecutor")
        self._mailbox_name = mailbox_name or (lambda _mailbox_id: None)
        self._known_tools = known_tools or _no_known_tools

    def traced_arguments(self, call: RequestedCall, runnable: RunnableTools) -> dict[str, str]:
        """A call's arguments as its `ToolCallStarted` event and trace show them."""
        return _redacted_call_arguments(call, runnable, self._known_tools)

    def sensitive_values(self, call: RequestedCall, runnable: RunnableTools) -> SecretMask:
        """The values of a call's sensitive arguments, to mask in the texts events carry."""
        return _call_sensitive_values(call, runnable, self._known_tools)

    async def execute(
        self,
        call: RequestedCall,
        runnable: RunnableTools,
        *,
        order: int,
        chat: Chat,
        provider: ProviderFacts | None = None,
        given_web_addresses: frozenset[str] = frozenset(),
        provider_kind: ProviderKind | None = None,
        provider_confidence: ConfidenceLevel | None = None,
        provider_trusted: bool = False,
    ) -> ToolCallOutcome:
        """Run one call for `provider` (or, as before, `provider_kind=` and
        `provider_confidence=`)."""
        facts = given_provider(
            "ToolExecutor.execute", provider, provider_kind, provider_confidence, provider_trusted
        )
        found = find_runnable(runnable, call.tool_name)
        call_id = bounded_name(call.call_id)
        _log.info("Starting tool execution: %s (id %r).", bounded_name(call.tool_name), call_id)
        if found is None:
            return self._unknown_tool(call, order)
        definition, tool = found
        sensitive = sensitive_argument_names(tool)
        run = _Run(call, order, definition, tool.display_name, _SecretMask())

        try:
            arguments = arguments_object(call.arguments_json)
        except ValueError as error:
            _log.warning("Could not read the arguments of %s (id %r).", call.tool_name, call_id)
            return run.failed(
                f"{_FAILURE_PREFIX}{error}",
                self.traced_arguments(call, runnable),
                was_executed=False,
            )
        run = replace(run, hidden=sensitive_values(arguments, sensitive))
        traced_arguments = format_arguments(arguments, sensitive, run.hidden)

        refusal = self._outbound_refusal(chat, tool) or self._flow_refusal(chat, definition.id)
        if refusal is not None:
            return run.blocked(refusal, traced_arguments, was_executed=False)
        unrecordable = await self._decision_log_failure()
        if unrecordable is not None:
            _log.warning("Tool %s (id %r) was not run: %s.", call.tool_name, call_id, unrecordable)
            return run.blocked(
                f"Tool '{tool.display_name}' was not run: its decision record cannot be kept now.",
                traced_arguments,
                was_executed=False,
                traced=f"Not run: the decision log cannot keep its record ({unrecordable}).",
            )
        if self._quota is not None:
            over = await self._quota.refusal(definition.id)
            if over is not None:
                _log.info(
                    "Tool %s (id %r) was not run: over its call limit.", call.tool_name, call_id
                )
                return run.blocked(over, traced_arguments, was_executed=False)

        try:
            settings = self._settings_for(definition.id)
            run = replace(run, secrets=_SecretMask.of(definition, settings))
            context = ToolExecutionContext(
                definition=definition,
                call_id=call.call_id,
                settings=_MaskedSettings(settings, run.secrets),
                provider=facts,
                chat_id=chat.id,
                outbound_restriction=chat.outbound_restriction,
                given_web_addresses=frozenset(given_web_addresses) | chat.known_web_addresses,
                services=replace(self._services, chat=chat),
                offered_tool_names=_offered_names(runnable),
            )
            untrusted = returns_untrusted_content(tool) or (
                Effect.UNTRUSTED_CONTENT in self._effects(tool, definition.id)
            )
            result, injections = await _guarded_execution(
                tool, arguments, context, run.secrets, untrusted
            )
            outcome = run.succeeded(result, traced_arguments, arguments, injections)
            return replace(outcome, brought=self._brought(tool, run.call, result, outcome))
        except ToolExecutionBlocked as blocked:
            _log.info("Tool %s (id %r) was blocked.", call.tool_name, call_id)
            traced = _traced_message(str(blocked), blocked, run.hidden, sensitive)
            return run.blocked(str(blocked), traced_arguments, was_executed=True, traced=traced)
        except Exception as error:
            message = f"{_FAILURE_PREFIX}{error}"
            traced = _traced_message(message, error, run.hidden, sensitive)
            without_content = None
            if isinstance(error, ContentQuotingError) and error.content:
                without_content = _traced_message(
                    f"{_FAILURE_PREFIX}{error.summary} {_CONTENT_LEFT_OUT}",
                    error,
                    run.hidden,
                    sensitive,
                )
            _log.warning(
                "Tool %s (id %r) failed: %s",
                call.tool_name,
                call_id,
                run.secrets.text((without_content or traced).removeprefix(_FAILURE_PREFIX)),
            )
            return run.failed(
                message, traced_arguments, traced=traced, without_content=without_content
            )

    def _unknown_tool(self, call: RequestedCall, order: int) -> ToolCallOutcome:
        return not_run_outcome(
            call,
            order,
            f"Tool '{call.tool_name}' is not available.",
            "Tool is not available in the current context.",
            self.traced_arguments(call, ()),
        )

    def _flow_refusal(self, chat: Chat, tool_id: str) -> str | None:
        """Under BLOCK, why this call may not run with what the chat holds now (a result earlier
        in the same response may have put the chat into conflict), or None."""
        from policy import FlowRule

        if self._flow is None or self._flow.flow_rule is not FlowRule.BLOCK:
            return None
        conflict = self._flow.flow_conflict(tool_id, chat.flow_holdings)
        if conflict is None:
            return None
        return f"Tool '{tool_id}' was not run (DataTools.FlowRule BLOCK): {conflict.message}"

    def _effects(self, tool: ExecutableTool, tool_id: str) -> frozenset[Effect]:
        """The tool's effects in force: the organization's `DataTools.ToolEffects` through the
        registry, else what the tool declares (all four when it declares nothing)."""
        if self._flow is not None:
            return self._flow.effects(tool_id).effects
        return tool.effects.effects

    def _brought(
        self,
        tool: ExecutableTool,
        call: RequestedCall,
        result: ToolExecutionResult,
        outcome: ToolCallOutcome,
    ) -> tuple[ChatHolding, ...]:
        """What a successful result brought for the flow rule: the effects among its tool's
        that a chat holds (or what the result says it brought), one per source it cites (at
        most `_MAX_HELD_SOURCES`, addresses as logs show them), nothing when it is empty."""
        from policy._runtime_seam import HELD_EFFECTS
        from runtime.chat import ChatHolding, HoldingKind
        from runtime.web.addresses import redact_url_for_log

        tool_id = outcome.trace.tool_id
        if result.brought is not None:
            effects = frozenset(result.brought)
        else:
            effects = self._effects(tool, tool_id)
        held = [effect for effect in HELD_EFFECTS if effect in effects]
        if not held or _is_empty(result):
            return ()
        sources = [
            bounded_name(redact_url_for_log(source.url)) for source in outcome.sources if source.url
        ]
        cited = tuple(dict.fromkeys(sources))[:_MAX_HELD_SOURCES] or (tool_id,)
        call_id = bounded_name(call.call_id)
        return tuple(
            ChatHolding(HoldingKind(effect.value), tool_id, source, call_id)
            for effect in held
            for source in cited
        )

    def _outbound_refusal(self, chat: Chat, tool: ExecutableTool) -> str | None:
        """Why a chat that read a mailbox may not run this tool now, or None when it may."""
        restriction = chat.outbound_restriction
        if is_outbound_data_allowed(
            restriction, tool.outbound_data, tool.enforces_outbound_data_restriction
        ):
            return None
        mailbox_id = chat.outbound_mailbox_id
        mailbox = self._mailbox_name(mailbox_id) if mailbox_id else None
        if mailbox:
            read = f"this chat contains mails from the mailbox '{mailbox}'"
        else:
            read = "this chat contains mails from a mailbox that has been removed since"
        level = _RESTRICTION_NAMES.get(restriction, _RESTRICTION_NAMES[OutboundDataRestriction(0)])
        sends = _OUTBOUND_DATA_NAMES.get(tool.outbound_data, "sends data out of the chat")
        return (
            f"Tool '{tool.display_name}' was not run: {read}, which allows sending data to "
            f"{level}, and this tool {sends}."
        )


_MAX_HELD_SOURCES = 8
"""The most sources one call's holdings name (one is enough for the rule; the rest is evidence)."""


class FlowRules(Protocol):
    """What the executor asks of the registry for the flow rule (`ToolRegistry` is one)."""

    @property
    def flow_rule(self) -> FlowRule: ...

    def effects(self, tool_id: str) -> ToolEffects: ...

    def flow_conflict(self, tool_id: str, holdings: ChatHoldings) -> FlowConflict | None: ...


def _is_empty(result: ToolExecutionResult) -> bool:
    """Nothing reached the model: no text, and no non-blank text anywhere in its JSON (a result
    the filter emptied)."""
    if result.json_content is None:
        return not (result.text_content or "").strip()
    return not any(_texts(result.json_content))


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


async def _guarded_execution(
    tool: ExecutableTool,
    arguments: Mapping[str, Any],
    context: ToolExecutionContext,
    secrets: _SecretMask,
    untrusted: bool,
) -> tuple[ToolExecutionResult, tuple[InjectionSeen, ...]]:
    """Run the tool inside one guard scope, so every removal of the call — the tool's own and
    the executor's — is known here; a tool that returns untrusted content (`untrusted`: it says
    so, or UNTRUSTED_CONTENT is among its effects) and did not filter its result has it
    filtered, its secret setting values masked first (the filter may be a service or a model:
    no secret goes there). A tool that brings no untrusted content and was not given the app's
    guard does not load the guard at all."""
    if not untrusted and context.services.guard is None:
        return _checked(await tool.execute(arguments, context)), ()
    guard = _guard_of(context)
    async with guard.scope() as seen:
        result = _checked(await tool.execute(arguments, context))
        if untrusted and not result.injection_filtered:
            from runtime.result_guard import guarded_result
            from runtime.web.guard import tool_content

            result = await guarded_result(
                guard, secrets.result(result), tool_content(context.definition.id)
            )
    return result, _injections(seen)


def _guard_of(context: ToolExecutionContext) -> PromptInjectionGuard:
    from runtime.tools._common import guard_of

    return guard_of(context)


def _checked(result: object) -> ToolExecutionResult:
    if not isinstance(result, ToolExecutionResult):
        raise TypeError(f"the tool returned {type(result).__name__}, not a result")
    _ensure_valid_json(result.json_content)
    return result


def _injections(seen: GuardScope) -> tuple[InjectionSeen, ...]:
    return tuple(
        InjectionSeen(
            source_kind=removal.source.kind,
            source=removal.source.label,
            rule_ids=tuple(dict.fromkeys(finding.rule_id for finding in removal.findings)),
            removed=removal.redacted_count,
        )
        for removal in seen.sources_with_removals
    )


def _ensure_valid_json(value: Any) -> None:
    """Python would write NaN and Infinity into the model's JSON; no JSON reader takes them."""
    if value is None:
        return
    try:
        json.dumps(value, allow_nan=False)
    except ValueError as error:
        raise ValueError(f"the tool's result cannot be written as JSON: {error}") from None


def _traced_message(
    message: str, error: BaseException, hidden: SecretMask, sensitive: frozenset[str]
) -> str:
    """A failure as the trace and log show it: the values of sensitive arguments (`hidden`)
    masked.

    The model keeps the full message (it wrote the value and corrects itself from it). A refusal
    of a sensitive argument may quote it in any spelling, so its text is replaced as a whole.
    """
    from runtime.arguments import ArgumentError

    if isinstance(error, ArgumentError) and error.argument in sensitive:
        prefix = _FAILURE_PREFIX if message.startswith(_FAILURE_PREFIX) else ""
        return f"{prefix}Argument '{error.argument}' was refused; its value is not shown."
    return hidden.text(message)


@dataclass(frozen=True, slots=True)
class _SecretMask:
    """Replaces a tool's secret setting values wherever a tool lets them slip into what it returns.

    Tools need their secrets in plain text, so the executor is the last place that can stop an
    upstream error quoting an API key, or a URL carrying it, on its way to the model, the trace or
    the log. Every spelling counts (`policy.redaction`: percent-encoded, JSON-escaped, base64 ...).
    """

    names: frozenset[str] = frozenset()
    mask: SecretMask = NO_SECRETS

    @classmethod
    def of(cls, definition: ToolDefinition, settings: Mapping[str, str]) -> _SecretMask:
        properties = definition.settings_schema.properties
        names = frozenset(name for name, spec in properties.items() if spec.secret)
        mask = SecretMask.of(settings.get(n) for n in names)
        mask_in_logs(mask)
        return cls(names, mask)

    def text(self, text: str) -> str:
        return self.mask.text(text)

    def result(self, result: ToolExecutionResult) -> ToolExecutionResult:
        if not self.mask:
            return result
        return replace(
            result,
            text_content=None if result.text_content is None else self.text(result.text_content),
            json_content=self.mask.value(result.json_content),
            structured_content=self.mask.value(result.structured_content),
            sources=tuple(
                Source(self.text(s.title), self.text(s.url), s.origin) for s in result.sources
            ),
        )


class _MaskedSettings(Mapping[str, str]):
    """A tool's settings as given, whose printed form masks the secret ones (a context's repr)."""

    __slots__ = ("_mask", "_values")

    def __init__(self, values: Mapping[str, str], mask: _SecretMask) -> None:
        self._values = dict(values)
        self._mask = mask

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        shown = {k: MASK if k in self._mask.names else v for k, v in self._values.items()}
        return repr(shown)

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class _Run:
    """One call's fixed parts, so each ending only states what differs."""

    call: RequestedCall
    order: int
    definition: ToolDefinition
    display_name: str
    secrets: _SecretMask
    hidden: SecretMask = NO_SECRETS
    """The values of the call's sensitive arguments (`sensitive_values`)."""

    def _trace(
        self,
        status: TraceStatus,
        message: str,
        arguments: Mapping[str, str],
        *,
        was_executed: bool,
        result: str,
        json_result: Any = None,
        without_content: str | None = None,
    ) -> ToolInvocationTrace:
        return ToolInvocationTrace(
            order=self.order,
            tool_id=self.definition.id,
            tool_name=self.display_name,
            call_id=self.call.call_id,
            status=status,
            was_executed=was_executed,
            status_message=message,
            arguments=arguments,
            result=result,
            json_result=json_result,
            status_message_without_content=without_content,
        )

    def blocked(
        self,
        message: str,
        arguments: Mapping[str, str],
        *,
        was_executed: bool,
        traced: str | None = None,
    ) -> ToolCallOutcome:
        """`traced` is the message as the trace shows it (sensitive arguments masked)."""
        return self._unsuccessful(TraceStatus.BLOCKED, message, arguments, was_executed, traced)

    def failed(
        self,
        message: str,
        arguments: Mapping[str, str],
        *,
        was_executed: bool = True,
        traced: str | None = None,
        without_content: str | None = None,
    ) -> ToolCallOutcome:
        """`without_content` is the message as a log without content keeps it."""
        return self._unsuccessful(
            TraceStatus.ERROR, message, arguments, was_executed, traced, without_content
        )

    def _unsuccessful(
        self,
        status: TraceStatus,
        message: str,
        arguments: Mapping[str, str],
        was_executed: bool,
        traced: str | None,
        without_content: str | None = None,
    ) -> ToolCallOutcome:
        """The model reads `message`; the trace shows `traced` (or `message`); both redacted."""
        message = self.secrets.text(message)
        shown = message if traced is None else self.secrets.text(traced)
        logged = None if without_content is None else self.secrets.text(without_content)
        trace = self._trace(
            status,
            shown,
            arguments,
            was_executed=was_executed,
            result=shown,
            without_content=logged,
        )
        return ToolCallOutcome(message, trace)

    def succeeded(
        self,
        result: ToolExecutionResult,
        arguments: Mapping[str, str],
        raw_arguments: Mapping[str, Any],
        injections: tuple[InjectionSeen, ...] = (),
    ) -> ToolCallOutcome:
        result = self.secrets.result(result)
        content = result.to_model_content()
        trace = self._trace(
            TraceStatus.SUCCESS,
            "",
            arguments,
            was_executed=True,
            result=self.hidden.text(result.text_content or ""),
            json_result=self.hidden.value(result.json_content),
        )
        return ToolCallOutcome(
            content=content,
            trace=trace,
            required_provider_confidence=result.required_provider_confidence,
            required_data_security=result.required_data_security,
            required_outbound_data_restriction=result.required_outbound_data_restriction,
            outbound_data_source_id=result.outbound_data_source_id,
            sources=tuple(result.sources),
            returned_web_addresses=returned_web_addresses(content, raw_arguments),
            injections=injections,
            structured_content=result.structured_content,
        )


def returned_web_addresses(content: str, arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """Request keys of addresses in a result, minus those the call's arguments already named.

    A tool that echoes its query (semantic search does) would otherwise turn an address the model
    made up into one the chat was given.
    """
    from runtime.web.addresses import find_web_addresses

    found = find_web_addresses(content)
    if not found:
        return ()
    texts = _argument_texts(arguments)
    # A JSON result writes an echoed argument escaped; those spellings are the model's own too.
    escaped = [json.dumps(t, ensure_ascii=ascii)[1:-1] for t in texts for ascii in (False, True)]
    argument_text = "\n".join([*texts, *escaped])
    named_in_arguments = set(find_web_addresses(argument_text))
    lowered = argument_text.lower()
    return tuple(
        key for key in found if key not in named_in_arguments and key.lower() not in lowered
    )


def _argument_texts(arguments: Any) -> list[str]:
    """Every string and number anywhere in arguments, keys included, as text (iterative: depth
    is the model's). A boolean or null is left out: its text is no value's own."""
    texts: list[str] = []
    pending: list[Any] = [arguments]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            texts.append(json.dumps(value))
        elif isinstance(value, Mapping):
            texts.extend(str(key) for key in value)
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return texts


def not_run_outcome(
    call: RequestedCall,
    order: int,
    content: str,
    status_message: str,
    arguments: Mapping[str, str],
) -> ToolCallOutcome:
    """A call refused before any tool ran: what the model reads and its BLOCKED trace.

    `arguments` must already be masked (`ToolExecutor.traced_arguments`)."""
    trace = ToolInvocationTrace(
        order=order,
        tool_id=call.tool_name,
        tool_name=call.tool_name,
        call_id=call.call_id,
        status=TraceStatus.BLOCKED,
        was_executed=False,
        status_message=status_message,
        arguments=arguments,
        result=content,
    )
    return ToolCallOutcome(content, trace)
