"""A request that names no caller is decided as a person in no group: a configuration that
`DataGateway.ConfigurationsByGroup` names reaches its group's members only — never a plain
`ChatRuntime`, the gateway's shared `--token`, or `policy explain`/`policy tools` without `--as`.

The group's plugin here brings an MCP server of its own (the real test server over stdio): its
tools exist for the group's members only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from policy import Caller, load_policy
from runtime import Chat, ChatRuntime
from runtime.chat import MemoryChatStore
from tests.mcp_tools.test_mcp import SERVER_SCRIPT, policy_cli, write_org
from tests.mcp_tools.test_mcp_gateway import running_gateway, state
from tests.servers.config_server import plugin_text
from tests.servers.oidc_provider import oidc_provider
from tests.signin.test_gateway_sign_in import _list_tools, _sign_in_settings, _tool_names

__all__ = ["state"]

HELPDESK_ID = "3c7e1a9b-5d2f-4e8a-9b1c-6d0e2f4a8b73"
HELPDESK_SERVER_ID = "4d8f2b0c-6e3a-4f9b-8c2d-7e1f3a5b9c84"
GROUPS = f'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {{ ["finance"] = {{ "{HELPDESK_ID}" }} }}\n'
HELPDESK_TOOL = "helpdesk__search_tickets"
EVERYONES_TOOL = "tickets__search_tickets"


def helpdesk_plugin(folder: Path, state: Path) -> Path:
    """The finance group's configuration: an MCP server nobody else has."""
    folder.mkdir(parents=True)
    body = (
        'CONFIG["MCP_SERVERS"] = {}\n'
        'CONFIG["MCP_SERVERS"][1] = {\n'
        f'  ["Id"] = "{HELPDESK_SERVER_ID}", ["Name"] = "helpdesk", ["Transport"] = "STDIO",\n'
        f'  ["Command"] = {json.dumps(sys.executable)},\n'
        f'  ["Args"] = {{ {json.dumps(str(SERVER_SCRIPT))}, "stdio", {json.dumps(str(state))} }},\n'
        '  ["DeniedTools"] = { "delete_*" },\n'
        "}\n"
    )
    (folder / "plugin.lua").write_text(
        plugin_text(HELPDESK_ID, body, name="Helpdesk"), encoding="utf-8"
    )
    return folder.parent


async def test_a_runtime_without_a_caller_is_not_offered_a_groups_mcp_server(
    tmp_path: Path, state: Path
) -> None:
    org = write_org(tmp_path / "org", state, settings=GROUPS)
    groups = helpdesk_plugin(tmp_path / "groups" / "helpdesk", state)
    policy = load_policy(org=[org, groups])
    assert not policy.errors, policy.errors
    selected = (EVERYONES_TOOL, HELPDESK_TOOL)

    async def offered(runtime: ChatRuntime, caller: Caller | None) -> set[str]:
        person = runtime if caller is None else runtime.for_caller(caller)
        chat = Chat.open("listing", MemoryChatStore(), caller=caller)
        provider = person.policy.provider("OpenAI")
        offer = await person.executable_tools(chat, provider, selected_tool_ids=selected)
        return {definition.id for definition, _ in offer.tools}

    async with ChatRuntime(policy) as runtime:
        assert await offered(runtime, Caller("bob", frozenset({"finance"}))) == set(selected)
        assert await offered(runtime, None) == {EVERYONES_TOOL}, (
            "no caller: a person in no group, not the whole configuration"
        )
        assert HELPDESK_TOOL not in runtime.policy.tool_ids
        assert await offered(runtime, Caller("alice", frozenset({"engineering"}))) == {
            EVERYONES_TOOL
        }


def test_explain_and_tools_without_as_decide_for_a_person_in_no_group(
    tmp_path: Path, state: Path
) -> None:
    org = write_org(tmp_path / "org", state, settings=GROUPS)
    groups = helpdesk_plugin(tmp_path / "groups" / "helpdesk", state)
    sources = ("--org", org, "--org", groups)
    everyone = policy_cli("explain", "--all", *sources, "--format", "json")
    assert everyone.returncode == 0, everyone.stderr
    report = json.loads(everyone.stdout)
    assert HELPDESK_TOOL not in {d["tool"] for d in report["decisions"]}
    assert EVERYONES_TOOL in {d["tool"] for d in report["decisions"]}
    assert report["decided_for"].startswith("decided for a person in no group")
    assert f"Helpdesk ({HELPDESK_ID}" in report["decided_for"]

    table = policy_cli("explain", "--all", *sources)
    assert table.returncode == 0, table.stderr
    first = table.stdout.splitlines()[0]
    assert first.startswith("decided for a person in no group; group-only configurations: ")
    assert "Helpdesk" in first and '"finance"' in first
    assert HELPDESK_TOOL not in table.stdout

    as_finance = policy_cli(
        "explain", "--all", *sources, "--as", "bob", "--groups", "finance", "--format", "json"
    )
    assert as_finance.returncode == 0, as_finance.stderr
    assert HELPDESK_TOOL in {d["tool"] for d in json.loads(as_finance.stdout)["decisions"]}

    single = policy_cli("explain", HELPDESK_TOOL, *sources, "--provider", "OpenAI")
    assert single.returncode != 0 and "unknown tool" in (single.stderr + single.stdout).lower()

    listed = policy_cli("tools", *sources, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    tools = json.loads(listed.stdout)
    assert HELPDESK_TOOL not in {t["id"] for t in tools["tools"]}
    assert tools["decided_for"].startswith("decided for a person in no group")

    checked = policy_cli("check", *sources, "--format", "json")
    assert checked.returncode == 0, checked.stderr


def test_the_shared_token_is_a_person_in_no_group_and_a_signed_in_member_gets_the_groups_tools(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    groups = helpdesk_plugin(tmp_path / "groups" / "helpdesk", state)
    shared = write_org(tmp_path / "shared", state, settings=GROUPS)
    with running_gateway(
        "--org", shared, "--org", groups, "--provider", "OpenAI", "--token", "t0ken"
    ) as (url, _):  # fmt: skip
        tools = _tool_names(_list_tools(url, "t0ken"))
        assert EVERYONES_TOOL in tools and HELPDESK_TOOL not in tools, tools

    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(tmp_path / "org", state, settings=_sign_in_settings(idp.issuer) + GROUPS)
        with running_gateway("--org", org, "--org", groups, "--provider", "OpenAI") as (url, _):
            assert HELPDESK_TOOL in _tool_names(_list_tools(url, idp.token("bob"))), "finance"
            assert HELPDESK_TOOL not in _tool_names(_list_tools(url, idp.token("alice")))
