"""Flow rules: each tool's effects and where they come from, `DataTools.FlowRule`, and which tool
is in conflict with what a chat holds (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policy import (
    ChatHoldings,
    Effect,
    EffectsOrigin,
    FlowRule,
    Holding,
    ToolEffects,
    flow_conflict,
    load_policy,
)
from policy.configuration import ProviderConfig, Severity
from policy.definitions import ToolDefinition, ToolFunction
from policy.flow import UNDECLARED, annotation_effects, parse_held_effects
from policy.mcp import McpServerListing, McpToolListing
from policy.tools import DefinedTool
from policy.vocabulary import ProviderKind, ToolOfferBlockReason
from tests.policy.test_plugins import line_of, write_plugin

U, P, S, C = (
    Effect.UNTRUSTED_CONTENT,
    Effect.PRIVATE_DATA,
    Effect.SENDS_OUT,
    Effect.CHANGES_STATE,
)
SERVER_ID = "6f1c7f2e-51a8-4b55-9d1c-0c0a6b3a9e01"


def _app_tool(tool_id: str, effects: tuple[str, ...] | None) -> DefinedTool:
    data: dict[str, object] = {
        "id": tool_id,
        "implementation_key": f"app:{tool_id}",
        "function": ToolFunction(name=tool_id, description_for_llm="An app tool."),
    }
    if effects is not None:
        data["effects"] = effects
    return DefinedTool(ToolDefinition.model_validate(data))


def _held(*effects: Effect) -> ChatHoldings:
    return ChatHoldings(
        tuple(Holding(e, "web_search", "c1", "https://example.org/") for e in effects)
    )


def test_the_builtins_declare_their_effects_in_their_rooms(tmp_path: Path) -> None:
    policy = load_policy(local=[write_plugin(tmp_path / "p")])
    expected = {
        "web_search": {U, S},
        "read_web_page": {U, S},
        "search_confluence": {P},
        "semantic_search": {P},
    }
    for tool_id, effects in expected.items():
        resolved = policy.registry.effects(tool_id)
        assert resolved.effects == effects, tool_id
        assert resolved.origin is EffectsOrigin.DEFINITION


def test_an_app_definition_declares_effects_and_one_without_declares_all_four(
    tmp_path: Path,
) -> None:
    tools = (_app_tool("pay_invoice", ("PRIVATE_DATA", "CHANGES_STATE")), _app_tool("bare", None))
    policy = load_policy(local=[write_plugin(tmp_path / "p")], extra_tools=tools)
    assert policy.registry.effects("pay_invoice") == ToolEffects(
        frozenset({P, C}), EffectsOrigin.DEFINITION
    )
    bare = policy.registry.effects("bare")
    assert bare.declares_nothing and bare.effects == frozenset(Effect)


def test_a_misspelled_effect_in_a_definition_is_refused_naming_the_four() -> None:
    with pytest.raises(ValueError, match="'SEND_OUT' is not an effect; expected one of"):
        _app_tool("x", ("SEND_OUT",))


def test_mcp_annotations_are_read_the_conservative_way() -> None:
    assert annotation_effects({}).effects == frozenset(Effect)
    assert annotation_effects({"readOnlyHint": True, "openWorldHint": False}).effects == {P}
    assert annotation_effects({"readOnlyHint": True, "openWorldHint": True}).effects == {U, S}
    assert annotation_effects({"openWorldHint": False}).effects == {P, C}
    read = annotation_effects({"readOnlyHint": True})
    assert read.origin is EffectsOrigin.MCP_ANNOTATIONS
    assert "readOnlyHint=true, destructiveHint=absent, openWorldHint=absent" in read.detail


def _mcp_policy(tmp_path: Path, settings: str, effects: str = "") -> tuple[object, Path]:
    server = (
        f'CONFIG["MCP_SERVERS"] = {{ {{ ["Id"] = "{SERVER_ID}", ["Name"] = "tickets", '
        '["Transport"] = "STDIO", ["Command"] = "ticket-mcp"' + effects + " } }"
    )
    path = write_plugin(tmp_path / "org", settings=settings, extra=server)
    listing = McpServerListing(
        SERVER_ID,
        "tickets",
        (
            McpToolListing("search_tickets", annotations={"readOnlyHint": True}),
            McpToolListing("close_ticket"),
        ),
    )
    return load_policy(org=[path], mcp_listings={SERVER_ID: listing}), path


def test_an_mcp_tools_effects_come_from_annotations_then_the_servers_effects_then_tool_effects(
    tmp_path: Path,
) -> None:
    policy, path = _mcp_policy(
        tmp_path,
        'CONFIG["SETTINGS"]["DataTools.ToolEffects"] = { ["tickets__close_ticket"] = '
        '{ "private_data", "CHANGES_STATE" } }',
        ', ["Effects"] = { ["search_tickets"] = { "PRIVATE_DATA" } }',
    )
    registry = policy.registry  # type: ignore[attr-defined]
    search = registry.effects("tickets__search_tickets")
    assert search.effects == {P} and search.origin is EffectsOrigin.PLUGIN
    assert 'Effects["search_tickets"]' in search.detail
    close = registry.effects("tickets__close_ticket")
    assert close.effects == {P, C} and close.origin is EffectsOrigin.PLUGIN
    assert close.where is not None
    assert close.where.location.line == line_of(path, "DataTools.ToolEffects")
    assert str(path) in close.described()


def test_a_misspelled_effect_in_tool_effects_is_an_error_at_its_line_and_reads_as_all_four(
    tmp_path: Path,
) -> None:
    path = write_plugin(
        tmp_path / "org",
        settings='CONFIG["SETTINGS"]["DataTools.ToolEffects"] = { ["web_search"] = { "SEND_OUT" } }',
    )
    policy = load_policy(org=[path])
    errors = [f for f in policy.errors if "DataTools.ToolEffects" in f.message]
    assert errors and errors[0].severity is Severity.ERROR
    assert '"SEND_OUT" is not one of UNTRUSTED_CONTENT' in errors[0].message
    assert errors[0].location is not None
    assert errors[0].location.line == line_of(path, "DataTools.ToolEffects")
    assert policy.registry.effects("web_search").effects == frozenset(Effect)


def test_a_misspelled_effect_in_an_mcp_servers_effects_skips_the_server(tmp_path: Path) -> None:
    policy, _path = _mcp_policy(
        tmp_path, "", ', ["Effects"] = { ["search_tickets"] = { "PRIVAT" } }'
    )
    errors = [f for f in policy.errors if "Effects" in f.message]  # type: ignore[attr-defined]
    assert errors and '"PRIVAT" is not one of' in errors[0].message
    assert "tickets__search_tickets" not in policy.tool_ids  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("written", "in_force"),
    [(None, FlowRule.OFF), ('"block"', FlowRule.BLOCK), ('"APPROVE"', FlowRule.APPROVE)],
)
def test_the_flow_rule_is_off_unless_set(
    tmp_path: Path, written: str | None, in_force: FlowRule
) -> None:
    settings = f'CONFIG["SETTINGS"]["DataTools.FlowRule"] = {written}' if written else ""
    policy = load_policy(org=[write_plugin(tmp_path / "org", settings=settings)])
    assert policy.registry.flow_rule is in_force
    assert policy.errors == ()


def test_a_misspelled_flow_rule_is_an_error_at_its_line_and_reads_as_block(tmp_path: Path) -> None:
    path = write_plugin(
        tmp_path / "org", settings='CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOK"'
    )
    policy = load_policy(org=[path])
    assert policy.registry.flow_rule is FlowRule.BLOCK
    (error,) = [f for f in policy.errors if "DataTools.FlowRule" in f.message]
    assert "read as BLOCK" in error.message and error.location is not None
    assert error.location.line == line_of(path, "DataTools.FlowRule")


def test_a_tool_is_in_conflict_when_holdings_and_effects_cover_all_three() -> None:
    web = ToolEffects(frozenset({U, S}), EffectsOrigin.DEFINITION)
    wiki = ToolEffects(frozenset({P}), EffectsOrigin.DEFINITION)
    assert flow_conflict("web_search", web, ChatHoldings()) is None
    assert flow_conflict("web_search", web, _held(U)) is None  # a link after a public page
    conflict = flow_conflict("web_search", web, _held(P))
    assert conflict is not None and conflict.held == _held(P).holdings
    assert "PRIVATE_DATA from https://example.org/ (web_search, call c1)" in conflict.message
    assert flow_conflict("search_confluence", wiki, _held(U, P)) is None  # nothing outward
    assert flow_conflict("bare", UNDECLARED, ChatHoldings()) is not None


def test_the_registry_answers_conflicts_only_while_a_rule_is_on(tmp_path: Path) -> None:
    off = load_policy(org=[write_plugin(tmp_path / "off")])
    assert off.registry.flow_conflict("web_search", _held(P)) is None
    on = load_policy(
        org=[
            write_plugin(
                tmp_path / "on", settings='CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"'
            )
        ]
    )
    assert on.registry.flow_conflict("web_search", _held(P)) is not None
    assert on.registry.flow_conflict("web_search", _held(U)) is None
    assert on.registry.flow_conflict("no_such_tool", ChatHoldings()) is not None


def test_held_effects_are_read_from_a_comma_separated_list() -> None:
    assert parse_held_effects("untrusted_content, PRIVATE_DATA") == (U, P)
    with pytest.raises(ValueError, match='"SENDS_OUT" is not an effect a chat can hold'):
        parse_held_effects("SENDS_OUT")


LOCAL = ProviderConfig("local", "Local", ProviderKind.SELF_HOSTED, "llama-3.3-70b")


def _block_policy(tmp_path: Path, rule: str = "BLOCK") -> Any:
    settings = f'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "{rule}"'
    tools = (_app_tool("bare", None),)
    return load_policy(org=[write_plugin(tmp_path / rule, settings=settings)], extra_tools=tools)


def test_flow_rule_is_the_check_right_after_provider_confidence() -> None:
    from policy.decide.order import CHECKS

    names = [check.name for check in CHECKS]
    assert names.index("FLOW_RULE") == names.index("PROVIDER_CONFIDENCE_TOO_LOW") + 1


def test_under_block_a_tool_in_conflict_is_not_offered_with_its_evidence(tmp_path: Path) -> None:
    registry = _block_policy(tmp_path).registry
    free = registry.offer_decision("read_web_page", LOCAL, holdings=_held(U))
    assert next(c for c in free.checks if c.name == "FLOW_RULE").passed
    decision = registry.offer_decision("read_web_page", LOCAL, holdings=_held(P))
    assert decision.reason is ToolOfferBlockReason.FLOW_CONFLICT
    check = next(c for c in decision.checks if c.name == "FLOW_RULE")
    assert not check.passed and "DataTools.FlowRule is BLOCK" in check.detail
    shown = {e.key: e.value for e in check.evidence}
    assert shown["effects"] == "UNTRUSTED_CONTENT, SENDS_OUT (definition)"
    assert shown["chat holds"] == "PRIVATE_DATA from https://example.org/ (web_search, call c1)"


def test_under_block_a_tool_that_declares_nothing_is_never_offered(tmp_path: Path) -> None:
    decision = _block_policy(tmp_path).registry.offer_decision("bare", LOCAL)
    assert decision.reason is ToolOfferBlockReason.FLOW_CONFLICT
    assert "declares nothing" in decision.message


def test_under_approve_and_off_a_tool_in_conflict_stays_offered(tmp_path: Path) -> None:
    approve = _block_policy(tmp_path, "APPROVE").registry.offer_decision(
        "read_web_page", LOCAL, holdings=_held(P)
    )
    check = next(c for c in approve.checks if c.name == "FLOW_RULE")
    assert check.passed and "each call needs a person's approval" in check.detail
    off = _block_policy(tmp_path, "OFF").registry.offer_decision("bare", LOCAL)
    assert next(c for c in off.checks if c.name == "FLOW_RULE").passed


_TOOLS_FILE = """
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool


def _tool(tool_id, effects):
    data = {"id": tool_id, "implementation_key": tool_id,
            "function": ToolFunction(name=tool_id, description_for_llm="An app tool.")}
    if effects is not None:
        data["effects"] = effects
    return DefinedTool(ToolDefinition.model_validate(data))


def create_tools():
    return (_tool("mailer", None), _tool("clock", ()), _tool("payer", None))
"""


@pytest.mark.parametrize("rule", ["BLOCK", "APPROVE", "OFF"])
def test_policy_check_names_each_tool_that_declares_nothing_while_a_flow_rule_is_on(
    tmp_path: Path, rule: str
) -> None:
    from tests.servers.cli_runner import run_policy

    tools = tmp_path / "app_tools.py"
    tools.write_text(_TOOLS_FILE, encoding="utf-8")
    path = write_plugin(
        tmp_path / "org",
        settings=f'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "{rule}"\n'
        'CONFIG["SETTINGS"]["DataTools.ToolEffects"] = { ["payer"] = { "PRIVATE_DATA" } }',
    )
    done = run_policy(["check", "--org", path.parent, "--tools-file", tools], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    named = [line for line in done.stdout.splitlines() if "[undeclared-effects]" in line]
    if rule == "OFF":
        assert named == []
        return
    (mailer,) = named  # clock declares none, payer's come from plugin.lua
    assert mailer.startswith(f"{path}:{line_of(path, 'DataTools.FlowRule')}: warning")
    assert "mailer declares no effects" in mailer
    assert ("is never offered" if rule == "BLOCK" else "every call needs approval") in mailer


_EXPLAIN = ["--provider-kind", "SELF_HOSTED", "--model", "llama-3.3-70b"]


def test_explain_decides_with_what_the_chat_holds_as_a_what_if(tmp_path: Path) -> None:
    from tests.servers.cli_runner import run_policy

    path = write_plugin(tmp_path / "org", 'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"')
    args = ["explain", "read_web_page", "--org", path.parent, *_EXPLAIN]
    free = run_policy([*args, "--chat-holds", "UNTRUSTED_CONTENT"], cwd=tmp_path)
    assert free.returncode == 0 and "[pass] FLOW_RULE" in free.stdout
    held = run_policy([*args, "--chat-holds", "untrusted_content,PRIVATE_DATA"], cwd=tmp_path)
    assert "NOT OFFERED: FLOW_CONFLICT" in held.stdout
    assert "chat holds = PRIVATE_DATA from what-if" in held.stdout
    assert f"DataTools.FlowRule = BLOCK — organization, Test plugin ({path}:" in held.stdout
    wrong = run_policy([*args, "--chat-holds", "SENDS_OUT"], cwd=tmp_path)
    assert wrong.returncode == 2
    assert '"SENDS_OUT" is not an effect a chat can hold' in wrong.stderr


def test_explain_reads_what_a_stored_chat_holds_with_what_brought_it(tmp_path: Path) -> None:
    from runtime.chat import Chat, ChatHolding, HoldingKind, SqliteChatStore
    from tests.servers.cli_runner import run_policy

    database = tmp_path / "chats.sqlite3"
    chat = Chat.open("c1", SqliteChatStore(database))
    chat.add_holdings([ChatHolding(HoldingKind.PRIVATE_DATA, "search_confluence", "wiki", "c7")])
    path = write_plugin(tmp_path / "org", 'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"')
    args = ["explain", "read_web_page", "--org", path.parent, *_EXPLAIN, "--chat-db", database]
    done = run_policy([*args, "--chat-id", "c1", "--format", "json"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["reason"] == "FLOW_CONFLICT"
    (check,) = [c for c in document["checks"] if c["name"] == "FLOW_RULE"]
    assert {e["key"]: e["value"] for e in check["evidence"]}["chat holds"] == (
        "PRIVATE_DATA from wiki (search_confluence, call c7)"
    )
    missing = run_policy([*args, "--chat-id", "nope"], cwd=tmp_path)
    assert missing.returncode == 2 and "no chat nope in the chat store" in missing.stderr

    matrix = ["explain", "--all", "--org", path.parent, *_EXPLAIN, "--chat-db", database]
    table = run_policy([*matrix, "--chat-id", "c1"], cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith("Tools offered in CHAT if the chat held PRIVATE_DATA:")
    rows = {line.split()[0]: line.split()[-1] for line in table.stdout.splitlines() if "_" in line}
    assert rows["read_web_page"] == "FLOW_CONFLICT"


def test_policy_check_names_a_misspelled_tool_id_in_tool_effects_as_an_error(
    tmp_path: Path,
) -> None:
    from tests.servers.cli_runner import run_policy

    path = write_plugin(
        tmp_path / "org",
        'CONFIG["SETTINGS"]["DataTools.ToolEffects"] = { ["read_web_pag"] = { "SENDS_OUT" } }',
    )
    done = run_policy(["check", "--org", path.parent], cwd=tmp_path)
    assert done.returncode == 1
    assert f"{path}:{line_of(path, 'ToolEffects')}: error [unknown-tool-id]" in done.stdout
    assert 'did you mean "read_web_page"?' in done.stdout
