"""The one call an app makes per user message: policy + chat + provider in, answer events out.

`ChatRuntime` is built once per configuration change (it keeps the loaded policy, the app's shared
services and each tool's resolved settings); `respond` then, for one user message, refuses a
provider the chat rules out, asks the registry what may run, starts a fresh adapter, runs the loop
and streams its events. Nothing here decides on its own: the registry decides, the loop acts.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from policy import Component, DataSourceRetrievalMode
from policy._runtime_seam import ProviderFacts
from runtime.approvals import DEFAULT_APPROVAL_SECONDS
from runtime.loop import (
    FinalAnswer,
    LoopEvent,
    TextDeltaEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from runtime.tracing import end_span

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from policy import Caller, McpServerConfig, Policy, ProviderConfig, ToolDefinition, UserSettings
    from policy._runtime_seam import ApprovalRules, PeoplePolicies, RunnableTools
    from runtime.approvals import Approval, ApprovalGate, SuspendedTurn
    from runtime.chat import CallCountStore, Chat
    from runtime.data_sources import ConfiguredDataSources, SearchableDataSource
    from runtime.decision_log import DecisionRecorder, DecisionSink, QueuedSink
    from runtime.execution import ExecutableTool, ToolServices
    from runtime.executor import ToolExecutor
    from runtime.loop import LoopLimits, ToolCallingLoop
    from runtime.mcp import McpSessions
    from runtime.messages import ChatMessage
    from runtime.providers.client import ProviderClient
    from runtime.providers.hosts import WireApi
    from runtime.quotas import CallQuota
    from runtime.web.guard import PromptInjectionGuard
    from runtime.web.guard_model import ModelInjectionFilter

_log = logging.getLogger(__name__)

_SYSTEM_PROMPT_SEPARATOR = "\n\n"
_MAX_PEOPLE = 4096
"""People whose runtime `for_caller` keeps at once (the oldest made is dropped first)."""


class SettingsBySubject(Protocol):
    """Where each person's own user settings are kept (`policy.people.UserSettingsFolder`, or
    an app's own store): the settings of one `sub`, the organization's defaults for a person
    who saved none."""

    def settings_for(self, subject: str) -> UserSettings: ...


@dataclass(frozen=True, slots=True)
class ExecutableOffer:
    """What one request would offer: the tools that can run (definition and implementation),
    the selected tools left out with why, and the offer decisions behind both."""

    tools: tuple[tuple[ToolDefinition, ExecutableTool], ...]
    left_out: tuple[tuple[str, str], ...]
    decided: RunnableTools


@dataclass(frozen=True, slots=True)
class ToolsOffered:
    """The first event of every response: what this request offers the model, and what not.

    `left_out` pairs a tool id with why a tool that passed the policy's checks offers nothing now
    (it had nothing to offer, its resolution failed, or the app registered no way to run it).
    """

    tool_ids: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...] = ()


ResponseEvent = ToolsOffered | LoopEvent
"""What `respond` yields: `ToolsOffered` first, then the loop's events, `FinalAnswer` last."""


