"""`policy mcp serve` and a call that needs a person's approval: an SDK client that declares
elicitation is asked (MCP elicitation; in the stateless protocol an input request the client
answers by sending the call again) and the call runs only when its user approves; a client that
cannot ask is refused with a message saying so. The tool never runs unapproved."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from policy import load_policy
from runtime.mcp_gateway import McpGateway
from runtime.session import ChatRuntime
from tests.mcp_tools.test_mcp import HEADER
from tests.runtime._scripted_adapter import EchoTool
from tests.servers.loopback import running_app

RULE = 'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "delete_*" }\n'


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, EchoTool, EchoTool]]:
    org = tmp_path / "org"
    org.mkdir()
    (org / "plugin.lua").write_text(HEADER + RULE, encoding="utf-8")
    delete, echo = EchoTool("delete_ticket"), EchoTool("echo")
    runtime = ChatRuntime(load_policy(org=[org], extra_tools=[delete, echo]))
    with running_app(McpGateway(runtime, "OpenAI").http_app("127.0.0.1"), lifespan=True) as app:
        yield app.url("/mcp"), delete, echo


def _answering(approve: bool, asked: list[str]) -> Any:
    async def answer(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": approve})

    return answer


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_a_client_that_can_ask_runs_the_call_once_its_user_approves(
    served: tuple[str, EchoTool, EchoTool],
) -> None:
    url, delete, _ = served
    asked: list[str] = []
    async with Client(
        streamable_http_client(url), elicitation_callback=_answering(True, asked)
    ) as c:
        answered = await c.call_tool("delete_ticket", {"text": "42"})
    assert not answered.is_error, answered
    [question] = asked
    assert question.startswith('Allow delete_ticket {"text": "42"}?')
    assert "DataTools.RequireApprovalToolIds" in question
    assert [dict(a) for a in delete.arguments] == [{"text": "42"}]


async def test_a_declined_call_is_refused_and_not_run(
    served: tuple[str, EchoTool, EchoTool],
) -> None:
    url, delete, _ = served
    asked: list[str] = []
    async with Client(
        streamable_http_client(url), elicitation_callback=_answering(False, asked)
    ) as c:
        refused = await c.call_tool("delete_ticket", {"text": "42"})
    assert refused.is_error and _text(refused) == "The user did not approve this call."
    assert len(asked) == 1 and list(delete.arguments) == []


async def test_a_client_that_cannot_ask_is_refused_saying_so(
    served: tuple[str, EchoTool, EchoTool],
) -> None:
    url, delete, echo = served
    async with Client(streamable_http_client(url)) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert {"delete_ticket", "echo"} <= listed, "a tool that needs approval stays offered"
        refused = await client.call_tool("delete_ticket", {"text": "42"})
        answered = await client.call_tool("echo", {"text": "hi"})
    assert refused.is_error
    assert "needs a person's approval" in _text(refused)
    assert "this client cannot ask its user for it" in _text(refused)
    assert "'delete_*'" in _text(refused)
    assert not answered.is_error
    assert list(delete.arguments) == [], "nothing runs before it is approved"
    assert [dict(a) for a in echo.arguments] == [{"text": "hi"}]
