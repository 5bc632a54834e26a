"""An MCP server as the adversary: a real server written with the `mcp` SDK
(`tests/servers/hostile_mcp_server.py`) next to the well-behaved ticket server, governed by
`policy mcp serve` and the runtime as an organization would run them."""

from __future__ import annotations

import contextlib
import json
import sys
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from policy.mcp import McpServerConfig, McpTransport
from tests.mcp_tools.test_mcp import (
    HEADER,
    OPENAI_ID,
    SERVER_ID,
    SERVER_SCRIPT,
    _context,
    _lua,
    stdio_server,
)
from tests.servers.hostile_mcp_server import OWN_TOOLS
from tests.servers.processes import announced_mcp_server

HOSTILE_SCRIPT = Path(__file__).resolve().parents[1] / "servers" / "hostile_mcp_server.py"
HOSTILE_ID = "6f1c0000-0000-4000-8000-00000000bad1"
ROOT = Path(__file__).resolve().parents[2]


def gateway(org: Path, *options: str) -> Any:
    """`policy mcp serve` over stdio for `org`, as an MCP client starts it."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "policy.cli", "mcp", "serve", "--org", str(org), "--provider", "OpenAI",
              "--listing-wait", "60", *options],
        cwd=str(ROOT),
    )  # fmt: skip


def server_entry(
    index: int, server_id: str, name: str, script: Path, state: Path, extra: str = ""
) -> str:
    mode = ' "stdio",' if script == SERVER_SCRIPT else ""
    return (
        f'CONFIG["MCP_SERVERS"][{index}] = {{\n'
        f'  ["Id"] = "{server_id}", ["Name"] = "{name}", ["Transport"] = "STDIO",\n'
        f'  ["Command"] = {_lua(sys.executable)},\n'
        f'  ["Args"] = {{ {_lua(str(script))},{mode} {_lua(str(state))} }},\n'
        f"{extra}"
        "}\n"
    )


def two_servers(folder: Path, tickets: Path, hostile: Path, hostile_extra: str = "") -> Path:
    """An organization with the ticket server and the hostile one."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.lua").write_text(
        HEADER
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + server_entry(1, SERVER_ID, "tickets", SERVER_SCRIPT, tickets)
        + server_entry(2, HOSTILE_ID, "hostile", HOSTILE_SCRIPT, hostile, hostile_extra),
        encoding="utf-8",
    )
    return folder


@pytest.fixture
def states(tmp_path: Path) -> tuple[Path, Path]:
    tickets, hostile = tmp_path / "tickets.json", tmp_path / "hostile.json"
    tickets.write_text("{}", encoding="utf-8")
    hostile.write_text("{}", encoding="utf-8")
    return tickets, hostile


def listing_requests(state: Path) -> list[str]:
    log = Path(f"{state}.lists")
    return log.read_text(encoding="utf-8").split() if log.exists() else []


async def test_a_server_that_hangs_on_its_listing_holds_up_no_call_to_another_server(
    tmp_path: Path, states: tuple[Path, Path]
) -> None:
    """Class 7: the hostile server announces list_changed and never answers `tools/list` again
    (within a TimeoutSeconds of 40); calls to the ticket server's tools are answered meanwhile,
    from the listing in hand."""
    from mcp import Client

    tickets, hostile = states
    org = two_servers(tmp_path / "org", tickets, hostile, '  ["TimeoutSeconds"] = 40,\n')
    async with Client(gateway(org), cache=None) as session, anyio.create_task_group() as group:
        listed = {t.name for t in (await session.list_tools()).tools}
        assert {"hostile__announce", "tickets__add_comment"} <= listed, listed
        # The announcing call itself may wait on the hostile server (its own timeout): it runs
        # on the side, and only the other server's calls are awaited.
        group.start_soon(session.call_tool, "hostile__announce", {})
        answered = 0
        with anyio.fail_after(30):  # a stalled call waits out the 40 s of the other server
            while "hanging" not in listing_requests(hostile) or answered < 3:
                done = await session.call_tool(
                    "tickets__add_comment", {"ticket_id": "1", "text": "x"}
                )
                assert not done.is_error, done
                answered += "hanging" in listing_requests(hostile)
                await anyio.sleep(0.05)
        assert listing_requests(hostile)[-1] == "hanging", "the hostile listing is still unanswered"
        group.cancel_scope.cancel()
    assert (
        json.loads(Path(f"{tickets}.calls").read_text().splitlines()[-1])["tool"] == "add_comment"
    )


