"""`policy mcp list | pin | serve`: MCP servers as an administrator sees them, and the gateway.

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` imports none of it.
`list` and `pin` ask every configured server live (and, with --state-dir, keep the listing there
for `policy explain`, `policy tools` and `policy diff`, which read it offline). `serve` makes
toolpolicy an MCP server that offers exactly what the policy offers for one provider and component,
and checks the policy again on every call.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from policy import Component
from policy._runtime_seam import (
    ConfigurationSources,
    component_option,
    configuration_options,
    decision_log_option,
    examples,
    finding_line,
    format_option,
    load_cli_policy,
    offline_option,
    provider_option,
    terminal_json,
    tools_file_option,
)
from runtime.mcp_waits import DEFAULT_FIRST_LISTING_WAIT_SECONDS
from runtime.serving import listening_options

if TYPE_CHECKING:
    from policy import McpServerConfig, McpServerListing, McpToolListing, Policy, ProviderConfig
    from policy._runtime_seam import SignInSettings
    from runtime.mcp_gateway import McpGateway
    from runtime.policy_watch import PolicyWatcher
    from runtime.session import ChatRuntime
    from runtime.signin.exchange import KeptExchanges


@click.group(epilog=examples("policy mcp"))
def mcp() -> None:
    """MCP servers: list their tools and pins, print pins, serve the governed tools."""


def _policy(
    sources: ConfigurationSources,
    tools_files: Sequence[Path] = (),
    *,
    offline: bool = True,
    shows_skipped: bool = False,
    executable_tools: bool = True,
) -> Policy:
    """The policy, its errors on stderr (less the skipped entries, when the command's own
    output names them). `list` and `pin` run no tool: the built-in tools' policy halves decide
    the same without importing the runtime's tool modules (`executable_tools=False`)."""
    from policy._runtime_seam import skipped_entry_findings

    policy = load_cli_policy(
        *sources, tools_files, offline=offline, executable_tools=executable_tools
    )
    shown = skipped_entry_findings(policy.configuration) if shows_skipped else frozenset()
    for finding in policy.errors:
        if (finding.location, finding.message) not in shown:
            click.echo(finding_line(finding, "error"), err=True)
    return policy


def _listings(policy: Policy, state_dir: Path | None) -> dict[str, McpServerListing]:
    from runtime.mcp import McpSessions

    async def ask() -> dict[str, McpServerListing]:
        async with McpSessions(policy.configuration.mcp_servers, state_dir=state_dir) as sessions:
            return await sessions.listings(refresh=True)

    return asyncio.run(ask())


def _change(
    server: McpServerConfig, tool: McpToolListing, known: Mapping[str, McpToolListing]
) -> dict[str, Any] | None:
    """For a tool whose definition no longer matches its pin: the pinned fingerprint and each
    changed field as a word diff (`fields` is None when the pinned definition was never listed
    in this state directory). None for any other tool."""
    from policy import PinState
    from policy._runtime_seam import definition_word_diff, pin_state

    if pin_state(server, tool) is not PinState.CHANGED:
        return None
    pinned = server.pins[tool.name]
    before = known.get(pinned)
    fields = definition_word_diff(before, tool) if before is not None else None
    return {"pinned": pinned, "fields": fields}