class ChatRuntime:
    """Everything an app keeps between user messages; `respond` is the call per message.

    `services` are the shared objects tools may use (`ToolServices`, e.g. its `guard`);
    `data_sources` are the searchable sources semantic_search may offer, joined by the
    configuration's ERI_V1 `DATA_SOURCES` entries unless `configured_data_sources=False` (an
    entry whose id the app's sources already have stays the app's; a person's runtime adds
    their groups' entries); `os_user_is_person` says whether the operating-system user this
    process runs as is the person the runtime answers (a desktop app, `policy chat`, a stdio
    gateway): pass False in a server answering people over the network, so an ERI entry that
    signs in with the OS user name (OS_USERNAME_SHARED_PASSWORD) is refused instead of searched
    as the service's account — a signed-in person's runtime (`for_caller`) always refuses it;
    `mailbox_name(id)` names
    the mailbox behind an outbound-data restriction; `decision_log` keeps one `DecisionRecord` per
    `respond` (a file path means a `JsonLinesSink` with its default rotation; or any sink, e.g.
    a `CallbackSink`), written from a bounded queue that drops nothing: a response waits for
    room in it, bounded (`QueuedSink`; `aclose` or `flush_decision_log` waits for it; no tool
    call runs while it cannot keep a record); `include_content` adds
    message and result text to each record. Spans go to `tracer_provider` (default: the global
    OpenTelemetry provider; nothing is built while none is configured). Build a new one when the
    policy changes.
    """

    __slots__ = (
        "__weakref__",
        "_app_mcp_servers",
        "_app_services",
        "_approval_rules",
        "_approval_seconds",
        "_base",
        "_call_counts",
        "_caller",
        "_configured_sources",
        "_data_sources",
        "_decision_log",
        "_include_content",
        "_limits",
        "_loop",
        "_mailbox_name",
        "_mcp",
        "_mcp_version",
        "_model_filter",
        "_parent",
        "_people",
        "_people_runtimes",
        "_quota",
        "_services",
        "_settings",
        "_settings_by_subject",
        "_tracer_provider",
        "_whole",
        "policy",
    )

    def __init__(
        self,
        policy: Policy,
        *,
        services: ToolServices | None = None,
        data_sources: Sequence[SearchableDataSource] = (),
        mailbox_name: Callable[[str], str | None] | None = None,
        loop: ToolCallingLoop | None = None,
        limits: LoopLimits | None = None,
        decision_log: DecisionSink | str | os.PathLike[str] | None = None,
        include_content: bool = False,
        mcp: McpSessions | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        tracer_provider: TracerProvider | None = None,
        approval_seconds: float = DEFAULT_APPROVAL_SECONDS,
        settings_by_subject: SettingsBySubject | None = None,
        configured_data_sources: bool = True,
        call_counts: CallCountStore | None = None,
        os_user_is_person: bool = True,
    ) -> None:
        from runtime.execution import given_services

        if not approval_seconds > 0:
            raise ValueError(
                f"ChatRuntime(approval_seconds=...) takes a positive number of seconds an asked "
                f"approval may be answered in, got {approval_seconds!r}."
            )

        app_services = given_services(services, "ChatRuntime")
        self._base = self._whole = policy
        self._mcp = mcp
        self._mcp_version = -1
        servers = (*policy.configuration.mcp_servers, *mcp_servers)
        if self._mcp is None and servers:
            from runtime.mcp import McpSessions

            self._mcp = McpSessions(servers)
        self._people: PeoplePolicies | None = None
        if self._mcp is not None:
            self._mcp.add_entries(self._people_policies().own_entries())
        self.policy = self._without_caller()
        self._decision_log = _queued(decision_log)
        self._include_content = include_content
        self._tracer_provider = tracer_provider
        self._configured_sources: ConfiguredDataSources | None = None
        self._data_sources = tuple(data_sources)
        if configured_data_sources:
            from runtime.data_sources import ConfiguredDataSources

            self._configured_sources = ConfiguredDataSources(data_sources)
            self._data_sources = self._configured_sources.of(
                self.policy.configuration.data_sources, os_user_is_person=os_user_is_person
            )
        self._mailbox_name = mailbox_name
        self._loop = loop
        self._limits = limits
        self._settings: dict[str, Mapping[str, str]] = {}
        self._approval_seconds = float(approval_seconds)
        self._app_mcp_servers = tuple(mcp_servers)
        self._approval_rules: tuple[Policy, ApprovalRules] | None = None
        self._model_filter: ModelInjectionFilter | None = None
        self._app_services = app_services
        self._services = self._shared_services(app_services)
        self._caller: Caller | None = None
        self._parent: ChatRuntime | None = None
        self._people_runtimes: dict[Caller, ChatRuntime] = {}
        self._settings_by_subject = settings_by_subject
        self._call_counts = call_counts
        self._quota: tuple[Policy, CallQuota | None] | None = None

    @property
    def whole_policy(self) -> Policy:
        """Every loaded configuration merged, with the MCP tools as last listed: what `policy
        check` checks and each person's policy is derived from. `policy` is what decides this
        runtime's requests: for a request without a caller, when `DataGateway.
        ConfigurationsByGroup` names configurations, a person in no group's (everyone's
        configurations only)."""
        return self._whole

    def people_policies(self) -> PeoplePolicies:
        """Each person's policy as this runtime decides it (`PeoplePolicies` of `whole_policy`):
        each group's own MCP server entry with its tools as this runtime's sessions last listed
        them, what a page showing someone's policy reads (`policy serve`)."""
        return self._people_policies()

    @property
    def caller(self) -> Caller | None:
        """The signed-in person this runtime decides for (`for_caller`), else None."""
        return self._caller

    def for_caller(self, caller: Caller) -> ChatRuntime:
        """This runtime as it decides for one signed-in person: the configurations of everyone
        merged with their groups' (`DataGateway.ConfigurationsByGroup`, merged once per group
        set), their own user settings (`settings_by_subject`), only their own chats (`Chat.open(
        ..., caller=caller)`; another chat is refused), their call limits and their name in
        every decision record. It shares this runtime's MCP sessions, decision log and services,
        follows its policy, and is kept: asking again for the same caller is a lookup."""
        root = self._parent if self._parent is not None else self
        person = root._people_runtimes.get(caller)
        policy = root._policy_for(caller)
        if person is None:
            person = root._person(caller, policy)
            if len(root._people_runtimes) >= _MAX_PEOPLE:
                root._people_runtimes.pop(next(iter(root._people_runtimes)))
            root._people_runtimes[caller] = person
        else:
            person._follow(policy)
        return person

    def _people_policies(self) -> PeoplePolicies:
        people = self._people
        if people is None or people.policy is not self._whole:
            from policy._runtime_seam import PeoplePolicies

            entries = self._mcp.entry_listings() if self._mcp is not None else {}
            people = self._people = PeoplePolicies(self._whole, entries)
        return people

    def _without_caller(self) -> Policy:
        """What decides a request that names no caller: a person in no group's policy (the
        configurations `DataGateway.ConfigurationsByGroup` names reach their groups only)."""
        return self._people_policies().for_caller(None)

    def _policy_for(self, caller: Caller) -> Policy:
        user = None
        if self._settings_by_subject is not None:
            user = self._settings_by_subject.settings_for(caller.subject)
        return self._people_policies().for_caller(caller, user)

    def _person(self, caller: Caller, policy: Policy) -> ChatRuntime:
        from dataclasses import replace

        person = object.__new__(ChatRuntime)
        for name in ChatRuntime.__slots__[1:]:  # all but __weakref__
            setattr(person, name, getattr(self, name))
        person._parent = self
        person._caller = caller
        person._people = None
        person._people_runtimes = {}
        person._approval_rules = None
        person._quota = None
        person._settings = {}
        person.policy = person._base = person._whole = policy
        if self._configured_sources is not None:
            person._data_sources = self._configured_sources.of(
                policy.configuration.data_sources, os_user_is_person=False
            )
        person._services = person._shared_services(
            replace(self._app_services, guard=self._services.guard)
        )
        return person

    def _follow(self, policy: Policy) -> None:
        """A person's runtime takes their policy as it is now (after a listing changed)."""
        if policy is not self.policy:
            self.policy = self._base = self._whole = policy
            self._settings.clear()

    def _own_chat(self, chat: Chat) -> None:
        if self._caller is None:
            return
        from policy._runtime_seam import is_persons_chat

        if not is_persons_chat(self._caller, chat.id):
            raise ValueError(
                "This chat is not the signed-in person's own: open it with Chat.open(chat_id, "
                "store, caller=caller), so one person can neither read nor raise another's chat."
            )

    async def __aenter__(self) -> ChatRuntime:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the MCP sessions this runtime opened (stdio servers are stopped) and write the
        decision records still queued. A person's runtime (`for_caller`) closes nothing: what
        it shares is its parent's."""
        if self._parent is not None:
            return
        if self._mcp is not None:
            await self._mcp.aclose()
        if self._model_filter is not None:
            await self._model_filter.aclose()
        await self.flush_decision_log()

    async def flush_decision_log(self, timeout: float = 10.0) -> bool:
        """Wait (off the event loop) until every queued decision record is written; False when
        `timeout` seconds were not enough. Records are written in the background anyway."""
        if self._decision_log is None:
            return True
        import asyncio

        return await asyncio.to_thread(self._decision_log.flush, timeout)

    async def refresh_mcp_tools(self) -> None:
        """The MCP tools as listed now: a lookup while the listings are fresh; when a listing
        changed, the policy view is rebuilt once over the new tools (pins checked again)."""
        if self._parent is not None and self._caller is not None:
            await self._parent.refresh_mcp_tools()
            self._follow(self._parent._policy_for(self._caller))
            return
        if self._mcp is None:
            return
        listings = await self._mcp.listings()
        if self._mcp.version == self._mcp_version:
            return
        from dataclasses import replace

        from policy._runtime_seam import mcp_tools
        from runtime.mcp import McpExecutableTool

        tools = mcp_tools(self._mcp.servers, listings, McpExecutableTool)
        rebuilt = self._base.with_tools((*self._base.base_tools, *tools))
        self._whole = replace(rebuilt, mcp_listings={**self._base.mcp_listings, **listings})
        self.policy = self._without_caller()
        self._settings.clear()
        self._mcp_version = self._mcp.version

    def _shared_services(self, services: ToolServices) -> ToolServices:
        """The app's services plus what the configuration gives the tools (a field the app set
        stays as the app set it)."""
        from dataclasses import replace

        shared = replace(
            services,
            request_extras=self.policy.registry.request_extras.merged(services.request_extras),
            data_sources=services.data_sources or self._data_sources,
            guard=services.guard or self._configured_guard(),
        )
        return shared if self._mcp is None else shared.with_defaults(self._mcp)

    def _configured_guard(self) -> PromptInjectionGuard | None:
        """The guard over the MODEL filter when the organization put one in force
        (`DataTools.InjectionFilter`); None leaves the built-in structural one. A provider entry
        that cannot be called is logged and leaves the structural filter (it fails closed)."""
        from policy import injection_filter_choice

        provider = injection_filter_choice(self.policy.configuration).provider
        if provider is None:
            return None
        from runtime.providers import ProviderError
        from runtime.web.guard import PromptInjectionGuard
        from runtime.web.guard_model import ModelInjectionFilter

        try:
            self._model_filter = ModelInjectionFilter.for_provider(provider)
        except ProviderError as error:
            _log.error(
                "The injection filter model of %s cannot be called (%s); the structural filter "
                "checks tool results instead.",
                provider.name or provider.id,
                error,
            )
            return None
        return PromptInjectionGuard(self._model_filter)

    def _tool_settings(self, tool_id: str) -> Mapping[str, str]:
        """A tool's resolved setting values, worked out once per configuration."""
        cached = self._settings.get(tool_id)
        if cached is None:
            cached = self.policy.registry.settings(tool_id).values_for_tool()
            self._settings[tool_id] = cached
        return cached

    async def respond(
        self,
        chat: Chat,
        provider: ProviderConfig,
        messages: Sequence[ChatMessage],
        *,
        component: Component = Component.CHAT,
        selected_tool_ids: Iterable[str] | None = None,
        system_prompt: str = "",
        client: ProviderClient | None = None,
        api_key: str | None = None,
        retrieval_mode: DataSourceRetrievalMode | None = None,
        max_output_tokens: int | None = None,
        wire_api: WireApi | None = None,
        approvals: Mapping[str, Approval] | None = None,
    ) -> AsyncIterator[ResponseEvent]:
        """Answer the last of `messages` (the conversation so far, the user's message last).

        A call whose tool needs a person's approval (`DataTools.RequireApprovalToolIds`, an MCP
        server's `RequireApproval`) never runs unapproved: the turn ends with a `FinalAnswer`
        whose `stop_reason` is `APPROVAL_REQUIRED` and whose `pending_approvals` name the calls.
        Resume that turn with the same messages and `approvals={call_id: Approval(approved,
        by, note)}` (from any instance sharing the chat store); an answer whose call changed,
        whose policy revision changed or that expired is asked again, a denial reaches the
        model as a BLOCKED result. `ApprovalError` when no such call waits.

        Yields `ToolsOffered` first, then the loop's events; the last one is a `FinalAnswer`.
        `selected_tool_ids` None means the component's default selection. Without `client`, one
        is made from the provider entry (`api_key`, else the entry's organization `ENC:v1:` key,
        else the host's environment variable) and closed at the end; pass your own to keep its connections between messages.
        `wire_api` picks "chat_completions" or "responses" for a host that speaks both (OpenAI);
        a host that speaks one API only refuses the other with a ProviderConfigurationError.

        Raises `ValueError` when the last message is not the user's (or `selected_tool_ids` is
        one bare string); `ChatRequirementError`
        before any request when the chat rules the provider out (also between rounds, once a
        tool result tightened the chat); a `ProviderError` when the provider fails;
        `InvalidToolCallingResponse` when tools were offered and its first round says nothing at
        all although it claims to be complete.
        """
        from policy._runtime_seam import uuid7
        from runtime.adapters.factory import create_adapter
        from runtime.chat import ChatRequirementError, ensure_provider_allowed
        from runtime.loop import LoopContext, SequentialToolCallingLoop, web_addresses_given_in
        from runtime.messages import Conversation, Role
        from runtime.providers import additional_api_parameters, create_client, request_model

        if not messages or messages[-1].role is not Role.USER:
            last = f", the last from {messages[-1].role.value}" if messages else ""
            raise ValueError(
                "respond() answers a user message: pass the conversation so far with the user's "
                f"message last; got {len(messages)} message(s){last}."
            )
        if client is not None and wire_api is not None and client.profile.wire_api != wire_api:
            raise ValueError(
                f"respond() got wire_api={wire_api!r} and a client that speaks "
                f"{client.profile.wire_api!r}; pass one of them (create_client(..., "
                f"wire_api={wire_api!r}) makes a client for it)."
            )
        if isinstance(selected_tool_ids, str):
            raise ValueError(
                "respond() takes selected_tool_ids as a list of tool ids, got the string "
                f"{selected_tool_ids!r}; write [{selected_tool_ids!r}]."
            )
        self._own_chat(chat)
        answers = None
        if approvals is not None:
            from runtime.approvals import checked_approvals

            answers = checked_approvals(approvals)
        await self.refresh_mcp_tools()
        registry = self.policy.registry
        facts = ProviderFacts.of(registry, provider)
        selection = None if selected_tool_ids is None else tuple(selected_tool_ids)
        from runtime.tracing import tracer

        active_tracer = tracer(self._tracer_provider)
        decision_id = ""  # the record makes its own id off the request's path, unless traced
        span = trace_context = None
        if active_tracer is not None:
            decision_id = str(uuid7())
            span, trace_context = _respond_span(
                active_tracer, self.policy, chat, provider, component, decision_id
            )
        recorder = self.decision_recorder(
            chat,
            provider,
            component,
            selection,
            user_message=messages[-1].content,
            secrets=(api_key,) if api_key else (),
            decision_id=decision_id,
            provider_facts=facts,
        )
        try:
            ensure_provider_allowed(chat, facts)
        except ChatRequirementError as refused:
            if recorder is not None:
                recorder.refused(refused)
            if span is not None:
                end_span(span, refused)
            raise
        conversation_digest = _conversation_sha256(messages)
        resumed = None
        if answers is not None:
            from runtime.approvals import ApprovalError

            try:
                resumed = _resumed_turn(chat, answers, conversation_digest)
            except ApprovalError as refused_resume:
                if recorder is not None:
                    recorder.failed(refused_resume)
                if span is not None:
                    end_span(span, refused_resume)
                raise

        offered = await self._runnable_tools(chat, provider, component, selection, retrieval_mode)
        runnable, left_out = _executable(offered)
        first = ToolsOffered(tuple(d.id for d, _ in runnable), left_out)
        if recorder is not None:
            recorder.offered(offered, first.tool_ids, left_out)
        if span is not None and span.is_recording():
            span.set_attributes(
                {
                    "toolpolicy.tools.offered": first.tool_ids,
                    "toolpolicy.tools.left_out": _left_out_reasons(offered, left_out),
                }
            )
        failure: BaseException | None = None
        usage: dict[str, Any] | None = None
        owned = client is None
        active = client
        try:
            yield first
            instructions = (
                offered.instructions
                if len(runnable) == len(offered.tools)
                else registry.tool_instructions([d for d, _ in runnable])
            )
            prompt = _effective_system_prompt(system_prompt, instructions)
            conversation = Conversation(
                system_prompt=prompt, messages=list(messages), tools=[d for d, _ in runnable]
            )
            context = LoopContext(
                conversation_sha256=conversation_digest,
                resumed=resumed,
                chat=chat,
                runnable_tools=runnable,
                executor=self.executor(),
                provider=facts,
                provider_name=provider.name or provider.id,
                model=provider.model,
                given_web_addresses=web_addresses_given_in(
                    prompt, *(m.content for m in messages if m.role is Role.USER)
                ),
                trace=(active_tracer, trace_context) if active_tracer is not None else None,
            )
            if active is None:
                active = create_client(provider, api_key, wire_api=wire_api)
            adapter = create_adapter(
                active,
                conversation,
                request_model(provider),
                max_output_tokens=max_output_tokens,
                extra_body=additional_api_parameters(provider),
            )
            context.approvals = self._approval_gate(chat, adapter, resumed, answers)
            if resumed is not None:
                adapter.restore_turns(resumed.turns)  # type: ignore[attr-defined]
            loop = self._loop or SequentialToolCallingLoop(self._limits)
            async for event in loop.run(adapter, context):
                if recorder is not None and type(event) is not TextDeltaEvent:
                    if type(event) is FinalAnswer and self._decision_log is not None:
                        await self._decision_log.room()  # the answer waits for its record
                        if context.approvals is not None:
                            recorder.approvals(context.approvals.records(event.pending_approvals))
                    _record(recorder, event)
                if span is not None and type(event) is FinalAnswer:
                    usage = _usage_attributes(span, event)
                yield event
        except ChatRequirementError as refused:
            failure = refused
            if recorder is not None:
                recorder.refused(refused)
            raise
        except Exception as error:
            failure = error
            if recorder is not None:
                recorder.failed(error)
            raise
        finally:
            if span is not None:
                end_span(span, failure, attributes=usage)
            if owned and active is not None:
                await active.aclose()

    def approval_rules(self) -> ApprovalRules:
        """Which tools' calls wait for a person's approval under the policy in force (read once
        per policy)."""
        held = self._approval_rules
        if held is not None and held[0] is self.policy:
            return held[1]
        from policy._runtime_seam import ApprovalRules

        rules = ApprovalRules.of(
            self.policy.configuration, self._app_mcp_servers, self.policy.tool_ids
        )
        self._approval_rules = (self.policy, rules)
        return rules

    def approval_reasons(self, chat: Chat) -> Callable[[str], str | None] | None:
        """Why a call of a tool needs a person's approval in this chat at this moment (a
        function of the tool id; None from it: no approval), or None when no call can need one.
        A call needs one when the configuration names its tool, or — under
        `DataTools.FlowRule = "APPROVE"` — when its tool is in conflict with what the chat holds
        then (asked before every call: an earlier result of the same response can bring the
        conflict). `respond` and the MCP gateway ask it."""
        from policy import FlowRule

        rules = self.approval_rules()
        registry = self.policy.registry
        flows = registry.flow_rule is FlowRule.APPROVE
        if not rules.rules and not flows:
            return None

        def reason(tool_id: str) -> str | None:
            configured = rules.reason(tool_id)
            if configured is not None or not flows:
                return configured
            conflict = registry.flow_conflict(tool_id, chat.flow_holdings)
            return None if conflict is None else f'DataTools.FlowRule "APPROVE": {conflict.message}'

        return reason

    def _approval_gate(
        self,
        chat: Chat,
        adapter: object,
        resumed: SuspendedTurn | None,
        answers: Mapping[str, Approval] | None,
    ) -> ApprovalGate | None:
        """The response's approvals (None when no tool needs any and no turn is resumed)."""
        reason = self.approval_reasons(chat)
        if reason is None and resumed is None:
            return None
        from runtime.approvals import ApprovalGate

        return ApprovalGate(
            reason or _no_approval,
            self.policy.configuration.revision,
            self._approval_seconds,
            can_wait=chat.can_suspend and callable(getattr(adapter, "recorded_turns", None)),
            answers=dict(answers or {}),
            waiting={} if resumed is None else {p.call_id: p for p in resumed.pending},
        )

    async def executable_tools(
        self,
        chat: Chat,
        provider: ProviderConfig,
        *,
        component: Component = Component.CHAT,
        selected_tool_ids: Iterable[str] | None = None,
    ) -> ExecutableOffer:
        """What `respond` would offer now, what it leaves out and why, and the decisions behind
        it (the MCP gateway serves exactly this); MCP listings are refreshed first when stale."""
        await self.refresh_mcp_tools()
        offered = await self._runnable_tools(chat, provider, component, selected_tool_ids, None)
        runnable, left_out = _executable(offered)
        return ExecutableOffer(runnable, left_out, offered)

    def decision_recorder(
        self,
        chat: Chat,
        provider: ProviderConfig,
        component: Component,
        selected_tool_ids: tuple[str, ...] | None,
        *,
        user_message: str = "",
        secrets: Sequence[str] = (),
        decision_id: str = "",
        served_by: Literal["respond", "mcp_gateway"] = "respond",
        provider_facts: ProviderFacts | None = None,
    ) -> DecisionRecorder | None:
        """The recorder of one decision into this runtime's decision log (None without one):
        `respond` and the MCP gateway both record through it. `provider_facts` are the
        provider's, when the caller has them already."""
        if self._decision_log is None:
            return None
        from runtime.decision_log import DecisionRecorder

        return DecisionRecorder(
            self._decision_log,
            configuration=self.policy.configuration,
            chat=chat,
            component=component,
            provider=provider,
            provider_facts=(
                ProviderFacts.of(self.policy.registry, provider)
                if provider_facts is None
                else provider_facts
            ),
            selected_tool_ids=selected_tool_ids,
            include_content=self._include_content,
            user_message=user_message,
            secrets=secrets,
            decision_id=decision_id,
            served_by=served_by,
            caller=self._caller,
        )

    def executor(self) -> ToolExecutor:
        """The executor `respond` runs calls with: the app's services, settings resolved once;
        no call runs while the decision log cannot keep its record (`QueuedSink.admission`: its
        sink failed, or its queue had no room within its bound)."""
        from runtime.executor import ToolExecutor

        log = self._decision_log
        return ToolExecutor(
            self._tool_settings,
            self._services,
            self._mailbox_name,
            known_tools=lambda name: self.policy.registry.tool_named(name),
            decision_log_failure=None if log is None else log.admission,
            flow=self.policy.registry,
            quota=self._call_quota(),
        )

    def _call_quota(self) -> CallQuota | None:
        """This person's call limits under the policy in force (None: no limit configured),
        read once per policy; counted in `call_counts`, else in the chat store
        `$TOOLPOLICY_CHAT_DB` names (PostgreSQL: shared by every instance), opened once."""
        held = self._quota
        if held is not None and held[0] is self.policy:
            return held[1]
        from policy._runtime_seam import CallLimits

        limits = CallLimits.of(self.policy.configuration)
        quota = None
        if limits:
            from policy._runtime_seam import subject_hash
            from runtime.quotas import CallQuota

            root = self._parent if self._parent is not None else self
            if root._call_counts is None:
                from runtime.chat import open_chat_store

                root._call_counts = open_chat_store()  # type: ignore[assignment]
            assert root._call_counts is not None
            person = "" if self._caller is None else subject_hash(self._caller.subject)
            quota = CallQuota(limits, root._call_counts, person)
        self._quota = (self.policy, quota)
        return quota

    async def _runnable_tools(
        self,
        chat: Chat,
        provider: ProviderConfig,
        component: Component,
        selected_tool_ids: Iterable[str] | None,
        retrieval_mode: DataSourceRetrievalMode | None,
    ) -> RunnableTools:
        from policy import RequestExtras

        registry = self.policy.registry
        selection = (
            registry.default_tool_ids(component)
            if selected_tool_ids is None
            else tuple(selected_tool_ids)
        )
        mode = retrieval_mode or registry.preselected_retrieval_mode()[0]
        extras = None
        if self._services.data_sources:
            from runtime.data_sources import offered_data_sources, refresh_data_sources
            from runtime.web.guard import guard_or_default

            if mode is DataSourceRetrievalMode.SEMANTIC_SEARCH:
                guard = guard_or_default(self._services.guard)
                await refresh_data_sources(self._services.data_sources, guard, wait=False)
            extras = RequestExtras(
                data_sources=offered_data_sources(
                    self._services.data_sources, ProviderFacts.of(registry, provider)
                )
            )
        return await registry.runnable_tools(
            selection,
            provider,
            component,
            outbound_restriction=chat.outbound_restriction,
            retrieval_mode=mode,
            chat_id=chat.id,
            extras=extras,
            holdings=chat.flow_holdings,
        )


