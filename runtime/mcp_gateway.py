"""The governed MCP gateway behind `policy mcp serve`: toolpolicy as an MCP server.

Any MCP client (a desktop app, an IDE, an agent) connects and sees exactly the tools - built-in,
the app's own and MCP servers' - that the policy offers for one provider and component. Every call
is checked again against the policy in force, runs through the same executor as `respond` (masked
arguments, guarded results), and tightens the chat's requirements as a result would in a chat
(one chat per transport: stdio serves one client; HTTP clients share one chat until they sign in,
since nothing the server controls tells them apart). When the offered set changes (a
configuration reload, a server's listing changing, a pin no longer matching, a result changing
what the chat holds or demands), connected clients are told with `tools/list_changed`: clients of
the handshake protocol versions (2025 and earlier) on their connection, which the gateway keeps
from their first request until the SDK tears it down; 2026-07-28 clients on their
`subscriptions/listen` stream.

The offered tools are a view computed once per policy and chat requirements, so a request is a
lookup; the view is rebuilt when the runtime's policy object changes. Only the most recently seen
clients are kept with their views (`kept_clients`), and a change of policy drops every client's
views, so neither people who never return nor a replaced policy stay in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from policy import Component, ToolOfferBlockReason
from policy._runtime_seam import ProviderFacts
from runtime.mcp_waits import DEFAULT_FIRST_LISTING_WAIT_SECONDS

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server.connection import Connection
    from mcp.server.lowlevel.server import Server
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.types import ASGIApp

    from policy import Caller, Policy, ProviderConfig, ToolDefinition
    from policy._runtime_seam import RunnableTools
    from runtime.chat import Chat
    from runtime.decision_log import DecisionRecorder
    from runtime.execution import ExecutableTool
    from runtime.executor import ToolCallOutcome
    from runtime.messages import RequestedCall
    from runtime.session import ChatRuntime
    from runtime.signin import GatewaySignIn

__all__ = ["GatewayCall", "McpGateway"]

_log = logging.getLogger(__name__)

_DEFAULT_CHANGE_POLL_SECONDS = 1.0
_DEFAULT_KEPT_CLIENTS = 256


@dataclass(frozen=True, slots=True)
class GatewayCall:
    """One call as the gateway answered it.

    `client` is the transport whose chat the call ran in (`stdio` or `http`); `status` is the
    executor's (SUCCESS, ERROR, BLOCKED) or REFUSED when the policy does not offer the tool to
    this client; `arguments` are as a trace shows them (sensitive ones masked, all of
    them for a refused call).
    """

    client: str
    tool: str
    status: str
    message: str
    arguments: Mapping[str, str]

    def as_json(self) -> str:
        """One JSON line, as `policy mcp serve` logs it (no character reaches a terminal raw)."""
        from policy._runtime_seam import terminal_json

        return terminal_json(
            {
                "client": self.client,
                "tool": self.tool,
                "status": self.status,
                "message": self.message,
                "arguments": dict(self.arguments),
            }
        )


@dataclass(frozen=True, slots=True)
class _View:
    """What one client may call under one policy and one state of its chat requirements."""

    runtime: ChatRuntime
    policy: Policy
    provider: ProviderConfig | None
    by_function: Mapping[str, tuple[ToolDefinition, ExecutableTool]]
    runnable: tuple[tuple[ToolDefinition, ExecutableTool], ...]
    """The offered tools as the executor takes them (made once per view, not per call)."""
    left_out: Mapping[str, str]
    listed: tuple[types.Tool, ...]
    refusal: str = ""
    """Why nothing at all is offered (the provider is gone, the chat rules it out), else ""."""
    decided: RunnableTools | None = None
    """The offer decisions behind the view, as a decision record keeps them."""
    key: tuple[Any, ...] = ()
    """The chat's state it was made for (`_requirements`)."""
    facts: ProviderFacts | None = None
    """The provider as the executor's checks read it (made once per view, not per call)."""


@dataclass(slots=True)
class _Views:
    policy: Policy | None = None
    by_requirements: dict[tuple[Any, ...], _View] = field(default_factory=dict)


