"""Benchmark: what governing MCP tools costs. Prints figures and compares against a peer in the
same run; asserts nothing.

    .venv/bin/python bench/mcp_overhead.py [--quick]

1. Per-request decision time (the runnable tools of one request, cache warm) with 3 MCP servers x
   50 tools, against the same number of built-in-style tools (`DefinedTool`). Target: ratio <= 1.2.
2. Per-call overhead of our tool path (`McpExecutableTool.execute` through `McpSessions`,
   guard included) over a direct SDK `call_tool` on the same loopback stdio server (two
   sessions to two server processes, calls alternated). Target: median difference <= 1.5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from policy.configuration import PolicyConfiguration, ProviderConfig, UserSettings
from policy.decide.registry import ToolRegistry
from policy.definitions import ToolDefinition, ToolFunction
from policy.mcp import McpServerConfig, McpServerListing, McpToolListing, McpTransport, mcp_tools
from policy.tools import DefinedTool, Tool
from policy.vocabulary import Component, ProviderKind

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "servers" / "mcp_server.py"
PROVIDER = ProviderConfig(id="p", name="local", kind=ProviderKind.SELF_HOSTED, model="qwen2.5")
SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}}


def _servers() -> tuple[tuple[McpServerConfig, ...], dict[str, McpServerListing]]:
    servers, listings = [], {}
    for number in range(3):
        server = McpServerConfig(
            id=f"00000000-0000-4000-8000-00000000000{number}",
            name=f"server{number}",
            transport=McpTransport.STDIO,
            command="unused",
        )
        tools = tuple(
            McpToolListing(
                name=f"tool_{i:02d}",
                description=f"Looks up kind {i}.",
                input_schema=SCHEMA,
                annotations={"readOnlyHint": True},
            )
            for i in range(50)
        )
        servers.append(server)
        listings[server.id] = McpServerListing(server.id, server.name, tools)
    return tuple(servers), listings


def _plain_tools() -> tuple[Tool, ...]:
    return tuple(
        DefinedTool(
            ToolDefinition(
                id=f"plain_{i:03d}",
                implementation_key=f"plain_{i:03d}",
                function=ToolFunction(name=f"plain_{i:03d}", parameters=SCHEMA, strict=False),
            )
        )
        for i in range(150)
    )


async def _request_medians(
    first: tuple[Tool, ...], second: tuple[Tool, ...], rounds: int
) -> tuple[float, float]:
    """Medians of both tool sets, measured alternately so machine load hits both alike."""
    registries = [ToolRegistry(t, PolicyConfiguration(), UserSettings()) for t in (first, second)]
    for registry in registries:
        await registry.runnable_tools(registry.tool_ids, PROVIDER, Component.CHAT)
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for registry, kept in zip(registries, times, strict=True):
            start = time.perf_counter()
            await registry.runnable_tools(registry.tool_ids, PROVIDER, Component.CHAT)
            kept.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


async def _call_overhead(rounds: int) -> tuple[float, float]:
    from mcp import Client, StdioServerParameters

    from policy.vocabulary import ConfidenceLevel
    from runtime.execution import ToolExecutionContext, ToolServices
    from runtime.mcp import McpExecutableTool, McpSessions

    with tempfile.TemporaryDirectory() as folder:
        state = Path(folder) / "state.json"
        state.write_text("{}", encoding="utf-8")
        args = [str(SERVER), "stdio", str(state)]
        server = McpServerConfig(
            id="00000000-0000-4000-8000-0000000000aa",
            name="tickets",
            transport=McpTransport.STDIO,
            command=sys.executable,
            args=tuple(args),
        )
        arguments = {"ticket_id": "1", "text": "x"}
        direct: list[float] = []
        ours: list[float] = []
        async with (
            Client(StdioServerParameters(command=sys.executable, args=args), cache=None) as c,
            McpSessions([server]) as sessions,
        ):
            listings = await sessions.listings()
            tool = next(
                t
                for t in mcp_tools([server], listings, McpExecutableTool)
                if t.listing.name == "add_comment"
            )
            context = ToolExecutionContext(
                definition=tool.definition,
                call_id="b",
                settings={},
                provider_kind=ProviderKind.SELF_HOSTED,
                provider_confidence=ConfidenceLevel.HIGH,
                services=ToolServices(tool_services=[sessions]),
            )
            await c.call_tool("add_comment", arguments)
            await tool.execute(arguments, context)
            for _ in range(rounds):
                start = time.perf_counter()
                await c.call_tool("add_comment", arguments)
                direct.append(time.perf_counter() - start)
                start = time.perf_counter()
                await tool.execute(arguments, context)
                ours.append(time.perf_counter() - start)
    return statistics.median(direct), statistics.median(ours)


async def main(quick: bool) -> None:
    rounds = 50 if quick else 300
    servers, listings = _servers()
    mcp, plain = await _request_medians(mcp_tools(servers, listings), _plain_tools(), rounds)
    print("1. per-request decision time, 150 tools, cache warm (median)")
    print(f"   built-in-style tools: {plain * 1e3:.3f} ms")
    print(f"   3 MCP servers x 50:   {mcp * 1e3:.3f} ms")
    print(f"   ratio MCP / built-in: {mcp / plain:.2f}  (target <= 1.2)")
    direct, ours = await _call_overhead(30 if quick else 200)
    print("2. per-call time on the same loopback stdio server (median)")
    print(f"   direct SDK call_tool:        {direct * 1e3:.3f} ms")
    print(f"   McpExecutableTool.execute:  {ours * 1e3:.3f} ms")
    print(f"   overhead:                    {(ours - direct) * 1e3:.3f} ms  (target <= 1.5 ms)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
