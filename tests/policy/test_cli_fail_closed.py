"""What would have tightened, had it been spelled right, is an error — and stays closed.

Each everyday mistake of issue 22 as an organization plugin in a temporary folder, through the
`policy` command in a subprocess: `policy check` exits 1 naming file:line and the near miss, and
the decision the mistake would have changed stays closed (the tool is not offered, the server's
tools are not offered).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from tests.policy.test_cli import PROVIDERS, ROOT, run, run_json, write_plugin

TICKETS = ROOT / "examples" / "mcp" / "tickets_server.py"
SERVER_ID = "0b7e3c52-91d4-4f0a-8e26-5a1c9d3b7f48"
SEARXNG = (
    'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = '
    '{ ["web_search.searxng.baseUrl"] = "https://searx.example.org" }\n'
)


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, start=1) if text in line)


def _settings_plugin(folder: Path, settings: str) -> Path:
    return write_plugin(folder, PROVIDERS + 'CONFIG["SETTINGS"] = {}\n' + SEARXNG + settings)


def _server_plugin(folder: Path, fields: str) -> Path:
    """The example tickets server (a real `mcp`-SDK server over stdio) with extra `fields`."""
    entry = (
        'CONFIG["MCP_SERVERS"] = {}\n'
        'CONFIG["MCP_SERVERS"][1] = {\n'
        f'    ["Id"] = "{SERVER_ID}", ["Name"] = "tickets", ["Transport"] = "STDIO",\n'
        f'    ["Command"] = {json.dumps(sys.executable)},\n'
        f'    ["Args"] = {{ {json.dumps(str(TICKETS))} }},\n'
        f"{fields}"
        "}\n"
    )
    return write_plugin(folder, PROVIDERS + 'CONFIG["SETTINGS"] = {}\n' + entry)


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state directory holding the tickets server's listing, as `policy mcp list` keeps it:
    without a mistake, its tools are offered from there."""
    folder = tmp_path_factory.mktemp("listed")
    plugin = _server_plugin(folder / "org", "")
    done = run("mcp", "list", "--org", plugin.parent, "--state-dir", folder / "state")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "state"


def _explain(plugin: Path, tool_id: str, *more: str | Path) -> tuple[int, str]:
    done = run("explain", tool_id, "--org", plugin.parent, "--provider", "Cloud GPT", *more)
    return done.returncode, done.stdout + done.stderr


def test_the_tickets_server_offers_its_tools_without_a_mistake(
    tmp_path: Path, listed: Path
) -> None:
    plugin = _server_plugin(tmp_path / "org", "")
    code, said = _explain(plugin, "tickets__delete_ticket", "--state-dir", listed)
    assert code == 0 and "\n  OFFERED\n" in said, said


@pytest.mark.parametrize(
    ("field", "meant"),
    [
        ('["DeniedTool"] = { "delete_*" }', "DeniedTools"),
        ('["RequirePin"] = true', "RequirePins"),
    ],
)
def test_a_misspelled_server_field_skips_the_server(
    tmp_path: Path, listed: Path, field: str, meant: str
) -> None:
    plugin = _server_plugin(tmp_path / "org", f"    {field},\n")
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1 and not document["ok"]
    (error,) = document["errors"]
    assert (error["file"], error["line"], error["code"]) == (
        str(plugin),
        _line_of(plugin, 'CONFIG["MCP_SERVERS"][1]'),
        "invalid-entry",
    )
    assert error["message"].startswith('CONFIG["MCP_SERVERS"] entry 1 skipped: unknown field')
    assert f'did you mean "{meant}"?' in error["message"]
    assert "(known: AllowedTools, Args, Auth, Command, DeniedTools," in error["message"]
    for tool_id in ("tickets__delete_ticket", "tickets__search_tickets"):
        code, said = _explain(plugin, tool_id, "--state-dir", listed)
        assert code == 2 and f"unknown tool '{tool_id}'" in said, said
    matrix = run("explain", "--all", "--org", plugin.parent, "--state-dir", listed)
    assert "tickets__" not in matrix.stdout


