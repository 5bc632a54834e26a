"""`policy mcp list` shows what changed in a pinned tool word by word (issue 30 item 7): a real
`mcp`-SDK server whose description changes by one word, as mcp-server-time's does when it runs
in another time zone."""

from __future__ import annotations

import json
from pathlib import Path

from policy.mcp import McpToolListing, definition_word_diff
from tests.mcp_tools.test_mcp import policy_cli, write_org

BERLIN = "Gets the current time. Times are local to Europe/Berlin unless a zone is named."
NEW_YORK = "Gets the current time. Times are local to America/New_York unless a zone is named."


def _pins(org: Path, state_dir: Path) -> str:
    pinned = policy_cli("mcp", "pin", "--org", org, "--state-dir", state_dir)
    assert pinned.returncode == 0, pinned.stderr
    return pinned.stdout[pinned.stdout.index('["Pins"]') :].rstrip().removesuffix(",")


def test_a_changed_pin_is_shown_word_by_word(tmp_path: Path) -> None:
    state = tmp_path / "server-state.json"
    state.write_text(json.dumps({"descriptions": {"search_tickets": BERLIN}}), encoding="utf-8")
    state_dir = tmp_path / "state"
    org = write_org(tmp_path / "org", state)
    org = write_org(tmp_path / "org", state, extra=f"  {_pins(org, state_dir)},\n")

    state.write_text(json.dumps({"descriptions": {"search_tickets": NEW_YORK}}), encoding="utf-8")
    table = policy_cli("mcp", "list", "--org", org, "--state-dir", state_dir)
    assert "tickets__search_tickets changed since it was pinned (sha256:" in table.stdout
    assert (
        "  description: … Times are local to [-Europe/Berlin-] {+America/New_York+} unless a zone is …"
        in table.stdout
    ), table.stdout
    assert "inputSchema" not in table.stdout, "only what changed is shown"

    listed = policy_cli(
        "mcp", "list", "--org", org, "--state-dir", state_dir, "--format", "json"
    )  # fmt: skip
    tools = {t["name"]: t for t in json.loads(listed.stdout)["servers"][0]["tools"]}
    change = tools["search_tickets"]["change"]
    assert change["pinned"].startswith("sha256:") and tools["search_tickets"]["pin"] == "changed"
    assert change["fields"] == {
        "description": "… Times are local to [-Europe/Berlin-] {+America/New_York+} unless a zone is …"
    }
    assert tools["add_comment"]["change"] is None, "an approved tool has no change"


def test_a_pinned_definition_never_listed_here_is_named(tmp_path: Path) -> None:
    state = tmp_path / "server-state.json"
    state.write_text("{}", encoding="utf-8")
    org = write_org(tmp_path / "org", state)
    org = write_org(tmp_path / "org", state, extra=f"  {_pins(org, tmp_path / 'pinned-from')},\n")
    state.write_text(json.dumps({"descriptions": {"search_tickets": NEW_YORK}}), encoding="utf-8")

    table = policy_cli("mcp", "list", "--org", org, "--state-dir", tmp_path / "elsewhere")
    assert "tickets__search_tickets changed since it was pinned" in table.stdout
    assert "(the pinned definition was never listed here, so no diff can be shown)" in table.stdout


def test_a_schema_change_is_shown_in_its_words() -> None:
    before = McpToolListing("t", input_schema={"properties": {"tz": {"default": "UTC"}}})
    after = McpToolListing("t", input_schema={"properties": {"tz": {"default": "CET"}}})
    assert definition_word_diff(before, after) == {
        "inputSchema": '{"properties": {"tz": {"default": [-"UTC"}}}-] {+"CET"}}}+}'
    }
    spaced = McpToolListing("t", description="one  two")
    assert definition_word_diff(McpToolListing("t", description="one two"), spaced) == {
        "description": "(only white space changed)"
    }


def test_mcp_list_imports_no_tool_it_does_not_run(tmp_path: Path) -> None:
    """`policy mcp list` runs no tool: it decides with the built-in tools' policy halves and
    never imports their runtime modules or the chat store (issue 31 item 5: its cold start is
    stated against importing the `mcp` SDK, which it cannot avoid)."""
    from tests.servers.cli_probe import probe_cli

    state = tmp_path / "server-state.json"
    state.write_text("{}", encoding="utf-8")
    org = write_org(tmp_path / "org", state)
    report = probe_cli(["mcp", "list", "--org", str(org), "--format", "json"])
    assert json.loads(report.stdout)["servers"][0]["status"] == "connected", report.stderr
    unused = {m for m in report.modules if m.startswith(("runtime.tools", "runtime.chat"))}
    assert not unused, sorted(unused)
    assert "sqlite3" not in report.modules