@dataclass(slots=True)
class _Client:
    label: str
    chat: Chat
    calls: int = 0
    caller: Caller | None = None
    """The signed-in person (None: the shared token's or stdio's one user)."""
    views: _Views = field(default_factory=_Views)
    opened: tuple[Any, ...] = ()
    """Its chat's requirements when it was opened (`_requirements`): a client let go while they
    are unchanged loses nothing a fresh chat would not have."""
    running: int = 0
    """Its calls under way (one may wait for its user's approval): it is never let go then."""


class McpGateway:
    """The tools a policy offers for `provider` and `component`, served to MCP clients.

    `runtime` is the runtime in force, or a function returning it (e.g. `lambda:
    watcher.runtime` with a `PolicyWatcher`, so the gateway follows configuration reloads).
    `on_call` receives a `GatewayCall` for every call (the CLI logs it as a JSON line).
    """

    def __init__(
        self,
        runtime: ChatRuntime | Callable[[], ChatRuntime],
        provider: str,
        component: Component = Component.CHAT,
        *,
        on_call: Callable[[GatewayCall], None] | None = None,
        change_poll_seconds: float = _DEFAULT_CHANGE_POLL_SECONDS,
        first_listing_wait_seconds: float = DEFAULT_FIRST_LISTING_WAIT_SECONDS,
        kept_clients: int = _DEFAULT_KEPT_CLIENTS,
    ) -> None:
        from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        from runtime.signin.acting import calls_act_for_caller

        if change_poll_seconds <= 0:
            raise ValueError(
                f"McpGateway change_poll_seconds must be > 0, got {change_poll_seconds!r}."
            )
        self._current: Callable[[], ChatRuntime] = (
            runtime if callable(runtime) else (lambda: runtime)
        )
        self._provider = provider
        self._component = component
        self._on_call = on_call
        if kept_clients < 1:
            raise ValueError(f"McpGateway kept_clients must be >= 1, got {kept_clients!r}.")
        self._poll = change_poll_seconds
        self._kept = kept_clients
        self._clients: dict[str, _Client] = {}
        """The clients (signed-in people, else transports) kept with their views, the longest
        idle first: past `kept_clients` the longest idle are let go (`_let_go`)."""
        self._resting: dict[str, _Client] = {}
        """Clients let go whose chat a result tightened, without their views: a chat's
        requirements only tighten, so the person returns to the same chat, never a fresh one."""
        self._policy_in_force: Policy | None = None
        self._last_http: _Client | None = None
        self._first_wait = first_listing_wait_seconds
        self._refreshing: dict[int, asyncio.Task[None]] = {}
        """The listing under way per runtime (by id; a finished one is dropped at the next)."""
        self._settled: weakref.WeakSet[ChatRuntime] = weakref.WeakSet()
        """Runtimes whose first listings are done: a request then brings their listings up to
        date in place, a lookup that never waits, without the cost of a task. Held weakly: a
        runtime no longer in force (and its policy) goes once its last request ended."""
        self._connections: set[Connection] = set()
        """The handshake-era client connections to tell of a change (each leaves the set when
        the SDK tears it down)."""
        self._probe = self._new_client("probe")
        self._bus = InMemorySubscriptionBus()
        self.server: Server[Any] = _gateway_server_class()(
            "toolpolicy",
            version="1",
            instructions=(
                "Tools governed by the organization's policy; each call is checked again and "
                "may be refused."
            ),
            get_tool_input_schema=self._input_schema,
            on_list_tools=self._list_tools,
            on_call_tool=calls_act_for_caller(self._call_tool),
            on_subscriptions_listen=ListenHandler(self._bus),
        )
        # The requestState of an input request (an approval asked in the stateless protocol)
        # comes back from the client: the SDK's boundary seals it under a key only this process
        # holds and refuses one that is forged, altered, expired or sent with another call.
        self.server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience="toolpolicy")
        )

    # --- the offered view ---------------------------------------------------------------------

    def _new_client(self, label: str, caller: Caller | None = None) -> _Client:
        from runtime.chat import Chat, MemoryChatStore

        chat = Chat.open(f"mcp-gateway-{uuid.uuid4()}", MemoryChatStore(), caller=caller)
        return _Client(label, chat, caller=caller, opened=_requirements(chat))

    def _client(self, ctx: Any) -> _Client:
        """The client a request comes from, with its chat: one per signed-in person, else one
        per transport.

        A request the sign-in (`runtime.signin`) let in carries its `Caller`: each person has
        their own chat, decided with their own policy (`ChatRuntime.for_caller`), whatever
        session or connection their requests come over.

        Over stdio the process serves one client. Over streamable HTTP the gateway has nothing
        it controls that tells one client from another: the stateless HTTP of 2026-07-28 carries
        no session (an `Mcp-Session-Id` header is the client's own text, never checked), and a
        session of the earlier protocol versions is the client's to drop and open anew. A chat
        keyed on either would let a client reset what a result demanded, or join another
        client's chat. So every HTTP request shares one chat, whose requirements only tighten,
        until clients sign in.
        """
        self._keep(ctx)
        transport = _transport(ctx)
        caller = _caller(ctx) if transport == "http" else None
        key = transport if caller is None else f"{transport}:{caller.subject}"
        client = self._clients.pop(key, None) or self._resting.pop(key, None)
        if client is None or client.caller != caller:
            client = self._new_client(transport, caller)
        self._clients[key] = client  # the most recently seen last
        if len(self._clients) > self._kept:
            self._let_go(serving=key)
        if transport == "http":
            self._last_http = client
        return client

    def _let_go(self, serving: str) -> None:
        """The longest idle clients let go until `kept_clients` are left, so memory does not
        grow with every person ever seen. A client with a call under way stays (its call may
        be waiting for an approval, and its result must tighten the chat it ran in). A client
        whose chat is as opened is dropped whole: returning, it gets a fresh chat and view, the
        same offer. One whose chat a result tightened keeps its chat (in `_resting`, without
        its views), so returning never resets what a result demanded. The client being served
        (`serving`) stays whatever the count."""
        for key in list(self._clients):
            if len(self._clients) <= self._kept:
                return
            client = self._clients[key]
            if client.running or key == serving:
                continue
            del self._clients[key]
            client.views = _Views()
            if _requirements(client.chat) != client.opened:
                self._resting[key] = client

    def _forget_replaced_views(self) -> None:
        """Once the policy in force changed, every client's views of the old one are dropped
        (each is rebuilt at its next request), so a replaced policy is freed even while some
        clients never come back."""
        policy = self._current().policy
        if policy is self._policy_in_force:
            return
        self._policy_in_force = policy
        for client in self._clients.values():
            client.views = _Views()

    def _keep(self, ctx: Any) -> None:
        """Keep the connection a handshake-era request came over, to tell it of changes.

        2026-07-28 connections are left out: each request is its own connection there, and
        changes reach those clients on the `subscriptions/listen` stream they open."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        connection = _connection(ctx)
        if (
            connection in self._connections
            or connection.protocol_version in MODERN_PROTOCOL_VERSIONS
            or not connection.has_standalone_channel
        ):
            return
        self._connections.add(connection)
        connection.exit_stack.callback(self._connections.discard, connection)

    async def warm(self) -> None:
        """Start listing the upstream servers now, in the background (at most
        `runtime.mcp.MAX_CONCURRENT_STARTS` started at once), so listings are warm before the
        first client asks."""
        self._refreshed(self._current())

    def _refreshed(self, runtime: ChatRuntime) -> asyncio.Task[None]:
        """The runtime's MCP listings brought up to date: one task at a time per runtime,
        never cancelled by a request that stops waiting for it."""
        self._refreshing = {k: t for k, t in self._refreshing.items() if not t.done()}
        task = self._refreshing.get(id(runtime))
        if task is None:
            task = asyncio.ensure_future(runtime.refresh_mcp_tools())
            task.add_done_callback(_retrieved)
            task.add_done_callback(lambda _: self._settle(runtime))
            self._refreshing[id(runtime)] = task
        return task

    def _settle(self, runtime: ChatRuntime) -> None:
        self._settled.add(runtime)

    async def _refresh(self, runtime: ChatRuntime) -> None:
        """The runtime's MCP tools as listed now. A slow server does not hold the answer: what
        is listed within the wait is offered, and clients hear tools/list_changed when the rest
        arrive (`watch_changes`)."""
        under_way = self._refreshing.get(id(runtime))
        if runtime in self._settled and (under_way is None or under_way.done()):
            await runtime.refresh_mcp_tools()  # first listings done: never waits
        else:
            await asyncio.wait({self._refreshed(runtime)}, timeout=self._first_wait)

    async def _view(self, client: _Client) -> _View:
        self._forget_replaced_views()
        runtime = self._current()
        if client.caller is not None:
            from policy import ToolPolicyError

            try:
                runtime = runtime.for_caller(client.caller)
            except ToolPolicyError as error:  # their own user settings do not read
                refusal = f"Your user settings cannot be used: {error}; no tool is offered."
                return _View(runtime, runtime.policy, None, {}, (), {}, (), refusal)
        await self._refresh(runtime)
        policy = runtime.policy
        if policy is not client.views.policy:
            client.views = _Views(policy)
        key = _requirements(client.chat)
        view = client.views.by_requirements.get(key)
        if view is None:
            view = await self._build_view(runtime, policy, client.chat, key)
            client.views.by_requirements[key] = view
        return view

    async def _build_view(
        self, runtime: ChatRuntime, policy: Policy, chat: Chat, key: tuple[Any, ...]
    ) -> _View:
        from policy import UnknownProviderError
        from runtime.chat import ChatRequirementError, ensure_provider_allowed
        from runtime.executor import IndexedRunnable

        try:
            provider = policy.provider(self._provider)
        except UnknownProviderError:
            refusal = (
                f"The provider '{self._provider}' is not configured (any more); the gateway "
                "offers no tool until it is."
            )
            return _View(runtime, policy, None, {}, (), {}, (), refusal, key=key)
        registry = policy.registry
        facts = ProviderFacts.of(registry, provider)
        try:
            ensure_provider_allowed(chat, facts)
        except ChatRequirementError as error:
            return _View(runtime, policy, provider, {}, (), {}, (), str(error), key=key)
        offer = await runtime.executable_tools(
            chat, provider, component=self._component, selected_tool_ids=registry.tool_ids
        )
        by_function = {d.function.name: (d, t) for d, t in offer.tools}
        listed = tuple(_listed(d, t) for d, t in offer.tools)
        return _View(
            runtime,
            policy,
            provider,
            by_function,
            IndexedRunnable(by_function.values()),
            dict(offer.left_out),
            listed,
            "",
            offer.decided,
            key,
            facts,
        )

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        """A tool's parameters as the HTTP clients' view offers it now, for the SDK's check of
        a call's `Mcp-Param-*` headers. A lookup: without it the SDK ran the whole `tools/list`
        handler for every call over HTTP (each call's cost grew with the number of tools).
        None while that view is not built (the SDK then checks no header; the call is decided
        as always)."""
        client = self._last_http
        view = client.views.by_requirements.get(_requirements(client.chat)) if client else None
        offered = view.by_function.get(name) if view is not None else None
        return offered[0].function.parameters if offered is not None else None

    def _refusal(self, view: _View, name: str, chat: Chat) -> str:
        if view.refusal:
            return view.refusal
        why = view.left_out.get(name)
        if why:
            return f"'{name}' is not offered here: {why}"
        decision = view.policy.registry.offer_decision(
            name,
            view.provider,
            self._component,
            outbound_restriction=chat.outbound_restriction,
            holdings=chat.flow_holdings,
        )
        if decision.reason is not ToolOfferBlockReason.NONE:
            return (
                f"refused by the organization's policy: {decision.reason.value}: {decision.message}"
            )
        return f"'{name}' is not offered to this client"

    # --- the protocol handlers ----------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        import mcp_types as types

        view = await self._view(self._client(ctx))
        return types.ListToolsResult(tools=list(view.listed))

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        client = self._client(ctx)
        client.running += 1
        try:
            return await self._called(ctx, params, client)
        finally:
            client.running -= 1

    async def _called(
        self, ctx: Any, params: types.CallToolRequestParams, client: _Client
    ) -> types.CallToolResult | types.InputRequiredResult:
        import mcp_types as types

        from runtime.messages import RequestedCall

        view = await self._view(client)
        name = params.name
        arguments = dict(params.arguments or {})
        client.calls += 1
        call = RequestedCall(f"{client.label}-{client.calls}", name, json.dumps(arguments))
        recorder = self._recorder(view, client, call.call_id)
        if name not in view.by_function:
            message = self._refusal(view, name, client.chat)
            masked = view.runtime.executor().traced_arguments(call, ())
            refused = _refused(call, client.calls, message, masked)
            shown = refused.trace  # the name and message as a log keeps them
            self._report(
                GatewayCall(client.label, shown.tool_name, "REFUSED", shown.status_message, masked)
            )
            self._ended(recorder, view, client, refused)
            return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
        assert view.provider is not None
        waits = await self._approval(ctx, params, view, client, call)
        if isinstance(waits, types.InputRequiredResult):
            return waits
        if waits is not None:
            masked = view.runtime.executor().traced_arguments(call, view.runnable)
            refused = _refused(call, client.calls, waits, masked)
            shown = refused.trace
            self._report(
                GatewayCall(client.label, shown.tool_name, "REFUSED", shown.status_message, masked)
            )
            self._ended(recorder, view, client, refused)
            return types.CallToolResult(content=[types.TextContent(text=waits)], is_error=True)
        try:
            with _progress_of(ctx):
                outcome = await view.runtime.executor().execute(
                    call,
                    view.runnable,
                    order=client.calls,
                    chat=client.chat,
                    provider=view.facts,
                )
        except asyncio.CancelledError:  # the client cancelled: so was the upstream call
            masked = view.runtime.executor().traced_arguments(call, view.runnable)
            cancelled = _cancelled(call, client.calls, masked)
            shown = cancelled.trace
            self._report(
                GatewayCall(client.label, name, "ERROR", shown.status_message, shown.arguments)
            )
            self._ended(recorder, view, client, cancelled)
            raise
        self._ended(recorder, view, client, outcome)
        await self._tell_if_offer_changed(client, view)
        trace = outcome.trace
        self._report(
            GatewayCall(
                client.label, name, trace.status.value, trace.logged_status_message, trace.arguments
            )
        )
        structured = outcome.structured_content
        return types.CallToolResult(
            content=[types.TextContent(text=outcome.content)],
            structured_content=structured,
            is_error=trace.status.value != "SUCCESS"
            or (structured is None and _output_schema(view.by_function[name][1]) is not None),
        )

    async def _approval(
        self,
        ctx: Any,
        params: types.CallToolRequestParams,
        view: _View,
        client: _Client,
        call: RequestedCall,
    ) -> str | types.InputRequiredResult | None:
        """None when the call may run: it needs no approval, or the client's user approved it
        (MCP elicitation: over a session's back-channel, or — in the stateless protocol — an
        input request the client answers by sending the call again, bound to its arguments and
        the policy revision). Else the input request to send, or why it is refused: the user
        declined, or the client cannot ask (it declared no elicitation capability)."""
        import mcp_types as types
        from mcp.shared.exceptions import NoBackChannelError

        from runtime.approvals import NOT_APPROVED, arguments_sha256

        reasons = view.runtime.approval_reasons(client.chat)
        tool_id = view.by_function[call.tool_name][0].id
        reason = None if reasons is None else reasons(tool_id)
        if reason is None:
            return None
        state = f"approval:{arguments_sha256(call)}:{view.policy.configuration.revision}"
        answer = (params.input_responses or {}).get(_APPROVAL_KEY)
        if answer is None or params.request_state != state:
            wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
            if not ctx.session.check_client_capability(wanted):
                return (
                    f"'{call.tool_name}' needs a person's approval before it runs ({reason}), "
                    "and this client cannot ask its user for it (it declared no elicitation "
                    "capability); the call was not run."
                )
            masked = view.runtime.executor().traced_arguments(call, view.runnable)
            question = types.ElicitRequestFormParams(
                message=f"Allow {call.tool_name} {json.dumps(masked)}? ({reason})",
                requested_schema=_APPROVAL_SCHEMA,
            )
            try:
                answer = await ctx.session.elicit_form(question.message, question.requested_schema)
            except NoBackChannelError:
                return types.InputRequiredResult(
                    input_requests={_APPROVAL_KEY: types.ElicitRequest(params=question)},
                    request_state=state,
                )
        approved = (
            isinstance(answer, types.ElicitResult)
            and answer.action == "accept"
            and (answer.content or {}).get("approve") is True
        )
        return None if approved else NOT_APPROVED

    def _recorder(self, view: _View, client: _Client, call_id: str) -> DecisionRecorder | None:
        """The decision record of one call (when the runtime keeps a decision log): what this
        client is offered, then the call. None without a log or without a provider."""
        if view.provider is None:
            return None
        recorder = view.runtime.decision_recorder(
            client.chat,
            view.provider,
            self._component,
            view.policy.registry.tool_ids,
            served_by="mcp_gateway",
        )
        if recorder is None:
            return None
        if view.decided is not None:
            offered = tuple(definition.id for definition, _ in view.by_function.values())
            recorder.offered(view.decided, offered, tuple(view.left_out.items()))
        recorder.call_started(call_id, 1)
        return recorder

    def _ended(
        self,
        recorder: DecisionRecorder | None,
        view: _View,
        client: _Client,
        outcome: ToolCallOutcome,
    ) -> None:
        """A call's demands tighten the client's chat; its record is written."""
        from runtime.executor import apply_call_demands

        apply_call_demands(client.chat, outcome)
        if recorder is None:
            return
        recorder.call_finished(outcome.trace, outcome)
        if view.refusal:
            from runtime.chat import ChatRequirementError

            recorder.refused(ChatRequirementError(view.refusal))
        else:
            recorder.gateway_call_ended()

    async def _tell_if_offer_changed(self, client: _Client, before: _View) -> None:
        """A result that changed what the chat demands or holds (a confidence requirement, an
        effect under the flow rule) may change what this client is offered: its clients are
        told at once, not at the next look of `watch_changes` (which sees no client's chat)."""
        if _requirements(client.chat) == before.key:
            return
        after = await self._view(client)
        if (after.listed, after.refusal) != (before.listed, before.refusal):
            await self.announce_change()

    def _report(self, call: GatewayCall) -> None:
        if self._on_call is None:
            return
        try:
            self._on_call(call)
        except Exception:  # a log must never fail the client's call
            _log.exception("the gateway's call log failed")

    # --- telling clients about changes --------------------------------------------------------

    async def watch_changes(self, stop: asyncio.Event) -> None:
        """Until `stop` is set: look at the offered tools every poll and tell every connected
        client when they changed. A look is a lookup while nothing changed: the view is made
        once per policy, so only a new view is compared tool by tool."""
        await self.warm()
        last = await self._view(self._probe)
        _settle_heap()
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._poll)
            if stop.is_set():
                return
            try:
                now = await self._view(self._probe)
            except Exception:  # a failing look leaves the clients as they are
                _log.exception("the gateway could not look at the offered tools")
                continue
            if now is last:
                continue
            changed = (now.listed, now.refusal) != (last.listed, last.refusal)
            if now.policy is not last.policy:
                _settle_heap()
            last = now
            if changed:
                await self.announce_change()

    async def announce_change(self) -> None:
        """Send tools/list_changed to every connected client: 2026-07-28 clients on their
        `subscriptions/listen` streams, earlier ones on their connection (best effort: a client
        gone meanwhile is skipped)."""
        from mcp.shared.subscriptions import ToolsListChanged

        await self._bus.publish(ToolsListChanged())
        for connection in list(self._connections):
            with contextlib.suppress(Exception):
                await connection.send_tool_list_changed()

    # --- transports -----------------------------------------------------------------------------

    async def run_stdio(self) -> None:
        """Serve one client over stdin/stdout until it disconnects."""
        from mcp.server.stdio import stdio_server

        stop = asyncio.Event()
        await self.warm()
        watcher = asyncio.create_task(self.watch_changes(stop))
        try:
            async with stdio_server() as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())
        finally:
            stop.set()
            await watcher

    def http_app(
        self, host: str, token: str | None = None, sign_in: GatewaySignIn | None = None
    ) -> ASGIApp:
        """The streamable HTTP app at /mcp, for a server listening on `host`; with `token`, a
        request without `Authorization: Bearer <token>` is answered 401; with `sign_in`, one
        without an access token of the organization's identity provider is (runtime.signin).

        On a loopback `host` (any spelling) only requests addressed to a loopback name and from
        no other origin are answered: a web page that rebinds its DNS name to this machine is
        refused (421, or 403 for its Origin)."""
        app: ASGIApp = self.server.streamable_http_app(
            host=host,
            transport_security=_rebinding_protection(host),
            auth=sign_in.auth_settings() if sign_in else None,
            token_verifier=sign_in.verifier if sign_in else None,
        )
        return app if token is None else _bearer_required(app, token)


