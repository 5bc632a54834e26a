"""`policy export`: the administrator's setup as a plugin.lua fragment.

Every fragment is checked the way an administrator uses it: appended to a real plugin.lua and
loaded through the plugin loader (real Lua via lupa), then compared with what was exported.
The CLI runs as the installed `policy` command in a subprocess. The OS keyring is never touched:
library tests hand the registry a secret reader, CLI tests select a keyring backend that keeps
its entries in a JSON file of the test's own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import lupa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy import Policy, secrets
from policy.builtin import builtin_tools
from policy.configuration import PolicyConfiguration, SecretValue
from policy.decide.registry import ToolRegistry
from policy.definitions import (
    SettingField,
    SettingsSchema,
    ToolCollectionDefinition,
    ToolDefinition,
    ToolFunction,
)
from policy.export import (
    DEFAULT_TABLE,
    LOCKED_TABLE,
    MINIMUM_TABLE,
    ExportError,
    ExportMode,
    SecretExportError,
    build_export,
    export_entries,
    export_tool_settings,
    lua_string,
)
from policy.merge import load_configuration
from policy.tools import DefinedTool, Tool
from policy.user_settings import load_user_settings
from policy.vocabulary import ConfidenceLevel

SECRET = secrets.generate_secret()
ROOT = Path(__file__).resolve().parents[2]

HEADER = """\
ID = "{id}"
TYPE = "CONFIGURATION"
NAME = "Export test"
DESCRIPTION = "A plugin the export tests write"
VERSION = "1.0.0"
AUTHORS = {{ "IT" }}
SUPPORT_CONTACT = "it@example.org"
SOURCE_URL = "https://example.org/ai"
CATEGORIES = {{ "CORE" }}
TARGET_GROUPS = {{ "EVERYONE" }}
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
CONFIG = {{}}
CONFIG["SETTINGS"] = {{}}
"""


# --- helpers --------------------------------------------------------------------------------------


def _plugin(folder: Path, *lua: str) -> Path:
    """A minimal valid organization plugin with `lua` appended (fragments, settings)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plugin.lua"
    path.write_text(HEADER.format(id=uuid.uuid4()) + "\n".join(lua), encoding="utf-8")
    return path


def _load(folder: Path) -> PolicyConfiguration:
    configuration = load_configuration([folder])
    assert not configuration.findings, [f.message for f in configuration.findings]
    return configuration


def _table(configuration: PolicyConfiguration, key: str) -> dict[str, str]:
    setting = configuration.setting(key)
    if setting is None:
        return {}
    return {k: v.encrypted if isinstance(v, SecretValue) else v for k, v in setting.value.items()}


def _mail_tool(tool_id: str, name: str, fields: Mapping[str, SettingField]) -> DefinedTool:
    definition = ToolDefinition(
        id=tool_id,
        implementation_key=tool_id,
        settings_schema=SettingsSchema(properties=dict(fields)),
        minimum_provider_confidence=ConfidenceLevel.HIGH,
        function=ToolFunction(name=tool_id, description_for_llm=f"{name}."),
    )
    return DefinedTool(definition, display_name=name)


def _mail_tools() -> tuple[DefinedTool, ...]:
    return (
        _mail_tool(
            "search_mails",
            "Search mails",
            {
                "server": SettingField(group="imap"),
                "password": SettingField(group="imap", secret=True),
                "folder": SettingField(default="INBOX"),
            },
        ),
        _mail_tool("read_mail", "Read mail", {"maxCharacters": SettingField()}),
        _mail_tool("count_mails", "Count mails", {}),
    )


MAILBOXES = ToolCollectionDefinition(
    id="mailboxes",
    tool_ids=("search_mails", "read_mail", "count_mails"),
    minimum_provider_confidence=ConfidenceLevel.VERY_LOW,
    display_name="Mailboxes",
)