def _no_approval(tool_id: str) -> str | None:
    return None


def _conversation_sha256(messages: Sequence[ChatMessage]) -> str:
    from runtime.approvals import conversation_sha256

    return conversation_sha256([f"{m.role.value}\n{m.content}" for m in messages])


def _resumed_turn(chat: Chat, answers: Mapping[str, Approval], digest: str) -> SuspendedTurn:
    """The chat's turn stopped for approval, taken from the store (so one instance resumes
    it); put back when the answers or messages do not fit it."""
    from runtime.approvals import ApprovalError, SuspendedTurn, unknown_answers

    text = chat.take_suspended_turn()
    if text is None:
        raise ApprovalError(
            f"No call waits for approval in chat '{chat.id}' (it was answered already, or "
            "never asked); send the user's message without approvals."
        )
    turn = SuspendedTurn.from_json(text)
    problem = None
    if turn.conversation_sha256 != digest:
        problem = (
            "respond() resumes a turn with the messages it answered; these differ from the "
            f"ones of the turn waiting in chat '{chat.id}'."
        )
    elif unknown := unknown_answers(turn, answers):
        waiting = ", ".join(p.call_id for p in turn.pending)
        problem = (
            f"No call {', '.join(unknown)} waits for approval in chat '{chat.id}'; the calls "
            f"waiting are: {waiting}."
        )
    if problem is not None:
        chat.keep_suspended_turn(text)
        raise ApprovalError(problem)
    return turn


