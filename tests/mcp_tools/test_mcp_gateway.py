"""The governed MCP gateway (`policy mcp serve`) over streamable HTTP, tool ids a provider cannot
take, and MCP servers of a replaced runtime being stopped after a live reload."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from policy import load_policy
from policy.mcp import McpServerConfig, McpTransport
from runtime.mcp import McpSessions
from runtime.policy_watch import PolicyWatcher
from tests.mcp_tools.test_mcp import calls_received, policy_cli, state, write_org

__all__ = ["state"]

GATEWAY_ID = "6f1c0000-0000-4000-8000-0000000000aa"
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def running_gateway(*args: object) -> Iterator[tuple[str, list[str]]]:
    """`policy mcp serve --transport http --port 0 ...` as a subprocess: its URL and the stderr
    lines it wrote so far (read on a thread)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "policy.cli", "mcp", "serve", "--transport", "http",
         "--port", "0", *map(str, args)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=ROOT,
    )  # fmt: skip
    lines: list[str] = []
    announced: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith("serving MCP on "):
                announced.put(line.split()[3])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        try:
            url = announced.get(timeout=60)
        except queue.Empty:
            raise AssertionError(f"the gateway did not start: {''.join(lines)}") from None
        yield url, lines
    finally:
        process.terminate()
        process.wait(timeout=20)
        reader.join(timeout=5)


def _gateway(url: str, token: str = "") -> McpServerConfig:
    """The gateway as its MCP client configures it."""
    return McpServerConfig(
        id=GATEWAY_ID,
        name="gateway",
        transport=McpTransport.STREAMABLE_HTTP,
        url=url,
        headers={"Authorization": f"Bearer {token}"} if token else {},
        timeout_seconds=30,
    )


