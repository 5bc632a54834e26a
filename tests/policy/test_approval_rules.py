"""Which tools' calls wait for a person's approval, read from real plugin.lua files: the
`DataTools.RequireApprovalToolIds` ids and globs of every plugin added up, and an MCP server's
`RequireApproval` globs on its own tool names; the reason names the key and file:line."""

from __future__ import annotations

from pathlib import Path

from policy import load_policy
from policy.approvals import ApprovalRules
from tests.servers.config_server import plugin_text

_SERVER = """CONFIG["MCP_SERVERS"] = {}
CONFIG["MCP_SERVERS"][1] = {
    ["Id"] = "6f1c7f2e-51a8-4b55-9d1c-0c0a6b3a9e01",
    ["Name"] = "tickets",
    ["Transport"] = "STDIO",
    ["Command"] = "ticket-mcp",
    ["RequireApproval"] = { "delete_*" },
}"""


def _write(folder: Path, plugin_id: str, settings: str, name: str) -> None:
    folder.mkdir(parents=True)
    (folder / "plugin.lua").write_text(plugin_text(plugin_id, settings, name=name))


def test_ids_globs_and_mcp_server_globs_need_approval_with_where_they_were_written(
    tmp_path: Path,
) -> None:
    org = tmp_path / "org"
    _write(
        org / "a",
        "0e8b2f4a-3c1d-4e5f-8a9b-0c1d2e3f4a5b",
        'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "pay_*" }\n' + _SERVER,
        "A",
    )
    _write(
        org / "b",
        "1f9c3a5b-4d2e-4f6a-9b0c-1d2e3f4a5b6c",
        'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "send_mail" }',
        "B",
    )
    policy = load_policy(org=[org], use_entry_points=False, tools=[])
    assert not policy.errors, policy.errors
    rules = ApprovalRules.of(policy.configuration)
    paid = rules.reason("pay_invoice")
    assert paid is not None and "DataTools.RequireApprovalToolIds" in paid and "'pay_*'" in paid
    assert "a/plugin.lua" in paid
    assert rules.reason("send_mail") is not None, "entries of every plugin add up"
    deleted = rules.reason("tickets__delete_ticket")
    assert deleted is not None and 'RequireApproval of MCP server "tickets"' in deleted
    assert "'delete_*'" in deleted
    assert rules.reason("tickets__search_tickets") is None
    assert rules.reason("other__delete_ticket") is None, "a server's globs cover its tools only"
    assert rules.reason("send_mail_later") is None, "an id matches whole"


def test_a_misspelled_require_approval_field_skips_the_server(tmp_path: Path) -> None:
    org = tmp_path / "org"
    _write(
        org / "a",
        "0e8b2f4a-3c1d-4e5f-8a9b-0c1d2e3f4a5b",
        _SERVER.replace('["RequireApproval"]', '["RequireApprovals"]'),
        "A",
    )
    policy = load_policy(org=[org], use_entry_points=False, tools=[])
    assert any("RequireApproval" in str(e) for e in policy.errors), policy.errors
    assert not policy.configuration.mcp_servers, "never a server with its approvals dropped"


def test_a_misspelled_tool_id_that_should_need_approval_fails_check(tmp_path: Path) -> None:
    """An id that names no tool matches nothing, so the tool it meant would run unapproved:
    `policy check` calls it an error at file:line with the near miss; a glob is not an id."""
    from policy.lint import check_findings

    org = tmp_path / "org"
    _write(
        org / "a",
        "0e8b2f4a-3c1d-4e5f-8a9b-0c1d2e3f4a5b",
        'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "web_serach", "read_*" }',
        "A",
    )
    policy = load_policy(org=[org], use_entry_points=True)
    findings = [f for f in check_findings(policy) if f.code == "unknown-tool-id"]
    assert len(findings) == 1, findings
    (finding,) = findings
    assert finding.severity.name == "ERROR"
    assert "DataTools.RequireApprovalToolIds" in finding.message
    assert "'web_serach'" in finding.message and "web_search" in finding.message
    assert finding.location is not None and "a/plugin.lua" in str(finding.location)


def test_a_misspelled_id_is_read_as_the_tool_it_meant_until_fixed(tmp_path: Path) -> None:
    """Meanwhile the strict reading holds: the tool the typo most likely meant still waits for
    approval (a typo never lets calls run unapproved), and the reason says what was written."""
    org = tmp_path / "org"
    _write(
        org / "a",
        "0e8b2f4a-3c1d-4e5f-8a9b-0c1d2e3f4a5b",
        'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "web_serach" }',
        "A",
    )
    policy = load_policy(org=[org], use_entry_points=True)
    rules = ApprovalRules.of(policy.configuration, (), policy.tool_ids)
    reason = rules.reason("web_search")
    assert reason is not None
    assert "'web_serach' (read as 'web_search' until fixed)" in reason
    assert rules.reason("read_web_page") is None
    assert ApprovalRules.of(policy.configuration).reason("web_search") is None, (
        "without the known tools nothing is guessed"
    )


