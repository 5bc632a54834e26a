"""`policy mcp list | pin | serve`: MCP servers as an administrator sees them, and the gateway.

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` imports none of it.
`list` and `pin` ask every configured server live (and, with --state-dir, keep the listing there
for `policy explain`, `policy tools` and `policy diff`, which read it offline). `serve` makes
toolpolicy an MCP server that offers exactly what the policy offers for one provider and component,
and checks the policy again on every call.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from policy.cli import configuration_options
from policy.vocabulary import Component

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import ProviderConfig
    from policy.mcp import McpServerListing
    from runtime.session import ChatRuntime


@click.group()
def mcp() -> None:
    """MCP servers: list their tools and pins, print pins, serve the governed tools."""


def _policy(
    org: Sequence[Path],
    local: Sequence[Path],
    user_settings: Path | None,
    state_dir: Path | None,
    tools_files: Sequence[Path] = (),
) -> Policy:
    from runtime.cli_chat import load_cli_policy

    policy = load_cli_policy(org, local, user_settings, state_dir, tools_files)
    for finding in policy.errors:
        where = f"{finding.location}: " if finding.location is not None else ""
        click.echo(f"{where}error: {finding.message}", err=True)
    return policy


def _listings(policy: Policy, state_dir: Path | None) -> dict[str, McpServerListing]:
    from runtime.mcp import McpSessions

    async def ask() -> dict[str, McpServerListing]:
        async with McpSessions(policy.configuration.mcp_servers, state_dir=state_dir) as sessions:
            return await sessions.listings(refresh=True)

    return asyncio.run(ask())


def _server_document(policy: Policy, listings: dict[str, McpServerListing]) -> dict[str, Any]:
    from policy.mcp import McpTool, mcp_tool_id, pin_state

    governed = {t.definition.id: t for t in policy.tools if isinstance(t, McpTool)}
    servers = []
    for server in policy.configuration.mcp_servers:
        listing = listings.get(server.id)
        tools = []
        for tool in listing.tools if listing is not None else ():
            tool_id = mcp_tool_id(server.name, tool.name)
            tools.append(
                {
                    "tool_id": tool_id,
                    "name": tool.name,
                    "description": tool.description,
                    "annotations": dict(tool.annotations),
                    "sha256": tool.fingerprint,
                    "pin": pin_state(server, tool).value,
                    "registered": tool_id in policy.registry.tool_ids and tool_id in governed,
                }
            )
        servers.append(
            {
                "name": server.name,
                "id": server.id,
                "transport": server.transport.value,
                "endpoint": server.endpoint,
                "status": "connected" if listing is not None and listing.ok else "error",
                "error": listing.error if listing is not None else "not listed",
                "tools": tools,
            }
        )
    return {"servers": servers}


@mcp.command("list")
@configuration_options
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"], case_sensitive=False),
    default="table",
    show_default=True,
)
def list_servers(
    org: tuple[Path, ...],
    local: tuple[Path, ...],
    user_settings: Path | None,
    state_dir: Path | None,
    output_format: str,
) -> None:
    """Every configured MCP server: its status and its tools with id, annotations, fingerprint
    and pin state. Exit 1 when a server cannot be listed."""
    from policy.mcp import mcp_tools

    policy = _policy(org, local, user_settings, state_dir)
    listings = _listings(policy, state_dir)
    policy = policy.with_tools(
        (*policy.base_tools, *mcp_tools(policy.configuration.mcp_servers, listings))
    )
    document = _server_document(policy, listings)
    if output_format == "json":
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        click.echo(_table(document))
    if any(s["status"] == "error" for s in document["servers"]):
        sys.exit(1)


def _table(document: dict[str, Any]) -> str:
    from tabulate import tabulate

    from policy.explain import terminal_safe

    if not document["servers"]:
        return 'No MCP servers are configured (CONFIG["MCP_SERVERS"]).'
    parts = []
    for server in document["servers"]:
        head = f"MCP server {server['name']} ({server['id']}, {server['transport']} {server['endpoint']})"
        if server["status"] == "error":
            parts.append(f"{head}: ERROR {server['error']}")
            continue
        rows = [
            [
                t["tool_id"],
                ", ".join(f"{k}={v}" for k, v in sorted(t["annotations"].items())) or "-",
                t["sha256"][:19] + "…",
                t["pin"],
            ]
            for t in server["tools"]
        ]
        table = tabulate(rows, headers=["tool", "annotations", "sha256", "pin"])
        parts.append(f"{head}: connected, {len(rows)} tool(s)\n{table}")
    return terminal_safe("\n\n".join(parts))


@mcp.command("pin")
@configuration_options
def pin(
    org: tuple[Path, ...],
    local: tuple[Path, ...],
    user_settings: Path | None,
    state_dir: Path | None,
) -> None:
    """Print the Pins of every listed tool as a Lua fragment, to review and deploy."""
    from policy.mcp import pin_fragment

    policy = _policy(org, local, user_settings, state_dir)
    listings = _listings(policy, state_dir)
    click.echo(pin_fragment(policy.configuration.mcp_servers, listings), nl=False)
    if any(
        not listings.get(s.id) or not listings[s.id].ok for s in policy.configuration.mcp_servers
    ):
        sys.exit(1)


@mcp.command("serve")
@configuration_options
@click.option("--provider", "provider_id", help="A configured provider, by id or name.")
@click.option(
    "--component",
    type=click.Choice([c.value for c in Component], case_sensitive=False),
    default=Component.CHAT.value,
    show_default=True,
    help="The part of the app the MCP client stands for.",
)
@click.option(
    "--tools-file",
    "tools_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A Python file whose create_tools() returns the app's own tools. Repeatable.",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"], case_sensitive=False),
    default="stdio",
    show_default=True,
)
@click.option("--host", default="127.0.0.1", show_default=True, help="For --transport http.")
@click.option("--port", default=8765, show_default=True, type=int, help="For --transport http.")
def serve(
    org: tuple[Path, ...],
    local: tuple[Path, ...],
    user_settings: Path | None,
    state_dir: Path | None,
    provider_id: str | None,
    component: str,
    tools_files: tuple[Path, ...],
    transport: str,
    host: str,
    port: int,
) -> None:
    """Serve the tools the policy offers for --provider and --component to any MCP client,
    checking the policy again on every call and logging each call on stderr."""
    from runtime.cli_chat import chosen_provider
    from runtime.session import ChatRuntime

    policy = _policy(org, local, user_settings, state_dir, tools_files)
    provider = chosen_provider(policy, provider_id, None)
    runtime = ChatRuntime(policy)
    gateway = _gateway(runtime, provider, Component(component.upper()))
    if transport == "stdio":
        asyncio.run(_serve_stdio(gateway, runtime))
    else:
        _serve_http(gateway, runtime, host, port)


def _gateway(runtime: ChatRuntime, provider: ProviderConfig, component: Component) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel.server import Server

    from runtime.chat import Chat, MemoryChatStore
    from runtime.messages import RequestedCall

    chat = Chat.open(str(uuid.uuid4()), MemoryChatStore())
    calls = 0

    async def offered() -> dict[str, Any]:
        await runtime.refresh_mcp_tools()
        every = runtime.policy.registry.tool_ids
        runnable, _ = await runtime.executable_tools(
            chat, provider, component=component, selected_tool_ids=every
        )
        return {definition.id: (definition, tool) for definition, tool in runnable}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=definition.function.name,
                title=tool.display_name,
                description=definition.function.description_for_llm,
                input_schema=dict(definition.function.parameters),
            )
            for definition, tool in (await offered()).values()
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        nonlocal calls
        calls += 1
        now = await offered()
        name = params.name
        by_function = {d.function.name: (d, t) for d, t in now.values()}
        if name not in by_function:
            decision = runtime.policy.registry.offer_decision(name, provider, component)
            message = (
                f"refused by the organization's policy: {decision.reason.value}: {decision.message}"
            )
            _log_call(name, "REFUSED", message, {})
            return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)
        outcome = await runtime.executor().execute(
            RequestedCall(str(calls), name, json.dumps(params.arguments or {})),
            tuple(by_function.values()),
            order=calls,
            provider_kind=provider.kind,
            provider_confidence=runtime.policy.registry.provider_confidence(provider),
            chat=chat,
            provider_trusted=runtime.policy.registry.is_trusted_provider(provider),
        )
        trace = outcome.trace
        _log_call(name, trace.status.value, trace.status_message, dict(trace.arguments))
        return types.CallToolResult(
            content=[types.TextContent(text=outcome.content)],
            is_error=trace.status.value != "SUCCESS",
        )

    return Server("toolpolicy", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


def _log_call(tool: str, status: str, message: str, arguments: dict[str, str]) -> None:
    """One JSON line per call on stderr (stdout carries the protocol over stdio); arguments are
    the executor's masked trace."""
    record = {"tool": tool, "status": status, "message": message, "arguments": arguments}
    click.echo(json.dumps(record, ensure_ascii=False), err=True)


async def _serve_stdio(gateway: Any, runtime: ChatRuntime) -> None:
    from mcp.server.stdio import stdio_server

    try:
        async with stdio_server() as (read, write):
            await gateway.run(read, write, gateway.create_initialization_options())
    finally:
        await runtime.aclose()


def _serve_http(gateway: Any, runtime: ChatRuntime, host: str, port: int) -> None:
    import uvicorn

    async def run() -> None:
        app = gateway.streamable_http_app(host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        click.echo(f"serving MCP on http://{host}:{port}/mcp", err=True)
        try:
            await uvicorn.Server(config).serve()
        finally:
            await runtime.aclose()

    asyncio.run(run())
