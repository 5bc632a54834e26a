"""MCP servers at run time: one client session per server, listings with a TTL, tool calls.

`McpSessions` owns the sessions (official `mcp` SDK, stdio subprocesses or streamable HTTP):
opened lazily, listed page by page, re-listed in the background when the server says its tools
changed or the TTL ran out (a request is answered from the listing in hand meanwhile, so a server
that hangs on `tools/list` never holds up a call to another server's tools), closed with
`aclose()`. A server that cannot be reached leaves its tools out with the error as evidence; it
never blocks other tools or the chat. A call that times out or whose server died is an error, and
the session is restarted on next use.

`McpExecutableTool` is a policy `McpTool` that runs through `McpSessions`; its results pass the
prompt-injection guard, resource links become sources, images and audio are described.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO, runtime_checkable

from policy import (
    McpAuthType,
    McpServerConfig,
    McpServerListing,
    McpTool,
    McpToolListing,
    McpTransport,
    ToolPolicyError,
)
from policy._runtime_seam import (
    NO_SECRETS,
    SecretMask,
    SecretValue,
    known_after,
    terminal_safe,
    write_cached_listing,
)
from runtime.execution import ContentQuotingError, ToolExecutionContext, ToolExecutionResult
from runtime.mcp_transport import MessageCap
from runtime.messages import Source

if TYPE_CHECKING:
    import httpx2
    from mcp import Client
    from mcp.shared.dispatcher import ProgressFnT
    from mcp_types import CallToolResult

    from runtime.web.guard import GuardSource, PromptInjectionGuard

    UpstreamAuth = Callable[[McpServerConfig], httpx2.Auth | None]

_log = logging.getLogger(__name__)
_server_log = logging.getLogger(f"{__name__}.server")
"""A stdio server's stderr, one record per line, named after the server."""

DEFAULT_LISTING_TTL_SECONDS = 300.0
DEFAULT_FIRST_LISTING_WAIT_SECONDS = 15.0
"""How long requests wait, in all, for a server's first listing; later ones never wait."""
MAX_CONCURRENT_STARTS = 4
"""How many servers one `McpSessions` starts for listing at once (the others wait their turn)."""
MAX_LISTING_PAGES = 100
MAX_RESULT_CHARACTERS = 200_000
MAX_STDERR_LINE_BYTES = 4_000
"""A longer stderr line from a stdio server is logged in pieces of this size."""
_STDERR_DRAIN_SECONDS = 2.0
"""How long closing a session waits for the server's last stderr lines (a child process the
server left running may hold its stderr open longer)."""
_START_SECONDS = (10.0, 30.0)
"""How long a server may take to start and connect: its TimeoutSeconds, within these bounds (a
short call timeout must not fail a server that needs a few seconds to start)."""


_progress_relay: ContextVar[ProgressFnT | None] = ContextVar("mcp_progress_relay", default=None)
"""Where the progress an upstream server reports for the calls made in this context goes."""


@contextlib.contextmanager
def relaying_progress(relay: ProgressFnT) -> Iterator[None]:
    """Ask the servers called in this block for progress and hand each report to `relay`
    (the MCP gateway passes it on to its client's progress token)."""
    token = _progress_relay.set(relay)
    try:
        yield
    finally:
        _progress_relay.reset(token)


def _masked_progress(session: _Session) -> ProgressFnT | None:
    """The relay in force for this call, given the server's reports with its secrets masked."""
    relay = _progress_relay.get()
    if relay is None:
        return None

    async def report(progress: float, total: float | None, message: str | None) -> None:
        await relay(progress, total, None if message is None else session.mask.text(message))

    return report


_PROGRESS_GUARD_CHARACTERS = 1000
"""What of a progress message is read at all: it is shown as one short line."""


