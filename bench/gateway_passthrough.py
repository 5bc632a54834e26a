"""The floor of any MCP gateway built on the `mcp` SDK: a server that passes every call through to
one upstream server, with no policy, no executor, no guard and no log.

    python bench/gateway_passthrough.py http|stdio  URL | -- COMMAND ARGS...

Over `http` it serves streamable HTTP on a free loopback port and prints `serving MCP on <url>`
on stderr, as `policy mcp serve --transport http --port 0` does; over `stdio` it serves its
stdin/stdout. The upstream is a URL (streamable HTTP) or, after `--`, the command of a stdio
server. It is the SDK on both sides of one hop — its server machinery towards the client, its
client towards the server — and nothing else, so `bench/mcp_gateway.py` can state the gateway
against it: what of the gateway's cost is ours and what any SDK-built gateway pays.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel.server import Server


@asynccontextmanager
async def _upstream(argv: list[str]) -> AsyncIterator[Client]:
    if argv[0] == "--":
        params = StdioServerParameters(command=argv[1], args=argv[2:])
        transport: Any = stdio_client(params, sys.stderr)
    else:
        transport = streamable_http_client(argv[0])
    async with Client(transport, cache=None) as client:
        await client.list_tools()  # the output schemas the SDK checks results against
        yield client


def _server(client: Client, tools: list[types.Tool]) -> Server[Any]:
    schemas = {t.name: t.input_schema for t in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await client.call_tool(params.name, dict(params.arguments or {}))

    return Server(
        "passthrough",
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _serve(mode: str, upstream: list[str]) -> None:
    async with _upstream(upstream) as client:
        tools = list((await client.list_tools()).tools)
        server = _server(client, tools)
        if mode == "stdio":
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            return
        import uvicorn

        from runtime.serving import listen  # the gateway's own listening socket (TCP_NODELAY)

        listener = listen("127.0.0.1", 0)
        app = server.streamable_http_app(host="127.0.0.1")
        served = uvicorn.Server(uvicorn.Config(app, log_level="warning", log_config=None))
        port = listener.getsockname()[1]
        print(f"serving MCP on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
        await served.serve(sockets=[listener])


if __name__ == "__main__":
    anyio.run(_serve, sys.argv[1], sys.argv[2:])
