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
from typing import Any

import pytest

from tests.mcp_tools.test_mcp import (
    SERVER_ID,
    SERVER_SCRIPT,
    calls_received,
    policy_cli,
    write_org,
)
from tests.mcp_tools.test_mcp_gateway import _fingerprint, running_gateway, state
from tests.servers.config_server import plugin_text
from tests.servers.oidc_provider import oidc_provider
from tests.signin.test_gateway_sign_in import _list_tools, _sign_in_settings
from tests.signin.test_people_gateway import _call_tool

__all__ = ["state"]

FINANCE_ID = "5e9a3c1d-7f4b-4a2c-9d3e-8f2a4b6c0d95"
LEGAL_ID = "6fab4d2e-8a5c-4b3d-ae4f-9a3b5c7d1ea6"


def _groups_entry(
    folder: Path, plugin_id: str, state: Path, extra: str = "", priority: int = 200
) -> None:
    """A group's configuration: everyone's `tickets` entry (same id and name), started with
    another state file — another server."""
    folder.mkdir(parents=True)
    body = (
        'CONFIG["MCP_SERVERS"] = {}\n'
        'CONFIG["MCP_SERVERS"][1] = {\n'
        f'  ["Id"] = "{SERVER_ID}", ["Name"] = "tickets", ["Transport"] = "STDIO",\n'
        f'  ["Command"] = {json.dumps(sys.executable)},\n'
        f'  ["Args"] = {{ {json.dumps(str(SERVER_SCRIPT))}, "stdio", '
        f"{json.dumps(str(state))} }},\n"
        f"{extra}"
        "}\n"
    )
    text = plugin_text(plugin_id, body, name=folder.name.title()) + f"PRIORITY = {priority}\n"
    (folder / "plugin.lua").write_text(text, encoding="utf-8")


@contextmanager
def _gateway_of_two_entries(
    tmp_path: Path,
    state: Path,
    finance_state: Path,
    everyones: str = "",
    finances: str = "",
    legal_state: Path | None = None,
    decision_log: Path | None = None,
) -> Iterator[tuple[str, Callable[[str], str]]]:
    """A signed-in gateway over everyone's `tickets` entry (`state`, `everyones` added to it)
    and finance's own (`finance_state`, `finances` added): its URL and a token for a person.
    With `legal_state`, the legal group (nobody signs in as one) has an entry of its own that
    wins the merge of all configurations. With `decision_log`, every decision is recorded there.
    """
    groups = tmp_path / "groups"
    _groups_entry(groups / "finance", FINANCE_ID, finance_state, finances)
    mapping = f'["finance"] = {{ "{FINANCE_ID}" }}'
    if legal_state is not None:
        _groups_entry(groups / "legal", LEGAL_ID, legal_state, priority=300)
        mapping += f', ["legal"] = {{ "{LEGAL_ID}" }}'
    with oidc_provider(tmp_path / "idp") as idp:
        by_group = f'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {{ {mapping} }}\n'
        settings = _sign_in_settings(idp.issuer) + by_group
        org = write_org(tmp_path / "org", state, everyones, settings=settings)
        logged = ("--decision-log", decision_log) if decision_log is not None else ()
        arguments = ("--org", org, "--org", groups, "--provider", "OpenAI", *logged)
        with running_gateway(*arguments) as (url, _):
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


def _offered(url: str, token: str) -> dict[str, dict[str, Any]]:
    """The tools a person is offered, by name."""
    response = _list_tools(url, token)
    assert response.status_code == 200, (response.status_code, response.text)
    lines = [x for x in response.text.splitlines() if x.startswith("data:")]
    answer = json.loads(lines[0].removeprefix("data:")) if lines else response.json()
    return {t["name"]: t for t in answer["result"]["tools"]}


