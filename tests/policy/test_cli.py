"""The `policy` command: JSON contracts, exit codes, no tracebacks.

Commands run in this process through the console script's `main` (`tests.servers.cli_runner`);
the installed entry point itself runs in a subprocess in the tests that say so (`installed`)."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from policy.secrets import decrypt, encrypt, generate_secret
from tests.servers.cli_runner import CliRun, installed_policy, run_policy

ROOT = Path(__file__).resolve().parents[2]


POLICY = installed_policy()


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment.pop("MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ENCRYPTION_SECRET", None)
    environment.update(env or {})
    return environment


def run(*args: str | Path, env: dict[str, str] | None = None, stdin: str | None = None) -> CliRun:
    done = run_policy(args, env=_environment(env), input=stdin, cwd=ROOT)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


def installed(
    *args: str | Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> CliRun:
    """`policy ARGS` through the installed console script, in a subprocess."""
    done = run_policy(args, env=_environment(env), input=stdin, cwd=ROOT, installed=True)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    return done


def run_json(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, Any]:
    done = run(*args, "--format", "json", env=env)
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


def write_plugin(
    folder: Path,
    body: str,
    *,
    name: str = "Base",
    priority: int | None = None,
    plugin_id: str | None = None,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    header = textwrap.dedent(
        f"""\
        ID = "{plugin_id or uuid.uuid4()}"
        TYPE = "CONFIGURATION"
        NAME = "{name}"
        DESCRIPTION = "Test plugin {name}"
        VERSION = "1.0.0"
        AUTHORS = {{ "IT" }}
        SUPPORT_CONTACT = "it@example.org"
        SOURCE_URL = "https://example.org/ai"
        CATEGORIES = {{ "CORE" }}
        TARGET_GROUPS = {{ "EVERYONE" }}
        IS_MAINTAINED = true
        DEPRECATION_MESSAGE = ""
        """
    )
    if priority is not None:
        header += f"PRIORITY = {priority}\n"
    path = folder / "plugin.lua"
    path.write_text(header + textwrap.dedent(body), encoding="utf-8")
    return path


def write_tool_settings_plugin(
    folder: Path, locked: dict[str, str], defaults: dict[str, str] | None = None
) -> Path:
    """A plugin that only locks `locked` and makes `defaults` the defaults (tool.field → value)."""

    def table(name: str, values: dict[str, str]) -> str:
        rows = "".join(
            f"    [{json.dumps(k)}] = {json.dumps(v, ensure_ascii=False)},\n"
            for k, v in values.items()
        )
        return f'CONFIG["SETTINGS"]["DataTools.{name}"] = {{\n{rows}}}\n'

    body = 'CONFIG = {}\nCONFIG["SETTINGS"] = {}\n' + table("LockedToolSettings", locked)
    if defaults:
        body += table("DefaultToolSettings", defaults)
    return write_plugin(folder, body)


PROVIDERS = """\
CONFIG = {}
CONFIG["LLM_PROVIDERS"] = {}
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "11111111-1111-4111-8111-111111111111",
    ["InstanceName"] = "Cloud GPT",
    ["UsedLLMProvider"] = "OPEN_AI",
    ["Host"] = "NONE",
    ["Hostname"] = "",
    ["Model"] = { ["Id"] = "gpt-4o", ["DisplayName"] = "GPT-4o" },
}
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {
    ["Id"] = "22222222-2222-4222-8222-222222222222",
    ["InstanceName"] = "Own cluster",
    ["UsedLLMProvider"] = "SELF_HOSTED",
    ["Host"] = "VLLM",
    ["Hostname"] = "https://llm.example.org",
    ["Model"] = { ["Id"] = "qwen3", ["DisplayName"] = "Qwen3" },
    ["CapabilityOverrides"] = { ["FUNCTION_CALLING"] = true },
}
"""

BASE_SETTINGS = """\
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "search_confluence" }
CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = {
    ["web_search"] = "MEDIUM",
}
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {
    ["web_search.searxng.baseUrl"] = "https://searx.example.org",
}
CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = {
    ["web_search.defaultLanguage"] = "de-DE",
}
"""

DEPARTMENT_SETTINGS = """\
CONFIG = {}
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "read_web_page" }
CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = {
    ["web_search"] = "HIGH",
}
"""

OPEN_AI = "11111111-1111-4111-8111-111111111111"
SELF_HOSTED = "22222222-2222-4222-8222-222222222222"


@pytest.fixture
def base(tmp_path: Path) -> Path:
    folder = tmp_path / "org" / "base"
    write_plugin(folder, PROVIDERS + BASE_SETTINGS, name="Base")
    return folder


@pytest.fixture
def department(tmp_path: Path) -> Path:
    folder = tmp_path / "org" / "department"
    write_plugin(folder, DEPARTMENT_SETTINGS, name="Department", priority=100)
    return folder


# --- startup and usage --------------------------------------------------------------------------


def test_help_lists_every_command() -> None:
    done = installed("--help")
    assert done.returncode == 0
    for command in (
        "check",
        "explain",
        "settings",
        "tools",
        "diff",
        "schema",
        "template",
        "encrypt",
    ):
        assert command in done.stdout


def test_help_does_not_import_heavy_modules() -> None:
    probe = textwrap.dedent(
        """\
        import sys
        from policy.cli import main
        try:
            main(["--help"])
        except SystemExit:
            pass
        heavy = {"lupa", "httpx", "pydantic", "trafilatura", "policy.decide.registry", "policy.plugins"}
        print(sorted(m for m in heavy if m in sys.modules))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_run_in_this_process_leaves_the_process_as_it_found_it(tmp_path: Path) -> None:
    """The in-process runs give a command what a new process has and take it back: the
    environment (`env` is all of it), the working directory, the root logger's handlers (the
    command installs its own) and the thread excepthook (the command sets its own)."""
    environment, directory = dict(os.environ), os.getcwd()
    handlers, hook = list(logging.getLogger().handlers), threading.excepthook
    write_plugin(tmp_path / "org", PROVIDERS + BASE_SETTINGS)
    done = run_policy(["check", "--org", "org"], env={"TOOLPOLICY_X": "1"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ok: 0 error(s)" in done.stdout
    assert dict(os.environ) == environment and os.getcwd() == directory
    assert logging.getLogger().handlers == handlers and threading.excepthook is hook


def test_a_missing_org_path_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = run("check", "--org", missing)
    assert done.returncode == 2
    assert "--org" in done.stderr and "nowhere" in done.stderr


def test_an_unknown_tool_id_is_a_usage_error_naming_the_known_tools(base: Path) -> None:
    done = run("explain", "web_serch", "--org", base, "--provider", OPEN_AI)
    assert done.returncode == 2
    assert "web_serch" in done.stderr and "web_search" in done.stderr


def test_an_unknown_component_is_a_usage_error(base: Path) -> None:
    done = run("explain", "web_search", "--org", base, "--component", "KITCHEN")
    assert done.returncode == 2
    assert "KITCHEN" in done.stderr and "CHAT" in done.stderr


def test_an_unknown_provider_names_the_configured_ones(base: Path) -> None:
    done = run("explain", "web_search", "--org", base, "--provider", "nope")
    assert done.returncode == 2
    assert "Cloud GPT" in done.stderr and OPEN_AI in done.stderr


def test_an_unknown_option_is_a_usage_error() -> None:
    assert run("explain", "--frobnicate").returncode == 2


_ORG = ("--org", "examples/organization")
_WITH_MCP = (*_ORG, "--org", "examples/mcp", "--state-dir", "{tmp}")


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("tools", *_ORG), "read_web_page      Read web page"),
        (("diff", *_ORG, "--against-org", "examples/organization"), "no decision changes"),
        (("status", "--state-dir", "{tmp}"), "no configurations fetched"),
        (("settings", "keys", *_ORG), "DataTools.EnableTools"),
        (
            ("settings", "set", "web_search", "maxResults", "12", *_ORG, "--user-settings",
             "{tmp}/settings.yaml"),
            "saved web_search.maxResults = '12'",
        ),
        (("mcp", "list", *_WITH_MCP), "tickets__search_tickets  readOnlyHint=True"),
        (("mcp", "pin", *_WITH_MCP), '["search_tickets"] = "sha256:'),
    ],
    ids=["tools", "diff", "status", "settings keys", "settings set", "mcp list", "mcp pin"],
)  # fmt: skip
def test_each_command_runs_through_the_installed_script(
    args: tuple[str, ...], shown: str, tmp_path: Path
) -> None:
    """The commands whose other tests run in-process, once each as a user starts them (check,
    explain, settings, schema, template, export, replay, log summary, chat, serve, fetch,
    completion and encrypt have such a run in their own tests)."""
    done = installed(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout


# --- check --------------------------------------------------------------------------------------


def test_check_of_a_good_configuration_is_ok(base: Path) -> None:
    done = installed("check", "--org", base, "--format", "json")
    code, document = done.returncode, json.loads(done.stdout)
    assert code == 0
    assert document["ok"] is True
    assert document["errors"] == []
    assert isinstance(document["warnings"], list)


def test_check_reports_a_lua_syntax_error_with_file_and_line(tmp_path: Path) -> None:
    broken = write_plugin(tmp_path / "broken", 'CONFIG = {\nCONFIG["SETTINGS"] = = {}\n')
    code, document = run_json("check", "--org", broken.parent)
    assert code == 1
    assert document["ok"] is False
    assert document["errors"], document
    error = document["errors"][0]
    assert set(error) == {"file", "line", "code", "message"}
    assert error["code"]
    assert error["file"].endswith("plugin.lua")
    assert isinstance(error["line"], int) and error["line"] > 0


def test_check_as_text_names_file_and_line(tmp_path: Path) -> None:
    broken = write_plugin(tmp_path / "broken", 'CONFIG = {}\nCONFIG["SETTINGS"] = = {}\n')
    done = run("check", "--org", broken.parent)
    assert done.returncode == 1
    assert f"{broken}:" in done.stdout
    assert "error" in done.stdout


def test_check_warns_about_what_probably_was_not_meant(tmp_path: Path) -> None:
    plugin = write_plugin(
        tmp_path / "lint",
        PROVIDERS
        + """\
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_serch" }
CONFIG["SETTINGS"]["DataTools.DisabledToolIds.AllowUserOverride"] = true
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {
    ["read_web_page.freeAddressChoice"] = "on",
    ["web_search.staan.apiKey"] = "plain-text-key",
}
CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = {
    ["read_web_page.freeAddressChoice"] = "OFF",
}
""",
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1  # a refused tool setting value is an error: the tool is not configured
    by_code: dict[str, list[dict[str, Any]]] = {}
    for warning in document["warnings"] + document["errors"]:
        assert set(warning) == {"file", "line", "code", "message"}
        by_code.setdefault(warning["code"], []).append(warning)
    assert [e["code"] for e in document["errors"]] == ["unknown-tool-id", "value-not-allowed"]
    assert "web_serch" in by_code["unknown-tool-id"][0]["message"]
    assert "'on'" in by_code["value-not-allowed"][0]["message"]
    assert 'did you mean "ON"' in by_code["value-not-allowed"][0]["message"]
    assert "OFF, ON" in by_code["value-not-allowed"][0]["message"]
    assert "plain-text-key" not in json.dumps(document)
    assert by_code["plaintext-secret"]
    assert by_code["override-not-honored"]
    assert by_code["no-effect"]
    lint_codes = {
        "unknown-tool-id",
        "value-not-allowed",
        "plaintext-secret",
        "override-not-honored",
        "no-effect",
    }
    for code in lint_codes:
        for warning in by_code[code]:
            assert warning["file"] == str(plugin), warning
            assert warning["line"] > 0, warning
    assert run("check", "--org", plugin.parent, "--strict").returncode == 1


def test_check_warns_when_a_department_list_drops_base_entries(
    base: Path, department: Path
) -> None:
    code, document = run_json("check", "--org", base.parent)
    assert code == 0
    replaced = [w for w in document["warnings"] if w["code"] == "list-replaced"]
    assert replaced, document["warnings"]
    assert "search_confluence" in replaced[0]["message"]
    assert replaced[0]["file"].endswith(str(Path("department") / "plugin.lua"))


# --- explain ------------------------------------------------------------------------------------


def test_explain_json_contract(base: Path) -> None:
    code, document = run_json("explain", "web_search", "--org", base, "--provider", OPEN_AI)
    assert code == 0
    assert set(document) == {
        "tool",
        "component",
        "provider",
        "offered",
        "reason",
        "message",
        "checks",
    }
    assert document["tool"] == "web_search"
    assert document["component"] == "CHAT"
    assert document["provider"] == {
        "id": OPEN_AI,
        "kind": "OPEN_AI",
        "model": "gpt-4o",
        "confidence": "MEDIUM",
    }
    assert document["offered"] is True and document["reason"] == "NONE"
    guarded = [check["check"] for check in document["checks"]]
    assert guarded[:3] == ["TOOLS_SWITCHED_OFF", "MODEL_CANNOT_USE_TOOLS", "NOT_AVAILABLE_HERE"]
    assert "PROVIDER_CONFIDENCE_TOO_LOW" in guarded
    names = [check["name"] for check in document["checks"]]
    assert names[2] == "NOT_MEANT_HERE" and "NOT_AVAILABLE_HERE" in names[3:]
    assert len(set(names)) == len(names), "each check has a name of its own"
    for check in document["checks"]:
        assert set(check) == {"check", "name", "passed", "detail", "evidence"}
        assert check["passed"] is True


def test_explain_names_the_plugin_line_that_blocks(base: Path) -> None:
    code, document = run_json(
        "explain", "search_confluence", "--org", base, "--provider", SELF_HOSTED, "--fail"
    )
    assert code == 1
    assert document["offered"] is False
    assert document["reason"] == "TOOL_SWITCHED_OFF"
    failed = next(c for c in document["checks"] if c["check"] == "TOOL_SWITCHED_OFF")
    assert failed["passed"] is False
    plugin_file = str(base / "plugin.lua")
    text = json.dumps(failed["evidence"])
    assert plugin_file in text and "DataTools.DisabledToolIds" in text


def test_explain_text_lists_every_check(base: Path) -> None:
    done = run(
        "explain", "web_search", "--org", base, "--provider-kind", "DEEP_SEEK", "--model", "x"
    )
    assert done.returncode == 0
    assert "web_search in CHAT" in done.stdout
    assert "NOT OFFERED" in done.stdout
    assert "[FAIL]" in done.stdout and "[pass]" in done.stdout


def test_explain_fail_exits_one_only_when_blocked(base: Path) -> None:
    offered = run("explain", "web_search", "--org", base, "--provider", OPEN_AI, "--fail")
    assert offered.returncode == 0
    blocked = run(
        "explain", "semantic_search", "--org", base, "--provider", OPEN_AI,
        "--component", "REWRITE_ASSISTANT", "--fail",
    )  # fmt: skip
    assert blocked.returncode == 1
    assert "NOT_AVAILABLE_HERE" in blocked.stdout
    without_fail = run(
        "explain", "semantic_search", "--org", base, "--provider", OPEN_AI,
        "--component", "REWRITE_ASSISTANT",
    )  # fmt: skip
    assert without_fail.returncode == 0


def test_explain_with_a_provider_kind_decides_by_kind(base: Path) -> None:
    code, document = run_json(
        "explain", "web_search", "--org", base, "--provider-kind", "self_hosted"
    )
    assert document["provider"]["kind"] == "SELF_HOSTED"
    assert document["provider"]["confidence"] == "HIGH"
    assert document["reason"] == "MODEL_CANNOT_USE_TOOLS"
    assert code == 0


def test_explain_all_prints_the_matrix(base: Path) -> None:
    done = run("explain", "--org", base, "--all")
    assert done.returncode == 0
    for expected in ("web_search", "read_web_page", "Cloud GPT", "Own cluster", "offered"):
        assert expected in done.stdout
    code, document = run_json("explain", "--org", base, "--all")
    assert code == 0
    assert {p["id"] for p in document["providers"]} == {OPEN_AI, SELF_HOSTED}
    assert len(document["decisions"]) == len(document["tools"]) * 2


def test_a_broken_organization_plugin_switches_every_tool_off(base: Path, tmp_path: Path) -> None:
    broken = write_plugin(tmp_path / "org" / "broken", "CONFIG = nil + 1\n", name="Broken")
    code, document = run_json(
        "explain", "web_search", "--org", base, "--org", broken.parent, "--provider", OPEN_AI
    )
    assert code == 1, "a broken organization plugin is an error, even while explained"
    assert document["reason"] == "TOOLS_SWITCHED_OFF"
    assert str(broken) in json.dumps(document["checks"][0])


def test_the_organization_comes_from_the_environment(base: Path) -> None:
    code, document = run_json(
        "explain", "web_search", "--provider", OPEN_AI, env={"TOOLPOLICY_ORG": str(base)}
    )
    assert code == 0
    assert document["offered"] is True


# --- settings -----------------------------------------------------------------------------------


def test_settings_json_contract_with_sources_and_origins(base: Path, tmp_path: Path) -> None:
    secret = generate_secret()
    encrypted = encrypt("tavily-secret-value", secret)
    plugin = write_plugin(
        tmp_path / "secret",
        PROVIDERS
        + f"""\
CONFIG["SETTINGS"] = {{}}
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {{
    ["web_search.searxng.baseUrl"] = "https://searx.example.org",
    ["web_search.tavily.apiKey"] = "{encrypted}",
}}
CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = {{
    ["web_search.defaultLanguage"] = "de-DE",
}}
""",
    )
    user = tmp_path / "user.yaml"
    user.write_text("tools:\n  settings:\n    web_search:\n      maxResults: '7'\n")
    code, document = run_json(
        "settings",
        "web_search",
        "--org",
        plugin.parent,
        "--user-settings",
        user,
        env={"TOOLPOLICY_CONFIG_ENCRYPTION_SECRET": secret},
    )
    assert code == 0
    assert document["tool"] == "web_search"
    rows = {row["field"]: row for row in document["settings"]}
    for row in rows.values():
        assert {"field", "value", "source", "locked", "origin"} <= set(row)
    assert rows["searxng.baseUrl"]["source"] == "LOCKED"
    assert rows["searxng.baseUrl"]["locked"] is True
    assert rows["searxng.baseUrl"]["origin"]["file"] == str(plugin)
    assert rows["searxng.baseUrl"]["origin"]["line"] > 0
    assert rows["defaultLanguage"] == {
        **rows["defaultLanguage"],
        "value": "de-DE",
        "source": "ORG_DEFAULT",
        "locked": False,
    }
    assert rows["maxResults"]["source"] == "USER"
    assert rows["maxResults"]["value"] == "7"
    assert rows["maxResults"]["origin"] == {"plugin": None, "file": str(user), "line": 4}
    assert rows["tavily.apiKey"]["value"] == "*****"
    assert rows["defaultSafeSearch"]["source"] == "UNSET"
    assert rows["defaultSafeSearch"]["value"] is None
    assert rows["defaultSafeSearch"]["origin"] is None
    everything = json.dumps(document)
    assert "tavily-secret-value" not in everything
    assert encrypted not in everything


def test_settings_set_keeps_comments_and_refuses_locked_fields(base: Path, tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    user.write_text(
        "# my settings\ntools:\n  settings:\n    web_search:\n"
        "      maxResults: '7'  # fewer is faster\n"
    )
    done = run(
        "settings", "set", "web_search", "defaultSafeSearch", "STRICT",
        "--org", base, "--user-settings", user,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = user.read_text()
    assert "# my settings" in text and "# fewer is faster" in text
    assert re.search(r"^      defaultSafeSearch: ['\"]?STRICT['\"]?$", text, re.MULTILINE), text
    code, document = run_json("settings", "web_search", "--org", base, "--user-settings", user)
    assert code == 0
    rows = {row["field"]: row for row in document["settings"]}
    assert rows["defaultSafeSearch"]["value"] == "STRICT"
    assert rows["defaultSafeSearch"]["source"] == "USER"

    locked = run(
        "settings", "set", "web_search", "searxng.baseUrl", "https://other.example.org",
        "--org", base, "--user-settings", user,
    )  # fmt: skip
    assert locked.returncode == 1
    assert "locked" in locked.stderr and "Base" in locked.stderr
    assert str(base / "plugin.lua") in locked.stderr
    assert "other.example.org" not in user.read_text()


def test_settings_set_validates_the_value_against_the_choices(base: Path, tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    done = run(
        "settings", "set", "web_search", "defaultSafeSearch", "strict",
        "--org", base, "--user-settings", user,
    )  # fmt: skip
    assert done.returncode == 2
    assert "OFF, MODERATE, STRICT" in done.stderr
    assert not user.exists() or "strict" not in user.read_text()
    unknown = run(
        "settings", "set", "web_search", "colour", "blue", "--org", base, "--user-settings", user
    )
    assert unknown.returncode == 2
    assert "defaultSafeSearch" in unknown.stderr


def test_check_refuses_an_address_setting_whose_host_is_no_host(tmp_path: Path) -> None:
    plugin = write_tool_settings_plugin(
        tmp_path / "org",
        {
            "search_confluence.baseUrl": "https://wiki.corp../",
            "web_search.searxng.baseUrl": "https://admin:hunter2@exa mple.org/",
        },
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1
    assert "hunter2" not in json.dumps(document)
    messages = {e["message"].split(": ", 1)[0]: e for e in document["errors"]}
    wiki = messages['DataTools.LockedToolSettings["search_confluence.baseUrl"]']
    assert wiki["code"] == "invalid-tool-setting" and wiki["file"] == str(plugin)
    assert "search_confluence.baseUrl: 'https://wiki.corp../' is not valid" in wiki["message"]
    assert "host name or IP address" in wiki["message"]
    assert "expected an absolute HTTPS address" in wiki["message"]
    search = messages['DataTools.LockedToolSettings["web_search.searxng.baseUrl"]']
    assert "'https://*****@exa mple.org/' is not valid" in search["message"]


def test_check_accepts_address_settings_with_idn_ipv6_and_underscore_hosts(
    tmp_path: Path,
) -> None:
    plugin = write_tool_settings_plugin(
        tmp_path / "org",
        {
            "search_confluence.baseUrl": "https://wiki.b\u00fccher.example./confluence",
            "web_search.searxng.baseUrl": "http://[::1]:8888",
        },
        {"read_web_page.allowedPrivateHosts": "search_team.corp"},
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert document["errors"] == [] and code == 0, document


def test_settings_set_refuses_an_address_whose_host_is_no_host(base: Path, tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"

    def set_wiki(address: str) -> CliRun:
        options = ("--org", base, "--user-settings", user)
        return run("settings", "set", "search_confluence", "baseUrl", address, *options)

    refused = set_wiki("https://wiki..corp/")
    assert refused.returncode == 2, refused.stderr
    assert "search_confluence.baseUrl: 'https://wiki..corp/' is not valid" in refused.stderr
    assert not user.exists() or "wiki..corp" not in user.read_text()
    accepted = set_wiki("https://wiki_team.corp/")
    assert accepted.returncode == 0, accepted.stderr
    assert "wiki_team.corp" in user.read_text()


def test_settings_set_needs_a_user_settings_file(base: Path) -> None:
    done = run("settings", "set", "web_search", "defaultSafeSearch", "STRICT", "--org", base)
    assert done.returncode == 2
    assert "--user-settings" in done.stderr


# --- tools, diff --------------------------------------------------------------------------------


def test_tools_lists_the_catalog_with_state(base: Path) -> None:
    code, document = run_json("tools", "--org", base, "--component", "CHAT")
    assert code == 0
    rows = {row["id"]: row for row in document["tools"]}
    assert "semantic_search" not in rows
    assert rows["search_confluence"]["active"] is False
    assert rows["web_search"]["active"] is True
    assert rows["web_search"]["configured"] is True
    assert rows["web_search"]["minimum_confidence"] == "MEDIUM"
    assert rows["web_search"]["minimum_confidence_set_at"].startswith(str(base / "plugin.lua"))
    assert rows["read_web_page"]["minimum_confidence_set_at"] is None
    code, everything = run_json("tools", "--org", base)
    assert code == 0
    assert "semantic_search" in {row["id"] for row in everything["tools"]}


def test_diff_lists_every_changed_decision(base: Path, department: Path, tmp_path: Path) -> None:
    code, document = run_json(
        "diff", "--org", base, "--against-org", base, "--against-org", department,
        "--component", "CHAT",
    )  # fmt: skip
    assert code == 0
    changes = {(c["tool"], c["provider"]): c for c in document["changes"]}
    web = changes[("web_search", OPEN_AI)]
    assert web["old"]["reason"] == "NONE"
    assert web["new"]["reason"] == "PROVIDER_CONFIDENCE_TOO_LOW"
    assert changes[("read_web_page", OPEN_AI)]["new"]["reason"] == "TOOL_SWITCHED_OFF"
    assert all(c["component"] == "CHAT" for c in document["changes"])
    assert document["changed"] == len(document["changes"])
    unchanged = run("diff", "--org", base, "--against-org", base, "--fail")
    assert unchanged.returncode == 0 and "no decision changes" in unchanged.stdout
    changed = run("diff", "--org", base, "--against-org", department, "--fail")
    assert changed.returncode == 1


# --- encrypt ------------------------------------------------------------------------------------


def test_encrypt_produces_a_value_the_loader_can_decrypt() -> None:
    secret = generate_secret()
    done = installed(
        "encrypt", stdin="s3cr3t\n", env={"TOOLPOLICY_CONFIG_ENCRYPTION_SECRET": secret}
    )
    assert done.returncode == 0, done.stderr
    value = done.stdout.strip()
    assert value.startswith("ENC:v1:")
    assert decrypt(value, secret) == "s3cr3t"
    assert "s3cr3t" not in done.stdout + done.stderr


def test_encrypt_without_a_secret_says_what_to_set() -> None:
    done = run("encrypt", stdin="s3cr3t\n")
    assert done.returncode == 1
    assert "TOOLPOLICY_CONFIG_ENCRYPTION_SECRET" in done.stderr
    assert "s3cr3t" not in done.stderr


def test_yaml_output_carries_the_same_document_as_json(base: Path) -> None:
    from ruamel.yaml import YAML

    arguments = ("explain", "search_confluence", "--org", base, "--provider", SELF_HOSTED)
    _code, as_json = run_json(*arguments)
    done = run(*arguments, "--format", "yaml")
    assert done.returncode == 0
    assert json.loads(json.dumps(YAML(typ="safe").load(done.stdout))) == as_json


def test_a_bad_user_settings_file_is_reported_with_its_line(base: Path, tmp_path: Path) -> None:
    user = tmp_path / "settings.yaml"
    user.write_text("tools:\n  enabled: maybe\n", encoding="utf-8")
    code, document = run_json("check", "--org", base, "--user-settings", user)
    assert code == 1
    assert document["errors"] == [
        {
            "file": str(user),
            "line": 2,
            "code": "user-settings",
            "message": document["errors"][0]["message"],
        }
    ]
    assert "maybe" in document["errors"][0]["message"]
    explained = run("explain", "web_search", "--org", base, "--user-settings", user)
    assert explained.returncode == 1
    assert f"{user}:2" in explained.stderr


def test_explain_asks_which_provider_when_several_are_configured(base: Path) -> None:
    done = run("explain", "web_search", "--org", base)
    assert done.returncode == 2
    assert (
        "--provider" in done.stderr and "Cloud GPT" in done.stderr and "Own cluster" in done.stderr
    )


def test_the_matrix_needs_providers(tmp_path: Path) -> None:
    plugin = write_plugin(tmp_path / "bare", 'CONFIG = {}\nCONFIG["SETTINGS"] = {}\n')
    done = run("explain", "--all", "--org", plugin.parent)
    assert done.returncode == 2
    assert "--provider-kind" in done.stderr
    by_kind = run("explain", "--all", "--org", plugin.parent, "--provider-kind", "SELF_HOSTED")
    assert by_kind.returncode == 0
    assert "MODEL_CANNOT_USE_TOOLS" in by_kind.stdout


def test_explain_all_fail_exits_one_when_any_tool_is_blocked(base: Path) -> None:
    assert run("explain", "--all", "--org", base, "--fail").returncode == 1


def test_settings_set_refuses_secrets(base: Path, tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    done = run(
        "settings", "set", "web_search", "tavily.apiKey", "tvly-123",
        "--org", base, "--user-settings", user,
    )  # fmt: skip
    assert done.returncode == 2
    assert "keyring" in done.stderr
    assert "tvly-123" not in done.stderr
    assert not user.exists()


def test_explain_never_shows_a_secret(tmp_path: Path) -> None:
    secret = generate_secret()
    encrypted = encrypt("tavily-secret-value", secret)
    plugin = write_plugin(
        tmp_path / "secret",
        PROVIDERS
        + f"""\
CONFIG["SETTINGS"] = {{}}
CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {{
    ["web_search.tavily.apiKey"] = "{encrypted}",
}}
""",
    )
    env = {"TOOLPOLICY_CONFIG_ENCRYPTION_SECRET": secret}
    for output_format in ("table", "json", "yaml"):
        done = run(
            "explain", "web_search", "--org", plugin.parent, "--provider", OPEN_AI,
            "--format", output_format, env=env,
        )  # fmt: skip
        assert done.returncode == 0
        assert "tavily.apiKey" in done.stdout
        assert "tavily-secret-value" not in done.stdout + done.stderr
        assert encrypted not in done.stdout + done.stderr
        assert secret not in done.stdout + done.stderr


def test_diff_against_other_user_settings(tmp_path: Path) -> None:
    plugin = write_plugin(
        tmp_path / "editable",
        PROVIDERS
        + """\
CONFIG["SETTINGS"] = {}
CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme"] = "TRUST_EUROPE"
CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme.AllowUserOverride"] = true
CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = { ["read_web_page"] = "MEDIUM" }
""",
    )
    user = tmp_path / "user.yaml"
    user.write_text("confidence:\n  scheme: TRUST_ALL\n", encoding="utf-8")
    code, document = run_json(
        "diff", "--org", plugin.parent, "--against-user-settings", user, "--component", "CHAT"
    )
    assert code == 0
    changes = {(c["tool"], c["provider"]): c for c in document["changes"]}
    change = changes[("read_web_page", OPEN_AI)]
    assert (change["old"]["reason"], change["new"]["reason"]) == (
        "PROVIDER_CONFIDENCE_TOO_LOW",
        "NONE",
    )
    assert all(provider == OPEN_AI for _tool, provider in changes)


def test_diff_needs_a_new_side(base: Path) -> None:
    done = run("diff", "--org", base)
    assert done.returncode == 2
    assert "--against-org" in done.stderr


def test_several_organization_paths_come_from_the_environment(base: Path, department: Path) -> None:
    code, document = run_json(
        "check", env={"TOOLPOLICY_ORG": os.pathsep.join([str(base), str(department)])}
    )
    assert code == 0
    assert any(w["code"] == "list-replaced" for w in document["warnings"])


def test_a_local_plugin_never_overrides_the_organization(base: Path, tmp_path: Path) -> None:
    local = write_plugin(
        tmp_path / "local",
        'CONFIG = {}\nCONFIG["SETTINGS"] = {}\n'
        'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {}\n',
        name="Mine",
    )
    code, document = run_json(
        "explain", "search_confluence", "--provider", SELF_HOSTED,
        env={"TOOLPOLICY_ORG": str(base), "TOOLPOLICY_LOCAL": str(local.parent)},
    )  # fmt: skip
    assert code == 0
    assert document["reason"] == "TOOL_SWITCHED_OFF"


# --- audit: findings of the CLI conformance audit -----------------------------------------------

EXAMPLE_ORG = ROOT / "examples" / "organization"


def test_diff_compares_only_real_components_and_none_is_not_one() -> None:
    code, document = run_json(
        "diff", "--org", EXAMPLE_ORG / "base", "--against-org", EXAMPLE_ORG
    )  # fmt: skip
    assert code == 0 and document["changed"] > 0
    assert "NONE" not in {change["component"] for change in document["changes"]}
    assert "CHAT" in {change["component"] for change in document["changes"]}
    refused = run(
        "explain", "web_search", "--org", EXAMPLE_ORG, "--provider-kind", "OPEN_AI",
        "--component", "none",
    )  # fmt: skip
    assert refused.returncode == 2
    assert "'none' is not a component" in refused.stderr and "CHAT" in refused.stderr


def test_empty_entries_of_a_path_list_variable_are_skipped() -> None:
    base = str(EXAMPLE_ORG / "base")
    for variable in ("TOOLPOLICY_ORG", "TOOLPOLICY_LOCAL"):
        done = run("tools", env={variable: os.pathsep.join(["", base, ""])})
        assert done.returncode == 0, done.stderr
        assert "web_search" in done.stdout


def test_a_settings_file_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    target = blocker / "settings.yaml"
    done = run(
        "settings", "set", "web_search", "maxResults", "3", "--org", EXAMPLE_ORG,
        "--user-settings", target,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {target}: cannot be written:"), done.stderr
    assert "unexpected failure" not in done.stderr


def test_a_password_inside_an_address_setting_is_masked_in_every_report(tmp_path: Path) -> None:
    plugin = write_tool_settings_plugin(
        tmp_path / "org",
        {"web_search.searxng.baseUrl": "https://admin:hunter2@search.example.org/"},
    )
    reports = [
        ("settings", "web_search"),
        ("settings", "web_search", "--format", "json"),
        ("explain", "web_search", "--provider-kind", "SELF_HOSTED"),
        ("explain", "web_search", "--provider-kind", "SELF_HOSTED", "--format", "yaml"),
        ("explain", "--all", "--provider-kind", "SELF_HOSTED", "--format", "json"),
        ("check", "--format", "json"),
    ]
    for report in reports:
        done = run(*report, "--org", plugin.parent)
        assert "hunter2" not in done.stdout + done.stderr, report
    code, document = run_json("settings", "web_search", "--org", plugin.parent)
    assert code == 0
    shown = {row["field"]: row["value"] for row in document["settings"]}
    assert shown["searxng.baseUrl"] == "https://*****@search.example.org/"


def test_user_info_in_every_spelling_is_masked_in_every_report_and_never_exported(
    tmp_path: Path,
) -> None:
    plugin = write_tool_settings_plugin(
        tmp_path / "org",
        {
            "web_search.searxng.baseUrl": "https://admnx:PA/SQZ?w#rd@search.example.org/",
            "read_web_page.allowedPrivateHosts": "intruser:PRIVPASS@intranet",
        },
    )
    reports = [
        ("settings", "web_search"),
        ("settings", "web_search", "--format", "json"),
        ("settings", "web_search", "--format", "yaml"),
        ("settings", "read_web_page"),
        ("settings", "read_web_page", "--format", "json"),
        ("explain", "web_search", "--provider-kind", "SELF_HOSTED"),
        ("explain", "read_web_page", "--provider-kind", "SELF_HOSTED"),
        ("explain", "--all", "--provider-kind", "SELF_HOSTED", "--format", "json"),
        ("tools", "--provider-kind", "SELF_HOSTED"),
        ("tools", "--provider-kind", "SELF_HOSTED", "--format", "json"),
        ("check",),
        ("check", "--format", "json"),
        ("export", "web_search", "read_web_page", "--mode", "locked"),
        ("export", "web_search", "read_web_page", "--mode", "default"),
    ]
    for report in reports:
        done = run(*report, "--org", plugin.parent)
        shown = done.stdout + done.stderr
        for secret in ("admnx", "SQZ", "w#rd", "intruser", "PRIVPASS"):
            assert secret not in shown, (report, secret)
    code, document = run_json("settings", "web_search", "--org", plugin.parent)
    assert code == 0
    shown_values = {row["field"]: row["value"] for row in document["settings"]}
    assert shown_values["searxng.baseUrl"] == "https://*****@search.example.org/"
    exported = run("export", "web_search", "--mode", "locked", "--org", plugin.parent).stdout
    assert "web_search.searxng.baseUrl was left out" in exported


def test_settings_and_diff_repeat_load_errors_on_stderr(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "plugin.lua").write_text('ID = "x"\nthis is not lua\n', encoding="utf-8")
    for command in (
        ("settings", "web_search", "--org", broken),
        ("diff", "--org", EXAMPLE_ORG, "--against-org", broken, "--component", "CHAT"),
        ("diff", "--org", broken, "--against-org", EXAMPLE_ORG, "--component", "CHAT"),
    ):
        done = run(*command)
        assert done.returncode == 0, done.stderr
        assert f"{broken / 'plugin.lua'}:2: error:" in done.stderr, command


# --- addresses of providers and MCP servers: what the runtime refuses, check refuses ----------


def _address_entries(hostnames: list[str], mcp_urls: list[str]) -> str:
    """One line per entry: self-hosted providers at `hostnames`, HTTP MCP servers at `mcp_urls`."""
    lines = ["CONFIG = {}", 'CONFIG["SETTINGS"] = {}', 'CONFIG["LLM_PROVIDERS"] = {}']
    lines.append('CONFIG["MCP_SERVERS"] = {}')
    for number, hostname in enumerate(hostnames, start=1):
        lines.append(
            f'CONFIG["LLM_PROVIDERS"][{number}] = {{ ["Id"] = "{uuid.uuid4()}", '
            f'["InstanceName"] = "P{number}", ["UsedLLMProvider"] = "SELF_HOSTED", '
            f'["Host"] = "VLLM", ["Hostname"] = {json.dumps(hostname, ensure_ascii=False)}, '
            '["Model"] = { ["Id"] = "m", ["DisplayName"] = "M" } }'
        )
    for number, url in enumerate(mcp_urls, start=1):
        lines.append(
            f'CONFIG["MCP_SERVERS"][{number}] = {{ ["Id"] = "{uuid.uuid4()}", '
            f'["Name"] = "s{number}", ["Transport"] = "STREAMABLE_HTTP", '
            f'["Url"] = {json.dumps(url, ensure_ascii=False)} }}'
        )
    return "\n".join(lines) + "\n"


def test_check_skips_providers_and_mcp_servers_whose_address_the_runtime_refuses(
    tmp_path: Path,
) -> None:
    hostnames = [
        "ftp://llm.corp../",
        "llm.example.org/v1",
        "https://llm.corp../v1",
        "http://llm server.corp:8000/v1",
        "https://[::1/v1",
        "https://llm.example.org:99999/v1",
        "https://llm.exa\tmple.org/v1",
        "https://me:hunter2@llm.corp../v1",
        "https://llm.example.org/v1?api_key=hunter2",
        "https://me:hunter2@llm.example.org/v1",
    ]
    urls = [
        "ftp://mcp.corp/mcp",
        "http://mcp..corp/mcp",
        "http://127.0.0.1:99999/mcp",
        "http://me:hunter2@exa mple.org/mcp",
        "http://127.0.0.1:8080/m\ncp",
    ]
    plugin = write_plugin(tmp_path / "org", _address_entries(hostnames, urls))
    code, document = run_json("check", "--org", plugin.parent, "--strict")
    assert code == 1 and "hunter2" not in json.dumps(document)
    lines = plugin.read_text(encoding="utf-8").splitlines()
    skipped = {w["line"]: w for w in document["errors"] if w["code"] == "invalid-entry"}
    for number in range(1, len(hostnames) + 1):
        line = (
            lines.index(
                next(t for t in lines if t.startswith(f'CONFIG["LLM_PROVIDERS"][{number}]'))
            )
            + 1
        )
        warning = skipped.pop(line)
        assert warning["file"] == str(plugin)
        assert f'CONFIG["LLM_PROVIDERS"] entry {number} skipped: Hostname ' in warning["message"]
        assert "https://llm.example.org/v1 or http://localhost:11434" in warning["message"]
    for number in range(1, len(urls) + 1):
        line = (
            lines.index(next(t for t in lines if t.startswith(f'CONFIG["MCP_SERVERS"][{number}]')))
            + 1
        )
        warning = skipped.pop(line)
        assert warning["file"] == str(plugin)
        assert f'CONFIG["MCP_SERVERS"] entry {number} skipped: Url ' in warning["message"]
    assert skipped == {}
    messages = " ".join(w["message"] for w in document["errors"])
    assert "Hostname 'ftp://llm.corp../' is not an http(s) address" in messages
    assert "Hostname 'https://llm.corp../v1' names no host" in messages
    assert "Hostname 'https://*****@llm.corp../v1' names no host" in messages
    assert "Hostname (hidden: it holds a query) is not" not in messages  # it is readable
    assert "Hostname must be a plain base URL without query, fragment or user info" in messages
    assert "Url 'ftp://mcp.corp/mcp' is not an http:// or https:// address" in messages
    assert "Url 'http://mcp..corp/mcp' names no host" in messages
    assert "Url 'http://*****@exa mple.org/mcp' names no host" in messages


def test_check_accepts_every_address_form_the_runtime_reads(tmp_path: Path) -> None:
    hostnames = [
        "http://localhost:11434",
        "http://[::1]:8000/",
        "http://10.0.0.5:8000/v1",
        "https://llm.b\u00fccher.example/v1",
        "https://xn--bcher-kva.example./v1",
        "http://llm_team.corp:8000",
        "  https://gateway.corp/openai/v1/  ",
        "HTTPS://LLM.EXAMPLE.ORG/v1",
    ]
    urls = [
        "http://127.0.0.1:9/mcp",
        "http://localhost:3000/mcp",
        "http://[::1]:8080/mcp",
        "https://mcp.b\u00fccher.example/mcp?tenant=a",
        "https://mcp_team.corp/mcp",
    ]
    body = _address_entries(hostnames, urls)
    cloud = (
        'CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = { ["Id"] = "'
        f'{uuid.uuid4()}", ["InstanceName"] = "Cloud", ["UsedLLMProvider"] = "OPEN_AI", '
        '["Host"] = "NONE", ["Hostname"] = "", '
        '["Model"] = { ["Id"] = "gpt-4o", ["DisplayName"] = "GPT-4o" } }\n'
    )
    plugin = write_plugin(tmp_path / "org", body + cloud)
    code, document = run_json("check", "--org", plugin.parent, "--strict")
    assert (code, document["errors"], document["warnings"]) == (0, [], []), document


def _provider_entries(entries: list[tuple[str, str, str]]) -> str:
    """One line per provider entry: (UsedLLMProvider, Host, Hostname)."""
    lines = ["CONFIG = {}", 'CONFIG["SETTINGS"] = {}', 'CONFIG["LLM_PROVIDERS"] = {}']
    for number, (kind, host, hostname) in enumerate(entries, start=1):
        lines.append(
            f'CONFIG["LLM_PROVIDERS"][{number}] = {{ ["Id"] = "{uuid.uuid4()}", '
            f'["InstanceName"] = "P{number}", ["UsedLLMProvider"] = "{kind}", '
            f'["Host"] = "{host}", ["Hostname"] = "{hostname}", '
            '["Model"] = { ["Id"] = "m", ["DisplayName"] = "M" } }'
        )
    return "\n".join(lines) + "\n"


def test_check_skips_providers_the_runtime_cannot_call(tmp_path: Path) -> None:
    refused = [
        (("SELF_HOSTED", "OLLAMA", ""), "a self-hosted Ollama needs Hostname, e.g. http://"),
        (("SELF_HOSTED", "LM_STUDIO", "  "), "a self-hosted LM Studio needs Hostname"),
        (("HETZNER", "NONE", ""), "Hetzner has no default address; set Hostname"),
        (("LITE_LLM", "NONE", ""), "LiteLLM has no default address; set Hostname"),
        (
            ("SELF_HOSTED", "WHISPER_CPP", "http://localhost:8080"),
            "Host 'WHISPER_CPP' cannot serve chat requests; use one of LM_STUDIO, LLAMA_CPP, "
            "OLLAMA, VLLM",
        ),
        (("SELF_HOSTED", "NONE", "http://localhost:8080"), "Host 'NONE' cannot serve chat"),
    ]
    plugin = write_plugin(tmp_path / "org", _provider_entries([e for e, _ in refused]))
    code, document = run_json("check", "--org", plugin.parent, "--strict")
    assert code == 1 and document["warnings"] == []  # a skipped entry is an error
    lines = plugin.read_text(encoding="utf-8").splitlines()
    skipped = {w["line"]: w for w in document["errors"] if w["code"] == "invalid-entry"}
    for number, (_, expected) in enumerate(refused, start=1):
        prefix = f'CONFIG["LLM_PROVIDERS"][{number}]'
        warning = skipped.pop(lines.index(next(t for t in lines if t.startswith(prefix))) + 1)
        assert warning["file"] == str(plugin)
        assert f'CONFIG["LLM_PROVIDERS"] entry {number} skipped: ' in warning["message"]
        assert expected in warning["message"]
    assert skipped == {}


def test_check_accepts_every_provider_the_runtime_calls(tmp_path: Path) -> None:
    entries = [
        ("SELF_HOSTED", "LM_STUDIO", "http://localhost:1234"),
        ("SELF_HOSTED", "LLAMA_CPP", "http://127.0.0.1:8080"),
        ("SELF_HOSTED", "OLLAMA", "http://localhost:11434"),
        ("SELF_HOSTED", "VLLM", "https://vllm.corp/v1"),
        ("HETZNER", "NONE", "https://llm.hetzner.corp/v1"),
        ("OPEN_AI", "NONE", ""),
        ("MISTRAL", "WHISPER_CPP", "  "),
    ]
    plugin = write_plugin(tmp_path / "org", _provider_entries(entries))
    code, document = run_json("check", "--org", plugin.parent, "--strict")
    assert (code, document["errors"], document["warnings"]) == (0, [], []), document


def test_settings_keys_show_the_gateway_client_secret_masked(tmp_path: Path) -> None:
    """DataGateway.ClientSecret is a secret setting: `policy settings keys` (and the web page's
    settings, from the same document) show it masked, as an encrypted tool setting is, never
    its ENC:v1: text."""
    secret = generate_secret()
    encrypted = encrypt("gateway-client-secret", secret)
    body = (
        PROVIDERS + 'CONFIG["SETTINGS"] = {}\n'
        'CONFIG["SETTINGS"]["DataGateway.Issuer"] = "https://login.example.org/corp"\n'
        'CONFIG["SETTINGS"]["DataGateway.Audience"] = "toolpolicy-gateway"\n'
        'CONFIG["SETTINGS"]["DataGateway.ClientId"] = "toolpolicy-gateway"\n'
        f'CONFIG["SETTINGS"]["DataGateway.ClientSecret"] = "{encrypted}"\n'
    )
    org = write_plugin(tmp_path / "org", body).parent
    env = {"TOOLPOLICY_CONFIG_ENCRYPTION_SECRET": secret}
    code, document = run_json("settings", "keys", "--org", org, env=env)
    assert code == 0
    rows = document["keys"]
    row = next(r for r in rows if r["key"] == "DataGateway.ClientSecret")
    assert row["value"] == "*****" and row["locked"], row
    table = run("settings", "keys", "--org", org, env=env).stdout
    assert encrypted[len("ENC:v1:") :] not in table and encrypted not in json.dumps(rows)