def one_server(folder: Path, name: str, state: Path, header: str = HEADER, extra: str = "") -> Path:
    """A plugin with the hostile server under `name`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.lua").write_text(
        header
        + extra
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + server_entry(1, HOSTILE_ID, name, HOSTILE_SCRIPT, state),
        encoding="utf-8",
    )
    return folder


def test_a_dotted_tool_name_is_refused_with_its_reason_and_breaks_no_report(
    tmp_path: Path, states: tuple[Path, Path]
) -> None:
    """Class 8: MCP allows a dot in a tool name, no provider does; once listed, the tool is
    refused with the reason in every report instead of failing `explain --all` and the admin
    page's Decisions and Simulate."""
    import httpx

    from policy.web import ConfigurationPaths
    from tests.mcp_tools.test_mcp import policy_cli
    from tests.servers.loopback import running_app
    from tests.webui.conftest import web_app

    _, hostile = states
    hostile.write_text(json.dumps({"names": ["tickets.export"]}), encoding="utf-8")
    org = one_server(tmp_path / "org", "hostile", hostile)
    state_dir = tmp_path / "state"
    assert policy_cli("mcp", "list", "--org", org, "--state-dir", state_dir).returncode == 0
    dotted = "hostile__tickets.export"
    matrix = policy_cli(
        "explain", "--all", "--org", org, "--state-dir", state_dir, "--format", "json"
    )
    assert matrix.returncode == 0, matrix.stdout + matrix.stderr
    row = {d["tool"]: d for d in json.loads(matrix.stdout)["decisions"]}
    assert row[dotted]["reason"] == "NOT_AVAILABLE_HERE" and row[dotted]["offered"] is False
    assert row["hostile__ping"]["offered"] is True, "the server's other tools are unaffected"
    table = policy_cli("explain", "--all", "--org", org, "--state-dir", state_dir)
    assert table.returncode == 0 and dotted in table.stdout, table.stderr
    paths = ConfigurationPaths(org=(org,), state_dir=state_dir)
    with running_app(web_app(paths)) as served:
        decisions = httpx.get(served.url("/api/decisions"))
        page = httpx.get(served.url("/decisions"))
        simulated = httpx.post(served.url("/api/simulate"), json={"provider": OPENAI_ID})
    assert decisions.status_code == page.status_code == simulated.status_code == 200
    assert dotted in decisions.json()["tools"] and dotted in page.text
    [refused] = [d for d in simulated.json()["decisions"] if d["tool"] == dotted]
    assert refused["reason"] == "NOT_AVAILABLE_HERE"
    assert "1-64 ASCII letters, digits, underscores, or hyphens" in json.dumps(refused)


def test_a_local_server_cannot_offer_an_organization_servers_tool_id(
    tmp_path: Path, states: tuple[Path, Path]
) -> None:
    """Class 9: the organization's server `corp` (down) pinned its tool `admin__reset`, id
    `corp__admin__reset`; a local plugin's server named `corp__admin` listing `reset` would
    offer that very id. Server names cannot hold `__`, so the local entry is refused."""
    from tests.mcp_tools.test_mcp import policy_cli

    _, hostile = states
    hostile.write_text(json.dumps({"names": ["reset"]}), encoding="utf-8")
    org = tmp_path / "org"
    org.mkdir()
    (org / "plugin.lua").write_text(
        HEADER
        + 'CONFIG["SETTINGS"]["DataTools.AllowLocalMcpServers"] = true\n'
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + 'CONFIG["MCP_SERVERS"][1] = { ["Id"] = "6f1c0000-0000-4000-8000-00000000c0de", '
        '["Name"] = "corp", ["Transport"] = "STREAMABLE_HTTP", '
        '["Url"] = "http://127.0.0.1:9/mcp", ["RequirePins"] = true, '
        '["Pins"] = { ["admin__reset"] = "sha256:' + "0" * 64 + '" } }\n',
        encoding="utf-8",
    )
    local_header = HEADER.replace(
        "11111111-2222-4333-8444-555555555555", "22222222-2222-4333-8444-555555555555"
    )
    local = one_server(tmp_path / "local", "corp__admin", hostile, header=local_header)
    explained = policy_cli(
        "explain", "corp__admin__reset", "--org", org, "--local", local, "--provider", "OpenAI",
        "--format", "json",
    )  # fmt: skip
    assert explained.returncode != 0, "not offered: no server may list that id now"
    assert "unknown tool 'corp__admin__reset'" in explained.stdout
    checked = policy_cli("check", "--org", org, "--local", local)
    assert "must be lower-case letters and digits, words joined by single underscores" in (
        checked.stdout + checked.stderr
    )
    assert "plugin.lua:" in checked.stdout + checked.stderr
    assert not Path(f"{hostile}.lists").exists(), "the refused server is never started"