def test_each_group_is_offered_what_its_own_entry_lists(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Legal's entry wins the merge of all configurations; finance's server has a tool no other
    has, everyone's describes search_tickets otherwise: each person is offered their own
    entry's tools as that server lists them, and their calls reach that server only."""
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    finance_state, legal_state = tmp_path / "finance-state.json", tmp_path / "legal-state.json"
    finance_state.write_text(json.dumps({"extra_tools": 1}), encoding="utf-8")
    legal_state.write_text("{}", encoding="utf-8")
    rewritten = {"descriptions": {"search_tickets": "Searches every ticket there is."}}
    state.write_text(json.dumps(rewritten), encoding="utf-8")
    with _gateway_of_two_entries(tmp_path, state, finance_state, legal_state=legal_state) as (
        url,
        token,
    ):
        alices, bobs = _offered(url, token("alice")), _offered(url, token("bob"))
        assert "tickets__lookup_000" in bobs, "finance's server lists it"
        assert "tickets__lookup_000" not in alices, "everyone's server does not list it"
        described = alices["tickets__search_tickets"]["description"]
        assert described == "Searches every ticket there is.", "as everyone's server lists it"
        assert bobs["tickets__search_tickets"]["description"] != described
        refused = _call_tool(url, token("alice"), "tickets__lookup_000", {"key": "a"})
        assert refused.get("isError"), "not offered to everyone, so not called"
        assert "does not know a tool 'tickets__lookup_000'" in refused["content"][0]["text"]
        for person in ("alice", "bob"):
            found = _call_tool(url, token(person), "tickets__search_tickets", {"query": person})
            assert not found.get("isError"), found
    assert [c["arguments"] for c in calls_received(state)] == [{"query": "alice"}]
    assert [c["arguments"] for c in calls_received(finance_state)] == [{"query": "bob"}]
    assert calls_received(legal_state) == [], "legal's entry serves legal's members only"


def test_pins_are_checked_against_each_entrys_own_listing(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both entries pin search_tickets to the definition finance's server lists; everyone's
    server describes it otherwise, so only finance's people are offered it. Finance's entry
    requires pins, so its unpinned tools are kept from finance's people only."""
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    finance_state = tmp_path / "finance-state.json"
    finance_state.write_text("{}", encoding="utf-8")
    draft = write_org(tmp_path / "draft", finance_state)
    pin = _fingerprint(draft, tmp_path / "draft-state", "search_tickets")
    rewritten = {"descriptions": {"search_tickets": "Searches every ticket there is."}}
    state.write_text(json.dumps(rewritten), encoding="utf-8")
    pins = f'  ["Pins"] = {{ ["search_tickets"] = "{pin}" }},\n'
    finances = pins + '  ["RequirePins"] = true,\n'
    with _gateway_of_two_entries(tmp_path, state, finance_state, pins, finances) as (url, token):
        alices, bobs = _offered(url, token("alice")), _offered(url, token("bob"))
    assert "tickets__search_tickets" not in alices, "its definition is not the pinned one"
    assert "tickets__add_comment" in alices, "everyone's entry does not require pins"
    assert "tickets__search_tickets" in bobs, "finance's server lists it as pinned"
    assert "tickets__add_comment" not in bobs, "finance's entry requires pins"


def _org_of_two_groups(tmp_path: Path, state: Path) -> tuple[Path, Path, Path]:
    """Everyone's `tickets` entry, finance's own (its server lists one tool more) and legal's
    (it wins the merge of all configurations): the org folder, the groups folder and finance's
    server's state file."""
    finance_state, legal_state = tmp_path / "finance-state.json", tmp_path / "legal-state.json"
    finance_state.write_text(json.dumps({"extra_tools": 1}), encoding="utf-8")
    legal_state.write_text("{}", encoding="utf-8")
    groups = tmp_path / "groups"
    _groups_entry(groups / "finance", FINANCE_ID, finance_state)
    _groups_entry(groups / "legal", LEGAL_ID, legal_state, priority=300)
    mapping = f'["finance"] = {{ "{FINANCE_ID}" }}, ["legal"] = {{ "{LEGAL_ID}" }}'
    by_group = f'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {{ {mapping} }}\n'
    return write_org(tmp_path / "org", state, settings=by_group), groups, finance_state


def _simulated_for_bob(served: Any, tool: str) -> Any:
    import httpx

    asked = {"provider_kind": "OPEN_AI", "tool": tool, "as_subject": "bob", "groups": "finance"}
    return httpx.post(served.url("/api/simulate"), json=asked, timeout=30)


def test_policy_explain_as_a_group_member_lists_their_own_entry(
    tmp_path: Path, state: Path
) -> None:
    """`policy explain --as` lists a group's own entry as the gateway would (live, on its own):
    the tool only finance's server has is offered to finance's member even though legal's entry
    wins the merge of all configurations; without listing (`--offline`) the entry shows as not
    listed, saying why, never with everyone's tools."""
    org, groups, _ = _org_of_two_groups(tmp_path, state)
    common = ("--org", org, "--org", groups, "--state-dir", tmp_path / "state", "--format", "json")
    as_bob = ("--as", "bob", "--groups", "finance")
    bobs = policy_cli("explain", "tickets__lookup_000", *common, *as_bob)
    assert bobs.returncode == 0, bobs.stderr
    assert json.loads(bobs.stdout)["offered"] is True, "finance's server lists it"
    everyones = policy_cli("explain", "tickets__lookup_000", *common)
    assert everyones.returncode == 2, "everyone's server does not list it"
    assert "unknown tool 'tickets__lookup_000'" in everyones.stdout
    offline = policy_cli("explain", "--all", *common, "--offline")
    assert offline.returncode == 0, offline.stderr
    (row,) = json.loads(offline.stdout)["mcp_servers"]
    assert row["tools"] == [] and "listed on its own, live only" in row["error"], row


def test_policy_tools_lists_everyones_own_entry_when_a_groups_entry_wins_the_merge(
    tmp_path: Path, state: Path
) -> None:
    """`policy tools` decides for a person in no group (it names nobody; its note says so).
    Legal's entry wins the merge of all configurations, so everyone's entry is one of their
    own: it is listed live on its own, as the gateway lists it, and its tools are the catalog's
    rows — never legal's server's, never finance's; `--offline` shows it as not listed, saying
    why, rather than with legal's tools."""
    org, groups, _ = _org_of_two_groups(tmp_path, state)
    (tmp_path / "legal-state.json").write_text(json.dumps({"extra_tools": 2}), encoding="utf-8")
    common = ("--org", org, "--org", groups, "--state-dir", tmp_path / "state")
    listed = policy_cli("tools", *common, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert document["decided_for"].startswith("decided for a person in no group")
    ids = {t["id"] for t in document["tools"]}
    assert {"tickets__search_tickets", "tickets__add_comment"} <= ids, ids
    assert not any(i.startswith("tickets__lookup_") for i in ids), "legal's or finance's tools"
    (row,) = document["mcp_servers"]
    assert row["listing"] == "listed live" and row["source"] == "live", row
    assert "tickets__search_tickets" in row["tools"], row
    assert not any(t.startswith("tickets__lookup_") for t in row["tools"]), row
    assert calls_received(state) == [], "listed, not called"
    table = policy_cli("tools", *common)
    assert table.returncode == 0, table.stderr
    assert "decided for a person in no group" in table.stdout
    assert "tickets__search_tickets" in table.stdout and "tickets__lookup_" not in table.stdout
    offline = policy_cli("tools", *common, "--offline", "--format", "json")
    assert offline.returncode == 0, offline.stderr
    offline_document = json.loads(offline.stdout)
    assert not any(t["id"].startswith("tickets__") for t in offline_document["tools"])
    (row,) = offline_document["mcp_servers"]
    assert row["tools"] == [] and "listed on its own, live only" in row["error"], row


def test_the_web_simulate_form_lists_a_groups_own_entry_as_explain_does(
    tmp_path: Path, state: Path
) -> None:
    """`policy serve` lists each group's own entry when it loads the policy (as `policy explain
    --as` does, never per request). Legal's entry wins the merge of all configurations, yet the
    simulate form for finance's member decides the tool only finance's server has, and for a
    person in no group everyone's server's tools, never finance's; the pages a signed-in
    finance member reads (their decisions) list that tool too."""
    import httpx

    from policy import Caller
    from policy.web import ConfigurationPaths
    from tests.servers.loopback import running_app
    from tests.webui.conftest import web_app

    org, groups, _ = _org_of_two_groups(tmp_path, state)
    paths = ConfigurationPaths(org=(org, groups), state_dir=tmp_path / "state")

    def simulated(served: Any, tool: str) -> httpx.Response:
        asked = {"provider_kind": "OPEN_AI", "tool": tool}
        return httpx.post(served.url("/api/simulate"), json=asked)

    with running_app(web_app(paths)) as served:
        bobs = _simulated_for_bob(served, "tickets__lookup_000")
        everyones = simulated(served, "tickets__search_tickets")
        not_everyones = simulated(served, "tickets__lookup_000")
    as_bob = web_app(paths, caller_of=lambda _: Caller("bob", frozenset({"finance"})))
    with running_app(as_bob) as served:
        bobs_page = httpx.get(served.url("/api/decisions"))
    assert bobs_page.status_code == 200, bobs_page.text
    assert "tickets__lookup_000" in bobs_page.json()["tools"], "bob's own page lists it too"
    assert bobs.status_code == 200, bobs.text
    (decided,) = bobs.json()["decisions"]
    assert decided["tool"] == "tickets__lookup_000", "finance's server lists it"
    assert everyones.status_code == 200, everyones.text
    assert not_everyones.status_code == 400, "everyone's server does not list it"
    assert "unknown tool 'tickets__lookup_000'" in not_everyones.json()["error"]


def test_policy_replay_decides_a_persons_records_with_their_groups_own_entry(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finance's member called the tool only finance's server has; `policy replay` under the
    same configuration lists finance's entry as the gateway did, so nothing flips (listed as
    the policy's entry only, that call would show as now blocked)."""
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    finance_state, legal_state = tmp_path / "finance-state.json", tmp_path / "legal-state.json"
    finance_state.write_text(json.dumps({"extra_tools": 1}), encoding="utf-8")
    legal_state.write_text("{}", encoding="utf-8")
    log = tmp_path / "decisions.jsonl"
    with _gateway_of_two_entries(
        tmp_path, state, finance_state, legal_state=legal_state, decision_log=log
    ) as (url, token):
        called = _call_tool(url, token("bob"), "tickets__lookup_000", {"key": "a"})
        assert "MCP server tickets answered" in called["content"][0]["text"], "offered, called"
    org, groups = tmp_path / "org", tmp_path / "groups"
    replayed = policy_cli("replay", log, "--org", org, "--org", groups, "--format", "json")
    assert replayed.returncode == 0, replayed.stderr
    document = json.loads(replayed.stdout)
    assert document["decisions"] >= 1
    assert document["calls_now_blocked"] == [], "finance's entry lists the tool bob called"
    assert document["changed"] == []


def test_the_web_page_lists_a_groups_own_entry_after_refused_reloads(
    tmp_path: Path, state: Path
) -> None:
    """Reloads refused one after another (an organization plugin that does not load, with no
    last-known-good copy) keep the policy in force, and with it its groups' own entries as
    listed: the page asked only afterwards still decides finance's own tool."""
    import httpx

    from policy.web import ConfigurationPaths
    from tests.servers.loopback import running_app
    from tests.webui.conftest import web_app

    org, groups, _ = _org_of_two_groups(tmp_path, state)
    paths = ConfigurationPaths(org=(org, groups))
    legal = groups / "legal" / "plugin.lua"
    with running_app(web_app(paths)) as served:
        for attempt in range(5):
            legal.write_text(f'error("broken, attempt {attempt}")\n', encoding="utf-8")
            answer = httpx.post(served.url("/api/reload"), timeout=60).json()
            assert answer["swapped"] is False, answer
        bobs = _simulated_for_bob(served, "tickets__lookup_000")
    assert bobs.status_code == 200, bobs.text
    (decided,) = bobs.json()["decisions"]
    assert decided["tool"] == "tickets__lookup_000", "finance's server lists it"


def test_the_web_page_follows_a_groups_own_entry_as_its_server_lists_it_later(
    tmp_path: Path, state: Path
) -> None:
    """A group's own entry is listed again after the listing TTL, as the gateway lists it, not
    only when the policy is loaded: a tool finance's server lists later is decided on the page
    without a reload, and one it stops listing is no longer."""
    import time

    from policy.web import ConfigurationPaths
    from runtime.cli_serve import ServedPolicy
    from tests.servers.loopback import running_app
    from tests.webui.conftest import web_app

    org, groups, finance_state = _org_of_two_groups(tmp_path, state)
    paths = ConfigurationPaths(org=(org, groups))
    served_policy = ServedPolicy(paths, listing_ttl_seconds=0.2, poll_seconds=0.1)
    app = web_app(paths, watch=True, served=served_policy)

    def wait_for(tool: str, status: int) -> None:
        deadline = time.monotonic() + 60
        while (answer := _simulated_for_bob(served, tool)).status_code != status:
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.1)

    with running_app(app, lifespan=True) as served:
        assert _simulated_for_bob(served, "tickets__lookup_000").status_code == 200
        assert _simulated_for_bob(served, "tickets__lookup_001").status_code == 400
        finance_state.write_text(json.dumps({"extra_tools": 2}), encoding="utf-8")
        wait_for("tickets__lookup_001", 200)
        finance_state.write_text(json.dumps({"extra_tools": 0}), encoding="utf-8")
        wait_for("tickets__lookup_000", 400)


async def test_policy_mcp_serve_offline_asks_no_groups_own_entry(
    tmp_path: Path, state: Path
) -> None:
    """`policy mcp serve --offline` asks no server for its tools: legal's entry (the one in force
    for the whole policy) is read from the cache, and the entries of everyone and of finance,
    which are never cached, stay not listed — their servers are never started, however long a
    request would wait for them (`--listing-wait 60`)."""
    from mcp import Client, StdioServerParameters

    org, groups, finance_state = _org_of_two_groups(tmp_path, state)
    state_dir = tmp_path / "state"
    assert policy_cli("tools", "--org", org, "--state-dir", state_dir).returncode == 0
    started = [Path(f"{s}.pid") for s in (state, finance_state, tmp_path / "legal-state.json")]
    for pid_file in started:
        pid_file.unlink(missing_ok=True)
    gateway = StdioServerParameters(
        command=sys.executable,
        args=["-m", "policy.cli", "mcp", "serve", "--org", str(org), "--org", str(groups),
              "--state-dir", str(state_dir), "--provider", "OpenAI", "--offline",
              "--listing-wait", "60"],
        cwd=str(Path(__file__).resolve().parents[2]),
    )  # fmt: skip
    async with Client(gateway, cache=None) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
    assert not any(name.startswith("tickets__") for name in listed), "not listed offline"
    assert [p.name for p in started if p.exists()] == [], "--offline started an entry's server"
