"""Policy per person and group, from real plugin.lua files: `DataGateway.ConfigurationsByGroup`
gives each group's members its configurations on top of everyone's; an id that names no loaded
configuration is an error in `policy check` and never hands a group's configuration to all."""

from __future__ import annotations

from pathlib import Path

import pytest

from policy import Component, ToolOfferBlockReason, load_policy
from policy.identity import Caller
from policy.lint import check_findings
from policy.people import PeoplePolicies
from tests.servers.config_server import plugin_text

BASE_ID = "0e8b2f4a-3c1d-4e5f-8a9b-0c1d2e3f4a5b"
ENGINEERING_ID = "1f9c3a5b-4d2e-4f6a-9b0c-1d2e3f4a5b6c"
FINANCE_ID = "2a0d4b6c-5e3f-4a7b-8c1d-2e3f4a5b6c7d"
PROVIDER = """CONFIG["LLM_PROVIDERS"] = {}
CONFIG["LLM_PROVIDERS"][1] = {
    ["Id"] = "00000000-0000-0000-0000-0000000000aa",
    ["InstanceName"] = "Local",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "OLLAMA",
    ["Hostname"] = "http://127.0.0.1:11434",
    ["Model"] = { ["Id"] = "llama3.1", ["DisplayName"] = "Llama" },
}
"""


def write_plugin(folder: Path, plugin_id: str, body: str, name: str) -> None:
    folder.mkdir(parents=True)
    (folder / "plugin.lua").write_text(plugin_text(plugin_id, body, name=name), encoding="utf-8")


def organization(tmp_path: Path, groups: str | None = None) -> Path:
    """Everyone: the provider and the groups map; engineering switches read_web_page off,
    finance web_search."""
    org = tmp_path / "org"
    mapping = groups or (
        f'{{ ["engineering"] = {{ "{ENGINEERING_ID}" }}, ["finance"] = {{ "{FINANCE_ID}" }} }}'
    )
    write_plugin(
        org / "base",
        BASE_ID,
        PROVIDER + f'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {mapping}\n',
        "Base",
    )
    write_plugin(
        org / "engineering",
        ENGINEERING_ID,
        'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "read_web_page" }\n',
        "Engineering",
    )
    write_plugin(
        org / "finance",
        FINANCE_ID,
        'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_search" }\n',
        "Finance",
    )
    return org


def offered(policy_view: object, tool_id: str) -> bool:
    from policy import Policy

    assert isinstance(policy_view, Policy)
    provider = policy_view.providers[0]
    decision = policy_view.offer_decision(tool_id, provider, Component.CHAT)
    return decision.reason is not ToolOfferBlockReason.TOOL_SWITCHED_OFF


def test_two_people_in_different_groups_are_decided_with_their_groups_configurations(
    tmp_path: Path,
) -> None:
    policy = load_policy(org=[organization(tmp_path)], executable_tools=False)
    assert not policy.errors, policy.errors
    people = PeoplePolicies(policy)
    alice = people.for_caller(Caller("alice", frozenset({"engineering", "staff"})))
    bob = people.for_caller(Caller("bob", frozenset({"finance"})))
    nobody = people.for_caller(Caller("carol"))
    assert not offered(alice, "read_web_page") and offered(alice, "web_search")
    assert offered(bob, "read_web_page") and not offered(bob, "web_search")
    assert offered(nobody, "read_web_page") and offered(nobody, "web_search")
    assert people.for_caller(Caller("dave", frozenset({"engineering"}))) is alice, (
        "one policy per distinct set of matched groups, merged once"
    )
    assert people.for_caller(None) is nobody, (
        "without a caller: a person in no group (a group's configuration reaches its members only)"
    )
    assert people.for_caller(None) is not policy
    names = {a.name: a for a in people.applied(Caller("alice", frozenset({"engineering"})))}
    assert names["Base"].applies and "everyone" in names["Base"].why
    assert names["Engineering"].applies and 'group "engineering"' in names["Engineering"].why
    assert "base/plugin.lua:" in names["Engineering"].why
    assert not names["Finance"].applies and '"finance"' in names["Finance"].why


def test_an_unknown_configuration_id_is_an_error_naming_the_line(tmp_path: Path) -> None:
    typo = ENGINEERING_ID[:-1] + "d"
    stranger = "9fffffff-ffff-4fff-8fff-ffffffffffff"
    mapping = (
        f'{{ ["engineering"] = {{ "{typo}" }}, ["finance"] = {{ "{FINANCE_ID}" }}, '
        f'["sales"] = {{ "{stranger}" }} }}'
    )
    policy = load_policy(org=[organization(tmp_path, mapping)], executable_tools=False)
    errors = [f for f in check_findings(policy) if f.code == "unknown-configuration-id"]
    assert len(errors) == 2, errors
    by_group = {("engineering" if "engineering" in f.message else "sales"): f for f in errors}
    assert typo in by_group["engineering"].message
    assert f'did you mean "{ENGINEERING_ID}"' in by_group["engineering"].message
    assert by_group["engineering"].location is not None
    assert by_group["engineering"].location.file.endswith("base/plugin.lua")
    assert by_group["engineering"].location.line > 0
    assert "applies to nobody" in by_group["sales"].message
    people = PeoplePolicies(policy)
    outsider = people.for_caller(Caller("carol"))
    assert offered(outsider, "read_web_page"), (
        "the misspelled id is read as the engineering configuration: never given to everyone"
    )
    assert not offered(people.for_caller(Caller("al", frozenset({"engineering"}))), "read_web_page")


