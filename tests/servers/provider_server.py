"""A loopback LLM provider that speaks Chat Completions, Responses and Anthropic Messages over SSE.

Tests queue what the next requests get (event lists, status codes, headers such as Retry-After,
a stall, a connection that breaks mid-stream, a non-SSE body); the server answers the requests in
order and records every request (path, headers, raw body) for assertions. Runs on 127.0.0.1,
port 0, in a thread; `running_provider_server()` stops it on exit.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from runtime.dev_provider.events import sse_text
from tests.servers.loopback import running_app
from tests.servers.sdk_request_types import sdk_problem


@dataclass(frozen=True)
class Reply:
    """One scripted answer.

    `events` are SSE events: a dict/list (sent as JSON data), a str (sent as the data line as
    is), or an (event name, payload) pair. `raw` replaces the whole SSE text when given.
    """

    events: Sequence[Any] = ()
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str | None = None
    content_type: str = "text/event-stream"
    raw: str | None = None
    break_after_events: bool = False
    stall_seconds: float = 0.0
    chunk_bytes: int | None = None
    """Send the SSE text in pieces of this many bytes (cutting UTF-8 sequences and JSON)."""


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class _StreamBroken(Exception):
    """Raised inside the response stream so the server drops the connection mid-body."""


@dataclass
class ProviderServer:
    port: int
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    every_request: list[RecordedRequest] = field(default_factory=list)
    """Every request since the server started (reset() keeps them), for the SDK type check."""

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def queue(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def reset(self) -> None:
        """Forget scripted replies and recorded requests (a fresh start for the next test)."""
        with self.lock:
            self.replies.clear()
            self.requests.clear()

    def next_reply(self) -> Reply:
        with self.lock:
            if not self.replies:
                return Reply(status=500, body='{"error":{"message":"nothing scripted"}}')
            return self.replies.popleft()

    @property
    def bodies(self) -> list[Any]:
        return [r.json for r in self.requests]


def _app(server_ref: list[ProviderServer]) -> Starlette:
    async def endpoint(request: Request) -> Response:
        server = server_ref[0]
        body = await request.body()
        recorded = RecordedRequest(request.url.path, dict(request.headers), body)
        with server.lock:
            server.requests.append(recorded)
            server.every_request.append(recorded)
        reply = server.next_reply()
        if reply.stall_seconds:
            await asyncio.sleep(reply.stall_seconds)
        if reply.body is not None:
            return Response(
                reply.body,
                status_code=reply.status,
                headers=reply.headers,
                media_type="application/json"
                if reply.content_type.endswith("event-stream")
                else reply.content_type,
            )
        text = reply.raw if reply.raw is not None else sse_text(reply.events)

        async def chunks() -> AsyncIterator[bytes]:
            # Several writes, so the client reads a real stream rather than one buffer.
            if reply.chunk_bytes is not None:
                encoded = text.encode()
                for start in range(0, len(encoded), reply.chunk_bytes):
                    yield encoded[start : start + reply.chunk_bytes]
            else:
                for piece in text.splitlines(keepends=True):
                    yield piece.encode()
            if reply.break_after_events:
                raise _StreamBroken()

        return StreamingResponse(
            chunks(), status_code=reply.status, headers=reply.headers, media_type=reply.content_type
        )

    return Starlette(routes=[Route("/v1/{path:path}", endpoint, methods=["POST"])])


@contextmanager
def running_provider_server() -> Iterator[ProviderServer]:
    """The server; when the block ends without an error, every request the adapters sent it
    must have passed the official SDKs' request types."""
    holder: list[ProviderServer] = []
    with running_app(_app(holder)) as app:
        holder.append(ProviderServer(port=app.port))
        yield holder[0]
    problems = [
        f"{r.path}: {problem}\n  body: {r.body[:600]!r}"
        for r in holder[0].every_request
        if (problem := sdk_problem(r.path, r.body)) is not None
    ]
    if problems:
        raise AssertionError(
            f"{len(problems)} request(s) the official SDK types refuse:\n" + "\n".join(problems)
        )