def _policy(
    tmp_path: Path,
    *,
    org_lua: str = "",
    user_yaml: str = "",
    keyring: Mapping[tuple[str, str], str] | None = None,
    tools: Sequence[Tool] | None = None,
) -> Policy:
    """The administrator's test machine: an org plugin, a user settings file and a keyring."""
    folder = tmp_path / "admin-org"
    _plugin(folder, org_lua)
    configuration = _load(folder)
    user_file = tmp_path / "admin-settings.yaml"
    user_file.write_text(textwrap.dedent(user_yaml), encoding="utf-8")
    user = load_user_settings(user_file)
    stored = dict(keyring or {})
    chosen = tuple(tools) if tools is not None else (*builtin_tools(), *_mail_tools())
    registry = ToolRegistry(
        chosen,
        configuration,
        user,
        collections=(MAILBOXES,),
        secret_reader=lambda tool_id, field: stored.get((tool_id, field)),
    )
    return Policy(configuration, user, registry, chosen, ())


def _round_trip(tmp_path: Path, *fragments: str, before: str = "") -> PolicyConfiguration:
    """The fragments pasted into a fresh organization plugin, loaded by the real loader."""
    folder = tmp_path / f"deployed-{uuid.uuid4().hex[:8]}"
    _plugin(folder, before, *fragments)
    return _load(folder)


WEB_SEARCH_SETUP = """\
tools:
  settings:
    web_search:
      defaultLanguage: "de-DE"
      searxng.baseUrl: "https://searx.example.org"
      defaultSafeSearch: ""
"""


# --- ToolSettingsExportTests ----------------------------------------------------------------------


def test_each_tool_of_a_collection_brings_its_own_areas(tmp_path: Path) -> None:
    [entry] = export_entries(_policy(tmp_path), ["mailboxes"])
    assert entry.tool_ids == ("search_mails", "read_mail", "count_mails")
    assert [(a.id, a.label, a.fields) for a in entry.areas] == [
        ("search_mails/imap", "Search mails: imap", ("server", "password")),
        ("search_mails/", "Search mails: General", ("folder",)),
        ("read_mail/", "Read mail: General", ("maxCharacters",)),
    ]


def test_a_single_tool_names_no_tool(tmp_path: Path) -> None:
    policy = _policy(tmp_path, user_yaml=WEB_SEARCH_SETUP)
    [entry] = export_entries(policy, ["web_search"])
    assert [a.id for a in entry.areas] == [
        "web_search/",
        "web_search/searxng",
        "web_search/staan",
        "web_search/tavily",
    ]
    assert [a.label for a in entry.areas] == ["General", "searxng", "staan", "tavily"]
    lua = export_tool_settings(policy, ["web_search"], ExportMode.LOCKED)
    assert "-- General [web_search/]" in lua and "Web search:" not in lua


def test_a_collection_with_one_tool_that_has_settings_names_no_tool(tmp_path: Path) -> None:
    [entry] = export_entries(_policy(tmp_path), ["read_mail", "count_mails"])
    assert [(a.id, a.label) for a in entry.areas] == [("read_mail/", "General")]


def test_the_export_holds_the_settings_of_every_tool_and_the_confidence_of_the_collection(
    tmp_path: Path,
) -> None:
    policy = _policy(
        tmp_path,
        org_lua=f'CONFIG["SETTINGS"]["{MINIMUM_TABLE}"] = {{ ["read_mail"] = "MEDIUM" }}\n',
        user_yaml="""\
        tools:
          settings:
            search_mails: {server: "imap.example.org", folder: "Archive"}
            read_mail: {maxCharacters: "5000"}
        """,
    )
    lua = export_tool_settings(
        policy, ["mailboxes"], ExportMode.LOCKED, include_minimum_confidence=True
    )
    deployed = _round_trip(tmp_path, lua)
    assert _table(deployed, LOCKED_TABLE) == {
        "search_mails.server": "imap.example.org",
        "search_mails.folder": "Archive",
        "read_mail.maxCharacters": "5000",
    }
    assert _table(deployed, MINIMUM_TABLE) == {"mailboxes": "MEDIUM"}
    minimums = deployed.setting(MINIMUM_TABLE)
    assert minimums is not None and minimums.locked
    assert 'AllowUserOverride"] = true' in lua


