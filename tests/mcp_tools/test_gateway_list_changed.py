"""Issue 30: clients of `policy mcp serve` are told when what they are offered changes — a
plugin edited, a server's tool no longer matching its pin — whichever protocol version they
speak and whichever transport they came over; the gateway says so in its `initialize`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_tools.gateway_clients import (
    NEWEST,
    OF_2025,
    gateway_client,
    gateway_client_of,
    protocol,
    tool_names,
)
from tests.mcp_tools.test_mcp import calls_received, state, write_org
from tests.mcp_tools.test_mcp_gateway import _fingerprint

__all__ = ["protocol", "state"]

_PINS: dict[str, str] = {}


def _pin(tmp_path: Path, state: Path) -> str:
    """search_tickets' fingerprint as `policy mcp list` shows it (the same for every test)."""
    if not _PINS:
        _PINS["search_tickets"] = _fingerprint(
            write_org(tmp_path / "draft", state), tmp_path / "draft-state", "search_tickets"
        )
    return _PINS["search_tickets"]


async def test_clients_are_told_of_a_plugin_change_and_of_a_pin_mismatch(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch, protocol: tuple[str, str]
) -> None:
    pins = f'  ["Pins"] = {{ ["search_tickets"] = "{_pin(tmp_path, state)}" }},\n'
    org = write_org(tmp_path / "org", state, extra=pins)
    serve = ("--org", org, "--provider", "OpenAI")
    async with gateway_client(*protocol, monkeypatch, *serve) as (client, changes):
        if protocol[1] == OF_2025:
            tools = client.server_capabilities.tools
            assert tools is not None and tools.list_changed, "the gateway says it will tell"
        offered = tool_names(await client.list_tools())
        assert {"tickets__search_tickets", "tickets__add_comment"} <= offered

        write_org(
            tmp_path / "org",
            state,
            extra=pins + '  ["AllowedTools"] = { "*_tickets", "announce_change" },\n',
        )
        await changes.next()
        offered = tool_names(await client.list_tools())
        assert "tickets__add_comment" not in offered, "the edited plugin is in force"
        assert "tickets__search_tickets" in offered

        changed = await client.call_tool("tickets__announce_change", {})
        assert not changed.is_error, changed
        await changes.next()
        offered = tool_names(await client.list_tools())
        assert "tickets__search_tickets" not in offered, "its definition no longer matches the pin"
        assert "tickets__announce_change" in offered
    assert [c["tool"] for c in calls_received(state)] == ["announce_change"]


@pytest.mark.parametrize("version", [NEWEST, OF_2025])
async def test_under_flow_rule_block_a_result_takes_the_conflicting_tool_off_the_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """Issue 24's leftover: once a result brought private data into the gateway's chat, a tool
    that would carry it out is no longer listed (its calls were refused already), and the
    client is told."""
    from runtime.mcp_gateway import McpGateway
    from runtime.session import ChatRuntime
    from tests.e2e._kit import VLLM_ID
    from tests.e2e.test_flow_rule import _AppTool, _policy
    from tests.servers.loopback import running_app

    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    gateway = McpGateway(ChatRuntime(_policy(tmp_path, "BLOCK", hr, page)), VLLM_ID)
    with running_app(gateway.http_app("127.0.0.1"), lifespan=True) as served:
        async with gateway_client_of(served.url("/mcp"), version, monkeypatch) as (client, changes):
            assert {"read_hr", "fetch_page"} <= tool_names(await client.list_tools())
            read = await client.call_tool("read_hr", {})
            assert not read.is_error, read
            await changes.next()
            offered = tool_names(await client.list_tools())
            assert "fetch_page" not in offered and "read_hr" in offered
            refused = await client.call_tool("fetch_page", {})
            assert refused.is_error and "FLOW_CONFLICT" in refused.content[0].text  # type: ignore[union-attr]
    assert page.runs == 0


async def test_an_sdk_that_hands_the_gateway_no_connection_fails_the_request_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The gateway reaches a client's connection through the SDK's private
    `ServerSession._connection` (the SDK 2.3 has no public way). An SDK without it (simulated
    here) fails the request with an error naming the SDK and what is missing, which the client
    reads and the log shows, instead of serving a list it could never tell the client
    changed."""
    from mcp import Client
    from mcp.server.session import ServerSession
    from mcp.shared.exceptions import MCPError

    from runtime.mcp_gateway import McpGateway
    from runtime.session import ChatRuntime
    from tests.e2e._kit import VLLM_ID
    from tests.e2e.test_flow_rule import _AppTool, _policy

    made = ServerSession.__init__

    def without_connection(self: ServerSession, *args: object, **kwargs: object) -> None:
        made(self, *args, **kwargs)  # type: ignore[arg-type]
        self.__dict__["_renamed_connection"] = self.__dict__.pop("_connection")

    runtime = ChatRuntime(_policy(tmp_path, "OFF", _AppTool("read_hr", (), "x")))
    gateway = McpGateway(runtime, VLLM_ID)
    async with Client(gateway.server) as client:
        assert "read_hr" in tool_names(await client.list_tools()), "served with the SDK as is"
        monkeypatch.setattr(ServerSession, "__init__", without_connection)
        with pytest.raises(MCPError) as refused:
            await client.list_tools()
    await runtime.aclose()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "the installed mcp SDK" in logged and "_connection" in logged, logged
    assert refused.value.message.startswith("the installed mcp SDK (")
    assert "AttributeError" not in logged + refused.value.message