def _org(tmp_path: Path, text: str) -> Path:
    """An organization folder with one plugin "A" of `text`."""
    _write(tmp_path / "org" / "a", "0e8b2f4a-3c1d-4e5f-8a9b-0c1d2e3f4a5b", text, "A")
    return tmp_path / "org"


def _listed_tickets(tmp_path: Path, settings: str, require: str) -> object:
    """A policy whose MCP server "tickets" lists search_tickets and delete_ticket."""
    from policy.mcp import McpServerListing, McpToolListing

    org = _org(tmp_path, settings + "\n" + _SERVER.replace('{ "delete_*" }', require))
    listing = McpServerListing(
        _SERVER_ID,
        "tickets",
        (McpToolListing("search_tickets"), McpToolListing("delete_ticket")),
    )
    return load_policy(org=[org], mcp_listings={_SERVER_ID: listing}, tools=[])


_SERVER_ID = "6f1c7f2e-51a8-4b55-9d1c-0c0a6b3a9e01"


def _approval_findings(policy: object) -> list[object]:
    from policy.lint import check_findings

    return [
        f
        for f in check_findings(policy)  # type: ignore[arg-type]
        if f.code in ("approval-matches-nothing", "unchecked-tool-id")
    ]


def test_a_glob_that_matches_no_tool_fails_check(tmp_path: Path) -> None:
    """A RequireApprovalToolIds glob that matches no known tool leaves the calls it meant
    unapproved: an error at its line; a glob that matches a tool is fine."""
    policy = _listed_tickets(
        tmp_path,
        'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = '
        '{ "tickets__delet_*", "tickets__delete_*" }',
        '{ "delete_*" }',
    )
    [finding] = _approval_findings(policy)
    assert finding.severity.name == "ERROR"  # type: ignore[attr-defined]
    message = finding.message  # type: ignore[attr-defined]
    assert "DataTools.RequireApprovalToolIds names 'tickets__delet_*', which matches no tool" in (
        message
    )
    assert "tickets__delete_ticket" in message, "the known tools are named"
    assert "a/plugin.lua" in str(finding.location)  # type: ignore[attr-defined]


def test_a_glob_is_unchecked_while_a_server_it_could_match_is_not_listed(tmp_path: Path) -> None:
    org = _org(
        tmp_path,
        'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "tickets__remove_*" }\n'
        + _SERVER,
    )
    policy = load_policy(org=[org], tools=[])
    [finding] = _approval_findings(policy)
    assert finding.severity.name == "WARNING"  # type: ignore[attr-defined]
    assert "not checked against MCP server tickets (not listed)" in finding.message  # type: ignore[attr-defined]


def test_an_mcp_require_approval_entry_not_in_the_listing_fails_check_and_is_read_strictly(
    tmp_path: Path,
) -> None:
    """An MCP server's RequireApproval name its listing does not have is an error naming the
    near miss and the listed tools; until it is fixed the runtime reads it as the tool it
    meant, so delete_ticket still waits for approval. A glob matching none is an error too."""
    policy = _listed_tickets(tmp_path, "", '{ "delete_tickets", "remove_*" }')
    findings = _approval_findings(policy)
    assert len(findings) == 2, findings
    assert all(f.severity.name == "ERROR" for f in findings)  # type: ignore[attr-defined]
    named, globbed = (f.message for f in findings)  # type: ignore[attr-defined]
    assert "RequireApproval of MCP server \"tickets\" names 'delete_tickets'" in named
    assert 'did you mean "delete_ticket"? Until it is fixed it is read as delete_ticket' in named
    assert "it lists: search_tickets, delete_ticket" in named
    assert "'remove_*', which matches none of its tools" in globbed
    rules = ApprovalRules.of(policy.configuration, (), policy.tool_ids)  # type: ignore[attr-defined]
    reason = rules.reason("tickets__delete_ticket")
    assert reason is not None
    assert "'delete_tickets' (read as 'delete_ticket' until fixed)" in reason
    assert rules.reason("tickets__search_tickets") is None


def test_an_mcp_require_approval_entry_is_not_checked_without_a_listing(tmp_path: Path) -> None:
    org = _org(tmp_path, _SERVER.replace('{ "delete_*" }', '{ "delete_tickets" }'))
    assert _approval_findings(load_policy(org=[org], tools=[])) == []