def test_only_the_selected_areas_are_exported(tmp_path: Path) -> None:
    policy = _policy(tmp_path, user_yaml=WEB_SEARCH_SETUP)
    exported = build_export(policy, ["web_search"], "locked", ["web_search/searxng"])
    assert exported.areas == ("web_search/searxng",)
    deployed = _round_trip(tmp_path, exported.lua)
    assert _table(deployed, LOCKED_TABLE) == {
        "web_search.searxng.baseUrl": "https://searx.example.org"
    }


# --- values: where they come from -----------------------------------------------------------------


def test_the_export_writes_what_the_setup_resolves_to_and_never_a_built_in_default(
    tmp_path: Path,
) -> None:
    org = f"""\
CONFIG["SETTINGS"]["{LOCKED_TABLE}"] = {{ ["web_search.maxResults"] = "7" }}
CONFIG["SETTINGS"]["{DEFAULT_TABLE}"] = {{
    ["web_search.primaryBackend"] = "SEARXNG",
    ["web_search.defaultLanguage"] = "en-US",
}}
"""
    policy = _policy(tmp_path, org_lua=org, user_yaml=WEB_SEARCH_SETUP)
    lua = export_tool_settings(policy, ["web_search"], ExportMode.DEFAULT)
    deployed = _round_trip(tmp_path, lua)
    assert _table(deployed, DEFAULT_TABLE) == {
        "web_search.maxResults": "7",
        "web_search.primaryBackend": "SEARXNG",
        "web_search.defaultLanguage": "de-DE",
        "web_search.searxng.baseUrl": "https://searx.example.org",
        "web_search.defaultSafeSearch": "",
    }
    assert deployed.setting(LOCKED_TABLE) is None
    assert "backendStrategy" not in lua and "staan.market" not in lua


def test_locked_mode_fills_the_locked_table_and_default_mode_the_default_table(
    tmp_path: Path,
) -> None:
    policy = _policy(tmp_path, user_yaml=WEB_SEARCH_SETUP)
    locked = _round_trip(tmp_path, export_tool_settings(policy, ["web_search"], "LOCKED"))
    defaults = _round_trip(tmp_path, export_tool_settings(policy, ["web_search"], "default"))
    assert _table(locked, LOCKED_TABLE) == _table(defaults, DEFAULT_TABLE) != {}
    assert locked.setting(DEFAULT_TABLE) is None and defaults.setting(LOCKED_TABLE) is None


def test_an_area_with_nothing_set_says_so_and_assigns_nothing(tmp_path: Path) -> None:
    lua = export_tool_settings(_policy(tmp_path), ["read_mail"], ExportMode.LOCKED)
    assert "-- (nothing set in this area)" in lua
    assert not [line for line in lua.splitlines() if line.startswith("CONFIG[")]
    assert _round_trip(tmp_path, lua).setting(LOCKED_TABLE) is None


def test_naming_one_tool_of_a_collection_exports_that_tool_and_the_collections_confidence(
    tmp_path: Path,
) -> None:
    policy = _policy(
        tmp_path,
        user_yaml="""\
        tools:
          settings:
            search_mails: {server: "imap.example.org"}
            read_mail: {maxCharacters: "5000"}
        """,
    )
    exported = build_export(policy, ["read_mail"], "LOCKED", include_minimum_confidence=True)
    assert exported.tool_ids == ("read_mail",)
    deployed = _round_trip(tmp_path, exported.lua)
    assert _table(deployed, LOCKED_TABLE) == {"read_mail.maxCharacters": "5000"}
    assert _table(deployed, MINIMUM_TABLE) == {"mailboxes": "VERY_LOW"}


