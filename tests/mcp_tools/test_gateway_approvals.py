"""`policy mcp serve` and a call that needs a person's approval: the gateway cannot ask the
client's user yet, so it refuses the call (fail closed) with a message that says approval is
required and cannot be asked for; the tool never runs. Calls of other tools run as before."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from policy import load_policy
from runtime.mcp_gateway import McpGateway
from runtime.session import ChatRuntime
from tests.mcp_tools.test_mcp import HEADER
from tests.runtime._scripted_adapter import EchoTool
from tests.servers.loopback import running_app


async def test_a_call_that_needs_approval_is_refused_and_not_run(tmp_path: Path) -> None:
    org = tmp_path / "org"
    org.mkdir()
    rule = 'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "delete_*" }\n'
    (org / "plugin.lua").write_text(HEADER + rule, encoding="utf-8")
    delete, echo = EchoTool("delete_ticket"), EchoTool("echo")
    runtime = ChatRuntime(load_policy(org=[org], extra_tools=[delete, echo]))
    gateway = McpGateway(runtime, "OpenAI")
    with running_app(gateway.http_app("127.0.0.1"), lifespan=True) as served:
        async with Client(streamable_http_client(served.url("/mcp"))) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert {"delete_ticket", "echo"} <= listed, "a tool that needs approval stays offered"
            refused = await client.call_tool("delete_ticket", {"text": "42"})
            assert refused.is_error
            text = refused.content[0].text  # type: ignore[union-attr]
            assert "needs a person's approval" in text and "cannot ask" in text
            assert "DataTools.RequireApprovalToolIds" in text and "'delete_*'" in text
            answered = await client.call_tool("echo", {"text": "hi"})
            assert not answered.is_error
    assert list(delete.arguments) == [], "nothing runs before it is approved"
    assert [dict(a) for a in echo.arguments] == [{"text": "hi"}]
