"""One gateway, many people, with real tokens: people signed in by the organization's identity
provider (a real oidc-provider on 127.0.0.1) are decided with their groups' configurations
(`DataGateway.ConfigurationsByGroup`) and counted against their own call limits, over stateless
HTTP, from one `policy mcp serve`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from tests.mcp_tools.test_mcp import policy_cli, write_org
from tests.mcp_tools.test_mcp_gateway import running_gateway, state
from tests.servers.config_server import plugin_text
from tests.servers.oidc_provider import oidc_provider
from tests.signin.test_gateway_sign_in import MODERN, _list_tools, _sign_in_settings, _tool_names

__all__ = ["state"]

FINANCE_ID = "8f5b9a1c-0d64-4e7f-9a2b-1c0d9e8f7a65"
PEOPLE_SETTINGS = (
    f'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {{ ["finance"] = {{ "{FINANCE_ID}" }} }}\n'
    'CONFIG["SETTINGS"]["DataGateway.CallLimits"] = { ["tickets__search_tickets"] = "1/hour" }\n'
)


def _call_tool(url: str, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    meta = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
        "Authorization": f"Bearer {token}",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    response = httpx.post(url, json=body, headers=headers, timeout=30)
    assert response.status_code == 200, (response.status_code, response.text)
    for line in response.text.splitlines():
        if line.startswith("data:"):
            return dict(json.loads(line.removeprefix("data:"))["result"])
    return dict(response.json()["result"])


def test_two_signed_in_people_get_their_groups_tools_and_their_own_call_limits(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    finance = tmp_path / "groups" / "finance"
    finance.mkdir(parents=True)
    (finance / "plugin.lua").write_text(
        plugin_text(
            FINANCE_ID,
            'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "tickets__add_comment" }\n',
            name="Finance",
        ),
        encoding="utf-8",
    )
    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(
            tmp_path / "org", state, settings=_sign_in_settings(idp.issuer) + PEOPLE_SETTINGS
        )
        decisions = tmp_path / "decisions.jsonl"
        with running_gateway(
            "--org", org, "--org", finance.parent, "--provider", "OpenAI",
            "--decision-log", decisions,
        ) as (url, log):  # fmt: skip
            alice, bob = idp.token("alice"), idp.token("bob")
            alices_tools = _tool_names(_list_tools(url, alice))
            bobs_tools = _tool_names(_list_tools(url, bob))
            assert "tickets__add_comment" in alices_tools, "engineering: everyone's tools"
            assert "tickets__add_comment" not in bobs_tools, "finance switches it off"
            assert (
                "tickets__search_tickets" in alices_tools
                and "tickets__search_tickets" in bobs_tools
            )

            first = _call_tool(url, alice, "tickets__search_tickets", {"query": "printer"})
            assert not first.get("isError"), first
            second = _call_tool(url, alice, "tickets__search_tickets", {"query": "printer"})
            assert second.get("isError"), "Alice's one call an hour is used"
            assert "The next call is possible in" in second["content"][0]["text"]
            bobs = _call_tool(url, bob, "tickets__search_tickets", {"query": "printer"})
            assert not bobs.get("isError"), "Bob's count is his own"
        assert alice not in "".join(log) and bob not in "".join(log)
    records = [json.loads(line) for line in decisions.read_text(encoding="utf-8").splitlines()]
    people = [(r["subject"], r["groups"], r["calls"][0]["status"]) for r in records]
    assert people == [
        (_hashed("alice"), ["engineering"], "SUCCESS"),
        (_hashed("alice"), ["engineering"], "BLOCKED"),
        (_hashed("bob"), ["finance"], "SUCCESS"),
    ], "each call's record names who made it (a hash of the sub) and their groups"


def _hashed(subject: str) -> str:
    import hashlib

    return "sha256:" + hashlib.sha256(subject.encode()).hexdigest()


def test_each_signed_in_person_has_their_own_user_settings(tmp_path: Path, state: Path) -> None:
    from policy import UserSettingsFolder

    folder = tmp_path / "people-settings"
    folder.mkdir()
    UserSettingsFolder(folder).path_for("bob").write_text("tools:\n  enabled: false\n")
    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(tmp_path / "org", state, settings=_sign_in_settings(idp.issuer))
        with running_gateway(
            "--org", org, "--provider", "OpenAI", "--people-settings", folder
        ) as (url, _):  # fmt: skip
            assert "tickets__search_tickets" in _tool_names(_list_tools(url, idp.token("alice")))
            assert _tool_names(_list_tools(url, idp.token("bob"))) == [], "Bob switched off"
    wrong = policy_cli("mcp", "serve", "--org", org, "--people-settings", tmp_path / "nowhere")
    assert wrong.returncode == 2 and "neither a folder" in wrong.stderr


async def test_one_persons_approval_never_runs_another_persons_call(
    tmp_path: Path, state: Path
) -> None:
    """In the stateless protocol an approval comes back as a sealed requestState with the
    user's answer: the state is bound to the person it was asked of (the SDK binds it to the
    signed-in principal), so Bob sending Alice's approved state is refused and nothing runs;
    Alice's own runs the call."""
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    from tests.mcp_tools.test_mcp import calls_received

    rule = 'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "tickets__add_comment" }\n'
    arguments = {"ticket_id": "7", "text": "done"}
    approve = {
        "toolpolicy-approval": types.ElicitResult(action="accept", content={"approve": True})
    }

    async def no_back_channel(context: Any, params: Any) -> types.ElicitResult:
        raise AssertionError("the stateless protocol asks through an input request")

    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(tmp_path / "org", state, settings=_sign_in_settings(idp.issuer) + rule)
        with running_gateway("--org", org, "--provider", "OpenAI") as (url, _):
            tokens = {person: idp.token(person) for person in ("alice", "bob")}
            clients = {
                person: httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
                for person, token in tokens.items()
            }
            async with (
                Client(
                    streamable_http_client(url, http_client=clients["alice"]),
                    elicitation_callback=no_back_channel,
                ) as alice,
                Client(
                    streamable_http_client(url, http_client=clients["bob"]),
                    elicitation_callback=no_back_channel,
                ) as bob,
            ):
                asked = await alice.session.call_tool(
                    "tickets__add_comment", arguments, allow_input_required=True
                )
                assert isinstance(asked, types.InputRequiredResult), asked
                with pytest.raises(MCPError, match="Invalid or expired requestState"):
                    await bob.session.call_tool(
                        "tickets__add_comment",
                        arguments,
                        input_responses=approve,
                        request_state=asked.request_state,
                        allow_input_required=True,
                    )
                assert calls_received(state) == [], "nothing ran on Alice's approval for Bob"
                answered = await alice.session.call_tool(
                    "tickets__add_comment",
                    arguments,
                    input_responses=approve,
                    request_state=asked.request_state,
                    allow_input_required=True,
                )
            for client in clients.values():
                await client.aclose()
    assert isinstance(answered, types.CallToolResult) and not answered.is_error, answered
    assert [c["tool"] for c in calls_received(state)] == ["add_comment"]