def _server_document(policy: Policy, listings: dict[str, McpServerListing]) -> dict[str, Any]:
    from policy import McpTool
    from policy._runtime_seam import kept_out, mcp_tool_id, pin_state

    governed = {t.definition.id: t for t in policy.tools if isinstance(t, McpTool)}
    servers = []
    for server in policy.configuration.mcp_servers:
        listing = listings.get(server.id)
        tools = []
        known = listing.known_definitions if listing is not None else {}
        for tool in listing.tools if listing is not None else ():
            tool_id = mcp_tool_id(server.name, tool.name)
            rule = kept_out(server, tool)
            tools.append(
                {
                    "tool_id": tool_id,
                    "name": tool.name,
                    "description": tool.description,
                    "annotations": dict(tool.annotations),
                    "sha256": tool.fingerprint,
                    "pin": pin_state(server, tool).value,
                    "kept_out_by": rule.rule if rule is not None else "",
                    "registered": tool_id in policy.registry.tool_ids and tool_id in governed,
                    "change": _change(server, tool, known),
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
    from policy._runtime_seam import skipped_entries_document

    return {
        "servers": servers,
        "skipped": skipped_entries_document(policy.configuration, "MCP_SERVERS"),
    }


@mcp.command(
    "list",
    epilog=examples("policy mcp list"),
)
@configuration_options
@format_option("table", "json")
def list_servers(
    sources: ConfigurationSources,
    output_format: str,
) -> None:
    """Every configured MCP server: its status and its tools with id, annotations, fingerprint
    and pin state, and every server entry skipped for a mistake. Exit 1 when a server cannot be
    listed, an entry was skipped or a plugin does not load."""
    from policy._runtime_seam import mcp_tools

    policy = _policy(sources, shows_skipped=True, executable_tools=False)
    listings = _listings(policy, sources.state_dir)
    policy = policy.with_tools(
        (*policy.base_tools, *mcp_tools(policy.configuration.mcp_servers, listings))
    )
    document = _server_document(policy, listings)
    if output_format == "json":
        click.echo(terminal_json(document, indent=2))
    else:
        click.echo(_table(document))
    if (
        policy.errors
        or document["skipped"]
        or any(s["status"] == "error" for s in document["servers"])
    ):
        sys.exit(1)


def _table(document: dict[str, Any]) -> str:
    from tabulate import tabulate

    from policy._runtime_seam import terminal_document, terminal_text

    document = terminal_document(document)
    skipped = [
        f"MCP server entry skipped, not in force: {e['file']}:{e['line']}: {e['entry']}"
        + (f" ({e['name']})" if e["name"] else "")
        + f": {e['reason']}"
        for e in document["skipped"]
    ]
    if not document["servers"]:
        return terminal_text(
            "\n".join(['No MCP servers are in force (CONFIG["MCP_SERVERS"]).', *skipped])
        )
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
                t["kept_out_by"] or "-",
            ]
            for t in server["tools"]
        ]
        table = tabulate(rows, headers=["tool", "annotations", "sha256", "pin", "kept out by"])
        changes = [_change_lines(t) for t in server["tools"] if t["change"] is not None]
        parts.append("\n".join([f"{head}: connected, {len(rows)} tool(s)", table, *changes]))
    if skipped:
        parts.append("\n".join(skipped))
    return terminal_text("\n\n".join(parts))


def _change_lines(tool: dict[str, Any]) -> str:
    """What changed in a tool since it was pinned, a line per field, words marked."""
    change = tool["change"]
    head = f"{tool['tool_id']} changed since it was pinned ({change['pinned'][:19]}…):"
    if change["fields"] is None:
        return f"{head}\n  (the pinned definition was never listed here, so no diff can be shown)"
    return "\n".join([head, *(f"  {name}: {words}" for name, words in change["fields"].items())])


@mcp.command(
    "pin",
    epilog=examples("policy mcp pin"),
)
@configuration_options
def pin(
    sources: ConfigurationSources,
) -> None:
    """Print the Pins of every listed tool as a Lua fragment, to review and deploy."""
    from policy._runtime_seam import pin_fragment

    policy = _policy(sources, executable_tools=False)
    listings = _listings(policy, sources.state_dir)
    click.echo(pin_fragment(policy.configuration.mcp_servers, listings), nl=False)
    if policy.errors or any(
        not listings.get(s.id) or not listings[s.id].ok for s in policy.configuration.mcp_servers
    ):
        sys.exit(1)