def _settle_heap() -> None:
    """Move what the policy in force keeps alive out of the cyclic collector's reach.

    A policy over an MCP server of 1,000 tools is ~200,000 objects (tools, definitions,
    decisions, the offered view), alive until the next change. Left in the collector's oldest
    generation, every full collection walks them all (0.1-0.4 s on a loaded machine), and the
    short-lived objects of each request (a `tools/list` answer of 1,000 tools above all) start
    one every few listings: the pauses were the gateway's p99. So once per policy in force, one
    full collection frees what the previous policy left, and `gc.freeze` sets the rest aside:
    later collections walk only what requests allocate. Frozen objects are still freed by
    reference counting; a cycle among them waits for the next change's collection."""
    import gc

    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _retrieved(task: asyncio.Task[None]) -> None:
    """A listing that failed in the background is logged, not left for asyncio to report."""
    if not task.cancelled() and task.exception() is not None:
        _log.warning("the gateway could not list its MCP servers: %s", task.exception())


def _gateway_server_class() -> type[Server[Any]]:
    """The SDK's low-level server advertising `tools.listChanged: true` to handshake-era
    clients on every transport (the SDK's default says false, and its HTTP session manager asks
    `create_initialization_options()` with no arguments). 2026-07-28 clients are told it by
    the served `subscriptions/listen`."""
    from mcp.server.lowlevel.server import NotificationOptions, Server

    class _GatewayServer(Server[Any]):
        def create_initialization_options(
            self,
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True),
                experimental_capabilities,
                extensions,
            )

    return _GatewayServer


