"""`policy serve`: every page and its JSON twin over real HTTP on loopback; escaping, secrets, CSP,
the token and the Host check, the status details, the settings filters, the simulate form and the
diff page with their error paths, reload (by hand and when a file changes), and the CLI: its
refusal of a non-loopback host without a token and `--port 0` printing the port it bound."""

from __future__ import annotations

import base64
import html
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from policy import load_policy
from policy.config_sources import DeliveryStatus, write_statuses
from policy.explain import (
    build_matrix,
    decision_document,
    diff_document,
    diff_policies,
    kind_provider,
    matrix_report,
    ordered_tool_ids,
    settings_document,
)
from policy.lint import check_findings
from policy.secrets import encrypt
from policy.vocabulary import Component, ProviderKind
from policy.web import CONTENT_SECURITY_POLICY, ConfigurationPaths
from tests.servers.cli_runner import run_policy
from tests.servers.loopback import RunningApp, running_app
from tests.webui.conftest import (
    HOSTILE,
    HOSTILE_KEY,
    SECRET,
    fetched_in_force,
    hostile_organization,
    web_app,
)

ESCAPED_HOSTILE = "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;"
DISABLE_WEB_SEARCH = """
ID = "5d1c8f0e-2a47-4b8e-9d61-0f4c3b2a1e99"
NAME = "Candidate: no web search"
DESCRIPTION = "Switches web_search off."
VERSION = "0.1.0"
TYPE = "CONFIGURATION"
AUTHORS = { "IT" }
SUPPORT_CONTACT = "it@example.org"
SOURCE_URL = "https://git.example.org/ai-config"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = 500
CONFIG = {}
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_search" }
"""
BAD_MAX_RESULTS = "tools:\n  settings:\n    web_search:\n      maxResults: 'abc'\n"
WAIT_SECONDS = 30