def test_one_persons_result_does_not_tighten_another_persons_chat(
    tmp_path: Path, state: Path
) -> None:
    """Under a flow rule, what a result brought into Alice's chat keeps a state-changing tool
    from her; Bob, on the same gateway over stateless HTTP, keeps his own chat and the tool."""
    flow = (
        'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"\n'
        'CONFIG["SETTINGS"]["DataTools.ToolEffects"] = {\n'
        '  ["tickets__inject"] = { "UNTRUSTED_CONTENT", "PRIVATE_DATA" },\n'
        '  ["tickets__add_comment"] = { "CHANGES_STATE" },\n'
        "}\n"
    )
    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(tmp_path / "org", state, settings=_sign_in_settings(idp.issuer) + flow)
        with running_gateway("--org", org, "--provider", "OpenAI") as (url, _):
            alice, bob = idp.token("alice"), idp.token("bob")
            assert "tickets__add_comment" in _tool_names(_list_tools(url, alice))
            brought = _call_tool(url, alice, "tickets__inject", {})
            assert not brought.get("isError"), brought
            assert "tickets__add_comment" not in _tool_names(_list_tools(url, alice))
            assert "tickets__add_comment" in _tool_names(_list_tools(url, bob)), (
                "Alice's result did not reach Bob's chat"
            )
            comment = {"ticket_id": "7", "text": "done"}
            assert not _call_tool(url, bob, "tickets__add_comment", comment).get("isError")
            assert _call_tool(url, alice, "tickets__add_comment", comment).get("isError")
