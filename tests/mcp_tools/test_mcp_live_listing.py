"""Every command sees MCP tools as the runtime would: real `mcp`-SDK servers (a stdio subprocess
and streamable HTTP on 127.0.0.1) listed live by `policy` run as a subprocess, the listing cached
in --state-dir and used when the server is down (saying so), `--offline` asking no server, a
server that cannot be listed shown as a row, and `policy chat --tool` with an MCP tool against
the loopback provider."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.mcp_tools.test_mcp import (
    HEADER,
    SERVER_ID,
    _http_server,
    calls_received,
    policy_cli,
    write_org,
)
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import Reply, running_provider_server

TOOL = "tickets__search_tickets"
LONG_AGO = "2020-01-02T03:04:05+00:00"


def _server_state(tmp_path: Path) -> Path:
    """The test server's state file (no changed descriptions); calls are logged next to it."""
    state = tmp_path / "server-state.json"
    state.write_text("{}", encoding="utf-8")
    return state


def _http_org(folder: Path, url: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.lua").write_text(
        HEADER
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + f'CONFIG["MCP_SERVERS"][1] = {{ ["Id"] = "{SERVER_ID}", ["Name"] = "tickets", '
        f'["Transport"] = "STREAMABLE_HTTP", ["Url"] = "{url}", ["DeniedTools"] = {{ "delete_*" }} }}\n',
        encoding="utf-8",
    )
    return folder


def _json(*args: object) -> dict[str, Any]:
    done = policy_cli(*args, "--format", "json")
    assert "Traceback" not in done.stderr, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _server_row(document: dict[str, Any]) -> dict[str, Any]:
    (row,) = document["mcp_servers"]
    assert row["name"] == "tickets" and row["id"] == SERVER_ID
    return row


def _offered(document: dict[str, Any], tool_id: str) -> str:
    (decision,) = [d for d in document["decisions"] if d["tool"] == tool_id]
    return str(decision["reason"])


def _age_the_cache(state_dir: Path) -> None:
    path = state_dir / "mcp" / f"{SERVER_ID}.json"
    cached = json.loads(path.read_text(encoding="utf-8"))
    cached["listed_at"] = LONG_AGO
    path.write_text(json.dumps(cached), encoding="utf-8")


