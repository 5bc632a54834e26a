"""A group's plugin may change an MCP server entry everyone has (same id, other connection: here
another server process with its own state); a person of that group is served by their entry as
configured, everyone else by everyone's — two real `mcp`-SDK servers over stdio behind one
signed-in gateway (a real oidc-provider on 127.0.0.1)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.mcp_tools.test_mcp import SERVER_ID, SERVER_SCRIPT, calls_received, write_org
from tests.mcp_tools.test_mcp_gateway import running_gateway, state
from tests.servers.config_server import plugin_text
from tests.servers.oidc_provider import oidc_provider
from tests.signin.test_gateway_sign_in import _sign_in_settings
from tests.signin.test_people_gateway import _call_tool

__all__ = ["state"]

FINANCE_ID = "5e9a3c1d-7f4b-4a2c-9d3e-8f2a4b6c0d95"
MAPPING = f'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {{ ["finance"] = {{ "{FINANCE_ID}" }} }}\n'


def _finances_entry(folder: Path, finance_state: Path) -> Path:
    """The finance group's configuration: everyone's `tickets` entry (same id and name), started
    with another state file — another server."""
    folder.mkdir(parents=True)
    body = (
        'CONFIG["MCP_SERVERS"] = {}\n'
        'CONFIG["MCP_SERVERS"][1] = {\n'
        f'  ["Id"] = "{SERVER_ID}", ["Name"] = "tickets", ["Transport"] = "STDIO",\n'
        f'  ["Command"] = {json.dumps(sys.executable)},\n'
        f'  ["Args"] = {{ {json.dumps(str(SERVER_SCRIPT))}, "stdio", '
        f"{json.dumps(str(finance_state))} }},\n"
        "}\n"
    )
    text = plugin_text(FINANCE_ID, body, name="Finance") + "PRIORITY = 200\n"
    (folder / "plugin.lua").write_text(text, encoding="utf-8")
    return folder.parent


@contextmanager
def _gateway_of_two_entries(
    tmp_path: Path, state: Path, finance_state: Path
) -> Iterator[tuple[str, Callable[[str], str]]]:
    """A signed-in gateway over everyone's `tickets` entry (`state`) and finance's own
    (`finance_state`): its URL and a token for a person."""
    groups = _finances_entry(tmp_path / "groups" / "finance", finance_state)
    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(tmp_path / "org", state, settings=_sign_in_settings(idp.issuer) + MAPPING)
        with running_gateway("--org", org, "--org", groups, "--provider", "OpenAI") as (url, _):
            yield url, idp.token


def test_each_group_calls_its_own_entry_of_an_mcp_server(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    finance_state = tmp_path / "finance-state.json"
    finance_state.write_text("{}", encoding="utf-8")
    with _gateway_of_two_entries(tmp_path, state, finance_state) as (url, token):
        bobs = _call_tool(url, token("bob"), "tickets__search_tickets", {"query": "bob"})
        assert not bobs.get("isError"), bobs
        alices = _call_tool(url, token("alice"), "tickets__search_tickets", {"query": "alice"})
        assert not alices.get("isError"), alices
        again = _call_tool(url, token("bob"), "tickets__search_tickets", {"query": "b2"})
        assert not again.get("isError"), again
    assert [c["arguments"]["query"] for c in calls_received(finance_state)] == ["bob", "b2"], (
        "finance's entry serves finance's member"
    )
    assert [c["arguments"]["query"] for c in calls_received(state)] == ["alice"], (
        "everyone's entry serves everyone else, never finance's"
    )


def test_an_entry_of_its_own_that_lists_a_tool_otherwise_is_not_called(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tools offered come from the listing under the entry all configurations merged name
    (finance's here); everyone's entry, whose server describes search_tickets otherwise, is not
    called with it: what the model was offered is not what that server would run."""
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    finance_state = tmp_path / "finance-state.json"
    finance_state.write_text("{}", encoding="utf-8")
    rewritten = {"descriptions": {"search_tickets": "Sends every ticket elsewhere."}}
    state.write_text(json.dumps(rewritten), encoding="utf-8")
    with _gateway_of_two_entries(tmp_path, state, finance_state) as (url, token):
        refused = _call_tool(url, token("alice"), "tickets__search_tickets", {"query": "a"})
        assert refused.get("isError"), refused
        text = refused["content"][0]["text"]
        assert "lists another definition of it" in text and "refused" in text, text
        bobs = _call_tool(url, token("bob"), "tickets__search_tickets", {"query": "b"})
        assert not bobs.get("isError"), bobs
    assert [c["tool"] for c in calls_received(state)] == [], "nothing ran on the other server"
    assert [c["arguments"]["query"] for c in calls_received(finance_state)] == ["b"]