@contextlib.contextmanager
def _guarded_progress(guard: PromptInjectionGuard, source: GuardSource) -> Iterator[None]:
    """While a call runs, the progress messages its server sends pass the prompt-injection
    guard before they are relayed, as its results do: a client may show them to its model."""
    relay = _progress_relay.get()
    if relay is None:
        yield
        return
    from runtime.web.guard import GuardText

    async def report(progress: float, total: float | None, message: str | None) -> None:
        if message is not None:
            text = GuardText(message[:_PROGRESS_GUARD_CHARACTERS], source)
            [message] = await guard.sanitize_many([text])
        await relay(progress, total, message)

    with relaying_progress(report):
        yield


def _start_seconds(server: McpServerConfig) -> float:
    low, high = _START_SECONDS
    return max(low, min(high, server.timeout_seconds))


class McpServerError(ToolPolicyError, ContentQuotingError):
    """A server could not be reached, listed or called; the message names the server and never
    holds a secret from its Env or Headers. What the server wrote itself (a JSON-RPC error's
    message, an `isError` result's text) is its `content`: it passes the prompt-injection guard
    before the model reads it and is logged only with content logging."""

    code = "mcp-server"


@runtime_checkable
class SendsSecrets(Protocol):
    """An upstream authentication (`McpSessions(upstream_auth=...)`) whose latest credentials
    sent (a token exchanged for the caller) are secrets of the session, masked like its
    Headers in everything the server writes back."""

    secrets_sent: tuple[str, ...]


@dataclass(slots=True)
class _Session:
    server: McpServerConfig
    own_mask: SecretMask = NO_SECRETS
    """The server's Env and Headers secrets."""
    auth: SendsSecrets | None = None
    """The upstream authentication whose credentials sent are secrets too."""
    client: Client | None = None
    owner: asyncio.Task[None] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    listing: McpServerListing | None = None
    listed_at: float = 0.0
    changed: bool = False
    relisting: asyncio.Task[None] | None = None
    """The listing being asked for in the background, one at a time."""
    first_wait_until: float | None = None
    """Until when requests wait for the first listing (set when it is first asked for)."""
    opening: asyncio.Lock = field(default_factory=asyncio.Lock)
    cap: MessageCap = field(init=False)
    """Its messages held to its `max_message_bytes` as they arrive, and what was cut off."""

    def __post_init__(self) -> None:
        self.cap = MessageCap(self.server.max_message_bytes)

    with_sent: tuple[SecretMask, tuple[str, ...], SecretMask] = (NO_SECRETS, (), NO_SECRETS)
    """The mask of `own_mask` and the credentials last sent, with what it was made of: made
    once per new token, not per call (a JWT's pattern takes ~70 ms to build)."""

    @property
    def mask(self) -> SecretMask:
        """The server's secrets and the credentials last sent to it, masked in every spelling
        wherever its text goes."""
        sent = self.auth.secrets_sent if self.auth is not None else ()
        if not sent:
            return self.own_mask
        own, made_for, mask = self.with_sent
        if own is not self.own_mask or made_for != sent:
            mask = SecretMask.of((*self.own_mask.secrets, *sent))
            self.with_sent = (self.own_mask, sent, mask)
        return mask