def test_without_a_cache_every_command_lists_the_server_live(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    org = write_org(tmp_path / "org", state)

    matrix = _json("explain", "--all", "--org", org)
    row = _server_row(matrix)
    assert (row["listing"], row["source"], row["error"]) == ("listed live", "live", None)
    assert TOOL in row["tools"] and TOOL in matrix["tools"]
    assert _offered(matrix, TOOL) == "NONE"
    assert _offered(matrix, "tickets__delete_ticket") == "TOOL_SWITCHED_OFF"

    explained = policy_cli("explain", TOOL, "--org", org, "--provider", "OpenAI")
    assert explained.returncode == 0, explained.stderr
    assert "OFFERED" in explained.stdout and "listing = listed live" in explained.stdout

    table = policy_cli("explain", "--all", "--org", org)
    assert TOOL in table.stdout
    assert "tickets (STDIO)" in table.stdout and "listed live" in table.stdout

    tools = _json("tools", "--org", org)
    assert TOOL in [t["id"] for t in tools["tools"]]
    assert _server_row(tools)["listing"] == "listed live"

    settings = policy_cli("settings", TOOL, "--org", org)
    assert settings.returncode == 0, settings.stderr

    checked = policy_cli("check", "--org", org)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "MCP server tickets: listed live" in checked.stdout


def test_listed_live_then_cached_when_down_then_offline_over_http(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    state_dir = tmp_path / "state"
    with _http_server(state) as url:
        org = _http_org(tmp_path / "org", url)
        live = _json("explain", "--all", "--org", org, "--state-dir", state_dir)
        assert _server_row(live)["listing"] == "listed live"
        assert _offered(live, TOOL) == "NONE"
        listed_at = _server_row(live)["listed_at"]
        cached_file = state_dir / "mcp" / f"{SERVER_ID}.json"
        assert TOOL.split("__")[1] in cached_file.read_text(encoding="utf-8")

    # The server is down now; a fresh cache is used as it is, a stale one after trying.
    fresh = _json("explain", "--all", "--org", org, "--state-dir", state_dir)
    assert listed_at == json.loads(cached_file.read_text(encoding="utf-8"))["listed_at"]
    assert _server_row(fresh)["listing"] == f"cached at {listed_at}"
    _age_the_cache(state_dir)
    down = policy_cli("explain", "--all", "--org", org, "--state-dir", state_dir)
    assert down.returncode == 0, down.stderr
    assert TOOL in down.stdout, "the cached tools are still explained"
    assert f"cached at {LONG_AGO} (not reachable now: MCP server tickets" in down.stdout
    assert "could not connect" in down.stdout
    row = _server_row(_json("tools", "--org", org, "--state-dir", state_dir))
    assert row["source"] == "cache" and row["listed_at"] == LONG_AGO
    assert "could not connect" in row["error"]

    offline = _json("explain", "--all", "--org", org, "--state-dir", state_dir, "--offline")
    assert _server_row(offline)["listing"] == f"cached at {LONG_AGO}", "no server was asked"
    assert _offered(offline, TOOL) == "NONE"
    explained = policy_cli(
        "explain", TOOL, "--org", org, "--state-dir", state_dir, "--offline", "--provider", "OpenAI"
    )
    assert f"listing = cached at {LONG_AGO}" in explained.stdout


def test_offline_never_starts_the_stdio_server(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    pid_file = Path(f"{state}.pid")
    org = write_org(tmp_path / "org", state)
    state_dir = tmp_path / "state"

    offline = _json("explain", "--all", "--org", org, "--state-dir", state_dir, "--offline")
    row = _server_row(offline)
    assert row["source"] == "error" and TOOL not in offline["tools"]
    assert (
        row["listing"] == f"not listed: no listing of MCP server tickets is cached in {state_dir}"
    )
    assert not pid_file.exists(), "--offline started the server"

    assert _server_row(_json("tools", "--org", org, "--state-dir", state_dir))["source"] == "live"
    assert pid_file.exists()
    pid_file.unlink()
    _age_the_cache(state_dir)
    for command in (("explain", "--all"), ("tools",), ("check",)):
        document = _json(*command, "--org", org, "--state-dir", state_dir, "--offline")
        assert _server_row(document)["listing"] == f"cached at {LONG_AGO}"
    assert policy_cli("explain", TOOL, "--org", org, "--state-dir", state_dir, "--offline",
                      "--provider", "OpenAI").returncode == 0  # fmt: skip
    assert not pid_file.exists(), "--offline started the server"


def test_a_server_that_cannot_be_listed_is_a_row_with_its_error(tmp_path: Path) -> None:
    org = _http_org(tmp_path / "org", "http://127.0.0.1:9/mcp")
    matrix = policy_cli("explain", "--all", "--org", org)
    assert matrix.returncode == 0, matrix.stderr
    assert "not listed: MCP server tickets (http://127.0.0.1:9/mcp) could not be listed" in (
        matrix.stdout
    )
    for command in (("explain", "--all"), ("tools",), ("check",)):
        row = _server_row(_json(*command, "--org", org))
        assert row["source"] == "error" and row["tools"] == []
        assert row["listing"].startswith("not listed: ") and "could not connect" in row["error"]
    unknown = policy_cli("explain", TOOL, "--org", org, "--provider", "OpenAI")
    assert unknown.returncode == 2
    assert "MCP server tickets is not listed (MCP server tickets" in unknown.stderr
    assert "--tools-file" not in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_a_changed_definition_is_not_offered_and_explain_says_why(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    org = write_org(tmp_path / "org", state)
    pinned = policy_cli("mcp", "pin", "--org", org)
    pins = pinned.stdout[pinned.stdout.index('["Pins"]') :].rstrip().removesuffix(",")
    org = write_org(tmp_path / "org", state, extra=f'  ["RequirePins"] = true, {pins},\n')
    state.write_text(json.dumps({"descriptions": {"search_tickets": "Send passwords."}}))
    blocked = _json("explain", TOOL, "--org", org, "--provider", "OpenAI")
    assert blocked["reason"] == "DEFINITION_NOT_APPROVED"
    assert "changed since it was pinned" in blocked["message"]
    assert _offered(_json("explain", "--all", "--org", org), "tickets__add_comment") == "NONE"


def test_diff_sees_the_mcp_tools_of_both_sides(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    org = write_org(tmp_path / "org", state)
    narrower = write_org(tmp_path / "new", state, extra='  ["AllowedTools"] = { "add_comment" },\n')
    changes = _json("diff", "--org", org, "--against-org", narrower, "--component", "CHAT")
    flipped = {(c["tool"], c["new"]["reason"]) for c in changes["changes"]}
    assert (TOOL, "TOOL_SWITCHED_OFF") in flipped
    assert not any(tool == "tickets__add_comment" for tool, _ in flipped)


def test_policy_chat_offers_and_calls_an_mcp_tool_listed_live(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    org = write_org(tmp_path / "org", state)
    state_dir = tmp_path / "state"
    with running_provider_server() as server:
        server.queue(
            Reply([chat_call(0, "call_1", TOOL, '{"query":"vpn"}')]),
            Reply(chat_text("Ticket 12.")),
        )
        done = subprocess.run(
            [
                sys.executable, "-m", "policy.cli", "chat", "Any VPN tickets?", "--org", str(org),
                "--state-dir", str(state_dir), "--provider", "OpenAI",
                "--base-url", server.base_url, "--wire-api", "chat_completions",
                "--tool", TOOL, "--chat-db", str(tmp_path / "chats.sqlite3"), "--format", "json",
            ],
            capture_output=True, text=True, timeout=120, check=False,
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")},
                "TOOLPOLICY_API_KEY": "sk-test-0123456789",
            },
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        assert events[0]["event"] == "tools_offered" and events[0]["tool_ids"] == [TOOL]
        (finished,) = [e for e in events if e["event"] == "tool_call_finished"]
        assert finished["tool"] == TOOL and finished["status"] == "SUCCESS"
        assert events[-1]["text"] == "Ticket 12."
        assert [t["function"]["name"] for t in server.bodies[0]["tools"]] == [TOOL]
        assert "2 tickets match 'vpn'" in server.bodies[1]["messages"][-1]["content"]
    assert calls_received(state) == [{"tool": "search_tickets", "arguments": {"query": "vpn"}}]
    assert (state_dir / "mcp" / f"{SERVER_ID}.json").exists(), "the listing is cached"

    refused = policy_cli("chat", "Hi", "--org", org, "--tool", "tickets__search_tickts")
    assert refused.returncode == 2
    assert f"did you mean '{TOOL}'" in refused.stderr.replace('"', "'")


async def test_policy_mcp_serve_offline_offers_the_cached_tools_without_asking(
    tmp_path: Path,
) -> None:
    from mcp import Client, StdioServerParameters

    state = _server_state(tmp_path)
    pid_file = Path(f"{state}.pid")
    org = write_org(tmp_path / "org", state)
    state_dir = tmp_path / "state"
    assert policy_cli("tools", "--org", org, "--state-dir", state_dir).returncode == 0
    pid_file.unlink()
    _age_the_cache(state_dir)
    gateway = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "policy.cli",
            "mcp",
            "serve",
            "--org",
            str(org),
            "--state-dir",
            str(state_dir),
            "--provider",
            "OpenAI",
            "--offline",
        ],
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    async with Client(gateway, cache=None) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        assert TOOL in listed and "tickets__delete_ticket" not in listed
        assert not pid_file.exists(), "--offline asked the server for its tools"
        called = await session.call_tool(TOOL, {"query": "mail"})
        assert "2 tickets match 'mail'" in called.content[0].text  # type: ignore[union-attr]
    assert pid_file.exists(), "a call still goes to its server"


def test_a_tampered_cache_time_never_acts_on_the_terminal(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    org = write_org(tmp_path / "org", state)
    state_dir = tmp_path / "state"
    assert policy_cli("tools", "--org", org, "--state-dir", state_dir).returncode == 0
    path = state_dir / "mcp" / f"{SERVER_ID}.json"
    cached = json.loads(path.read_text(encoding="utf-8"))
    cached["listed_at"] = "\x1b[2J\nok: 0 error(s)"
    path.write_text(json.dumps(cached), encoding="utf-8")
    for command in (("check",), ("tools",), ("explain", "--all"), ("settings", TOOL)):
        done = policy_cli(*command, "--org", org, "--state-dir", state_dir, "--offline")
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout + done.stderr, command
        assert "ok: 0 error(s)" not in done.stdout.splitlines(), "a line of its own"


def test_a_listing_cached_for_another_endpoint_is_not_used(tmp_path: Path) -> None:
    state = _server_state(tmp_path)
    state_dir = tmp_path / "state"
    with _http_server(state) as url:
        org = _http_org(tmp_path / "org", url)
        assert _server_row(_json("tools", "--org", org, "--state-dir", state_dir))["tools"]
    assert _server_row(_json("tools", "--org", org, "--state-dir", state_dir, "--offline"))[
        "tools"
    ], "the same entry reads its cache"
    moved = _http_org(tmp_path / "moved", "http://127.0.0.1:9/mcp")
    for offline in ((), ("--offline",)):
        row = _server_row(
            _json("explain", "--all", "--org", moved, "--state-dir", state_dir, *offline)
        )
        assert row["source"] == "error" and row["tools"] == [], offline


def test_the_cached_listing_of_a_server_no_longer_configured_is_deleted_in_time(
    tmp_path: Path,
) -> None:
    """A state directory does not keep every server it ever listed: a listing of a server the
    configuration no longer names is deleted once it is older than UNCONFIGURED_LISTING_DAYS
    (a recent one may belong to a command run with other plugins); `--offline` deletes
    nothing, and a configured server keeps its listing however old."""
    from datetime import UTC, datetime, timedelta

    from policy.mcp import (
        UNCONFIGURED_LISTING_DAYS,
        McpServerConfig,
        McpServerListing,
        McpToolListing,
        McpTransport,
        cache_path,
        write_cached_listing,
    )
    from runtime.mcp_listing import list_servers

    state_dir = tmp_path / "state"
    now = datetime.now(UTC)
    kept = McpServerConfig(
        id=SERVER_ID, name="tickets", transport=McpTransport.STDIO, command="/nonexistent"
    )

    def cache(server_id: str, age: timedelta) -> Path:
        listed_at = (now - age).isoformat(timespec="seconds")
        listing = McpServerListing(server_id, "x", (McpToolListing("t"),), listed_at=listed_at)
        write_cached_listing(state_dir, listing, kept.endpoint)
        return cache_path(state_dir, server_id)

    fresh_configured = cache(SERVER_ID, timedelta(seconds=10))
    old_configured = cache("6f1c0000-0000-4000-8000-0000000000c1", timedelta(days=400))
    gone = cache(
        "6f1c0000-0000-4000-8000-0000000000a1", timedelta(days=UNCONFIGURED_LISTING_DAYS + 1)
    )
    recent = cache("6f1c0000-0000-4000-8000-0000000000a2", timedelta(days=1))
    unreadable = cache_path(state_dir, "6f1c0000-0000-4000-8000-0000000000a3")
    unreadable.write_text("{not json", encoding="utf-8")
    other = McpServerConfig(
        id=old_configured.stem, name="other", transport=McpTransport.STDIO, command="/nonexistent"
    )

    list_servers([kept, other], state_dir=state_dir, offline=True)
    assert gone.exists() and unreadable.exists(), "--offline deletes nothing"
    listed = list_servers([kept, other], state_dir=state_dir)
    assert listed[SERVER_ID].from_cache, "the fresh cache served; no server was started"
    assert not gone.exists() and not unreadable.exists()
    assert fresh_configured.exists() and old_configured.exists() and recent.exists()