def _connection(ctx: Any) -> Connection:
    """The SDK's handle of the client connection a request came over: one per stdio process or
    handshake-era HTTP session, torn down (its `exit_stack` closed) when the client leaves.

    The SDK 2.3 has no public way to it: its request context hands handlers a per-request
    session proxy that holds it privately (`_connection`); its coming `Context` names it
    `connection`. Without it a handshake-era client would never hear `tools/list_changed`
    although the gateway advertises it, so an SDK that offers neither fails the request with
    this error (the client reads it, the log says it) rather than serve clients a list it
    cannot keep current."""
    from mcp.server.connection import Connection

    connection = getattr(ctx, "connection", None)
    if connection is None:
        connection = getattr(getattr(ctx, "session", None), "_connection", None)
    if isinstance(connection, Connection):
        return connection
    from importlib.metadata import version

    from mcp.shared.exceptions import MCPError
    from mcp_types import INTERNAL_ERROR

    message = (
        f"the installed mcp SDK ({version('mcp')}) hands the gateway no client Connection "
        "(neither the request context's `connection` nor its session's `_connection`), which "
        "the gateway needs to tell clients when their tools change; no request is served. "
        "toolpolicy's gateway is built on mcp 2.3."
    )
    _log.error("%s", message)
    raise MCPError(INTERNAL_ERROR, message)