def test_several_fragments_combine_in_one_plugin(tmp_path: Path) -> None:
    policy = _policy(
        tmp_path,
        user_yaml="""\
        tools:
          settings:
            web_search: {defaultLanguage: "de-DE"}
            read_mail: {maxCharacters: "5000"}
        """,
    )
    first = export_tool_settings(policy, ["web_search"], "LOCKED", include_minimum_confidence=True)
    second = export_tool_settings(policy, ["read_mail"], "LOCKED", include_minimum_confidence=True)
    third = export_tool_settings(policy, ["web_search"], "DEFAULT")
    existing = (
        f'CONFIG["SETTINGS"]["{LOCKED_TABLE}"] = {{ ["read_web_page.timeoutSeconds"] = "9" }}'
    )
    deployed = _round_trip(tmp_path, first, second, third, before=existing)
    assert _table(deployed, LOCKED_TABLE) == {
        "read_web_page.timeoutSeconds": "9",
        "web_search.defaultLanguage": "de-DE",
        "read_mail.maxCharacters": "5000",
    }
    assert _table(deployed, DEFAULT_TABLE) == {"web_search.defaultLanguage": "de-DE"}
    assert _table(deployed, MINIMUM_TABLE) == {"web_search": "VERY_LOW", "mailboxes": "VERY_LOW"}


def test_a_required_fragment_applies_like_a_pasted_one(tmp_path: Path) -> None:
    policy = _policy(tmp_path, user_yaml=WEB_SEARCH_SETUP)
    folder = tmp_path / "required"
    _plugin(folder, 'require("tool_settings")\n')
    (folder / "tool_settings.lua").write_text(
        export_tool_settings(policy, ["web_search"], "LOCKED"), encoding="utf-8"
    )
    assert _table(_load(folder), LOCKED_TABLE)["web_search.defaultLanguage"] == "de-DE"


def test_the_exported_minimum_is_the_effective_one(tmp_path: Path) -> None:
    org = f'CONFIG["SETTINGS"]["{MINIMUM_TABLE}"] = {{ ["web_search"] = "HIGH" }}\n'
    lua = export_tool_settings(
        _policy(tmp_path, org_lua=org), ["web_search"], "LOCKED", include_minimum_confidence=True
    )
    assert _table(_round_trip(tmp_path, lua), MINIMUM_TABLE) == {"web_search": "HIGH"}
    assert LOCKED_TABLE not in lua


# --- secrets --------------------------------------------------------------------------------------

KEYRING = {("web_search", "tavily.apiKey"): "tvly-admin-key", ("search_mails", "password"): "pw"}


def test_secrets_are_left_out_unless_asked_for(tmp_path: Path) -> None:
    policy = _policy(tmp_path, user_yaml=WEB_SEARCH_SETUP, keyring=KEYRING)
    lua = export_tool_settings(policy, ["web_search"], "LOCKED")
    assert "tvly-admin-key" not in lua and "ENC:v1:" not in lua
    assert "web_search.tavily.apiKey is a secret and was left out" in lua
    assert "staan.apiKey" not in lua
    assert "tavily.apiKey" not in _table(_round_trip(tmp_path, lua), LOCKED_TABLE)


@pytest.mark.parametrize("mode", ["LOCKED", "DEFAULT"])
def test_exported_secrets_are_locked_encrypted_and_decrypt_to_the_keyring_value(
    tmp_path: Path, mode: str
) -> None:
    policy = _policy(tmp_path, user_yaml=WEB_SEARCH_SETUP, keyring=KEYRING)
    lua = export_tool_settings(
        policy, ["web_search", "mailboxes"], mode, include_secrets=True, secret=SECRET
    )
    assert "tvly-admin-key" not in lua
    deployed = _round_trip(tmp_path, lua)
    locked = _table(deployed, LOCKED_TABLE)
    assert secrets.decrypt(locked["web_search.tavily.apiKey"], SECRET) == "tvly-admin-key"
    assert secrets.decrypt(locked["search_mails.password"], SECRET) == "pw"
    assert "web_search.staan.apiKey" not in locked
    plain_table = LOCKED_TABLE if mode == "LOCKED" else DEFAULT_TABLE
    assert _table(deployed, plain_table)["web_search.defaultLanguage"] == "de-DE"
    if mode == "DEFAULT":
        assert "web_search.tavily.apiKey" not in _table(deployed, DEFAULT_TABLE)