def test_transport_http_is_an_error_that_skips_the_server(tmp_path: Path, listed: Path) -> None:
    plugin = _server_plugin(tmp_path / "org", "").with_name("plugin.lua")
    plugin.write_text(
        plugin.read_text(encoding="utf-8").replace('"STDIO"', '"HTTP"'), encoding="utf-8"
    )
    done = run("check", "--org", plugin.parent)
    assert done.returncode == 1
    line = _line_of(plugin, 'CONFIG["MCP_SERVERS"][1]')
    assert (
        f'{plugin}:{line}: error [invalid-entry]: CONFIG["MCP_SERVERS"] entry 1 skipped: '
        'Transport is "HTTP"; it must be one of STDIO, STREAMABLE_HTTP (did you mean '
        "STREAMABLE_HTTP?)"
    ) in done.stdout
    code, said = _explain(plugin, "tickets__search_tickets", "--state-dir", listed)
    assert code == 2 and "unknown tool 'tickets__search_tickets'" in said


def test_a_case_slip_in_a_datatools_key_fails_closed(tmp_path: Path) -> None:
    right = _settings_plugin(
        tmp_path / "right",
        'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = '
        '{ ["web_search"] = "HIGH" }\n',
    )
    assert "PROVIDER_CONFIDENCE_TOO_LOW" in _explain(right, "web_search")[1]
    plugin = _settings_plugin(
        tmp_path / "slip",
        'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolID"] = '
        '{ ["web_search"] = "HIGH" }\n',
    )
    done = run("check", "--org", plugin.parent)
    assert done.returncode == 1
    line = _line_of(plugin, "ByToolID")
    assert (
        f'{plugin}:{line}: error [unknown-setting-key]: CONFIG["SETTINGS"]'
        '["DataTools.MinimumProviderConfidenceByToolID"] is not a setting toolpolicy knows (did '
        'you mean "DataTools.MinimumProviderConfidenceByToolId"? keys are case-sensitive)'
    ) in done.stdout
    explained = run("explain", "web_search", "--org", plugin.parent, "--provider-kind", "OPEN_AI")
    assert explained.returncode == 1  # a broken organization plugin
    assert "NOT OFFERED: TOOLS_SWITCHED_OFF" in explained.stdout


def test_a_case_slip_in_a_local_plugin_is_a_warning_and_kept(tmp_path: Path) -> None:
    plugin = _settings_plugin(
        tmp_path / "mine",
        'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolID"] = '
        '{ ["web_search"] = "HIGH" }\n',
    )
    code, document = run_json("check", "--local", plugin.parent)
    assert code == 0 and document["errors"] == []
    assert [w["code"] for w in document["warnings"]] == ["unknown-setting-key"]
    assert (
        'did you mean "DataTools.MinimumProviderConfidenceByToolId"?'
        in (document["warnings"][0]["message"])
    )