@mcp.command(
    "serve",
    epilog=examples("policy mcp serve"),
)
@configuration_options
@provider_option()
@component_option(help="The part of the app the MCP client stands for.")
@tools_file_option
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"], case_sensitive=False),
    default="stdio",
    show_default=True,
)
@listening_options(
    "TOOLPOLICY_MCP_TOKEN",
    "Authorization: Bearer <token>",
    scope="For --transport http: ",
    public_url=True,
)
@click.option(
    "--watch/--no-watch",
    default=True,
    show_default=True,
    help="Reload when the plugin folders or the user settings change; clients are told.",
)
@click.option(
    "--listing-wait",
    type=click.FloatRange(min=0),
    default=DEFAULT_FIRST_LISTING_WAIT_SECONDS,
    show_default=True,
    metavar="SECONDS",
    envvar="TOOLPOLICY_MCP_LISTING_WAIT",
    help="How long a client's request waits for MCP servers still starting; it is answered "
    "with the tools listed by then, and told tools/list_changed when the rest arrive.",
)
@decision_log_option("call", ", as policy chat does per answer")
@click.option(
    "--people-settings",
    metavar="LOCATION",
    help="Each signed-in person's own user settings: a folder of <sub>.yaml files, or a "
    "postgresql:// address (shared by every instance).",
)
@offline_option
def serve(
    sources: ConfigurationSources,
    provider_id: str | None,
    component: str,
    tools_files: tuple[Path, ...],
    transport: str,
    host: str,
    port: int,
    token: str | None,
    public_url: str | None,
    watch: bool,
    listing_wait: float,
    decision_log: Path | None,
    people_settings: str | None,
    offline: bool,
) -> None:
    """Serve the tools the policy offers for --provider and --component to any MCP client.

    Every call is checked again against the policy in force and logged as one JSON line on
    stderr (arguments masked); with --decision-log also as a decision record (served_by
    "mcp_gateway": what the client was offered, the call, its status). Connected clients get
    tools/list_changed when the offered tools change.
    """
    from runtime.cli_chat import chosen_provider
    from runtime.policy_watch import PolicyWatcher

    chosen: list[ProviderConfig] = []

    def load() -> Policy:
        """The first load chooses the provider, which shows its errors (`chosen_provider`).
        No server is asked here (the listings cached in --state-dir are read): the gateway's
        sessions list them in the background once it serves (`McpGateway.warm`)."""
        if not chosen:
            policy = load_cli_policy(*sources, tools_files, offline=True)
            chosen.append(chosen_provider(policy, provider_id, None))
            return policy
        return _policy(sources, tools_files, offline=True)

    sink = None
    if decision_log is not None:
        from runtime.decision_log import JsonLinesSink, QueuedSink

        sink = QueuedSink(JsonLinesSink(decision_log))

    from runtime.signin.exchange import KeptExchanges

    exchanged = KeptExchanges()
    people = None
    if people_settings is not None:
        from runtime.people_settings import open_people_settings

        try:
            people = open_people_settings(people_settings)
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--people-settings") from None

    def build(policy: Policy) -> ChatRuntime:
        from runtime.execution import ToolServices
        from runtime.mcp_listing import sessions_for
        from runtime.session import ChatRuntime

        mcp = sessions_for(
            policy, sources.state_dir, offline=offline, first_listing_wait_seconds=listing_wait
        )
        acting = exchanged.services(policy)
        if mcp is not None and acting:
            mcp.upstream_auth = acting[0].listing_auth
        return ChatRuntime(
            policy,
            decision_log=sink,
            mcp=mcp,
            services=ToolServices(tool_services=acting),
            settings_by_subject=people,
            os_user_is_person=transport == "stdio",
        )

    watcher = PolicyWatcher(
        load,
        watch=[
            *sources.org,
            *sources.local,
            *([sources.user_settings] if sources.user_settings else []),
        ]
        if watch
        else [],
        state_dir=sources.state_dir,
        build=build,
    )
    provider = chosen[0]
    sign_in = None
    if transport == "http":
        from runtime.signin.serving import serving_sign_in

        sign_in = serving_sign_in(watcher.policy, host, token, "TOOLPOLICY_MCP_TOKEN")
    listening = _Listening(host, port, token, sign_in, public_url)
    try:
        asyncio.run(
            _serve(
                watcher,
                provider.id,
                Component(component.upper()),
                transport,
                listening,
                listing_wait,
                exchanged,
            )
        )
    finally:
        if sink is not None:
            sink.close()


async def _serve(
    watcher: PolicyWatcher,
    provider: str,
    component: Component,
    transport: str,
    listening: _Listening,
    listing_wait: float,
    exchanged: KeptExchanges,
) -> None:
    import sniffio

    from runtime.mcp_gateway import GatewayCall, McpGateway

    # anyio (under the mcp SDK, httpx and starlette) asks which event loop runs some fifty times
    # per call; said here once, as anyio.run says it, each answer is a lookup instead of a search
    sniffio.current_async_library_cvar.set("asyncio")

    def log(call: GatewayCall) -> None:
        click.echo(call.as_json(), err=True)

    gateway = McpGateway(
        lambda: watcher.runtime,
        provider,
        component,
        on_call=log,
        first_listing_wait_seconds=listing_wait,
    )
    stop = asyncio.Event()
    watching = asyncio.create_task(watcher.run(stop))
    try:
        if transport == "stdio":
            await gateway.run_stdio()
        else:
            await _serve_http(gateway, watcher, listening)
    finally:
        stop.set()
        await watching
        await watcher.aclose()
        await exchanged.aclose()  # each person's upstream sessions end with the gateway


@dataclass(frozen=True, slots=True)
class _Listening:
    """Where and for whom `--transport http` serves: the shared token or the sign-in."""

    host: str
    port: int
    token: str | None
    sign_in: SignInSettings | None
    public_url: str | None


async def _serve_http(gateway: McpGateway, watcher: PolicyWatcher, listening: _Listening) -> None:
    import uvicorn

    from runtime.serving import listen, url_of

    listener = listen(listening.host, listening.port)
    sign_in = None
    if listening.sign_in is not None:
        from policy._runtime_seam import SignInSettings
        from runtime.signin import GatewaySignIn

        sign_in = GatewaySignIn(
            listening.sign_in,
            lambda: SignInSettings.of(watcher.policy.configuration),
            listening.public_url or url_of(listener, "/mcp"),
        )
    app = gateway.http_app(listening.host, listening.token, sign_in)
    # uvicorn's records (an application error) go through the command's terminal-safe handler
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", log_config=None))
    click.echo(f"serving MCP on {url_of(listener, '/mcp')} (Ctrl-C stops)", err=True)
    stop = asyncio.Event()
    changes = asyncio.create_task(gateway.watch_changes(stop))
    try:
        await server.serve(sockets=[listener])
    finally:
        stop.set()
        await asyncio.gather(changes, return_exceptions=True)
