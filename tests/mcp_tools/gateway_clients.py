"""Real `mcp`-SDK clients of `policy mcp serve`, over stdio and streamable HTTP, at the newest
protocol version the SDK serves and at a 2025 one: the client, and the tools/list_changed
notifications it was sent (on its connection before 2026-07-28, on a `subscriptions/listen`
stream from then on)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_tools.test_mcp_gateway import ROOT, running_gateway

NEWEST = "2026-07-28"
OF_2025 = "2025-06-18"
PROTOCOLS = [
    pytest.param((transport, version), id=f"{transport}-{version}")
    for transport in ("stdio", "http")
    for version in (NEWEST, OF_2025)
]


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> tuple[str, str]:
    """A (transport, protocol version) pair: stdio and HTTP, the newest and a 2025 version."""
    transport, version = request.param
    return transport, version


class Changes:
    """The tools/list_changed notifications a client was sent, counted as they arrive."""

    def __init__(self) -> None:
        self.count = 0
        self._arrived = asyncio.Event()

    def seen(self) -> None:
        self.count += 1
        self._arrived.set()

    async def next(self, timeout: float = 60) -> None:
        """Wait for the next notification (a test fails past `timeout` seconds)."""
        try:
            await asyncio.wait_for(self._arrived.wait(), timeout)
        except TimeoutError:
            raise AssertionError("no tools/list_changed reached the client") from None
        self._arrived.clear()


def _offer(version: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The client's `mode`: the version itself from 2026-07-28 on; before, the handshake, with
    the SDK client offering `version` instead of its newest handshake version."""
    if version == NEWEST:
        return version
    import mcp.client.session

    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
    return "legacy"


@contextlib.asynccontextmanager
async def gateway_client_of(
    target: Any, version: str, monkeypatch: pytest.MonkeyPatch, **client_options: Any
) -> AsyncIterator[tuple[Any, Changes]]:
    """An SDK client of the gateway at `target` (a URL, or stdio parameters) speaking `version`."""
    from mcp import Client

    changes = Changes()

    async def on_message(message: Any) -> None:
        if type(message).__name__ == "ToolListChangedNotification":
            changes.seen()

    mode = _offer(version, monkeypatch)
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            Client(target, mode=mode, message_handler=on_message, **client_options)
        )
        assert client.protocol_version == version
        if version == NEWEST:
            subscription = await stack.enter_async_context(client.listen(tools_list_changed=True))

            async def listen() -> None:
                async for _event in subscription:
                    changes.seen()

            listening = asyncio.create_task(listen())
            stack.callback(listening.cancel)
        yield client, changes


@contextlib.asynccontextmanager
async def gateway_client(
    transport: str,
    version: str,
    monkeypatch: pytest.MonkeyPatch,
    *serve_args: object,
    **client_options: Any,
) -> AsyncIterator[tuple[Any, Changes]]:
    """An SDK client of `policy mcp serve ARGS` (a subprocess) speaking `version`."""
    from mcp import StdioServerParameters

    args = [str(a) for a in serve_args]
    if transport == "stdio":
        stdio = StdioServerParameters(
            command=sys.executable,
            # the SDK hands a stdio server only a few variables of ours (not the conftest's
            # TOOLPOLICY_MCP_LISTING_WAIT): the patient wait goes first, a test's own after it
            args=["-m", "policy.cli", "mcp", "serve", "--listing-wait", "60", *args],
            cwd=ROOT,
        )
        async with gateway_client_of(stdio, version, monkeypatch, **client_options) as opened:
            yield opened
        return
    with running_gateway(*args) as (url, _):
        async with gateway_client_of(url, version, monkeypatch, **client_options) as opened:
            yield opened


def tool_names(listed: Any) -> set[str]:
    return {tool.name for tool in listed.tools}


def serving_structured_tools(folder: Path, state: Path) -> tuple[object, ...]:
    """`policy mcp serve` arguments for the tickets server with its structured and slow tools."""
    from tests.mcp_tools.test_mcp import write_org

    state.write_text(json.dumps({"structured": True}), encoding="utf-8")
    return ("--org", write_org(folder, state), "--provider", "OpenAI")