def _queued(sink: DecisionSink | str | os.PathLike[str] | None) -> QueuedSink | None:
    """The sink behind a bounded queue, so writing a record never holds up a response; a path is
    a JSON Lines file (the default sink)."""
    if sink is None:
        return None
    from runtime.decision_log import JsonLinesSink, QueuedSink

    if isinstance(sink, str | os.PathLike):
        sink = JsonLinesSink(sink)
    elif not callable(getattr(sink, "write", None)):
        raise TypeError(
            f"ChatRuntime(decision_log=...) takes a file path or a sink with write(record), "
            f"got {type(sink).__name__}."
        )
    return sink if isinstance(sink, QueuedSink) else QueuedSink(sink)


def _executable(
    offered: RunnableTools,
) -> tuple[tuple[tuple[ToolDefinition, ExecutableTool], ...], tuple[tuple[str, str], ...]]:
    """The offered tools that can run; a definition without an implementation is left out."""
    from policy import DefinedTool
    from runtime.execution import ExecutableTool, missing_members

    runnable: list[tuple[ToolDefinition, ExecutableTool]] = []
    left_out = list(offered.left_out)
    for entry in offered.tools:
        missing = missing_members(entry.tool)
        if not missing and isinstance(entry.tool, ExecutableTool):
            runnable.append((entry.definition, entry.tool))
            continue
        reason = (
            "no implementation that can run is registered"
            if type(entry.tool) is DefinedTool or not missing
            else f"its implementation lacks {', '.join(missing)}"
        )
        _log.warning(
            "Tool '%s' is allowed but cannot run (%s); it is not offered.",
            entry.definition.id,
            reason,
        )
        left_out.append((entry.definition.id, reason))
    return tuple(runnable), tuple(left_out)