@pytest.fixture
def organization(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return hostile_organization(tmp_path, monkeypatch)


@pytest.fixture
def paths(organization: Path) -> ConfigurationPaths:
    return ConfigurationPaths(org=(organization,))


@pytest.fixture
def served(paths: ConfigurationPaths) -> Iterator[RunningApp]:
    with running_app(web_app(paths)) as app:
        yield app


def _vllm(organization: Path) -> str:
    return next(p.id for p in load_policy([organization]).providers if p.model.startswith("Qwen"))


def test_every_page_answers_with_the_csp_and_no_secret(served: RunningApp) -> None:
    pages = ("/", "/settings", "/settings?unset=1", "/decisions", "/simulate", "/diff")
    for path in (*pages, "/decisions?component=APP_SETTINGS"):
        response = httpx.get(served.url(path))
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "script-src" not in CONTENT_SECURITY_POLICY  # default-src 'none' forbids scripts
        assert SECRET not in response.text, path
    for path in ("/api/status", "/api/settings?unset=1", "/api/decisions"):
        response = httpx.get(served.url(path))
        assert response.status_code == 200, path
        assert SECRET not in response.text, path
    simulated = httpx.post(served.url("/api/simulate"), json={"provider_kind": "OPEN_AI"})
    assert simulated.status_code == 200 and SECRET not in simulated.text


def test_hostile_plugin_text_is_shown_as_text(served: RunningApp) -> None:
    for path in ("/", "/decisions", "/simulate"):
        page = httpx.get(served.url(path)).text
        assert "<script>" not in page and "<img src=x" not in page, path
        assert ESCAPED_HOSTILE in page, path
    assert httpx.get(served.url("/api/status")).json()["providers"][0]["name"] == HOSTILE


def test_json_twins_are_the_cli_contracts(served: RunningApp, organization: Path) -> None:
    policy = load_policy([organization])

    tool_ids = httpx.get(served.url("/api/decisions")).json()["tools"]
    matrix = build_matrix(policy.registry, tool_ids, policy.providers, Component.CHAT)
    assert httpx.get(served.url("/api/decisions")).json() == matrix_report(policy, matrix)
    settings = httpx.get(served.url("/api/settings?unset=1")).json()["tools"]
    assert settings == [settings_document(policy, t) for t in sorted(policy.tool_ids)]
    masked = {
        row["field"]: row["value"]
        for tool in settings
        if tool["tool"] == "web_search"
        for row in tool["settings"]
    }
    assert masked["tavily.apiKey"] == "*****"
    provider = policy.providers[1]
    answer = httpx.get(
        served.url("/api/decision"),
        params={"tool": "web_search", "provider": provider.id, "component": "CHAT"},
    ).json()
    expected = decision_document(policy.offer_decision("web_search", provider))
    assert answer == expected


def test_a_matrix_cell_links_to_its_checks_with_evidence(served: RunningApp) -> None:
    page = httpx.get(served.url("/decisions")).text
    start = page.index('href="/decision?') + len('href="')
    link = page[start : page.index('"', start)].replace("&amp;", "&")
    decision = httpx.get(served.url(link))
    assert decision.status_code == 200
    assert '<ol class="checks">' in decision.text
    assert 'class="evidence"' in decision.text


def test_unknown_names_are_404_with_what_was_wrong(served: RunningApp) -> None:
    response = httpx.get(served.url("/api/decision"), params={"tool": "nope", "provider": "x"})
    assert response.status_code == 404
    assert response.json() == {"error": "unknown tool 'nope'"}
    response = httpx.get(served.url("/decisions"), params={"component": "<b>BOGUS</b>"})
    assert response.status_code == 404
    assert "CHAT" in response.text and "<b>" not in response.text
    response = httpx.get(served.url("/api/settings"), params={"tool": "nope"})
    assert response.status_code == 404 and response.json() == {"error": "unknown tool 'nope'"}


# --- status -------------------------------------------------------------------------------------


def test_status_names_every_skipped_provider_and_server_entry(
    tmp_path: Path, organization: Path
) -> None:
    department = organization / "department" / "plugin.lua"
    department.write_text(
        department.read_text() + '\nCONFIG["LLM_PROVIDERS"] = {}\nCONFIG["LLM_PROVIDERS"][1] = {\n'
        '  ["Id"] = "33333333-3333-4333-8333-333333333333", ["InstanceName"] = "Team <b>Llama</b>",\n'
        '  ["UsedLLMProvider"] = "SELF_HOSTED", ["Host"] = "LLAMACPP",\n'
        '  ["Hostname"] = "http://127.0.0.1:8080",\n'
        '  ["Model"] = { ["Id"] = "llama", ["DisplayName"] = "Llama" } }\n'
        'CONFIG["MCP_SERVERS"] = { { ["Id"] = "44444444-4444-4444-8444-444444444444",\n'
        '  ["Name"] = "tickets", ["Transport"] = "HTTP", ["Url"] = "http://127.0.0.1:9/mcp" } }\n'
    )
    lines = department.read_text().splitlines()
    provider_line = next(i for i, t in enumerate(lines, 1) if '"Team <b>Llama</b>"' in t) - 1
    paths = ConfigurationPaths(org=(organization,), user_settings=tmp_path / "absent.yaml")
    with running_app(web_app(paths)) as served:
        status = httpx.get(served.url("/api/status")).json()
        page = httpx.get(served.url("/")).text
    shown = [(e["section"], e["name"], e["file"], e["line"]) for e in status["skipped_entries"]]
    assert shown[0] == ("LLM_PROVIDERS", "Team <b>Llama</b>", str(department), provider_line)
    assert shown[1][:3] == ("MCP_SERVERS", "tickets", str(department))
    assert 'Host is "LLAMACPP"' in status["skipped_entries"][0]["reason"]
    assert "did you mean STREAMABLE_HTTP?" in status["skipped_entries"][1]["reason"]
    assert "Skipped entries (not in force)" in page
    assert f"{department}:{provider_line}</code> CONFIG[&#34;LLM_PROVIDERS&#34;] entry" in page
    assert "Team &lt;b&gt;Llama&lt;/b&gt;" in page and "<b>Llama" not in page


def test_status_shows_priority_revision_sources_and_lint_warnings(
    tmp_path: Path, organization: Path
) -> None:
    department = organization / "department" / "plugin.lua"
    department.write_text(
        department.read_text()
        + '\nCONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_serach" }\n'
    )
    paths = ConfigurationPaths(org=(organization,), user_settings=tmp_path / "absent.yaml")
    with running_app(web_app(paths)) as served:
        status = httpx.get(served.url("/api/status")).json()
        page = httpx.get(served.url("/")).text
    assert [(p["plugin"], p["priority"], p["origin"]) for p in status["plugins"]] == [
        ("Example Corp - base configuration", 0, "organization"),
        ("Example Corp - Research department", 100, "organization"),
    ]
    assert len(status["revision"]) == 16 and status["last_change"] is None
    assert status["sources"]["org"] == [str(organization)]
    assert status["sources"]["user_settings"] == str(tmp_path / "absent.yaml")
    lint = [e for e in status["errors"] if "web_serach" in e["message"]]  # it could loosen
    assert lint and lint[0]["file"] == str(department) and lint[0]["line"] > 0
    assert "did you mean" in lint[0]["message"].lower() or "web_search" in lint[0]["message"]
    assert status["revision"] in page and '<td class="priority">100</td>' in page
    assert "web_serach" in page


def test_status_shows_fetched_configurations_and_last_known_good_copies(
    tmp_path: Path, organization: Path
) -> None:
    state = tmp_path / "state"
    load_policy([organization], state_dir=state)  # keeps last-known-good copies
    delivery_status = DeliveryStatus(
        id="9a1f0c3e-4b2d-4e8f-a6c1-2d3e4f5a6b7c",
        server_url="https://admin:hunter2@config.example.org/policy",
        state="last-known-good",
        last_attempt="2026-12-03T07:00:00+00:00",
        last_success="2026-12-02T07:00:00+00:00",
        error="HTTP 503 from the configuration server",
    )
    write_statuses(state, [delivery_status])
    base = organization / "base" / "plugin.lua"
    base.write_text(base.read_text() + "\nthis is not lua\n")
    paths = ConfigurationPaths(org=(organization,), state_dir=state)
    with running_app(web_app(paths)) as served:
        status = httpx.get(served.url("/api/status")).json()
        page = httpx.get(served.url("/")).text
    [delivery] = status["deliveries"]
    assert delivery["state"] == "last-known-good" and "503" in delivery["error"]
    assert "hunter2" not in str(status) and "hunter2" not in page
    copies = [p for p in status["plugins"] if p["kept_as"] == "last-known-good copy"]
    assert [p["plugin"] for p in copies] == ["Example Corp - base configuration"]
    [broken] = status["broken_organization_plugins"]
    assert broken["replaced_by_last_known_good"] is True
    assert "its last-known-good copy is in force" in page and "HTTP 503" in page
    assert "<small>(last-known-good copy)</small>" in page and "built-in" not in page

    with running_app(web_app(paths)) as served:
        assert "HTTP 503" in httpx.get(served.url("/")).text
        write_statuses(state, [replace(delivery_status, error="HTTP 404 from the server")])
        assert "HTTP 404" in httpx.get(served.url("/")).text  # a new fetch round, same policy


# --- settings -----------------------------------------------------------------------------------


def test_settings_filters_and_configuration_keys(served: RunningApp) -> None:
    def get(**params: str) -> dict[str, list[dict[str, object]]]:
        response = httpx.get(served.url("/api/settings"), params=params)
        assert response.status_code == 200
        document: dict[str, list[dict[str, object]]] = response.json()
        return document

    every = get(unset="1")
    rows = [row for tool in every["tools"] for row in tool["settings"]]
    assert any(row["value"] is None for row in rows)
    assert all(row["value"] is not None for t in get()["tools"] for row in t["settings"])
    locked = [row for t in get(locked="1", unset="1")["tools"] for row in t["settings"]]
    assert locked and all(row["locked"] for row in locked)
    assert len(locked) < len(rows)
    overridden = [row for t in get(overridden="1")["tools"] for row in t["settings"]]
    assert overridden and {row["source"] for row in overridden} <= {
        "LOCKED",
        "USER",
        "ORG_DEFAULT",
    }
    one = get(tool="web_search")
    assert [t["tool"] for t in one["tools"]] == ["web_search"] and one["keys"] == []

    keys = {row["key"]: row for row in get()["keys"]}
    disabled = keys["DataTools.DisabledToolIds"]
    assert disabled["value"] == [] and disabled["locked"] is True
    assert disabled["origin"]["plugin"] == "Example Corp - Research department"
    assert [b["origin"]["plugin"] for b in disabled["beaten"]] == [
        "Example Corp - base configuration"
    ]
    assert keys["DataTools.LockedToolSettings"]["value"]["web_search.tavily.apiKey"] == "*****"
    assert "DataTools.AllowLocalMcpServers" not in keys  # no plugin sets it
    assert "DataTools.AllowLocalMcpServers" in {row["key"] for row in get(unset="1")["keys"]}

    page = httpx.get(served.url("/settings"), params={"locked": "1"}).text
    assert 'id="settings-keys"' in page and "DataTools.DisabledToolIds" in page
    assert 'name="locked" value="1" checked' in page
    assert "DataTools.AllowLocalMcpServers" not in page
    assert SECRET not in page


# --- simulate -----------------------------------------------------------------------------------


def test_simulate_decides_for_a_provider_kind_and_model(
    served: RunningApp, organization: Path
) -> None:
    policy = load_policy([organization])
    answer = httpx.post(
        served.url("/api/simulate"),
        json={"provider_kind": "SELF_HOSTED", "model": "tiny-model", "component": "CHAT"},
    )
    assert answer.status_code == 200
    provider = kind_provider(ProviderKind.SELF_HOSTED, "tiny-model")
    expected = build_matrix(policy.registry, ordered_tool_ids(policy), [provider], Component.CHAT)
    assert answer.json() == matrix_report(policy, expected)


def test_simulate_with_pasted_user_settings_flips_a_decision_and_writes_nothing(
    served: RunningApp, organization: Path
) -> None:
    provider = _vllm(organization)
    before = sorted(p.name for p in organization.rglob("*"))
    asked = {"provider": provider, "tool": "web_search"}
    now = httpx.post(served.url("/api/simulate"), json=asked).json()
    assert now["decisions"][0]["offered"] is True
    what_if = httpx.post(
        served.url("/api/simulate"), json={**asked, "user_settings_yaml": BAD_MAX_RESULTS}
    ).json()
    [decision] = what_if["decisions"]
    assert decision["offered"] is False and decision["reason"] == "NOT_CONFIGURED"
    assert sorted(p.name for p in organization.rglob("*")) == before
    again = httpx.post(served.url("/api/simulate"), json=asked).json()
    assert again["decisions"][0]["offered"] is True  # the what-if was not kept


def test_simulate_form_renders_every_check(served: RunningApp, organization: Path) -> None:
    page = httpx.post(
        served.url("/simulate"),
        data={
            "provider": _vllm(organization),
            "component": "CHAT",
            "user_settings_yaml": BAD_MAX_RESULTS,
        },
    )
    assert page.status_code == 200
    assert 'id="simulated"' in page.text and "NOT_CONFIGURED" in page.text
    assert '<ol class="checks">' in page.text and "maxResults" in page.text
    assert "tools:\n  settings:" in page.text  # the form keeps what was pasted


@pytest.mark.parametrize(
    ("asked", "field", "words"),
    [
        ({}, "provider_kind", "choose a configured provider or a provider kind"),
        ({"provider_kind": "WARP"}, "provider_kind", "valid: OPEN_AI"),
        ({"provider": "nope"}, "provider", "no configured provider 'nope'"),
        ({"provider_kind": "OPEN_AI", "provider": "x"}, "provider", "not both"),
        ({"model": "gpt-4o"}, "model", "only goes with provider_kind"),
        (
            {"provider_kind": "OPEN_AI", "component": "DESK"},
            "component",
            "unknown component 'DESK'; valid:",
        ),
        ({"provider_kind": "OPEN_AI", "tool": "nope"}, "tool", "unknown tool 'nope'"),
        (
            {"provider_kind": "OPEN_AI", "user_settings_yaml": "tools: [\n"},
            "user_settings_yaml",
            "pasted user settings:",
        ),
        (
            {"provider_kind": "OPEN_AI", "user_settings_file": "/nonexistent/settings.yaml"},
            "user_settings_file",
            "is not a file",
        ),
        (
            {"provider_kind": "OPEN_AI", "user_settings_yaml": "x" * (256 * 1024 + 1)},
            "user_settings_yaml",
            "at most",
        ),
        (  # refused before it is parsed: ruamel.yaml's scanner is quadratic in this depth
            {"provider_kind": "OPEN_AI", "user_settings_yaml": "tools: " + "[" * 4096},
            "user_settings_yaml",
            "pasted user settings:1: YAML nested too deeply: more than 100 levels",
        ),
    ],
)
def test_simulate_says_what_is_wrong(
    served: RunningApp, asked: dict[str, str], field: str, words: str
) -> None:
    answer = httpx.post(served.url("/api/simulate"), json=asked)
    assert answer.status_code == 400
    assert answer.json()["field"] == field and words in answer.json()["error"]
    page = httpx.post(served.url("/simulate"), data=asked)
    assert page.status_code == 400 and 'id="error"' in page.text and "Traceback" not in page.text


def test_simulate_reads_a_user_settings_file(
    served: RunningApp, organization: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(BAD_MAX_RESULTS)
    answer = httpx.post(
        served.url("/api/simulate"),
        json={
            "provider": _vllm(organization),
            "tool": "web_search",
            "user_settings_file": str(settings),
        },
    ).json()
    assert answer["decisions"][0]["reason"] == "NOT_CONFIGURED"
    assert settings.read_text() == BAD_MAX_RESULTS


def _placeholder(page: str) -> str:
    found = re.search(r'<textarea name="user_settings_yaml"[^>]*placeholder="([^"]*)"', page)
    assert found is not None
    return html.unescape(found.group(1))


def test_the_simulate_placeholder_is_user_settings_accepted_as_is(
    served: RunningApp, organization: Path, tmp_path: Path
) -> None:
    example = _placeholder(httpx.get(served.url("/simulate")).text)
    assert example.startswith("tools:\n  settings:\n")
    page = httpx.post(
        served.url("/simulate"),
        data={"provider": _vllm(organization), "user_settings_yaml": example},
    )
    assert page.status_code == 200 and 'id="simulated"' in page.text
    assert 'id="error"' not in page.text and 'id="notes"' not in page.text
    settings = tmp_path / "example.yaml"
    settings.write_text(example)
    findings = check_findings(load_policy([organization], user_settings=settings))
    assert [f for f in findings if f.location and f.location.file == str(settings)] == []


def test_simulate_notes_a_user_setting_that_has_no_effect(
    served: RunningApp, organization: Path
) -> None:
    mistyped = "tools:\n  settings:\n    web_search:\n      defaultLanguag: de-DE\n"
    page = httpx.post(
        served.url("/simulate"),
        data={"provider": _vllm(organization), "user_settings_yaml": mistyped},
    )
    assert page.status_code == 200
    notes = re.search(r'<ul id="notes">(.*?)</ul>', page.text, re.S)
    assert notes is not None
    assert "pasted user settings:4: tools.settings.web_search.defaultLanguag" in notes.group(1)
    assert "did you mean" in notes.group(1) and "defaultLanguage" in notes.group(1)


def test_pages_show_values_in_lua_notation(served: RunningApp, organization: Path) -> None:
    settings = httpx.get(served.url("/settings?unset=1")).text
    assert "<code>true</code>" in settings and "(not set)" in settings
    openai = next(p.id for p in load_policy([organization]).providers if p.kind.value == "OPEN_AI")
    query = {"tool": "read_web_page", "provider": openai, "component": "CHAT"}
    decision = httpx.get(served.url("/decision"), params=query).text
    assert "<code>true</code>" in decision
    assert "<code>{&#34;chat&#34;: true, &#34;assistants&#34;: true}</code>" in decision
    assert "<code>(not set)</code>" in decision
    for page in (settings, decision):
        for python in ("True", "False", "None", "{&#39;"):
            assert f"<code>{python}" not in page, python


def test_the_reload_banner_shows_the_lua_error_with_file_and_line(
    served: RunningApp, organization: Path
) -> None:
    department = organization / "department" / "plugin.lua"
    lines = department.read_text().splitlines()
    lines.insert(3, "local broken = = 1")
    department.write_text("\n".join(lines) + "\n")
    page = httpx.post(served.url("/reload"), follow_redirects=True)
    banner = re.search(r'<span id="last-change"[^>]*>(.*?)</span>', page.text, re.S)
    assert banner is not None
    assert "was not applied" in banner.group(1)
    assert f"{department}:4: the plugin could not be run: unexpected symbol near" in html.unescape(
        banner.group(1)
    )


# --- diff ---------------------------------------------------------------------------------------


def test_diff_with_a_pasted_plugin_is_policy_diff(served: RunningApp, organization: Path) -> None:
    answer = httpx.post(
        served.url("/api/diff"), json={"plugin_lua": DISABLE_WEB_SEARCH, "component": ["CHAT"]}
    )
    assert answer.status_code == 200
    document = answer.json()
    candidate_folder = organization.parent / "candidate"
    (candidate_folder / "pasted").mkdir(parents=True)
    (candidate_folder / "pasted" / "plugin.lua").write_text(DISABLE_WEB_SEARCH)
    old = load_policy([organization])
    new = load_policy([organization, candidate_folder / "pasted"])
    expected = diff_document(diff_policies(old, new, [Component.CHAT]))
    assert {k: v for k, v in document.items() if k != "candidate_errors"} == expected
    assert document["changed"] >= 1
    assert {c["tool"] for c in document["changes"]} == {"web_search"}
    assert {c["new"]["reason"] for c in document["changes"]} == {"TOOL_SWITCHED_OFF"}
    assert document["candidate_errors"] == []


def test_diff_against_other_organization_plugins_and_user_settings(
    served: RunningApp, organization: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "only").mkdir(parents=True)
    (other / "only" / "plugin.lua").write_text(DISABLE_WEB_SEARCH)
    answer = httpx.post(served.url("/api/diff"), json={"org": str(other)}).json()
    assert answer["changed"] > 0
    flipped = httpx.post(
        served.url("/api/diff"), json={"user_settings_yaml": BAD_MAX_RESULTS}
    ).json()
    assert {(c["tool"], c["new"]["reason"]) for c in flipped["changes"]} == {
        ("web_search", "NOT_CONFIGURED")
    }


def test_diff_page_shows_what_flips_and_a_broken_candidate(served: RunningApp) -> None:
    page = httpx.post(
        served.url("/diff"), data={"plugin_lua": DISABLE_WEB_SEARCH, "component": "CHAT"}
    )
    assert page.status_code == 200
    assert 'id="changes"' in page.text and "TOOL_SWITCHED_OFF" in page.text
    broken = httpx.post(served.url("/api/diff"), json={"plugin_lua": 'ID = "x"\nCONFIG = {'})
    assert broken.status_code == 200
    errors = broken.json()["candidate_errors"]
    assert errors and errors[0]["file"] == "pasted plugin.lua"
    assert "toolpolicy-diff-" not in broken.text


@pytest.mark.parametrize(
    ("asked", "field", "words"),
    [
        ({}, "org", "name the candidate"),
        ({"org": "/nonexistent/plugins"}, "org", "does not exist"),
        ({"user_settings_yaml": "tools: [\n"}, "user_settings_yaml", "pasted user settings"),
        ({"plugin_lua": DISABLE_WEB_SEARCH, "component": ["NOPE"]}, "component", "valid"),
    ],
)
def test_diff_says_what_is_wrong(
    served: RunningApp, asked: dict[str, str], field: str, words: str
) -> None:
    answer = httpx.post(served.url("/api/diff"), json=asked)
    assert answer.status_code == 400
    assert answer.json()["field"] == field and words in answer.json()["error"]
    assert httpx.post(served.url("/diff"), data=asked).status_code == 400


def test_an_api_body_must_be_a_json_object(served: RunningApp) -> None:
    for path in ("/api/simulate", "/api/diff"):
        answer = httpx.post(served.url(path), content=b"[1, 2]")
        assert answer.status_code == 400 and answer.json()["field"] == "body"


# --- reload -------------------------------------------------------------------------------------


def _rename_base(organization: Path, name: str) -> None:
    base = organization / "base" / "plugin.lua"
    base.write_text(re.sub(r'NAME = "[^"]*- base', f'NAME = "{name} - base', base.read_text()))


def test_reload_reads_the_changed_files(served: RunningApp, organization: Path) -> None:
    _rename_base(organization, "Renamed")
    assert "Renamed - base" not in httpx.get(served.url("/")).text
    before = httpx.get(served.url("/api/status")).json()["revision"]
    answer = httpx.post(served.url("/api/reload")).json()
    assert answer["swapped"] is True and answer["old_revision"] == before
    assert answer["revision"] == answer["new_revision"] != before
    status = httpx.get(served.url("/api/status")).json()
    assert status["last_change"]["swapped"] is True
    assert "Renamed - base" in httpx.get(served.url("/")).text
    assert httpx.post(served.url("/api/reload")).json()["swapped"] is False  # nothing changed


def test_a_change_that_does_not_load_keeps_the_policy_and_says_why(
    tmp_path: Path, organization: Path
) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("tools: {}\n")
    paths = ConfigurationPaths(org=(organization,), user_settings=settings)
    with running_app(web_app(paths)) as served:
        settings.write_text("tools: [\n")
        answer = httpx.post(served.url("/api/reload")).json()
        assert answer["swapped"] is False and str(settings) in answer["error"]
        page = httpx.get(served.url("/")).text
    assert "was not applied" in page and str(settings) in page


def test_a_changed_plugin_file_is_in_force_without_reload(
    paths: ConfigurationPaths, organization: Path
) -> None:
    with running_app(web_app(paths, watch=True), lifespan=True) as served:
        # The first change may be read by the reload the watcher starts with; the second one
        # only by watching the files. Saved on every turn: under load the watcher may start
        # watching after the first save.
        for name in ("Watched", "Rewatched"):
            deadline = time.monotonic() + WAIT_SECONDS
            names: list[str] = []
            while time.monotonic() < deadline:
                _rename_base(organization, name)
                status = httpx.get(served.url("/api/status")).json()
                names = [p["plugin"] for p in status["plugins"]]
                if f"{name} - base configuration" in names:
                    break
                time.sleep(0.2)
            assert f"{name} - base configuration" in names
        assert httpx.get(served.url("/api/status")).json()["last_change"]["swapped"] is True


# --- access -------------------------------------------------------------------------------------


def test_a_token_guards_every_request(paths: ConfigurationPaths) -> None:
    with running_app(web_app(paths, token="s3cret-token")) as served:
        assert httpx.get(served.url("/api/status")).status_code == 401
        assert httpx.get(served.url("/"), params={"token": "wrong"}).status_code == 401
        assert httpx.post(served.url("/api/simulate"), json={}).status_code == 401
        headers = {"Authorization": "Bearer s3cret-token"}
        assert httpx.get(served.url("/api/status"), headers=headers).status_code == 200
        with httpx.Client() as browser:
            first = browser.get(
                served.url("/settings"), params={"token": "s3cret-token", "tool": "web_search"}
            )
            assert first.status_code == 303, "the token leaves the address bar and history"
            assert first.headers["location"] == "/settings?tool=web_search"
            assert "s3cret-token" not in first.headers["location"]
            assert browser.get(served.url("/settings")).status_code == 200  # the cookie
            followed = httpx.get(
                served.url("/decisions"), params={"token": "s3cret-token"}, follow_redirects=True
            )
            assert followed.status_code == 200 and str(followed.url) == served.url("/decisions")
            posted = browser.post(served.url("/api/reload"), params={"token": "s3cret-token"})
            assert posted.status_code == 200, "a post is answered, not redirected"
        with httpx.Client(cookies={"toolpolicy_token": "an-old-token"}) as stale:
            assert stale.get(served.url("/")).status_code == 401
            renewed = stale.get(served.url("/"), params={"token": "s3cret-token"})
            assert renewed.status_code == 303
            assert renewed.headers["set-cookie"].startswith("toolpolicy_token=")
            assert stale.get(served.url("/")).status_code == 200, "the new cookie replaced it"
        with httpx.Client(cookies={"toolpolicy_token": "s3cret-token"}) as raw:
            assert raw.get(served.url("/")).status_code == 401, "the cookie is not the token"


def _cookie_attributes(set_cookie: str) -> tuple[str, set[str]]:
    """The cookie's value and the names of its attributes (lower case)."""
    value, *attributes = (part.strip() for part in set_cookie.split(";"))
    names = {a.partition("=")[0].lower() for a in attributes}
    return value.removeprefix("toolpolicy_token="), names


def test_the_cookie_holds_no_token_and_is_secure_over_tls(
    paths: ConfigurationPaths, tmp_path: Path
) -> None:
    from tests.servers.tls import self_signed

    token = "s3cret/token+42=="
    spellings = (token, quote(token, safe=""), base64.b64encode(token.encode()).decode())
    with running_app(web_app(paths, token=token)) as served:
        opened = httpx.get(served.url("/"), params={"token": token})
        cookie, attributes = _cookie_attributes(opened.headers["set-cookie"])
        assert not any(spelling in opened.headers["set-cookie"] for spelling in spellings)
        assert {"httponly", "samesite"} <= attributes and "secure" not in attributes
        assert "samesite=strict" in opened.headers["set-cookie"].lower()
        kept = httpx.get(served.url("/"), cookies={"toolpolicy_token": cookie})
        assert kept.status_code == 200, "the derived value opens the page"
    tls = self_signed(tmp_path, ["localhost"])
    with running_app(
        web_app(paths, token=token), certfile=tls.certfile, keyfile=tls.keyfile
    ) as served:
        with httpx.Client(verify=tls.client_context()) as browser:
            opened = browser.get(served.url("/", host="localhost"), params={"token": token})
            assert opened.status_code == 303
            _, attributes = _cookie_attributes(opened.headers["set-cookie"])
            assert {"httponly", "samesite", "secure"} <= attributes
            assert browser.get(served.url("/", host="localhost")).status_code == 200
        elsewhere = httpx.get(
            served.url("/", host="localhost"),
            cookies={"toolpolicy_token": cookie},
            verify=tls.client_context(),
        )
        assert elsewhere.status_code == 401, "a cookie of another server process opens nothing"


def test_without_a_token_only_loopback_host_names_are_answered(served: RunningApp) -> None:
    assert httpx.get(served.url("/", host="localhost")).status_code == 200
    rebound = httpx.get(served.url("/api/status"), headers={"Host": "attacker.example:8765"})
    assert rebound.status_code == 421 and "loopback" in rebound.json()["error"]
    assert httpx.get(served.url("/"), headers={"Host": "[::1]:8765"}).status_code == 200


def test_a_post_from_another_site_is_refused(served: RunningApp) -> None:
    asked = {"plugin_lua": DISABLE_WEB_SEARCH}
    for headers in (
        {"Origin": "http://attacker.example"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site", "Origin": "null"},  # another port of this machine
        {"Origin": "null"},  # a sandboxed frame or data: page of a browser without Fetch Metadata
        {"Origin": "null", "Sec-Fetch-Site": "same-origin"},
    ):
        for path in ("/api/diff", "/api/reload"):
            answer = httpx.post(served.url(path), json=asked, headers=headers)
            assert answer.status_code == 403, (path, headers)
        assert httpx.post(served.url("/diff"), data=asked, headers=headers).status_code == 403
    same_site = {"Origin": served.url(), "Sec-Fetch-Site": "same-origin"}
    assert httpx.post(served.url("/api/diff"), json=asked, headers=same_site).status_code == 200


# --- the command --------------------------------------------------------------------------------


def _policy(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "policy.cli", *arguments]


def test_serve_refuses_a_non_loopback_host_without_a_token(organization: Path) -> None:
    result = run_policy(["serve", "--org", str(organization), "--host", "0.0.0.0"])
    assert result.returncode == 2
    assert "--host" in result.stderr and "--token" in result.stderr
    assert "Traceback" not in result.stderr


def test_serve_on_port_0_prints_the_bound_port_and_follows_file_changes(
    organization: Path,
) -> None:
    process = subprocess.Popen(
        _policy("serve", "--org", str(organization), "--port", "0"),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("policy serve: http://127.0.0.1:"), line
        url = line.split()[2]
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        assert port != 0
        assert httpx.get(url, timeout=10).status_code == 200
        for name in ("Served", "Reserved"):  # the second one seen only by watching, as above
            deadline = time.monotonic() + WAIT_SECONDS
            while time.monotonic() < deadline:
                _rename_base(organization, name)
                if f"{name} - base" in httpx.get(url, timeout=10).text:
                    break
                time.sleep(0.2)
            assert f"{name} - base" in httpx.get(url, timeout=10).text
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_on_a_port_in_use_says_so(organization: Path) -> None:
    with running_app(web_app(ConfigurationPaths(org=(organization,)))) as busy:
        result = run_policy(["serve", "--org", str(organization), "--port", str(busy.port)])
    assert result.returncode == 1
    assert f"port {busy.port}" in result.stderr and "--port 0" in result.stderr
    assert "Traceback" not in result.stderr


def test_each_setting_shows_the_values_it_beat(tmp_path: Path, organization: Path) -> None:
    earlier_secret = "tvly-earlier-0a1b2c3d4e"
    key = os.environ["TOOLPOLICY_CONFIG_ENCRYPTION_SECRET"]
    base = organization / "base" / "plugin.lua"
    base.write_text(
        base.read_text()
        + '\nCONFIG["SETTINGS"]["DataTools.LockedToolSettings"]["web_search.tavily.apiKey"]'
        f' = "{encrypt(earlier_secret, key)}"\n'
    )
    settings = tmp_path / "settings.yaml"
    settings.write_text(
        "tools:\n  settings:\n    web_search:\n      backendStrategy: SINGLE\n"
        "      defaultLanguage: de-DE\n"
    )
    paths = ConfigurationPaths(org=(organization,), user_settings=settings)
    with running_app(web_app(paths)) as served:
        [tool] = httpx.get(served.url("/api/settings"), params={"tool": "web_search"}).json()[
            "tools"
        ]
        page = httpx.get(served.url("/settings"), params={"tool": "web_search"}).text
    rows = {row["field"]: row for row in tool["settings"]}
    language = rows["defaultLanguage"]
    assert language["value"] == "de-DE" and language["source"] == "USER"
    assert [(b["value"], b["source"], b["origin"]["plugin"]) for b in language["beaten"]] == [
        ("en-US", "ORG_DEFAULT", "Example Corp - Research department"),
        ("all", "ORG_DEFAULT", "Example Corp - base configuration"),
    ]
    strategy = rows["backendStrategy"]
    assert strategy["source"] == "LOCKED"
    assert ("SINGLE", "USER", str(settings)) in {
        (b["value"], b["source"], b["origin"]["file"]) for b in strategy["beaten"]
    }
    api_key = rows["tavily.apiKey"]
    assert api_key["value"] == "*****" and api_key["origin"]["plugin"].endswith("department")
    assert [(b["value"], b["origin"]["plugin"]) for b in api_key["beaten"]] == [
        ("*****", "Example Corp - base configuration")
    ]
    for text in (str(tool), page):
        assert earlier_secret not in text and SECRET not in text
    assert (
        'class="beaten"' in page and "(ORG_DEFAULT) from Example Corp - base configuration" in page
    )


def test_a_fetched_configuration_stays_in_force_on_both_sides_of_a_diff(
    tmp_path: Path, organization: Path
) -> None:
    state = tmp_path / "state"
    fetched_in_force(state, DISABLE_WEB_SEARCH)
    paths = ConfigurationPaths(org=(organization,), state_dir=state)
    with running_app(web_app(paths)) as served:
        plugins = httpx.get(served.url("/api/status")).json()["plugins"]
        diff = httpx.post(served.url("/api/diff"), json={"user_settings_yaml": BAD_MAX_RESULTS})
    assert [p["kept_as"] for p in plugins if p["plugin"] == "Candidate: no web search"] == [
        "fetched"
    ]
    assert diff.status_code == 200 and diff.json()["changed"] == 0


def test_serve_with_a_broken_user_settings_file_names_it(
    organization: Path, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("tools: [\n")
    result = run_policy(["serve", "--org", str(organization), "--user-settings", str(settings)])
    assert result.returncode == 1
    assert f"{settings}:2: not valid YAML" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_hostile_settings_key_is_a_warning_shown_as_text(served: RunningApp) -> None:
    page = httpx.get(served.url("/")).text
    assert "<script>alert(2)" not in page and "<img src=x onerror=alert(3)>" not in page
    assert (
        "DataTools.&lt;script&gt;alert(2)&lt;/script&gt;&lt;img src=x onerror=alert(3)&gt;" in page
    )
    warnings = httpx.get(served.url("/api/status")).json()["warnings"]
    assert any(HOSTILE_KEY in w["message"] and w["line"] for w in warnings)