@pytest.mark.parametrize(
    "mapping",
    ['{ ["engineering"] = { "not-a-guid" } }', '{ ["engineering"] = "a text" }'],
)
def test_a_malformed_groups_table_rejects_the_plugin_and_fails_closed(
    tmp_path: Path, mapping: str
) -> None:
    policy = load_policy(org=[organization(tmp_path, mapping)], executable_tools=False)
    messages = [f.message for f in policy.errors]
    assert any("DataGateway.ConfigurationsByGroup" in m for m in messages), messages
    assert policy.configuration.fails_closed


SERVER_ID = "3b1e5c7d-6f4a-4b8c-9d2e-3f4a5b6c7d8e"
LATER_ID = "4c2f6d8e-7a5b-4c9d-8e3f-4a5b6c7d8e9f"


def _entry(server_id: str, name: str, url: str) -> str:
    return (
        f'CONFIG["MCP_SERVERS"][#CONFIG["MCP_SERVERS"] + 1] = {{ ["Id"] = "{server_id}", '
        f'["Name"] = "{name}", ["Transport"] = "STREAMABLE_HTTP", ["Url"] = "{url}" }}\n'
    )


def test_a_groups_own_mcp_entry_is_offered_from_its_own_listing(tmp_path: Path) -> None:
    """Engineering's entry of `tickets` wins the whole merge; everyone else keeps everyone's,
    listed on its own (by connection). An entry a later plugin for everyone replaces (`later`)
    is in force for nobody and is not listed."""
    from policy import McpServerListing, McpToolListing

    org = organization(tmp_path)
    base = org / "base" / "plugin.lua"
    base.write_text(
        base.read_text(encoding="utf-8")
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + _entry(SERVER_ID, "tickets", "http://127.0.0.1:1/everyone")
        + _entry(LATER_ID, "later", "http://127.0.0.1:1/replaced"),
        encoding="utf-8",
    )
    engineering = org / "engineering" / "plugin.lua"
    engineering.write_text(
        engineering.read_text(encoding="utf-8")
        + 'CONFIG["MCP_SERVERS"] = {}\n'
        + _entry(SERVER_ID, "tickets", "http://127.0.0.1:1/engineering")
        + _entry(LATER_ID, "later", "http://127.0.0.1:1/engineering-later")
        + "PRIORITY = 200\n",
        encoding="utf-8",
    )
    write_plugin(
        org / "late",
        "5d3a7e9f-8b6c-4dae-9f4a-5b6c7d8e9fa0",
        'CONFIG["MCP_SERVERS"] = {}\n' + _entry(LATER_ID, "later", "http://127.0.0.1:1/late"),
        "Late",
    )
    (org / "late" / "plugin.lua").write_text(
        (org / "late" / "plugin.lua").read_text(encoding="utf-8") + "PRIORITY = 300\n",
        encoding="utf-8",
    )
    whole_listing = McpServerListing(SERVER_ID, "tickets", (McpToolListing("search"),))
    policy = load_policy(org=[org], executable_tools=False, mcp_listings={SERVER_ID: whole_listing})
    assert not policy.errors, policy.errors
    (own,) = PeoplePolicies(policy).own_entries()
    assert own.url == "http://127.0.0.1:1/everyone", "later's entries are replaced for all"

    listed = McpServerListing(SERVER_ID, "tickets", (McpToolListing("archive"),))
    people = PeoplePolicies(policy, {own.connection: listed})
    engineer = people.for_caller(Caller("alice", frozenset({"engineering"})))
    assert _tickets_tools(engineer) == ["tickets__search"], "the whole merge's listing"
    assert _tickets_tools(people.for_caller(None)) == ["tickets__archive"], "its own listing"
    unlisted = PeoplePolicies(policy).for_caller(None)
    assert _tickets_tools(unlisted) == [], "not listed yet: nothing, never the other's tools"
    assert "is listed on its own, live only" in unlisted.mcp_listings[SERVER_ID].status


def _tickets_tools(policy_view: object) -> list[str]:
    from policy import Policy

    assert isinstance(policy_view, Policy)
    return [t.definition.id for t in policy_view.tools if t.definition.id.startswith("tickets__")]