def test_the_secret_comes_from_the_environment_when_none_is_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(secrets.ENV_SECRET, SECRET)
    policy = _policy(tmp_path, keyring=KEYRING)
    lua = export_tool_settings(policy, ["search_mails"], "LOCKED", include_secrets=True)
    value = _table(_round_trip(tmp_path, lua), LOCKED_TABLE)["search_mails.password"]
    assert secrets.decrypt(value, SECRET) == "pw"


def test_a_secret_the_organization_locks_is_exported_as_it_resolves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(secrets.ENV_SECRET, SECRET)
    deployed = secrets.encrypt("org-password", SECRET)
    org = f'CONFIG["SETTINGS"]["{LOCKED_TABLE}"] = {{ ["search_mails.password"] = "{deployed}" }}\n'
    policy = _policy(tmp_path, org_lua=org, keyring=KEYRING)
    lua = export_tool_settings(policy, ["search_mails"], "DEFAULT", include_secrets=True)
    value = _table(_round_trip(tmp_path, lua), LOCKED_TABLE)["search_mails.password"]
    assert value != deployed and secrets.decrypt(value, SECRET) == "org-password"


def test_without_an_encryption_secret_the_export_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in secrets.SECRET_ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    policy = _policy(tmp_path, keyring=KEYRING)
    with pytest.raises(SecretExportError, match=secrets.ENV_SECRET):
        export_tool_settings(policy, ["web_search"], "LOCKED", include_secrets=True)


def test_an_unusable_encryption_secret_fails_the_export_without_showing_it(
    tmp_path: Path,
) -> None:
    policy = _policy(tmp_path, keyring=KEYRING)
    with pytest.raises(SecretExportError, match="32 bytes") as caught:
        export_tool_settings(
            policy, ["web_search"], "LOCKED", include_secrets=True, secret="c2hvcnQ="
        )
    assert "c2hvcnQ=" not in caught.value.message


def test_a_secret_that_cannot_be_encrypted_fails_the_whole_export(tmp_path: Path) -> None:
    broken = {("search_mails", "password"): "pw\udcff"}
    policy = _policy(tmp_path, user_yaml=WEB_SEARCH_SETUP, keyring=broken)
    with pytest.raises(SecretExportError, match=r"search_mails\.password") as caught:
        export_tool_settings(
            policy, ["web_search", "mailboxes"], "LOCKED", include_secrets=True, secret=SECRET
        )
    assert "pw" not in caught.value.message.replace("password", "")


def test_a_refused_locked_secret_is_explained_not_exported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(secrets.ENV_SECRET, raising=False)
    monkeypatch.delenv(secrets.AI_STUDIO_ENV_SECRET, raising=False)
    org = f'CONFIG["SETTINGS"]["{LOCKED_TABLE}"] = {{ ["search_mails.password"] = "plain" }}\n'
    policy = _policy(tmp_path, org_lua=org, keyring=KEYRING)
    lua = export_tool_settings(
        policy, ["search_mails"], "LOCKED", include_secrets=True, secret=SECRET
    )
    assert "search_mails.password not exported: the locked value is not encrypted" in lua
    assert "search_mails.password" not in _table(_round_trip(tmp_path, lua), LOCKED_TABLE)


# --- Lua strings ----------------------------------------------------------------------------------

NASTY = 'say "hi" \\ back\\slash\nnew line\r\ttab Zürich 東京 ]] [[x]] ]=] \x00 \x7f \u202e end'


