"""MCP client transports that hold every message a server sends to the server's size limit
while it arrives (`McpServerConfig.max_message_bytes`, `MaxMessageBytes` in plugin.lua).

The SDK's stdio transport gathers a line whole before it parses it, and its streamable HTTP
transport reads a JSON answer whole: a hostile server could make us hold an answer of any size
(and every other client wait while it is read). Here a message is cut off at the limit as it
arrives, without reading the rest:

- stdio: the line is read under the limit (anyio's bounded `receive_until`); a longer one ends
  the connection — the server's output is closed, so the server stops writing, and every
  request waiting on it fails; the session is started anew on next use.
- streamable HTTP: a JSON answer's body is counted as it arrives, and a server-sent event is
  held to the limit (the SDK's own event bound, and our count between events); only the request
  it answered fails. Compressed bodies are not asked for, and one sent anyway is refused (its
  size says nothing of what it unpacks to).

Each cut is counted on the server's `MessageCap` with the reason, so `runtime.mcp` can tell the
caller why the call failed (naming the server and the limit) instead of the SDK's words.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

import anyio
import httpx2

if TYPE_CHECKING:
    from anyio.abc import Process
    from mcp import StdioServerParameters
    from mcp.client._transport import TransportStreams
    from mcp.shared.message import SessionMessage

_STOP_GRACE_SECONDS = 2.0
"""How long a stdio server may take to end after its stdin closed, and after SIGTERM."""
_EXIT_POLL_SECONDS = 0.01


@dataclass(slots=True)
class MessageCap:
    """One server's limit, and what was cut off under it (read by `runtime.mcp`)."""

    limit: int
    cuts: int = 0
    """How many messages were cut off so far; a call compares it before and after."""
    reason: str = ""
    """Why the last one was, in words naming the limit."""

    def cut(self, reason: str) -> None:
        self.cuts += 1
        self.reason = reason

    def over_limit(self, what: str) -> str:
        return f"{what} exceeded the limit of {self.limit} bytes (MaxMessageBytes)"


class MessageTooLarge(httpx2.SSEError, httpx2.StreamError):
    """A body or event cut off at the limit. Both bases, so the SDK resolves the one request it
    answered with an error whichever way it reads the body (JSON or server-sent events)."""


# --- stdio --------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def capped_stdio_client(
    params: StdioServerParameters, errlog: TextIO, cap: MessageCap
) -> AsyncIterator[TransportStreams]:
    """The SDK's stdio transport, with every line the server writes held to `cap.limit`."""
    import mcp_types
    from anyio.streams.buffered import BufferedByteReceiveStream
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    to_session, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        lines = BufferedByteReceiveStream(stdout)
        async with to_session:
            while True:
                try:
                    line = await lines.receive_until(b"\n", cap.limit)
                except anyio.DelimiterNotFound:
                    cap.cut(cap.over_limit("a message from the server"))
                    await _quietly_close(stdout)  # the server's next write fails: it stops
                    return  # every waiting request fails: the connection closed
                except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
                    return
                except (anyio.BrokenResourceError, OSError):
                    return
                if not line.strip():
                    continue
                try:
                    message: SessionMessage | Exception = SessionMessage(
                        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    )
                except ValueError as error:
                    message = error  # the session reports it, as the SDK's transport does
                try:
                    await to_session.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def write_messages() -> None:
        try:
            async with from_session:
                async for outgoing in from_session:
                    text = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send((text + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await to_session.aclose()

    async with anyio.create_task_group() as group:
        group.start_soon(read_lines)
        group.start_soon(write_messages)
        try:
            yield read_stream, write_stream
        finally:
            with anyio.CancelScope(shield=True):
                await write_stream.aclose()
                await read_stream.aclose()
                await _stop(process)
            group.cancel_scope.cancel()


async def _quietly_close(stream: anyio.abc.AsyncResource) -> None:
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.aclose()


async def _stop(process: Process) -> None:
    """Close its stdin and give it a moment to end; then end its process group."""
    assert process.stdin is not None and process.stdout is not None
    await _quietly_close(process.stdin)
    if not await _ended(process, _STOP_GRACE_SECONDS):
        if sys.platform == "win32":  # pragma: no cover
            process.kill()
        else:
            from mcp.os.posix.utilities import terminate_posix_process_tree

            await terminate_posix_process_tree(process, _STOP_GRACE_SECONDS)
    await _quietly_close(process.stdout)
    if await _ended(process, _STOP_GRACE_SECONDS):
        with anyio.move_on_after(_STOP_GRACE_SECONDS):
            await process.aclose()  # its pipes' transport too, not left to the collector


async def _ended(process: Process, seconds: float) -> bool:
    """Whether it ended within `seconds` (its return code, not `wait()`: a child that kept the
    pipes open would make an ended server look alive)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(_EXIT_POLL_SECONDS)
        return True
    return False


# --- streamable HTTP ------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def capped_http_transport(
    url: str, headers: dict[str, str], cap: MessageCap, auth: httpx2.Auth | None = None
) -> AsyncIterator[TransportStreams]:
    """The SDK's streamable HTTP transport over `_capped_http_client`, with server-sent events
    held to `cap.limit` too. The HTTP client is closed when the transport ends: the SDK leaves
    a client it was given open, and its connections with it."""
    from mcp.client.streamable_http import streamable_http_client

    async with (
        _capped_http_client(headers, cap, auth) as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=cap.limit) as streams,
    ):
        yield streams


def _capped_http_client(
    headers: dict[str, str], cap: MessageCap, auth: httpx2.Auth | None = None
) -> httpx2.AsyncClient:
    """An HTTP client as the SDK makes one (its time-outs), whose answers are held to the cap;
    `auth` sets each request's credentials (a token exchanged for the caller)."""
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    return httpx2.AsyncClient(
        auth=auth,
        headers={**headers, "Accept-Encoding": "identity"},
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        transport=_CappedTransport(httpx2.AsyncHTTPTransport(), cap),
    )


class _CappedTransport(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, cap: MessageCap) -> None:
        self._inner = inner
        self._cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        content_type = response.headers.get("content-type", "").lower()
        events = content_type.startswith("text/event-stream")
        body = _CappedBody(response.stream, self._cap, events=events)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding != "identity":
            body.refused = f"an answer compressed with {encoding!r}, which was not asked for"
        return httpx2.Response(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.raw if k.lower() != b"content-encoding"],
            stream=body,
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


_EVENT_ENDS = (b"\n\n", b"\r\r", b"\r\n\r\n")


class _CappedBody(httpx2.AsyncByteStream):
    """A body counted as it arrives: all of it (JSON), or each server-sent event (the bytes since
    the last blank line)."""

    def __init__(self, inner: httpx2.AsyncByteStream, cap: MessageCap, *, events: bool) -> None:
        self._inner = inner
        self._cap = cap
        self._events = events
        self.refused = ""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.refused:
            raise self._cut(self.refused)
        held = 0
        tail = b""
        async for chunk in self._inner:
            if self._events:
                seen = tail + chunk
                end = max(seen.rfind(e) + len(e) if seen.rfind(e) >= 0 else -1 for e in _EVENT_ENDS)
                held = len(seen) - end if end >= 0 else held + len(chunk)
                tail = seen[-3:]
            else:
                held += len(chunk)
            if held > self._cap.limit:
                what = "an event from the server" if self._events else "an answer from the server"
                raise self._cut(self._cap.over_limit(what))
            yield chunk

    def _cut(self, reason: str) -> MessageTooLarge:
        self._cap.cut(reason)
        return MessageTooLarge(reason)

    async def aclose(self) -> None:
        await self._inner.aclose()