def _fingerprint(org: Path, state_dir: Path, tool: str) -> str:
    listed = policy_cli("mcp", "list", "--org", org, "--state-dir", state_dir, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    (server,) = json.loads(listed.stdout)["servers"]
    return str(next(t["sha256"] for t in server["tools"] if t["name"] == tool))


async def test_the_http_gateway_needs_its_token_and_tells_clients_of_a_rug_pull(
    tmp_path: Path, state: Path
) -> None:
    draft = write_org(tmp_path / "draft", state)
    pin = _fingerprint(draft, tmp_path / "state", "search_tickets")
    org = write_org(
        tmp_path / "org", state, extra=f'  ["Pins"] = {{ ["search_tickets"] = "{pin}" }},\n'
    )
    decisions = tmp_path / "decisions.jsonl"
    with running_gateway(
        "--org", org, "--provider", "OpenAI", "--token", "t0ken", "--decision-log", decisions
    ) as (url, log):
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        missing = httpx.post(url, json={})
        assert missing.status_code == 401, "no token, no tools"
        assert missing.headers["www-authenticate"] == 'Bearer realm="policy mcp serve"'
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"].endswith(', error="invalid_token"')
        assert "t0ken" not in wrong.text + str(wrong.headers)
        async with McpSessions([_gateway(url, token="t0ken")]) as client:
            (listing,) = (await client.listings()).values()
            assert listing.ok, listing.error
            tools = {t.name: t for t in listing.tools}
            assert "tickets__search_tickets" in tools and "web_search" not in tools
            assert "tickets__delete_ticket" not in tools, "DeniedTools keeps it out"
            assert tools["tickets__search_tickets"].annotations == {"readOnlyHint": True}

            version = client.version
            changed = await client.call_tool(GATEWAY_ID, "tickets__announce_change", {})
            assert not changed.is_error
            for _ in range(600):
                listings = await client.listings()
                if client.version != version:
                    break
                await asyncio.sleep(0.05)
            assert client.version != version, "the gateway told its client the tools changed"
            (after,) = listings.values()
            assert "tickets__search_tickets" not in {t.name for t in after.tools}

            refused = await client.call_tool(
                GATEWAY_ID, "tickets__search_tickets", {"q": "x", "token": "s3cr3t-t0ken"}
            )
            assert refused.is_error
            assert "DEFINITION_NOT_APPROVED" in refused.content[0].text  # type: ignore[union-attr]
    assert [c["tool"] for c in calls_received(state)] == ["announce_change"]
    records = [json.loads(line) for line in log if line.startswith("{")]
    assert [(r["tool"], r["status"]) for r in records] == [
        ("tickets__announce_change", "SUCCESS"),
        ("tickets__search_tickets", "REFUSED"),
    ]
    assert records[1]["arguments"] == {"q": "x", "token": "*****"}, "masked by its definition"
    _assert_gateway_decisions(decisions, org)


def _assert_gateway_decisions(decisions: Path, org: Path) -> None:
    """Each gateway call is one decision record: what the client was offered, and the call."""
    import jsonschema

    from policy.decision_record import decision_log_schema

    text = decisions.read_text(encoding="utf-8")
    assert "s3cr3t-t0ken" not in text
    passed, refused = [json.loads(line) for line in text.splitlines()]
    for record in (passed, refused):
        jsonschema.validate(record, decision_log_schema())
        assert record["served_by"] == "mcp_gateway"
        assert record["outcome"]["stop_reason"] == "tool_call"
        assert record["provider"]["id"] == "OpenAI" or record["provider"]["kind"]
    assert passed["chat_id"] == refused["chat_id"], "one chat per MCP client"
    assert "tickets__search_tickets" in passed["offered"]
    assert "tickets__search_tickets" not in refused["offered"]
    left_out = {entry["tool_id"]: entry for entry in refused["left_out"]}
    assert left_out["tickets__search_tickets"]["reason"] == "DEFINITION_NOT_APPROVED"
    assert left_out["tickets__delete_ticket"]["reason"] == "TOOL_SWITCHED_OFF"
    (call,) = passed["calls"]
    assert (call["tool_id"], call["status"]) == ("tickets__announce_change", "SUCCESS")
    (call,) = refused["calls"]
    assert (call["tool_id"], call["status"]) == ("tickets__search_tickets", "BLOCKED")
    assert call["arguments"] == {"q": "x", "token": "*****"}
    assert "DEFINITION_NOT_APPROVED" in call["status_message"]
    summary = policy_cli("log", "summary", decisions, "--format", "json")
    assert summary.returncode == 0, summary.stderr
    replayed = policy_cli("replay", decisions, "--org", org, "--format", "json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["decisions"] == 2


def test_a_gateway_reachable_from_other_machines_needs_a_token(tmp_path: Path, state: Path) -> None:
    org = write_org(tmp_path / "org", state)
    done = policy_cli(
        "mcp", "serve", "--org", org, "--provider", "OpenAI", "--transport", "http",
        "--host", "0.0.0.0", "--port", "0",
    )  # fmt: skip
    assert done.returncode == 2
    assert "reachable from other machines" in done.stderr and "--token" in done.stderr


def test_tool_names_a_provider_cannot_take_are_refused_with_the_reason(
    tmp_path: Path, state: Path
) -> None:
    state.write_text(json.dumps({"odd_names": True}), encoding="utf-8")
    org = write_org(tmp_path / "org", state)
    state_dir = tmp_path / "state"
    assert policy_cli("mcp", "list", "--org", org, "--state-dir", state_dir).returncode == 0
    for tool_id in ("tickets__" + "x" * 60, "tickets__tickets.export"):
        done = policy_cli(
            "explain", tool_id, "--org", org, "--state-dir", state_dir,
            "--provider", "OpenAI", "--format", "json",
        )  # fmt: skip
        document = json.loads(done.stdout)
        assert document["reason"] == "NOT_AVAILABLE_HERE"
        text = json.dumps(document)
        assert "is refused, so it is never offered" in text
        assert "1-64 ASCII letters, digits, underscores, or hyphens" in text
    offered = policy_cli(
        "explain", "tickets__search_tickets", "--org", org, "--state-dir", state_dir,
        "--provider", "OpenAI", "--format", "json",
    )  # fmt: skip
    assert json.loads(offered.stdout)["reason"] == "NONE", "the other tools are unaffected"


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return "\nState:\tZ" not in status


async def _stopped(pid: int) -> bool:
    for _ in range(200):
        if not _running(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_reload_stops_the_replaced_runtimes_mcp_servers(
    tmp_path: Path, state: Path
) -> None:
    org = write_org(tmp_path / "org", state)
    pid_file = Path(f"{state}.pid")
    async with PolicyWatcher(
        lambda: load_policy(org=[org]), watch=[org], retire_after_seconds=0
    ) as watcher:
        await watcher.runtime.refresh_mcp_tools()
        first = int(pid_file.read_text(encoding="utf-8"))
        assert _running(first)
        plugin = org / "plugin.lua"
        plugin.write_text(plugin.read_text(encoding="utf-8") + "-- edited\n", encoding="utf-8")
        assert (await watcher.reload()).swapped
        assert await _stopped(first), "the replaced runtime's stdio server was stopped"
        await watcher.runtime.refresh_mcp_tools()
        second = int(pid_file.read_text(encoding="utf-8"))
        assert second != first and _running(second)
    assert await _stopped(second), "closing the watcher stops the servers of the one in force"


def test_list_and_pin_fail_when_a_plugin_does_not_load(tmp_path: Path, state: Path) -> None:
    org = write_org(tmp_path / "org", state)
    plugin = org / "plugin.lua"
    plugin.write_text(plugin.read_text(encoding="utf-8") + "this is not Lua\n", encoding="utf-8")
    for command in ("list", "pin"):
        done = policy_cli("mcp", command, "--org", org)
        assert done.returncode == 1, command
        assert "plugin.lua" in done.stderr and "Traceback" not in done.stderr


async def test_a_servers_secret_is_masked_in_every_spelling_in_results_and_errors(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import base64
    import urllib.parse

    from policy.configuration import SecretValue
    from policy.mcp import mcp_tools
    from policy.secrets import encrypt, generate_secret
    from runtime.mcp import McpExecutableTool, McpServerError
    from tests.mcp_tools.test_mcp import _context, stdio_server

    key = generate_secret()
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", key)
    token = "tk/Secret+42=="
    server = stdio_server(state, env={"TICKET_TOKEN": SecretValue(encrypt(token, key))})
    spellings = (
        token,
        urllib.parse.quote(token, safe=""),
        base64.b64encode(token.encode()).decode(),
    )
    async with McpSessions([server]) as sessions:
        listings = await sessions.listings()
        (leak,) = [
            t for t in mcp_tools([server], listings, McpExecutableTool) if t.listing.name == "leak"
        ]
        result = await leak.execute({}, _context(leak, sessions))
        text = result.text_content or ""
        assert text.startswith("token *****, quoted *****"), text
        with pytest.raises(McpServerError) as failed:
            await leak.execute({"fail": True}, _context(leak, sessions))
    for spelling in spellings:
        assert spelling not in text and spelling not in str(failed.value)


CONFIDENTIAL_TOOLS = """
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool
from policy.vocabulary import ConfidenceLevel
from runtime.execution import ToolExecutionResult


class ConfidentialNotes(DefinedTool):
    async def execute(self, arguments, context):
        return ToolExecutionResult(
            text_content="Q3 plan", required_provider_confidence=ConfidenceLevel.HIGH
        )


def create_tools():
    definition = ToolDefinition(
        id="confidential_notes",
        implementation_key="confidential_notes",
        function=ToolFunction(name="confidential_notes", description_for_llm="Read notes."),
    )
    return [ConfidentialNotes(definition, display_name="Confidential notes")]
"""


async def test_what_a_result_demands_holds_for_later_stateless_http_calls(
    tmp_path: Path, state: Path
) -> None:
    """Streamable HTTP of 2026-07-28 has no sessions: every request is its own connection. A
    result that tightens the chat must still hold for the next call, not reset per request."""
    org = write_org(tmp_path / "org", state)
    tools = tmp_path / "confidential.py"
    tools.write_text(CONFIDENTIAL_TOOLS, encoding="utf-8")
    with running_gateway("--org", org, "--provider", "OpenAI", "--tools-file", tools) as (url, _):
        async with McpSessions([_gateway(url)]) as client:
            (listing,) = (await client.listings()).values()
            assert {"confidential_notes", "tickets__search_tickets"} <= {
                t.name for t in listing.tools
            }
            before = await client.call_tool(GATEWAY_ID, "tickets__search_tickets", {"q": "a"})
            assert not before.is_error
            notes = await client.call_tool(GATEWAY_ID, "confidential_notes", {})
            assert not notes.is_error
            after = await client.call_tool(GATEWAY_ID, "tickets__search_tickets", {"q": "b"})
            assert after.is_error, "the chat now demands a HIGH provider; OpenAI is below"
            assert "HIGH" in after.content[0].text  # type: ignore[union-attr]
    assert [c["arguments"] for c in calls_received(state)] == [{"q": "a"}]


async def test_an_injection_removed_from_a_gateway_call_is_in_its_decision_record(
    tmp_path: Path, state: Path
) -> None:
    org = write_org(tmp_path / "org", state)
    decisions = tmp_path / "decisions.jsonl"
    with running_gateway("--org", org, "--provider", "OpenAI", "--decision-log", decisions) as (
        url,
        _,
    ):
        async with McpSessions([_gateway(url)]) as client:
            result = await client.call_tool(GATEWAY_ID, "tickets__inject", {})
    assert not result.is_error
    read = result.content[0].text  # type: ignore[union-attr]
    assert read.startswith("Ticket 7") and "Ignore all previous instructions" not in read
    (record,) = [json.loads(line) for line in decisions.read_text(encoding="utf-8").splitlines()]
    (call,) = record["calls"]
    (seen,) = call["injections"]
    assert (seen["source_kind"], seen["source"]) == ("tool_content", "tickets__inject")
    assert seen["removed"] >= 1 and seen["rules"]
    assert "Ignore all previous" not in decisions.read_text(encoding="utf-8")


async def test_a_call_over_http_does_not_list_every_tool_again(tmp_path: Path) -> None:
    """Issue 31: the SDK checks a 2026-07-28 HTTP call's `Mcp-Param-*` headers against the called
    tool's schema; asked nothing, it ran the gateway's whole `tools/list` handler for every call,
    so each call cost more the more tools were offered. The gateway hands it the schema from the
    view in force: calls list nothing."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from runtime.mcp_gateway import McpGateway
    from runtime.session import ChatRuntime
    from tests.mcp_tools.test_mcp import HEADER
    from tests.runtime._scripted_adapter import EchoTool
    from tests.servers.loopback import running_app

    org = tmp_path / "org"
    org.mkdir()
    (org / "plugin.lua").write_text(HEADER, encoding="utf-8")
    echo = EchoTool("echo")
    runtime = ChatRuntime(load_policy(org=[org], extra_tools=[echo]))

    class CountingGateway(McpGateway):
        listed = 0

        async def _list_tools(self, ctx: Any, params: Any) -> Any:
            CountingGateway.listed += 1
            return await super()._list_tools(ctx, params)

    gateway = CountingGateway(runtime, "OpenAI")
    with running_app(gateway.http_app("127.0.0.1"), lifespan=True) as served:
        async with Client(streamable_http_client(served.url("/mcp"))) as client:
            assert "echo" in {t.name for t in (await client.list_tools()).tools}
            for number in range(5):
                answer = await client.call_tool("echo", {"text": f"call {number}"})
                assert not answer.is_error, answer
    assert CountingGateway.listed == 1, "only the client's own listing"
    assert [dict(a) for a in echo.arguments][-1] == {"text": "call 4"}