def test_any_value_reads_back_exactly_through_the_plugin_loader(tmp_path: Path) -> None:
    policy = _policy(tmp_path, user_yaml=f"tools:\n  settings:\n    read_mail:\n      "
                     f"maxCharacters: {json.dumps(NASTY)}\n")  # fmt: skip
    lua = export_tool_settings(policy, ["read_mail"], "DEFAULT")
    assert "\u202e" not in lua and "\x00" not in lua
    deployed = _round_trip(tmp_path, lua)
    assert _table(deployed, DEFAULT_TABLE) == {"read_mail.maxCharacters": NASTY}


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_lua_string_reads_back_as_the_same_text(text: str) -> None:
    runtime = lupa.LuaRuntime()
    assert runtime.eval(lua_string(text)) == text


def test_printable_text_stays_readable() -> None:
    assert lua_string("Zürich ]]") == '"Zürich ]]"'
    assert lua_string('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    assert lua_string("\x01" + "2") == '"\\0012"'


def test_a_display_name_cannot_break_out_of_its_comment(tmp_path: Path) -> None:
    tricky = _mail_tool("tricky", 'Evil\nCONFIG["SETTINGS"]["DataTools.EnableTools"] = false', {})
    policy = _policy(tmp_path, tools=(tricky,))
    lua = export_tool_settings(policy, ["tricky"], "LOCKED", include_minimum_confidence=True)
    assert _round_trip(tmp_path, lua).setting("DataTools.EnableTools") is None


# --- bad input ------------------------------------------------------------------------------------


def test_an_unknown_id_names_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="unknown tool or collection id 'nope'") as caught:
        export_tool_settings(_policy(tmp_path), ["web_search", "nope"], "LOCKED")
    assert caught.value.argument == "TOOL_ID"
    assert "mailboxes" in caught.value.message and "web_search" in caught.value.message


def test_an_unknown_area_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="unknown area 'web_search/bing'") as caught:
        export_tool_settings(_policy(tmp_path), ["web_search"], "LOCKED", ["web_search/bing"])
    assert caught.value.argument == "--area"
    assert "web_search/searxng" in caught.value.message


def test_an_area_of_a_tool_not_exported_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="unknown area 'read_mail/'"):
        export_tool_settings(_policy(tmp_path), ["web_search"], "LOCKED", ["read_mail/"])


def test_an_unknown_mode_names_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="'forced' is not an export mode; valid: LOCKED, DEFAULT"):
        export_tool_settings(_policy(tmp_path), ["web_search"], "forced")


def test_no_ids_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="at least one"):
        export_tool_settings(_policy(tmp_path), [], "LOCKED")


# --- the installed command ------------------------------------------------------------------------

FILE_KEYRING = '''\
"""A keyring backend for tests: entries in the JSON file named by EXPORT_TEST_KEYRING."""
import json
import os

from keyring.backend import KeyringBackend


class JsonFileKeyring(KeyringBackend):
    priority = 1

    def _entries(self):
        with open(os.environ["EXPORT_TEST_KEYRING"], encoding="utf-8") as handle:
            return json.load(handle)

    def get_password(self, service, username):
        return self._entries().get(f"{service}|{username}")

    def set_password(self, service, username, password):
        raise NotImplementedError("read-only test keyring")

    def delete_password(self, service, username):
        raise NotImplementedError("read-only test keyring")
'''


def _policy_command() -> str:
    beside = Path(sys.executable).parent / "policy"
    found = str(beside) if beside.exists() else shutil.which("policy")
    assert found, "the `policy` command is not installed (pip install -e .)"
    return found


@pytest.fixture
def admin_machine(tmp_path: Path) -> dict[str, Path]:
    """An organization plugin, the administrator's settings file and a file-backed keyring."""
    org = tmp_path / "org"
    _plugin(org, f'CONFIG["SETTINGS"]["{MINIMUM_TABLE}"] = {{ ["web_search"] = "MEDIUM" }}\n')
    user = tmp_path / "settings.yaml"
    user.write_text(WEB_SEARCH_SETUP, encoding="utf-8")
    backend = tmp_path / "keyring_backend"
    backend.mkdir()
    (backend / "export_test_keyring.py").write_text(FILE_KEYRING, encoding="utf-8")
    store = tmp_path / "keyring.json"
    store.write_text(json.dumps({"tool::web_search|tavily.apiKey": "tvly-cli-key"}), "utf-8")
    return {"org": org, "user": user, "backend": backend, "store": store}