class McpSessions:
    """The MCP client sessions of one app (or one command), by server id and connection.

    A call names the server entry it was offered from: an entry with another connection under
    a known id (a group's plugin changing everyone's entry: its command, URL, headers or auth)
    is called through a session of its own, opened on first use, never through the id's. The
    entries some people are decided with (`add_entries`) are listed like the id's, each on its
    own (`entry_listings`), so their people are offered what their own server lists.

    `listings()` answers from the listings in hand, so a request makes no network call: a stale
    one (TTL, list_changed) is asked for again in the background, and only a server's first
    listing is waited for, at most `first_listing_wait_seconds` in all. With `state_dir`, every
    successful listing is also written there for offline `policy explain`. `offline` asks no
    server for its tools, ever (not even an entry `add_entries` names, nor after
    list_changed): what `remember` was given is all these sessions list; calls still go to
    their servers.
    """

    def __init__(
        self,
        servers: Iterable[McpServerConfig],
        *,
        state_dir: Path | str | None = None,
        listing_ttl_seconds: float = DEFAULT_LISTING_TTL_SECONDS,
        first_listing_wait_seconds: float = DEFAULT_FIRST_LISTING_WAIT_SECONDS,
        upstream_auth: UpstreamAuth | None = None,
        offline: bool = False,
    ) -> None:
        self._sessions = {s.id: _Session(s) for s in servers}
        self._offline = offline
        self._by_connection: dict[tuple[object, ...], _Session] = {
            s.server.connection: s for s in self._sessions.values()
        }
        self._entries: dict[tuple[object, ...], _Session] = {}
        """The listed entries of known ids with a connection of their own, by connection."""
        self.upstream_auth = upstream_auth
        """How a streamable HTTP server's requests authenticate beyond its Headers (None: they
        do not): the sign-in's token exchange (runtime.signin.exchange) sets it."""
        self._state_dir = Path(state_dir) if state_dir is not None else None
        self._ttl = listing_ttl_seconds
        self._first_wait = first_listing_wait_seconds
        self._starts = asyncio.Semaphore(MAX_CONCURRENT_STARTS)
        """Servers started at once: six `npx` servers starting together on two cores take
        longer, each, than started a few at a time."""
        self.version = 0
        """Grows whenever a listing differs from the one before (the runtime rebuilds then)."""

    @property
    def servers(self) -> tuple[McpServerConfig, ...]:
        return tuple(s.server for s in self._sessions.values())

    async def __aenter__(self) -> McpSessions:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every session (stdio servers are stopped)."""
        for session in self._by_connection.values():
            if session.relisting is not None:
                session.relisting.cancel()
        await asyncio.gather(*(self._close(s) for s in self._by_connection.values()))

    # --- listing ------------------------------------------------------------------------------

    async def listings(self, *, refresh: bool = False) -> dict[str, McpServerListing]:
        """Every server's listing in hand; a failing server's listing carries its error.

        Stale ones (TTL, list_changed) are asked for again in the background and answered from
        the one in hand meanwhile; a server not listed yet is waited for until its first
        listing's wait ran out. `refresh` (a command listing on purpose) waits for every server
        to answer anew, each within its own timeout. Offline sessions answer from what they
        were given and ask nobody."""
        if self._offline:
            return {i: s.listing for i, s in self._sessions.items() if s.listing is not None}
        now = time.monotonic()
        sessions = (*self._sessions.values(), *self._entries.values())
        due = [
            s
            for s in sessions
            if refresh or s.listing is None or s.changed or now - s.listed_at > self._ttl
        ]
        asked = [(s, self._relist_in_background(s, now)) for s in due]
        if refresh and asked:
            await asyncio.wait([task for _, task in asked])
        elif asked:
            first = [(s, task) for s, task in asked if s.listing is None]
            until = max((s.first_wait_until or now for s, _ in first), default=now)
            if until > now:
                await asyncio.wait([task for _, task in first], timeout=until - now)
        return {i: s.listing for i, s in self._sessions.items() if s.listing is not None}

    def add_entries(self, entries: Iterable[McpServerConfig]) -> None:
        """List these entries too, each through its own session: entries of a known id whose
        connection differs from the id's (a group's own entry). Another id is not served here
        and is left out; so is an entry whose connection is listed already."""
        for server in entries:
            session = self._session_of(server)
            if session is not None and session is not self._sessions[server.id]:
                self._entries.setdefault(server.connection, session)

    def entry_listings(self) -> dict[tuple[object, ...], McpServerListing]:
        """The listing in hand of each entry `add_entries` named, by its connection."""
        return {k: s.listing for k, s in self._entries.items() if s.listing is not None}

    def remember(
        self,
        listings: Mapping[str, McpServerListing],
        entries: Iterable[tuple[McpServerConfig, McpServerListing]] = (),
    ) -> None:
        """Start from listings the app already has (a `policy` command lists before it starts
        the runtime): each counts as listed now and ages by the same TTL, so the first request
        does not list the server again. A server listed here already keeps its own listing.
        `entries` are entries of known ids with a connection of their own and their listings
        (a group's own entry, as `add_entries` takes it)."""
        now = time.monotonic()
        for server_id, listing in listings.items():
            self._remembered(self._sessions.get(server_id), listing, now)
        for server, listing in entries:
            self.add_entries([server])
            self._remembered(self._entries.get(server.connection), listing, now)

    def _remembered(self, session: _Session | None, listing: McpServerListing, now: float) -> None:
        if session is not None and session.listing is None:
            session.listing = listing
            session.listed_at = now
            self.version += 1

    def _relist_in_background(self, session: _Session, now: float) -> asyncio.Task[None]:
        if session.relisting is None or session.relisting.done():
            session.relisting = asyncio.create_task(self._relist(session))
            if session.first_wait_until is None:
                session.first_wait_until = now + self._first_wait
        return session.relisting

    async def _relist(self, session: _Session) -> None:
        server = session.server
        session.changed = False
        cuts = session.cap.cuts
        try:
            if session.client is None:
                async with self._starts:
                    client = await self._client(session)
            else:
                client = await self._client(session)
            tools = await asyncio.wait_for(_all_tools(client), server.timeout_seconds)
            listing = McpServerListing(
                server.id,
                server.name,
                tools,
                listed_at=datetime.now(UTC).isoformat(timespec="seconds"),
                known_definitions=session.listing.known_definitions if session.listing else {},
            )
            pinned = server.pins.values()
            if self._state_dir is not None and self._sessions[server.id] is session:
                listing = write_cached_listing(self._state_dir, listing, server.endpoint, pinned)
            else:
                listing = replace(listing, known_definitions=known_after({}, listing, pinned))
        except Exception as error:  # a failing server leaves its tools out, never the chat
            message = self._describe(session, error, "could not be listed", cuts)
            _log.warning("%s", message)
            await self._close(session)
            listing = McpServerListing(server.id, server.name, error=message)
        previous = session.listing
        session.listing = listing
        session.listed_at = time.monotonic()
        if previous is None or previous.tools != listing.tools or previous.error != listing.error:
            self.version += 1

    # --- calling ------------------------------------------------------------------------------

    async def call_tool(
        self,
        server: str | McpServerConfig,
        tool_name: str,
        arguments: Mapping[str, Any],
        offered: McpToolListing | None = None,
    ) -> CallToolResult:
        """One `tools/call` to `server` (its entry, or its id: the entry these sessions were
        made with); a timeout or a dead server raises `McpServerError` and restarts the session
        on next use. Cancelling the caller cancels the call.

        `offered` is the definition the model was offered: an entry with a connection of its
        own is called only while its own listing has that tool the same, else the call is
        refused."""
        session = self._session_of(server)
        if session is None:
            server_id = server if isinstance(server, str) else server.id
            raise McpServerError(f"no MCP server with id {server_id} is configured")
        server = session.server
        from mcp.shared.exceptions import MCPError

        cuts = session.cap.cuts
        try:
            client = await self._client(session)
            if offered is not None and session is not self._sessions.get(server.id):
                await self._lists_as_offered(session, client, offered)
            async with asyncio.timeout(server.timeout_seconds):  # no task of its own per call
                return await client.call_tool(
                    tool_name, dict(arguments), progress_callback=_masked_progress(session)
                )
        except TimeoutError:
            await self._close(session)
            raise McpServerError(
                f"MCP server {server.name} did not answer {tool_name} within "
                f"{server.timeout_seconds:g} s; it is restarted on next use"
            ) from None
        except McpServerError:
            raise
        except MCPError as error:  # the server's own answer: its words are content
            await self._close(session)
            if session.cap.cuts != cuts:
                raise McpServerError(self._cut_off(session, f"failed on {tool_name}")) from None
            raise McpServerError(
                f"MCP server {server.name} answered {tool_name} with error {error.code}",
                " ".join(session.mask.text(error.message).split())[:500] or "(no message)",
            ) from None
        except Exception as error:
            await self._close(session)
            what = f"failed on {tool_name}"
            raise McpServerError(self._describe(session, error, what, cuts)) from None

    async def _lists_as_offered(
        self, session: _Session, client: Client, offered: McpToolListing
    ) -> None:
        """An entry's own session serves a tool only as the model was offered it: its own
        listing must have the same definition (an entry `add_entries` named is relisted in the
        background; another is asked again here after the TTL or list_changed)."""
        server = session.server
        now = time.monotonic()
        stale = session.changed or now - session.listed_at > self._ttl
        if session.listing is None or (stale and server.connection not in self._entries):
            session.changed = False
            tools = await asyncio.wait_for(_all_tools(client), server.timeout_seconds)
            session.listing = McpServerListing(server.id, server.name, tools)
            session.listed_at = now
        listed = next((t for t in session.listing.tools if t.name == offered.name), None)
        if listed is None or listed.fingerprint != offered.fingerprint:
            how = "does not list it" if listed is None else "lists another definition of it"
            raise McpServerError(
                f"MCP server {server.name} ({server.endpoint}), as the caller's configuration "
                f"names it, was asked for {offered.name} as the model was offered it, and {how} "
                "now; the call is refused"
            )

    def mask_of(self, server: str | McpServerConfig) -> SecretMask:
        """The mask of a server's secrets (Env and Headers values), for its results and errors."""
        session = self._session_of(server)
        return session.mask if session is not None else NO_SECRETS

    def _session_of(self, server: str | McpServerConfig) -> _Session | None:
        """The session of an id, or of an entry's connection (made on first use for an entry
        of a known id whose connection differs); None for an id these sessions do not have."""
        if isinstance(server, str):
            return self._sessions.get(server)
        if server.id not in self._sessions:
            return None
        key = server.connection
        session = self._by_connection.get(key)
        if session is None:
            session = self._by_connection[key] = _Session(server)
        return session

    # --- sessions -----------------------------------------------------------------------------

    async def _client(self, session: _Session) -> Client:
        async with session.opening:
            if (
                session.client is not None
                and session.owner is not None
                and not session.owner.done()
            ):
                return session.client
            await self._close(session)
            session.stop = asyncio.Event()
            ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
            ready.add_done_callback(_retrieved)
            session.owner = asyncio.create_task(self._own(session, ready))
            try:
                session.client = await asyncio.wait_for(
                    asyncio.shield(ready), _start_seconds(session.server)
                )
            except TimeoutError:
                await self._close(session)
                raise McpServerError(
                    f"MCP server {session.server.name} did not start within "
                    f"{_start_seconds(session.server):g} s"
                ) from None
            return session.client

    async def _own(self, session: _Session, ready: asyncio.Future[Client]) -> None:
        """Enter and leave the SDK client in one task, as its task groups require."""
        stderr: _StderrLines | None = None
        try:
            if session.server.transport is McpTransport.STDIO:
                stderr = _StderrLines(session.server.name, lambda: session.mask)
            auth = self.upstream_auth(session.server) if self.upstream_auth else None
            client, secrets = _new_client(
                session.server,
                self._on_message(session),
                session.cap,
                stderr.writer if stderr else None,
                auth,
            )
            session.own_mask = SecretMask.of(secrets)
            session.auth = auth if isinstance(auth, SendsSecrets) else None
            async with client:
                if not ready.done():
                    ready.set_result(client)
                listen = asyncio.create_task(
                    _listen_for_changes(client, lambda: self._changed(session))
                )
                try:
                    await session.stop.wait()
                finally:
                    listen.cancel()
                    with contextlib.suppress(BaseException):
                        await listen
        except BaseException as error:
            if not ready.done():
                ready.set_exception(
                    error
                    if isinstance(error, Exception)
                    else McpServerError(f"MCP server {session.server.name} stopped")
                )
            if not isinstance(error, Exception):
                raise
        finally:
            session.client = None
            if stderr is not None:
                await asyncio.to_thread(stderr.close)

    def _on_message(self, session: _Session) -> Any:
        async def handle(message: Any) -> None:
            if type(message).__name__ == "ToolListChangedNotification":
                self._changed(session)

        return handle

    def _changed(self, session: _Session) -> None:
        """The server said its tools changed: it is listed again at once, in the background, so
        the next look (a request, the gateway's watch) finds the new listing, not the old one."""
        session.changed = True
        if not self._offline:
            self._relist_in_background(session, time.monotonic())

    async def _close(self, session: _Session) -> None:
        owner = session.owner
        session.owner = None
        session.client = None
        if owner is None:
            return
        session.stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(owner), 5)
        except BaseException:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner

    @staticmethod
    def _cut_off(session: _Session, what: str) -> str:
        server = session.server
        return (
            f"MCP server {server.name} ({server.endpoint}) {what}: "
            f"{session.cap.reason}; it was cut off while arriving, and the session is started "
            "anew on next use"
        )

    def _describe(self, session: _Session, error: BaseException, what: str, cuts: int) -> str:
        if session.cap.cuts != cuts:
            return self._cut_off(session, what)
        cause = _first_cause(error)
        detail = str(cause).strip() or type(cause).__name__
        if type(cause).__name__ == "ConnectError":
            detail = f"could not connect ({detail})"
        detail = " ".join(session.mask.text(detail).split())[:300]
        return f"MCP server {session.server.name} ({session.server.endpoint}) {what}: {detail}"