_APPROVAL_KEY = "toolpolicy-approval"
_APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "description": "Run this call?"}},
    "required": ["approve"],
}


def _listed(definition: ToolDefinition, tool: ExecutableTool) -> types.Tool:
    import mcp_types as types

    from policy import McpTool

    annotations = None
    if isinstance(tool, McpTool) and tool.listing.annotations:
        with contextlib.suppress(ValueError):
            annotations = types.ToolAnnotations.model_validate(dict(tool.listing.annotations))
    output_schema = _output_schema(tool)
    return types.Tool(
        name=definition.function.name,
        title=tool.display_name,
        description=definition.function.description_for_llm,
        input_schema=dict(definition.function.parameters),
        output_schema=None if output_schema is None else dict(output_schema),
        annotations=annotations,
    )


def _output_schema(tool: ExecutableTool) -> Mapping[str, Any] | None:
    """The output schema an MCP server declared for its tool (pinned with its definition). A
    result that cannot keep to it after the guard (its structured content dropped, with a note
    in the text) is answered as an error, since a client checks a successful result against
    it."""
    from policy import McpTool

    return tool.listing.output_schema if isinstance(tool, McpTool) else None


def _requirements(chat: Chat) -> tuple[Any, ...]:
    """What of a chat's state its view depends on: its requirements and the effects it holds
    (under the flow rule a tool is offered or not by which effects are held; the holdings that
    brought an effect first stay named, so one view per set of effects)."""
    return (
        chat.required_provider_confidence,
        chat.required_data_security,
        chat.outbound_restriction,
        chat.outbound_mailbox_id,
        chat.flow_holdings.effects,
    )