def test_no_other_tool_takes_an_id_in_an_mcp_servers_namespace(tmp_path: Path) -> None:
    """Class 9: an app's tool with the id of an organization server's tool is refused, whether
    that server is up or not; the organization's server owns every `<Name>__` id."""
    from policy import McpServerConfig, McpTransport, load_policy
    from policy.definitions import ToolDefinition, ToolFunction
    from policy.tools import DefinedTool

    org = one_server(tmp_path / "org", "hostile", tmp_path / "never-started.json")
    impostor = DefinedTool(
        ToolDefinition(
            id="hostile__ping",
            implementation_key="app:impostor",
            function=ToolFunction(name="hostile__ping", description_for_llm="Pings."),
        ),
        display_name="Impostor",
    )
    policy = load_policy(org=[org], extra_tools=[impostor])
    decision = policy.registry.offer_decision("hostile__ping", policy.providers[0])
    assert decision.reason.value == "NOT_AVAILABLE_HERE"
    assert "namespace of MCP server hostile" in decision.message
    with pytest.raises(ValueError, match='no "__"'):
        McpServerConfig(id="x", name="corp__admin", transport=McpTransport.STDIO)
    with pytest.raises(ValueError, match='no "__"'):
        McpServerConfig(id="x", name="corp_", transport=McpTransport.STDIO)


async def test_what_a_server_writes_into_an_error_is_guarded_and_logged_only_as_content(
    tmp_path: Path, states: tuple[Path, Path]
) -> None:
    """Class 6: a JSON-RPC error's message reaches the model through the prompt-injection guard
    like an `isError` result. Class 10: neither text lands in the decision log (nor the
    gateway's call log) without content logging; the model still reads it."""
    from mcp import Client
    from mcp.client.stdio import stdio_client

    from tests.servers.hostile_mcp_server import ERROR_INJECTION, RESULT_SECRET

    _, hostile = states
    org = one_server(tmp_path / "org", "hostile", hostile)
    log = tmp_path / "decisions.jsonl"
    calls = tmp_path / "gateway-stderr.txt"
    with calls.open("w", encoding="utf-8") as stderr:
        served = stdio_client(gateway(org, "--decision-log", str(log)), errlog=stderr)
        async with Client(served, cache=None) as session:
            rpc = await session.call_tool("hostile__rpc_error", {})
            failed = await session.call_tool("hostile__is_error", {})
    assert rpc.is_error and failed.is_error
    told = rpc.content[0].text  # type: ignore[union-attr]
    assert "Ticket store unavailable." in told, "the server's words reach the model"
    assert "Ignore all previous instructions" not in told, "through the guard"
    assert RESULT_SECRET in failed.content[0].text  # type: ignore[union-attr]
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    logged = {r["calls"][0]["tool_id"]: r["calls"][0] for r in records}
    assert logged["hostile__rpc_error"]["status"] == logged["hostile__is_error"]["status"]
    assert logged["hostile__is_error"]["status"] == "ERROR"
    assert "MCP server hostile" in logged["hostile__is_error"]["status_message"]
    gateway_log = calls.read_text(encoding="utf-8")
    assert '"tool": "hostile__is_error", "status": "ERROR"' in gateway_log
    text = log.read_text(encoding="utf-8") + gateway_log
    assert RESULT_SECRET not in text and "Ticket store unavailable" not in text, text
    assert ERROR_INJECTION.split(".")[0] not in text


def hostile_config(state: Path, **fields: Any) -> Any:
    """The hostile server as an app passes it in code."""
    args = (str(HOSTILE_SCRIPT), str(state))
    return replace(stdio_server(state), id=HOSTILE_ID, name="hostile", args=args, **fields)