def _run(
    machine: dict[str, Path], *args: str, secret: str | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLPOLICY_") and k not in secrets.SECRET_ENV_NAMES
    }
    environment.update(
        PYTHONPATH=str(machine["backend"]),
        PYTHON_KEYRING_BACKEND="export_test_keyring.JsonFileKeyring",
        EXPORT_TEST_KEYRING=str(machine["store"]),
    )
    if secret is not None:
        environment[secrets.ENV_SECRET] = secret
    done = subprocess.run(
        [_policy_command(), "export", *args, "--org", str(machine["org"]),
         "--user-settings", str(machine["user"])],
        capture_output=True, text=True, env=environment, check=False, cwd=ROOT,
    )  # fmt: skip
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def test_cli_prints_a_fragment_that_loads(admin_machine: dict[str, Path], tmp_path: Path) -> None:
    done = _run(admin_machine, "web_search", "--mode", "locked", "--minimum-confidence")
    assert done.returncode == 0, done.stderr
    deployed = _round_trip(tmp_path, done.stdout)
    assert _table(deployed, LOCKED_TABLE)["web_search.defaultLanguage"] == "de-DE"
    assert _table(deployed, MINIMUM_TABLE) == {"web_search": "MEDIUM"}
    assert "tvly-cli-key" not in done.stdout


def test_cli_json_names_tools_mode_areas_and_the_lua(admin_machine: dict[str, Path]) -> None:
    done = _run(
        admin_machine, "web_search", "--mode", "DEFAULT", "--area", "web_search/searxng",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    assert set(document) == {"tool_ids", "mode", "areas", "lua"}
    assert document["tool_ids"] == ["web_search"]
    assert document["mode"] == "DEFAULT"
    assert document["areas"] == ["web_search/searxng"]
    assert '["web_search.searxng.baseUrl"] = "https://searx.example.org"' in document["lua"]


def test_cli_exports_keyring_secrets_encrypted(
    admin_machine: dict[str, Path], tmp_path: Path
) -> None:
    done = _run(admin_machine, "web_search", "--mode", "DEFAULT", "--include-secrets",
                secret=SECRET)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tvly-cli-key" not in done.stdout + done.stderr
    locked = _table(_round_trip(tmp_path, done.stdout), LOCKED_TABLE)
    assert secrets.decrypt(locked["web_search.tavily.apiKey"], SECRET) == "tvly-cli-key"


def test_cli_without_a_secret_fails_with_no_partial_output(admin_machine: dict[str, Path]) -> None:
    done = _run(admin_machine, "web_search", "--mode", "LOCKED", "--include-secrets")
    assert done.returncode == 1
    assert done.stdout == ""
    assert "no encryption secret is configured" in done.stderr
    assert secrets.ENV_SECRET in done.stderr


def test_cli_with_a_broken_secret_fails_with_no_partial_output(
    admin_machine: dict[str, Path],
) -> None:
    done = _run(admin_machine, "web_search", "--mode", "LOCKED", "--include-secrets",
                secret="not base64!")  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == ""
    assert "not valid base64" in done.stderr and "not base64!" not in done.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["nope", "--mode", "LOCKED"], "unknown tool or collection id 'nope'"),
        (["web_search", "--mode", "LOCKED", "--area", "web_search/x"], "web_search/searxng"),
        (["web_search", "--mode", "forced"], "Valid: LOCKED, DEFAULT"),
        (["web_search"], "--mode"),
        (["--mode", "LOCKED"], "TOOL_ID"),
    ],
)
def test_cli_usage_errors_exit_two_and_say_what_is_valid(
    admin_machine: dict[str, Path], args: list[str], named: str
) -> None:
    done = _run(admin_machine, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert named in done.stderr


def test_cli_help_lists_export() -> None:
    done = subprocess.run(
        [_policy_command(), "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "export" in done.stdout