def _caller(ctx: Any) -> Caller | None:
    """The signed-in person of an HTTP request (None without a sign-in)."""
    from runtime.signin import request_caller

    request = getattr(ctx, "request", None)
    return None if request is None else request_caller(request)


def _transport(ctx: Any) -> str:
    """The transport a request came over: "http" (it carries an HTTP request) or "stdio"."""
    request = getattr(ctx, "request", None)
    return "stdio" if getattr(request, "headers", None) is None else "http"


def _refused(
    call: RequestedCall, order: int, message: str, arguments: Mapping[str, str]
) -> ToolCallOutcome:
    """A call of a tool this client is not offered, as the executor traces it (never run)."""
    from runtime.executor import not_run_outcome

    return not_run_outcome(call, order, message, message, arguments)


def _cancelled(call: RequestedCall, order: int, arguments: Mapping[str, str]) -> ToolCallOutcome:
    """A call the client cancelled while it ran, as its trace and record keep it: an ERROR that
    ran (the upstream server was sent the cancellation too), nothing brought into the chat."""
    from dataclasses import replace

    from runtime.executor import TraceStatus, not_run_outcome

    message = "cancelled by the client while it ran"
    outcome = not_run_outcome(call, order, message, message, arguments)
    trace = replace(outcome.trace, status=TraceStatus.ERROR, was_executed=True)
    return replace(outcome, trace=trace)