def test_a_misspelled_disabled_tool_id_switches_off_the_tool_it_meant(tmp_path: Path) -> None:
    plugin = _settings_plugin(
        tmp_path / "org", 'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_serach" }\n'
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1
    (error,) = document["errors"]
    assert (error["file"], error["line"], error["code"]) == (
        str(plugin),
        _line_of(plugin, "web_serach"),
        "unknown-tool-id",
    )
    assert (
        "DataTools.DisabledToolIds names the unknown tool 'web_serach'; did you mean "
        '"web_search"? Until it is fixed it is read as web_search'
    ) in error["message"]
    code, said = _explain(plugin, "web_search")
    assert "NOT OFFERED: TOOL_SWITCHED_OFF" in said
    assert "no tool has the id web_serach: read as web_search until it is fixed" in said


def test_a_misspelled_minimum_confidence_id_keeps_the_level(tmp_path: Path) -> None:
    plugin = _settings_plugin(
        tmp_path / "org",
        'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = '
        '{ ["web_serch"] = "HIGH" }\n',
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1
    assert [e["code"] for e in document["errors"]] == ["unknown-tool-id"]
    assert 'did you mean "web_search"?' in document["errors"][0]["message"]
    code, said = _explain(plugin, "web_search")
    assert "NOT OFFERED: PROVIDER_CONFIDENCE_TOO_LOW" in said, said


def test_an_unknown_id_in_a_default_selection_is_an_error(tmp_path: Path) -> None:
    plugin = _settings_plugin(
        tmp_path / "org",
        'CONFIG["SETTINGS"]["DataTools.DefaultToolIdsByComponent"] = '
        '{ ["CHAT"] = { "read_web_pages" } }\n',
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1
    (error,) = document["errors"]
    assert error["code"] == "unknown-tool-id" and error["line"] == _line_of(plugin, "CHAT")
    assert 'did you mean "read_web_page"?' in error["message"]


def test_an_mcp_tool_id_of_a_server_not_listed_is_reported_as_not_checked(
    tmp_path: Path, listed: Path
) -> None:
    plugin = _server_plugin(tmp_path / "org", "")
    plugin.write_text(
        plugin.read_text(encoding="utf-8")
        + 'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "tickets__delete_tickets" }\n',
        encoding="utf-8",
    )
    code, document = run_json("check", "--org", plugin.parent, "--offline")
    assert code == 0 and document["errors"] == []
    (warning,) = [w for w in document["warnings"] if w["code"] == "unchecked-tool-id"]
    assert "'tickets__delete_tickets': not checked: server not listed" in warning["message"]
    code, document = run_json("check", "--org", plugin.parent, "--state-dir", listed, "--offline")
    assert code == 1
    (error,) = document["errors"]
    assert error["code"] == "unknown-tool-id"
    assert 'did you mean "tickets__delete_ticket"?' in error["message"]
    code, said = _explain(plugin, "tickets__delete_ticket", "--state-dir", listed)
    assert "NOT OFFERED: TOOL_SWITCHED_OFF" in said


def test_a_skipped_provider_is_an_error(tmp_path: Path) -> None:
    plugin = write_plugin(
        tmp_path / "org",
        PROVIDERS.replace('"OPEN_AI"', '"SELF_HOSTED"')
        .replace('["Host"] = "NONE"', '["Host"] = "LLAMACPP"')
        .replace('["Hostname"] = ""', '["Hostname"] = "http://127.0.0.1:8080"')
        + 'CONFIG["SETTINGS"] = {}\n',
    )
    done = run("check", "--org", plugin.parent)
    assert done.returncode == 1
    line = _line_of(plugin, 'CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1]')
    assert (
        f'{plugin}:{line}: error [invalid-entry]: CONFIG["LLM_PROVIDERS"] entry 1 skipped: '
        'Host is "LLAMACPP"; it must be one of NONE, LM_STUDIO, LLAMA_CPP, WHISPER_CPP, '
        "OLLAMA, VLLM (did you mean LLAMA_CPP?)"
    ) in done.stdout


def test_ai_studios_templates_load_without_a_false_error() -> None:
    """AI Studio's template with every example filled in, and our own text of every construct:
    valid AI Studio keys and entries give no error and no warning but "kept, not used here"."""
    secret = {"TOOLPOLICY_CONFIG_ENCRYPTION_SECRET": base64.b64encode(bytes(range(32))).decode()}
    for fixture in ("ai_studio", "ai_studio_shapes"):
        folder = ROOT / "tests" / "policy" / "plugin_fixtures" / fixture
        done = run("check", "--org", folder, "--format", "json", env=secret)
        document = json.loads(done.stdout)
        assert (done.returncode, document["errors"]) == (0, []), fixture
        assert {w["code"] for w in document["warnings"]} <= {
            "not-used-by-toolpolicy",
            "ai-studio-compat",
        }, (fixture, document["warnings"])


# --- skipped entries are named where they matter -----------------------------------------------


def _llamacpp_only(folder: Path) -> Path:
    return write_plugin(
        folder,
        'CONFIG = {}\nCONFIG["SETTINGS"] = {}\nCONFIG["LLM_PROVIDERS"] = {}\n'
        'CONFIG["LLM_PROVIDERS"][1] = { ["Id"] = "33333333-3333-4333-8333-333333333333",\n'
        '    ["InstanceName"] = "Team Llama", ["UsedLLMProvider"] = "SELF_HOSTED",\n'
        '    ["Host"] = "LLAMACPP", ["Hostname"] = "http://127.0.0.1:8080",\n'
        '    ["Model"] = { ["Id"] = "llama", ["DisplayName"] = "Llama" } }\n',
    )


def test_no_providers_names_the_skipped_provider(tmp_path: Path) -> None:
    plugin = _llamacpp_only(tmp_path / "org")
    entry_line = _line_of(plugin, 'CONFIG["LLM_PROVIDERS"][1]')
    where = f"{plugin}:{entry_line}"
    skipped = (
        f'Skipped, not in force: {where}: CONFIG["LLM_PROVIDERS"] entry 1 (Team Llama) skipped: '
        'Host is "LLAMACPP"'
    )
    matrix = run("explain", "--all", "--org", plugin.parent)
    assert matrix.returncode == 2
    assert "the configuration has no providers" in matrix.stderr and skipped in matrix.stderr
    one = run("explain", "web_search", "--org", plugin.parent)
    assert one.returncode == 2
    assert "Configured providers: none" in one.stderr and skipped in one.stderr
    named = run("explain", "web_search", "--org", plugin.parent, "--provider", "Team Llama")
    assert named.returncode == 2 and skipped in named.stderr


def test_chat_and_mcp_serve_name_the_skipped_provider(tmp_path: Path) -> None:
    """policy chat and policy mcp serve choose their provider as explain does: what is not in
    force is named, whether no provider was chosen or the one named is missing."""
    plugin = _llamacpp_only(tmp_path / "org")
    entry_line = _line_of(plugin, 'CONFIG["LLM_PROVIDERS"][1]')
    skipped = (
        f'Skipped, not in force: {plugin}:{entry_line}: CONFIG["LLM_PROVIDERS"] entry 1 '
        '(Team Llama) skipped: Host is "LLAMACPP"'
    )
    chat = run("chat", "Hi", "--org", plugin.parent, "--offline")
    assert chat.returncode == 2
    assert "choose a provider with --provider ID. Configured providers: none" in chat.stderr
    assert skipped in chat.stderr
    named = run("chat", "Hi", "--org", plugin.parent, "--provider", "Team Llama", "--offline")
    assert named.returncode == 2
    assert "no configured provider 'Team Llama'" in named.stderr and skipped in named.stderr
    serve = run("mcp", "serve", "--org", plugin.parent, "--no-watch", "--offline")
    assert serve.returncode == 2 and skipped in serve.stderr
    said = 'skipped: Host is "LLAMACPP"'
    for done in (chat, named, serve):
        assert done.stderr.count(said) == 1, done.stderr


def test_chat_and_mcp_serve_show_the_errors_once_a_provider_is_chosen(tmp_path: Path) -> None:
    """With a provider chosen, the skipped entry is still said on stderr, once, before anything
    the command does next (here: a --tool no installed tool has)."""
    llama = _llamacpp_only(tmp_path / "llama").read_text(encoding="utf-8")
    plugin = write_plugin(
        tmp_path / "org",
        llama + 'CONFIG["LLM_PROVIDERS"][2] = { ["Id"] = "44444444-4444-4444-8444-444444444444",\n'
        '    ["InstanceName"] = "Cloud GPT", ["UsedLLMProvider"] = "OPEN_AI", ["Host"] = "NONE",\n'
        '    ["Hostname"] = "", ["Model"] = { ["Id"] = "gpt-4o", ["DisplayName"] = "GPT-4o" } }\n',
    )
    said = 'skipped: Host is "LLAMACPP"'
    chat = run("chat", "Hi", "--org", plugin.parent, "--tool", "nope", "--offline")
    assert chat.returncode == 2 and "unknown tool 'nope'" in chat.stderr
    assert chat.stderr.count(said) == 1, chat.stderr
    assert chat.stderr.index(said) < chat.stderr.index("unknown tool 'nope'")


def test_explain_names_every_skipped_entry_once(tmp_path: Path) -> None:
    plugin = _server_plugin(tmp_path / "org", '    ["RequirePin"] = true,\n')
    entry_line = _line_of(plugin, 'CONFIG["MCP_SERVERS"][1]')
    line = f"{plugin}:{entry_line}"
    said = (
        f'Skipped entries (not in force):\n  {line}: CONFIG["MCP_SERVERS"] entry 1 (tickets) '
        'skipped: unknown field "RequirePin"; did you mean "RequirePins"?'
    )
    one = run("explain", "web_search", "--org", plugin.parent, "--provider", "Cloud GPT")
    assert said in one.stdout and "RequirePin" not in one.stderr  # said once
    matrix = run("explain", "--all", "--org", plugin.parent, "--offline")
    assert said in matrix.stdout and "RequirePin" not in matrix.stderr
    _, document = run_json("explain", "--all", "--org", plugin.parent, "--offline")
    (entry,) = document["skipped_entries"]
    assert (entry["section"], entry["name"], entry["file"], entry["line"]) == (
        "MCP_SERVERS",
        "tickets",
        str(plugin),
        _line_of(plugin, 'CONFIG["MCP_SERVERS"][1]'),
    )
    assert entry["reason"].startswith('unknown field "RequirePin"; did you mean "RequirePins"?')


def test_mcp_list_names_a_skipped_server_entry(tmp_path: Path) -> None:
    plugin = _server_plugin(tmp_path / "org", '    ["DeniedTool"] = { "delete_*" },\n')
    line = _line_of(plugin, 'CONFIG["MCP_SERVERS"][1]')
    listed = run("mcp", "list", "--org", plugin.parent)
    assert listed.returncode == 1
    assert (
        f"MCP server entry skipped, not in force: {plugin}:{line}: "
        'CONFIG["MCP_SERVERS"] entry 1 (tickets): unknown field "DeniedTool"; did you mean '
        '"DeniedTools"?'
    ) in listed.stdout
    assert "DeniedTool" not in listed.stderr  # said once
    code, document = run_json("mcp", "list", "--org", plugin.parent)
    assert code == 1 and document["servers"] == []
    (entry,) = document["skipped"]
    assert (entry["name"], entry["file"], entry["line"], entry["organization"]) == (
        "tickets",
        str(plugin),
        line,
        True,
    )


def test_a_local_plugins_skipped_provider_is_a_warning_and_named(tmp_path: Path) -> None:
    plugin = _llamacpp_only(tmp_path / "mine")
    code, document = run_json("check", "--local", plugin.parent)
    assert code == 0 and [w["code"] for w in document["warnings"]] == ["invalid-entry"]
    matrix = run("explain", "--all", "--local", plugin.parent)
    assert matrix.returncode == 2 and "Skipped, not in force: " in matrix.stderr


def _tool_settings_plugin(folder: Path, table: str, safe_search_field: str) -> Path:
    """web_search with a SearXNG backend and a safe-search level in `table`, under the field
    name `safe_search_field` (right: defaultSafeSearch)."""
    return write_plugin(
        folder,
        PROVIDERS + 'CONFIG["SETTINGS"] = {}\n'
        f'CONFIG["SETTINGS"]["DataTools.{table}"] = {{\n'
        '    ["web_search.searxng.baseUrl"] = "https://searx.example.org",\n'
        f'    ["web_search.{safe_search_field}"] = "STRICT",\n'
        "}\n",
    )


@pytest.mark.parametrize("table", ["LockedToolSettings", "DefaultToolSettings"])
def test_a_misspelled_tool_setting_field_keeps_the_tool_from_being_offered(
    tmp_path: Path, table: str
) -> None:
    right = _tool_settings_plugin(tmp_path / "right", table, "defaultSafeSearch")
    assert run("check", "--org", right.parent).returncode == 0
    code, said = _explain(right, "web_search")
    assert code == 0 and "\n  OFFERED\n" in said, said

    plugin = _tool_settings_plugin(tmp_path / "slip", table, "defaultSafeSerach")
    line = _line_of(plugin, "defaultSafeSerach")
    done = run("check", "--org", plugin.parent)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f'{plugin}:{line}: error [unknown-tool-setting]: DataTools.{table}["web_search.'
        'defaultSafeSerach"]: web_search has no setting "defaultSafeSerach"; did you mean '
        '"defaultSafeSearch"?'
    ) in done.stdout
    assert "web_search is not offered until it is fixed" in done.stdout

    code, said = _explain(plugin, "web_search")
    assert "NOT OFFERED: NOT_CONFIGURED" in said, said
    assert (
        f'DataTools.{table}["web_search.defaultSafeSerach"] ({plugin}:{line}): web_search has '
        'no setting "defaultSafeSerach"; did you mean "defaultSafeSearch"? web_search is not '
        "offered until it is fixed"
    ) in said


def test_a_misspelled_tool_setting_field_in_a_local_plugin_is_a_warning_and_kept(
    tmp_path: Path,
) -> None:
    plugin = _tool_settings_plugin(tmp_path / "mine", "LockedToolSettings", "defaultSafeSerach")
    code, document = run_json("check", "--local", plugin.parent)
    assert code == 0 and document["errors"] == []
    assert [w["code"] for w in document["warnings"]] == ["unknown-tool-setting"]
    assert "the entry has no effect" in document["warnings"][0]["message"]
    done = run("explain", "web_search", "--local", plugin.parent, "--provider", "Cloud GPT")
    assert done.returncode == 0 and "\n  OFFERED\n" in done.stdout, done.stdout + done.stderr


def test_an_unknown_tool_setting_field_without_a_near_miss_leaves_the_tool_offered(
    tmp_path: Path,
) -> None:
    plugin = _tool_settings_plugin(tmp_path / "org", "LockedToolSettings", "appOwnedField")
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 0 and [w["code"] for w in document["warnings"]] == ["unknown-tool-setting"]
    code, said = _explain(plugin, "web_search")
    assert code == 0 and "\n  OFFERED\n" in said, said


def test_a_misspelled_data_source_confidence_floor_skips_the_source(tmp_path: Path) -> None:
    """A DATA_SOURCES field that looks like MinimumProviderConfidence misspelled would leave the
    source open to every provider: the entry is skipped (nothing searches it), named with the
    field it meant."""
    entry = (
        'CONFIG["DATA_SOURCES"] = {}\n'
        'CONFIG["DATA_SOURCES"][1] = {\n'
        '    ["Id"] = "6c7e1c38-6d0b-4c2c-a8a9-0d1f6f0b2f43", ["Name"] = "Handbook",\n'
        '    ["Type"] = "ERI_V1", ["Hostname"] = "https://eri.example.org", ["Port"] = 443,\n'
        '    ["AuthMethod"] = "NONE", ["SecurityPolicy"] = "ALLOW_ANY",\n'
        '    ["SelectedRetrievalId"] = "default", ["MaxMatches"] = 5,\n'
        '    ["MinimumProviderConfidense"] = "HIGH",\n'
        "}\n"
    )
    plugin = _settings_plugin(tmp_path / "org", entry)
    _, document = run_json("check", "--org", plugin.parent)
    (skipped,) = [w for w in document["warnings"] if "DATA_SOURCES" in w["message"]]
    assert (skipped["line"], skipped["code"]) == (
        _line_of(plugin, 'CONFIG["DATA_SOURCES"][1]'),
        "invalid-entry",
    )
    assert skipped["message"].startswith(
        'CONFIG["DATA_SOURCES"] entry 1 skipped: unknown field "MinimumProviderConfidense"; '
        'did you mean "MinimumProviderConfidence"?'
    ), skipped
    fixed = plugin.read_text(encoding="utf-8").replace("Confidense", "Confidence")
    plugin.write_text(fixed, encoding="utf-8")
    _, document = run_json("check", "--org", plugin.parent)
    assert not [w for w in document["warnings"] if "DATA_SOURCES" in w["message"]], document


def test_a_call_limit_glob_that_matches_no_tool_is_an_error(tmp_path: Path) -> None:
    """A misspelled DataGateway.CallLimits glob would leave the calls it meant unlimited: an
    error at its line, like an approval glob's; a glob that matches is not named."""
    plugin = _settings_plugin(
        tmp_path / "org",
        'CONFIG["SETTINGS"]["DataGateway.CallLimits"] = {\n'
        '    ["web_*"] = "9/hour",\n'
        '    ["web_serch*"] = "5/hour",\n'
        "}\n",
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1
    (error,) = document["errors"]
    assert (error["line"], error["code"]) == (
        _line_of(plugin, "web_serch*"),
        "limit-matches-nothing",
    )
    assert error["message"].startswith(
        "DataGateway.CallLimits names 'web_serch*', which matches no tool (known: "
    )
    assert error["message"].endswith("a misspelled glob leaves the calls it meant unlimited")


def test_a_sign_in_without_an_audience_is_an_error_in_check(tmp_path: Path) -> None:
    """DataGateway.Issuer without DataGateway.Audience: the serving commands refuse to serve it
    (any token the issuer signs for any service would do); `policy check` says so first, at the
    issuer's line."""
    plugin = _settings_plugin(
        tmp_path / "org",
        'CONFIG["SETTINGS"]["DataGateway.Issuer"] = "https://login.example.org/realms/corp"\n',
    )
    code, document = run_json("check", "--org", plugin.parent)
    assert code == 1
    (error,) = document["errors"]
    assert (error["line"], error["code"]) == (
        _line_of(plugin, "DataGateway.Issuer"),
        "sign-in-without-audience",
    )
    assert "DataGateway.Issuer is set without DataGateway.Audience" in error["message"]
    served = run("serve", "--org", plugin.parent, "--port", "0")
    assert served.returncode != 0
    assert (
        f"nothing is served: {plugin}:{error['line']}: DataGateway.Issuer is set without "
        "DataGateway.Audience"
    ) in served.stderr, served.stderr