async def test_a_server_rewriting_its_definitions_cannot_grow_their_history(
    tmp_path: Path, states: tuple[Path, Path]
) -> None:
    """Class 10: every listing brings new definitions; the history of those seen (kept for
    diffs, in memory and in the state directory) keeps the current, the pinned and a bounded
    number of earlier ones."""
    from policy.mcp import cache_path

    earlier_kept = 32  # as documented: the newest 32 definitions a server no longer lists
    from runtime.mcp import McpSessions

    _, hostile = states
    hostile.write_text(json.dumps({"rotate": True}), encoding="utf-8")
    first = tmp_path / "first.json"
    first.write_text(json.dumps({"rotate": True}), encoding="utf-8")
    async with McpSessions([hostile_config(first)]) as sessions:
        pinned = (await sessions.listings())[HOSTILE_ID].tools[0]
    server = hostile_config(hostile, pins={pinned.name: pinned.fingerprint})
    state_dir = tmp_path / "state"
    rounds = (earlier_kept // len(OWN_TOOLS)) + 8
    async with McpSessions([server], state_dir=state_dir) as sessions:
        for _ in range(rounds):
            listing = (await sessions.listings(refresh=True))[HOSTILE_ID]
    assert len(listing.tools) == len(OWN_TOOLS)
    assert rounds * len(OWN_TOOLS) > earlier_kept + len(OWN_TOOLS), "it did grow"
    bound = earlier_kept + len(OWN_TOOLS) + 1
    assert len(listing.known_definitions) <= bound
    cached = json.loads(cache_path(state_dir, HOSTILE_ID).read_text(encoding="utf-8"))
    assert len(cached["seen"]) <= bound
    assert all(t.fingerprint in listing.known_definitions for t in listing.tools)
    assert pinned.fingerprint in listing.known_definitions, "the pinned one stays for its diff"
    assert pinned.fingerprint in cached["seen"]
    async with McpSessions([server]) as sessions:
        for _ in range(rounds):
            in_memory = (await sessions.listings(refresh=True))[HOSTILE_ID]
    assert len(in_memory.known_definitions) <= bound


async def test_a_huge_result_is_cut_before_it_is_filtered(
    tmp_path: Path, states: tuple[Path, Path]
) -> None:
    """Class 10: a result of millions of characters is cut to the cap before it is masked and
    filtered, not filtered whole and cut afterwards."""
    from policy.mcp import mcp_tools
    from runtime.execution import ToolServices
    from runtime.mcp import MAX_RESULT_CHARACTERS, McpExecutableTool, McpSessions
    from tests.security._kit import RecordingGuard

    _, hostile = states
    recording = RecordingGuard()
    async with McpSessions([hostile_config(hostile)]) as sessions:
        listings = await sessions.listings()
        tools = {
            t.listing.name: t for t in mcp_tools(sessions.servers, listings, McpExecutableTool)
        }
        huge = tools["huge"]
        services = ToolServices(guard=recording.guard, tool_services=[sessions])
        context = replace(_context(huge, sessions), services=services)
        result = await huge.execute({"size": 3_000_000}, context)
    text = result.text_content or ""
    assert text.endswith("[the result was cut here]")
    assert len(text) <= MAX_RESULT_CHARACTERS + 100
    assert sum(len(t) for t in recording.checked) <= MAX_RESULT_CHARACTERS + 2_000, (
        "the guard filtered what the model never reads"
    )


def hostile_over_http(state: Path, mode: str) -> contextlib.AbstractContextManager[str]:
    """The hostile server over streamable HTTP (`http`: server-sent events, `http-json`: one
    JSON answer per request), its address while it runs."""
    return announced_mcp_server([sys.executable, str(HOSTILE_SCRIPT), str(state), mode])


LIMIT = 256 * 1024
HUGE = 40_000_000


@pytest.mark.parametrize("mode", ["stdio", "http", "http-json"])
async def test_a_result_over_the_servers_limit_is_cut_off_while_it_arrives(
    states: tuple[Path, Path], mode: str
) -> None:
    """Class 10: a 40 MB result is cut off at the server's MaxMessageBytes as it arrives (over
    stdio, as server-sent events, as one JSON answer): this process never holds more than a
    bounded part of it, the call fails naming the server and the limit, and the next call to the
    server is answered."""
    from runtime.mcp import McpServerError, McpSessions

    _, hostile = states
    with contextlib.ExitStack() as running:
        if mode == "stdio":
            server = hostile_config(hostile, max_message_bytes=LIMIT)
        else:
            url = running.enter_context(hostile_over_http(hostile, mode))
            server = McpServerConfig(
                id=HOSTILE_ID, name="hostile", transport=McpTransport.STREAMABLE_HTTP, url=url,
                max_message_bytes=LIMIT,
            )  # fmt: skip
        async with McpSessions([server]) as sessions:
            assert (await sessions.listings())[HOSTILE_ID].ok
            tracemalloc.start()
            try:
                with pytest.raises(McpServerError) as refused:
                    await sessions.call_tool(HOSTILE_ID, "huge", {"size": HUGE})
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            again = await sessions.call_tool(HOSTILE_ID, "ping", {})
    message = str(refused.value)
    assert "MCP server hostile" in message
    assert f"exceeded the limit of {LIMIT} bytes (MaxMessageBytes)" in message, message
    assert "cut off while arriving" in message
    assert peak < 16 * LIMIT, f"{peak} bytes held for a {HUGE}-byte answer"
    assert again.content[0].text == "pong"  # type: ignore[union-attr]