def _record(recorder: DecisionRecorder, event: LoopEvent) -> None:
    if isinstance(event, ToolCallStarted):
        recorder.call_started(event.call_id, event.round)
    elif isinstance(event, ToolCallFinished):
        recorder.call_finished(event.trace, event.outcome)
    elif isinstance(event, FinalAnswer):
        recorder.finished(event)


def _respond_span(
    active: Tracer,
    policy: Policy,
    chat: Chat,
    provider: ProviderConfig,
    component: Component,
    decision_id: str,
) -> tuple[Span, Context]:
    """The response's span (who answers, under which configuration, with which decision id)
    and the context its children start from."""
    from runtime.tracing import child_context, provider_name, start_span

    span = start_span(
        active,
        "invoke_agent toolpolicy",
        None,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "toolpolicy",
            "gen_ai.provider.name": provider_name(provider.kind),
            "gen_ai.request.model": provider.model,
            "gen_ai.conversation.id": chat.id,
            "toolpolicy.decision_id": decision_id,
            "toolpolicy.configuration.revision": policy.configuration.revision,
            "toolpolicy.component": component.value,
            "toolpolicy.provider.id": provider.id,
        },
    )
    return span, child_context(span, None)


def _left_out_reasons(offered: RunnableTools, left_out: Sequence[tuple[str, str]]) -> list[str]:
    """`tool_id: REASON` per tool left out: the failed check, or NOT_OFFERED (never a value)."""
    reasons = [f"{d.tool_id}: {d.reason.value}" for d in offered.decisions if not d.offered]
    return reasons + [f"{tool_id}: NOT_OFFERED" for tool_id, _ in left_out]


