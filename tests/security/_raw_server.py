"""A loopback HTTP/1.1 server that answers with raw bytes, for answers no framework would send.

Malformed status lines, reason phrases of the server's choosing, lying Content-Length, trickled
bodies: each route is the exact bytes (or a coroutine writing them) for one request path.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]
Route = bytes | Writer


def answer(
    body: bytes = b"",
    *,
    status: str = "200 OK",
    content_type: str = "text/html; charset=utf-8",
    headers: Mapping[str, str] | None = None,
) -> bytes:
    """A complete response with a correct Content-Length unless `headers` sets one."""
    lines = [f"HTTP/1.1 {status}", f"Content-Type: {content_type}"]
    extra = dict(headers or {})
    if "Content-Length" not in extra:
        extra["Content-Length"] = str(len(body))
    lines += [f"{name}: {value}" for name, value in extra.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body


def redirect(location: str, status: str = "302 Found") -> bytes:
    return answer(status=status, headers={"Location": location})


@dataclass
class RawServer:
    port: int
    routes: dict[str, Route]
    paths: list[str] = field(default_factory=list)
    heads: list[bytes] = field(default_factory=list)
    """Each request's request line and headers, as received."""

    def url(self, path: str, host: str = "public.test") -> str:
        return f"http://{host}:{self.port}{path}"


@asynccontextmanager
async def raw_server(routes: Mapping[str, Route]) -> AsyncIterator[RawServer]:
    """Serves `routes` on 127.0.0.1, port 0, inside the running loop; closed on exit."""
    state = RawServer(0, dict(routes))
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            handlers.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1].decode("latin-1")
            state.paths.append(path)
            state.heads.append(head)
            route = state.routes.get(path, answer(b"not found", status="404 Not Found"))
            if isinstance(route, bytes):
                writer.write(route)
                await writer.drain()
            else:
                await route(writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()
