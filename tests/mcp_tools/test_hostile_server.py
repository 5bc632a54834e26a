"""An MCP server as the adversary: a real server written with the `mcp` SDK
(`tests/servers/hostile_mcp_server.py`) next to the well-behaved ticket server, governed by
`policy mcp serve` and the runtime as an organization would run them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests.mcp_tools.test_mcp import HEADER, SERVER_ID, SERVER_SCRIPT, _lua

HOSTILE_SCRIPT = Path(__file__).resolve().parents[1] / "servers" / "hostile_mcp_server.py"
HOSTILE_ID = "6f1c0000-0000-4000-8000-00000000bad1"
ROOT = Path(__file__).resolve().parents[2]


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
    (within a TimeoutSeconds of 600); calls to the ticket server's tools are answered meanwhile,
    from the listing in hand."""
    from mcp import Client, StdioServerParameters

    tickets, hostile = states
    org = two_servers(tmp_path / "org", tickets, hostile, '  ["TimeoutSeconds"] = 600,\n')
    gateway = StdioServerParameters(
        command=sys.executable,
        args=["-m", "policy.cli", "mcp", "serve", "--org", str(org), "--provider", "OpenAI"],
        cwd=str(ROOT),
    )
    async with Client(gateway, cache=None) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        assert {"hostile__announce", "tickets__add_comment"} <= listed, listed
        await session.call_tool("hostile__announce", {})
        answered = 0
        while "hanging" not in listing_requests(hostile) or answered < 3:
            with anyio.fail_after(120):  # a stalled call waits out the 600 s of the other server
                done = await session.call_tool(
                    "tickets__add_comment", {"ticket_id": "1", "text": "x"}
                )
            assert not done.is_error, done
            answered += "hanging" in listing_requests(hostile)
            await anyio.sleep(0.05)
        assert listing_requests(hostile)[-1] == "hanging", "the hostile listing is still unanswered"
    assert (
        json.loads(Path(f"{tickets}.calls").read_text().splitlines()[-1])["tool"] == "add_comment"
    )