def _usage_attributes(span: Span, final: FinalAnswer) -> dict[str, Any] | None:
    """What the answer's span learns at its end (None when the span records nothing)."""
    if not span.is_recording():
        return None
    attributes: dict[str, Any] = {}
    if final.usage.input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = final.usage.input_tokens
    if final.usage.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = final.usage.output_tokens
    if final.interrupted:
        attributes["toolpolicy.interrupted"] = True
    return attributes


def _effective_system_prompt(system_prompt: str, tool_instructions: str) -> str:
    """The app's prompt with the tool-usage block appended (either may be empty)."""
    parts = [p for p in (system_prompt.strip(), tool_instructions) if p]
    return _SYSTEM_PROMPT_SEPARATOR.join(parts)


async def respond(
    policy: Policy,
    chat: Chat,
    provider: ProviderConfig,
    messages: Sequence[ChatMessage],
    *,
    component: Component = Component.CHAT,
    selected_tool_ids: Iterable[str] | None = None,
    system_prompt: str = "",
    client: ProviderClient | None = None,
    api_key: str | None = None,
    services: ToolServices | None = None,
    wire_api: WireApi | None = None,
    approvals: Mapping[str, Approval] | None = None,
) -> AsyncIterator[ResponseEvent]:
    """`ChatRuntime(policy, services=services).respond(...)` for an app that answers one message.

    An app answering many messages keeps one `ChatRuntime` instead (settings resolved once).
    """
    async with ChatRuntime(policy, services=services) as runtime:
        async for event in runtime.respond(
            chat,
            provider,
            messages,
            component=component,
            selected_tool_ids=selected_tool_ids,
            system_prompt=system_prompt,
            client=client,
            api_key=api_key,
            wire_api=wire_api,
            approvals=approvals,
        ):
            yield event
