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


@pytest.mark.parametrize("approve", [True, False])
async def test_a_session_client_of_the_2025_protocol_is_asked_over_its_back_channel(
    served: tuple[str, EchoTool, EchoTool], approve: bool
) -> None:
    """A client of the handshake-era protocol (a session, `mode="legacy"`) is asked mid-call
    through elicitation/create; the call runs only when its user approves."""
    url, delete, _ = served
    asked: list[str] = []
    async with Client(
        streamable_http_client(url), mode="legacy", elicitation_callback=_answering(approve, asked)
    ) as c:
        assert c.protocol_version.startswith("2025-"), c.protocol_version
        answered = await c.call_tool("delete_ticket", {"text": "7"})
    [question] = asked
    assert question.startswith('Allow delete_ticket {"text": "7"}?')
    if approve:
        assert not answered.is_error, answered
        assert [dict(a) for a in delete.arguments] == [{"text": "7"}]
    else:
        assert answered.is_error and _text(answered) == "The user did not approve this call."
        assert list(delete.arguments) == []


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


def _approve() -> dict[str, Any]:
    return {"toolpolicy-approval": types.ElicitResult(action="accept", content={"approve": True})}


async def _asked(client: Client, arguments: dict[str, Any]) -> types.InputRequiredResult:
    """The gateway's input request for a call, as the stateless protocol delivers it."""
    asked = await client.session.call_tool("delete_ticket", arguments, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult), asked
    assert asked.request_state
    return asked


async def _resent(client: Client, arguments: dict[str, Any], state: str) -> Any:
    """The call sent again with the user's approval and a requestState."""
    return await client.session.call_tool(
        "delete_ticket",
        arguments,
        input_responses=_approve(),
        request_state=state,
        allow_input_required=True,
    )


async def test_a_forged_or_altered_request_state_is_refused_and_the_call_not_run(
    served: tuple[str, EchoTool, EchoTool], tmp_path: Path
) -> None:
    """The requestState comes back from the client (2026-07-28): a state the gateway did not
    seal, one altered by a character, or one sealed for other arguments is refused, so a client
    cannot make up or move an approval; the state as sealed, answered, runs the call."""
    from mcp.shared.exceptions import MCPError

    from runtime.approvals import arguments_sha256
    from runtime.messages import RequestedCall

    url, delete, _ = served
    async with Client(
        streamable_http_client(url), elicitation_callback=_answering(True, [])
    ) as client:
        asked = await _asked(client, {"text": "42"})
        sealed = asked.request_state
        assert sealed is not None
        digest = arguments_sha256(RequestedCall("", "delete_ticket", '{"text": "42"}'))
        assert digest not in sealed, "the client cannot read what the state binds"
        revision = load_policy(org=[tmp_path / "org"]).configuration.revision
        tries = [
            ({"text": "42"}, f"approval:{digest}:{revision}"),  # made up by the client
            ({"text": "42"}, sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]),
            ({"text": "43"}, sealed),  # sealed for other arguments
        ]
        for arguments, state in tries:
            with pytest.raises(MCPError, match="Invalid or expired requestState"):
                await _resent(client, arguments, state)
        assert list(delete.arguments) == [], "nothing ran on a state the gateway did not seal"
        answered = await _resent(client, {"text": "42"}, sealed)
    assert isinstance(answered, types.CallToolResult) and not answered.is_error, answered
    assert [dict(a) for a in delete.arguments] == [{"text": "42"}]
