"""Issue 30: `policy mcp serve` starts its upstream servers in the background when it starts, and
a server slow to start does not hold the others: a client's first tools/list is answered with
the tools listed within `--listing-wait`, and the client is told tools/list_changed when the
slow server's tools arrive."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.mcp_tools.gateway_clients import NEWEST, OF_2025, gateway_client, tool_names
from tests.mcp_tools.test_mcp import HEADER, SERVER_SCRIPT

LATER_ID = "6f1c0000-0000-4000-8000-0000000000bb"


def _server(index: int, server_id: str, name: str, state: Path) -> str:
    return (
        f'CONFIG["MCP_SERVERS"][{index}] = {{\n'
        f'  ["Id"] = "{server_id}", ["Name"] = "{name}", ["Transport"] = "STDIO",\n'
        f'  ["Command"] = {json.dumps(sys.executable)},\n'
        f'  ["Args"] = {{ {json.dumps(str(SERVER_SCRIPT))}, "stdio", {json.dumps(str(state))} }},\n'
        '  ["AllowedTools"] = { "search_tickets" },\n'
        "}\n"
    )


@pytest.mark.parametrize(
    ("transport", "version"), [("stdio", OF_2025), ("http", NEWEST)], ids=["stdio", "http"]
)
async def test_a_slow_server_does_not_hold_the_first_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str, version: str
) -> None:
    quick, slow, gate = tmp_path / "quick.json", tmp_path / "slow.json", tmp_path / "go"
    quick.write_text("{}", encoding="utf-8")
    slow.write_text(json.dumps({"start_gate": str(gate)}), encoding="utf-8")
    org = tmp_path / "org"
    org.mkdir()
    (org / "plugin.lua").write_text(
        HEADER
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + _server(1, "6f1c0000-0000-4000-8000-000000000001", "tickets", quick)
        + _server(2, LATER_ID, "later", slow),
        encoding="utf-8",
    )
    serve = ("--org", org, "--provider", "OpenAI", "--listing-wait", "5")
    async with gateway_client(transport, version, monkeypatch, *serve) as (client, changes):
        first = tool_names(await client.list_tools())
        assert "tickets__search_tickets" in first, "the quick server's tools are offered"
        assert "later__search_tickets" not in first, "the slow one is still starting"
        gate.write_text("go", encoding="utf-8")
        await changes.next(timeout=90)
        assert {"tickets__search_tickets", "later__search_tickets"} <= tool_names(
            await client.list_tools()
        )