def _retrieved(future: asyncio.Future[Any]) -> None:
    """A start that failed after its caller gave up is not reported again by asyncio."""
    if not future.cancelled():
        future.exception()


def _first_cause(error: BaseException) -> BaseException:
    """The error that happened, not the SDK's task group around it."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


async def _listen_for_changes(client: Client, changed: Callable[[], None]) -> None:
    """On 2026-era connections, changes arrive on a `subscriptions/listen` stream; earlier
    servers send notifications/tools/list_changed, which the message handler marks."""
    try:
        async with client.listen(tools_list_changed=True) as subscription:
            async for _event in subscription:
                changed()
    except Exception:  # the server offers no change stream: the TTL still applies
        return


async def _all_tools(client: Client) -> tuple[McpToolListing, ...]:
    tools: list[McpToolListing] = []
    cursor: str | None = None
    for _ in range(MAX_LISTING_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        for tool in page.tools:
            tools.append(
                McpToolListing.from_data(
                    tool.model_dump(by_alias=True, exclude_none=True, mode="json")
                )
            )
        cursor = page.next_cursor
        if not cursor:
            return tuple(tools)
    raise McpServerError(f"the tool listing has more than {MAX_LISTING_PAGES} pages")


def _plaintext(value: str | SecretValue) -> str:
    if isinstance(value, SecretValue):
        from policy._runtime_seam import SECRET_SOURCES, configured_secret, decrypt

        secret = configured_secret()
        if secret is None:
            raise McpServerError(
                "an ENC:v1: value cannot be decrypted: no encryption secret is configured "
                f"({SECRET_SOURCES})"
            )
        return decrypt(value.encrypted, secret)
    return value


def _new_client(
    server: McpServerConfig,
    on_message: Any,
    cap: MessageCap,
    stderr: TextIO | None = None,
    auth: httpx2.Auth | None = None,
) -> tuple[Client, tuple[str, ...]]:
    from mcp import Client, StdioServerParameters

    from runtime.mcp_transport import capped_http_transport, capped_stdio_client

    secrets = tuple(
        _plaintext(v)
        for v in (*server.env.values(), *server.headers.values())
        if isinstance(v, SecretValue)
    )
    if server.transport is McpTransport.STDIO:
        params = StdioServerParameters(
            command=server.command,
            args=list(server.args),
            env={k: _plaintext(v) for k, v in server.env.items()},
        )
        transport = capped_stdio_client(params, stderr or sys.stderr, cap)
        return Client(transport, message_handler=on_message, cache=None), secrets
    headers = {k: _plaintext(v) for k, v in server.headers.items()}
    transport = capped_http_transport(server.url, headers, cap, auth)
    return Client(transport, message_handler=on_message, cache=None), secrets


class _StderrLines:
    """A stdio server's stderr, read line by line on a thread and logged as that server's lines
    (`runtime.mcp.server`, WARNING): every control character escaped (`terminal_safe`, so an ESC
    sequence or a carriage return in it cannot rewrite the administrator's terminal), the
    server's secrets masked, each line at most `MAX_STDERR_LINE_BYTES`.

    The SDK hands `writer` to the process as its stderr; `close()` drops the parent's end and
    waits (boundedly) for the lines the stopped server wrote last to be logged."""

    def __init__(self, server_name: str, mask: Callable[[], SecretMask]) -> None:
        read_end, write_end = os.pipe()
        self.writer: TextIO = os.fdopen(write_end, "w", encoding="utf-8")
        self._name = server_name
        self._mask = mask
        self._reader = threading.Thread(
            target=self._read,
            args=(os.fdopen(read_end, "rb"),),
            name=f"mcp-stderr-{server_name}",
            daemon=True,
        )
        self._reader.start()

    def _read(self, lines: Any) -> None:
        with lines:
            while piece := lines.readline(MAX_STDERR_LINE_BYTES):
                text = piece.decode("utf-8", "replace").rstrip("\r\n")
                if text.strip():
                    shown = terminal_safe(self._mask().text(text))
                    _server_log.warning("MCP server %s: %s", terminal_safe(self._name), shown)

    def close(self) -> None:
        self.writer.close()
        self._reader.join(_STDERR_DRAIN_SECONDS)


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Content:
    texts: tuple[str, ...]
    sources: tuple[Source, ...]


def _content_of(result: CallToolResult) -> _Content:
    """The parts a model may read: text as is; links and embedded text resources with their
    address; images, audio and binary resources described, never passed raw."""
    texts: list[str] = []
    sources: list[Source] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(str(getattr(block, "text", "")))
        elif kind == "resource_link":
            uri = str(getattr(block, "uri", ""))
            title = str(getattr(block, "title", None) or getattr(block, "name", "") or uri)
            texts.append(f"[resource link] {title}: {uri}")
            if uri.startswith(("http://", "https://")):
                sources.append(Source(title=title, url=uri))
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            uri = str(getattr(resource, "uri", ""))
            text = getattr(resource, "text", None)
            if isinstance(text, str):
                texts.append(f"[resource {uri}]\n{text}")
            else:
                mime = getattr(resource, "mime_type", None) or "binary"
                texts.append(f"[resource {uri}: {mime} content, not shown]")
        elif kind in ("image", "audio"):
            mime = getattr(block, "mime_type", None) or kind
            size = len(str(getattr(block, "data", ""))) * 3 // 4
            texts.append(f"[{kind}: {mime}, about {size} bytes, not shown to the model]")
        else:
            texts.append(f"[{kind or 'unknown'} content, not shown]")
    return _Content(tuple(texts), tuple(sources))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _structure_problem(value: Any, schema: Mapping[str, Any] | None) -> str | None:
    """Why a filtered structured result cannot be passed on: not an object, too large, or no
    longer valid against the tool's output schema (a removal changed a constrained string)."""
    if not isinstance(value, dict):
        return "it is not a JSON object"
    if len(_compact(value)) > MAX_RESULT_CHARACTERS:
        return f"it is longer than {MAX_RESULT_CHARACTERS} characters"
    if schema is None:
        return None
    from importlib import import_module

    best_match = import_module("jsonschema.exceptions").best_match
    error = best_match(_output_validator(_compact(schema)).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)[:200] or "the top level"
    return (
        f"it does not match the tool's output schema ({error.validator} at {where}; the "
        "validator's own message is not shown, as it quotes the server's schema and values)"
    )


@functools.lru_cache(maxsize=256)
def _output_validator(schema: str) -> Any:
    """A compiled validator per output schema (by its JSON text), not one per call."""
    from importlib import import_module

    document = json.loads(schema)
    return import_module("jsonschema.validators").validator_for(document)(document)


_BEFORE_GUARD_CHARACTERS = MAX_RESULT_CHARACTERS + 1_000
"""What of a result is masked and filtered: the cap and a margin (a secret or an injection cut at
the edge is masked or filtered whole), never megabytes the model would not read anyway."""


def _within(texts: Sequence[str], limit: int) -> list[str]:
    """The texts in order, cut where their total length reaches `limit`."""
    kept: list[str] = []
    left = limit
    for text in texts:
        if left <= 0:
            break
        kept.append(text[:left])
        left -= len(text)
    return kept


def _error_text(text: str) -> str:
    """A server's error text as one bounded line (already through the guard)."""
    return " ".join(text.split())[:500] or "(no message)"


async def _sessions_for(server: McpServerConfig, context: ToolExecutionContext) -> McpSessions:
    """The sessions a call goes through: the app's, or for a server acting for the caller
    (`Auth` TOKEN_EXCHANGE) the caller's own (runtime.signin.exchange); never the shared ones
    then, which carry no person's identity."""
    if server.auth.type is McpAuthType.TOKEN_EXCHANGE:
        from runtime.signin.exchange import ExchangedSessions

        exchanged = context.services.of(ExchangedSessions)
        if exchanged is None:
            raise McpServerError(
                f"MCP server {server.name} acts for the signed-in person (Auth TOKEN_EXCHANGE); "
                "it is called only through a gateway with the organization's sign-in"
            )
        return await exchanged.sessions_for(server)
    sessions = context.services.of(McpSessions)
    if sessions is None:
        raise McpServerError(
            f"MCP server {server.name} has no open session here (no McpSessions service)"
        )
    return sessions


class McpExecutableTool(McpTool):
    """An MCP server's tool that runs: `tools/call` through the app's `McpSessions`."""

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        from runtime.result_guard import json_strings, json_with_strings
        from runtime.tools._common import guard_of
        from runtime.web.guard import GuardText, tool_content

        sessions = await _sessions_for(self.server, context)
        source = tool_content(self.definition.id)
        guard = guard_of(context)
        try:
            with _guarded_progress(guard, source):
                result = await sessions.call_tool(
                    self.server, self.listing.name, arguments, offered=self.listing
                )
        except McpServerError as error:
            if not error.content:
                raise
            [guarded] = await guard.sanitize_many([GuardText(error.content, source)])
            raise McpServerError(error.summary, _error_text(guarded)) from None
        mask = sessions.mask_of(self.server)
        content = _content_of(result)
        titles = [mask.text(s.title) for s in content.sources]
        shown = [mask.text(t) for t in _within(content.texts, _BEFORE_GUARD_CHARACTERS)]
        structure = mask.value(result.structured_content)
        problem = None if structure is None else _structure_problem(structure, None)
        strings = [] if structure is None or problem else list(json_strings(structure))
        cleaned = await guard.sanitize_many(
            [GuardText(t, source) for t in [*shown, *titles, *strings]]
        )
        texts = cleaned[: len(shown)]
        clean_titles = cleaned[len(shown) : len(shown) + len(titles)]
        sources = tuple(
            Source(title, s.url, s.origin)
            for title, s in zip(clean_titles, content.sources, strict=True)
        )
        structured = None
        if structure is not None and problem is None:
            filtered = json_with_strings(structure, iter(cleaned[len(shown) + len(titles) :]))
            problem = _structure_problem(filtered, self.listing.output_schema)
            if problem is None:
                structured = filtered
                texts.append(f"Structured result: {_compact(filtered)}")
        if problem is not None:
            texts.append(f"[the structured result was dropped: {problem}]")
        text = "\n\n".join(t for t in texts if t.strip())
        if len(text) > MAX_RESULT_CHARACTERS:
            text = text[:MAX_RESULT_CHARACTERS] + "\n[the result was cut here]"
        if result.is_error:
            raise McpServerError(
                f"MCP server {self.server.name} reports an error from {self.listing.name}",
                _error_text(text),
            )
        return ToolExecutionResult(
            text_content=text,
            sources=sources,
            structured_content=structured,
            injection_filtered=True,
        )