_PROGRESS_SECONDS = 0.1
"""At most one progress report per this long reaches the client (the last one always)."""
_PROGRESS_MESSAGE_CHARACTERS = 200


def _progress_of(ctx: Any) -> contextlib.AbstractContextManager[None]:
    """While a call runs: the progress its MCP server reports, passed on to the client's
    progress token at a bounded rate (one line, bounded, the server's secrets masked by the
    session); nothing is asked of the server when the client sent no token."""
    meta = ctx.meta or {}
    if meta.get("progress_token", meta.get("progressToken")) is None:
        return contextlib.nullcontext()
    import time

    from runtime.mcp import relaying_progress

    session = ctx.session
    last = [float("-inf")]

    async def relay(progress: float, total: float | None, message: str | None) -> None:
        now = time.monotonic()
        if now - last[0] < _PROGRESS_SECONDS and (total is None or progress < total):
            return
        last[0] = now
        shown = None
        if message is not None:
            shown = " ".join(message.split())[:_PROGRESS_MESSAGE_CHARACTERS]
        with contextlib.suppress(Exception):  # advisory: a lost report never fails the call
            await session.report_progress(progress, total, shown)

    return relaying_progress(relay)


def _rebinding_protection(host: str) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding protection for a loopback `host` as `policy.hosts` reads it.

    Left to itself, the SDK protects only `127.0.0.1`, `localhost` and `::1` written just so; any
    other loopback spelling (`LOCALHOST`, `127.0.0.2`), which needs no token either, would answer
    a request addressed to any name. The names a local client addresses are those three and the
    listening host in its canonical form."""
    from mcp.server.transport_security import TransportSecuritySettings

    from policy._runtime_seam import is_loopback_host
    from runtime.web.addresses import canonical_host

    if not is_loopback_host(host):
        return None
    names = sorted({"127.0.0.1", "localhost", "[::1]", canonical_host(host) or "localhost"})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{name}:*" for name in names)],
        allowed_origins=[f"http://{name}{port}" for name in names for port in ("", ":*")],
    )


_REALM = 'Bearer realm="policy mcp serve"'


def _bearer_required(app: ASGIApp, token: str) -> ASGIApp:
    """`app` answering only requests with the token; any other gets 401 with the challenge of
    RFC 6750 (`WWW-Authenticate: Bearer`, with `error="invalid_token"` when a token was sent),
    so a client reports a missing or wrong token instead of starting a sign-in flow."""
    from starlette.responses import JSONResponse

    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            presented = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(presented, expected):
                challenge = f'{_REALM}, error="invalid_token"' if presented else _REALM
                response = JSONResponse(
                    {"error": "a valid bearer token is required"},
                    401,
                    headers={"WWW-Authenticate": challenge},
                )
                await response(scope, receive, send)
                return
        await app(scope, receive, send)

    return guarded
