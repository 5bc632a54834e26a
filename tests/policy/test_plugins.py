"""Configuration plugins through real Lua: required globals, CONFIG tables, entries, warnings."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from policy.config.plugin_globals import PLUGIN_GLOBALS, PluginGlobal
from policy.configuration import SecretValue, Severity
from policy.plugins import (
    ConfigurationPlugin,
    PluginLoadError,
    discover_plugin_files,
    load_plugin,
    parse_guid,
)
from policy.secrets import AI_STUDIO_ENV_SECRET, ENV_SECRET, decrypt, encrypt
from policy.vocabulary import ConfidenceLevel, DataSecurity, PluginOrigin, ProviderKind

FIXTURES = Path(__file__).parent / "plugin_fixtures"
AI_STUDIO = FIXTURES / "ai_studio" / "plugin.lua"
SECRET = base64.b64encode(bytes(range(32))).decode()
ORG = PluginOrigin.ORGANIZATION

GLOBALS: dict[str, str] = {
    "ID": '"5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b"',
    "NAME": '"Test plugin"',
    "DESCRIPTION": '"A plugin for tests"',
    "VERSION": '"1.0.0"',
    "TYPE": '"CONFIGURATION"',
    "AUTHORS": '{ "Tests" }',
    "SUPPORT_CONTACT": '"tests@example.org"',
    "SOURCE_URL": '"https://example.org/plugin"',
    "CATEGORIES": '{ "CORE" }',
    "TARGET_GROUPS": '{ "EVERYONE" }',
    "IS_MAINTAINED": "true",
    "DEPRECATION_MESSAGE": '""',
}


def write_plugin(
    folder: Path,
    settings: str = "",
    extra: str = "",
    config: str | None = 'CONFIG = {}\nCONFIG["SETTINGS"] = {}',
    **globals_: str | None,
) -> Path:
    """A plugin.lua: the required globals (overridable; None drops one), CONFIG, settings, extra.

    The globals take lines 1-12 in GLOBALS order, any new globals follow, then CONFIG.
    """
    folder.mkdir(parents=True, exist_ok=True)
    values = {**GLOBALS, **globals_}
    lines = [f"{name} = {value}" for name, value in values.items() if value is not None]
    if config is not None:
        lines.append(config)
    lines.extend(line for line in settings.splitlines())
    lines.extend(extra.splitlines())
    path = folder / "plugin.lua"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def line_of(path: Path, text: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def rejected(path: Path) -> PluginLoadError:
    with pytest.raises(PluginLoadError) as caught:
        load_plugin(path, ORG)
    return caught.value


def codes(plugin: ConfigurationPlugin) -> list[str]:
    return [f.code for f in plugin.findings]


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv(AI_STUDIO_ENV_SECRET, raising=False)
    monkeypatch.setenv(ENV_SECRET, SECRET)
    return SECRET


@pytest.fixture
def no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SECRET, raising=False)
    monkeypatch.delenv(AI_STUDIO_ENV_SECRET, raising=False)


# -- a real AI Studio plugin ----------------------------------------------------------------------


def test_a_real_ai_studio_plugin_loads(secret: str) -> None:
    plugin = load_plugin(AI_STUDIO, ORG)
    assert plugin.id == "86eccaee-7c9f-430f-9cf1-40b754f36274"
    assert plugin.name == "Contoso - Configuration for AI Studio"
    assert plugin.origin is ORG and plugin.priority == 0 and plugin.version == "1.4.2"
    assert plugin.deployed_using_config_server is True
    assert any(f.endswith("icon.lua") for f in plugin.files)
    assert plugin.findings == ()

    s = plugin.settings
    assert s["DataTools.EnableTools"].value is True
    assert s["DataTools.DisabledToolIds"].value == ("search_confluence",)
    assert s["DataTools.MinimumProviderConfidenceByToolId"].value == {
        "web_search": "VERY_LOW",
        "read_web_page": "LOW",
        "semantic_search": "NONE",
    }
    assert s["DataTools.LockedToolSettings"].value == {
        "web_search.searxng.baseUrl": "https://searx.contoso.example",
        "web_search.backendStrategy": "FAILOVER",
    }
    assert s["DataTools.DefaultToolSettings"].value["web_search.defaultLanguage"] == "de-DE"
    assert s["DataConfidence.ConfidenceScheme"].value == "TRUST_EUROPE"
    assert s["DataConfidence.ConfidenceScheme"].allow_user_override is True
    assert s["DataConfidence.EnforceGlobalMinimumConfidence"].value is True
    assert s["DataConfidence.GlobalMinimumConfidence"].value == "LOW"
    assert s["DataSourceSecuritySettings.TrustedProviderIds"].value == (
        "9833f353-d28e-4687-b92b-a84cd06edbe4",
    )
    assert s["DataChat.PreselectedDataSourcesRetrievalMode"].value == "SEMANTIC_SEARCH"
    assert s["DataTools.EnableTools"].allow_user_override is False

    enable = s["DataTools.EnableTools"]
    assert enable.location.file == str(AI_STUDIO)
    assert enable.location.line == line_of(AI_STUDIO, '["DataTools.EnableTools"] = true')
    entries = s["DataTools.LockedToolSettings"].entry_locations
    assert entries["web_search.backendStrategy"].line == line_of(
        AI_STUDIO, '["web_search.backendStrategy"]'
    )

    kept = s["DataApp.EnabledPreviewFeatures"]
    assert kept.used_by_toolpolicy is False
    assert kept.value == ("PRE_RAG_2024", "PRE_READER_MODE_2024")
    assert s["DataBatchProcessing.MinimumDelaySeconds"].value == 10


def test_everything_toolpolicy_does_not_use_is_kept_and_reported(secret: str) -> None:
    plugin = load_plugin(AI_STUDIO, ORG)
    unused = {f.message.split(" is ")[0] for f in plugin.unused}
    for section in (
        "PROFILES",
        "EMBEDDING_PROVIDERS",
        "DOCUMENT_ANALYSIS_POLICIES",
        "INTRODUCTIONS",
    ):
        assert f'CONFIG["{section}"]' in unused
        assert section in plugin.other_sections
    assert 'CONFIG["SETTINGS"]["DataApp.UpdateInterval"]' in unused
    assert 'CONFIG["SETTINGS"]["DataChat.PreselectOptions"]' in unused
    assert 'CONFIG["SETTINGS"]["DataTools.EnableTools"]' not in unused
    assert all(
        f.severity is Severity.WARNING and f.code == "not-used-by-toolpolicy" for f in plugin.unused
    )
    assert all(f.location is not None and f.location.line > 0 for f in plugin.unused)
    profile = plugin.other_sections["PROFILES"][0]
    assert profile["Name"] == "Contoso employee"


def test_providers_data_sources_and_templates_of_the_real_plugin(secret: str) -> None:
    plugin = load_plugin(AI_STUDIO, ORG)
    local, cloud = plugin.providers
    assert local.id == "392a79c2-9b67-4e1b-93db-9505a978f01b"
    assert local.kind is ProviderKind.SELF_HOSTED and local.host == "OLLAMA"
    assert local.model == "llama3.1:70b" and local.additional["DisplayName"] == "Llama 3.1 70B"
    assert local.capability_overrides == {"FUNCTION_CALLING": True, "OPTIONAL_REASONING": False}
    assert local.api_key is None
    assert local.origin is not None and local.origin.plugin_id == plugin.id
    assert local.origin.location.line == line_of(AI_STUDIO, '"392A79C2') - 1
    assert cloud.kind is ProviderKind.OPEN_AI
    assert isinstance(cloud.api_key, SecretValue)
    assert decrypt(cloud.api_key.encrypted, secret) == "sk-fixture-openai-key"
    assert "sk-fixture" not in repr(cloud)

    (source,) = plugin.data_sources
    assert source.kind == "ERI_V1" and source.security is DataSecurity.SELF_HOSTED
    assert source.raw["Hostname"] == "https://eri.contoso.internal"
    assert isinstance(source.raw["Token"], SecretValue)

    says_nothing, no_tools, research = plugin.chat_templates
    assert says_nothing.tool_ids is None
    assert no_tools.tool_ids == ()
    assert research.tool_ids == ("web_search", "read_web_page")
    assert research.raw["DataSourceOptions"]["AutomaticDataSourceSelection"] is True


def test_without_the_secret_encrypted_values_cannot_be_used(no_secret: None) -> None:
    plugin = load_plugin(AI_STUDIO, ORG)
    cloud = plugin.providers[1]
    assert cloud.api_key is None
    assert plugin.data_sources == ()
    messages = [f.message for f in plugin.findings]
    assert any("APIKey cannot be decrypted: no encryption secret" in m for m in messages)
    assert any('CONFIG["DATA_SOURCES"] entry 1 skipped' in m and "Token" in m for m in messages)
    assert all("ENC:v1:4sn6" not in m for m in messages)


def test_the_secret_from_ai_studios_policy_file_decrypts_the_plugins_values(
    no_secret: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mindwork-ai-studio"
    folder.mkdir()
    (folder / "config_encryption_secret.yaml").write_text(
        f"config_encryption_secret: {SECRET}\n", encoding="utf-8"
    )
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path))
    plugin = load_plugin(AI_STUDIO, ORG)
    cloud = plugin.providers[1]
    assert isinstance(cloud.api_key, SecretValue)
    assert decrypt(cloud.api_key.encrypted, SECRET) == "sk-fixture-openai-key"
    assert not any("cannot be decrypted" in f.message for f in plugin.findings)


# -- required globals (whole plugin rejected) -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("ID", None, "ID is missing; it must be a GUID"),
        ("ID", '"not-a-guid"', "ID must be a GUID such as"),
        ("ID", '"00000000-0000-0000-0000-000000000000"', "all-zero GUID"),
        ("NAME", '"   "', "NAME must be a non-blank string"),
        ("DESCRIPTION", "42", "DESCRIPTION must be a non-blank string, not 42"),
        ("SUPPORT_CONTACT", None, "SUPPORT_CONTACT is missing"),
        ("VERSION", '"0.0.0"', 'VERSION must be a string "MAJOR.MINOR.PATCH"'),
        ("VERSION", '"1.0"', "VERSION must be"),
        ("VERSION", '"1.0.0.0"', "VERSION must be"),
        ("AUTHORS", "{ 1, 2 }", "AUTHORS must be a table with at least one name"),
        ("AUTHORS", '"IT"', "AUTHORS must be a table"),
        (
            "SOURCE_URL",
            '"ftp://example.org"',
            "SOURCE_URL must be an absolute http, https or mailto",
        ),
        ("SOURCE_URL", '"mailto:?subject=hi"', "SOURCE_URL must be"),
        ("SOURCE_URL", '"example.org"', "SOURCE_URL must be"),
        ("SOURCE_URL", '"https://example..org/plugin"', "SOURCE_URL must be"),
        ("SOURCE_URL", '"https://exa mple.org/plugin"', "SOURCE_URL must be"),
        ("SOURCE_URL", '"https://example.org:99999/plugin"', "SOURCE_URL must be"),
        ("SOURCE_URL", '"https://example.org/plu\\tgin"', "SOURCE_URL must be"),
        ("SOURCE_URL", '"https://me:hunter2@exa mple.org/"', '"https://*****@exa mple.org/"'),
        (
            "CATEGORIES",
            '{ "core" }',
            "CATEGORIES must be a table with at least one of (case-sensitive): CORE",
        ),
        ("CATEGORIES", '{ "NONE" }', "CATEGORIES must be"),
        (
            "TARGET_GROUPS",
            "{}",
            "TARGET_GROUPS must be a table with at least one of (case-sensitive): EVERYONE",
        ),
        ("IS_MAINTAINED", '"yes"', "IS_MAINTAINED must be true or false"),
        ("DEPRECATION_MESSAGE", None, "DEPRECATION_MESSAGE is missing"),
        ("TYPE", None, "TYPE is missing"),
        ("TYPE", '"configuration"', 'TYPE "configuration" is not a plugin type (case-sensitive'),
        ("TYPE", '"THEME"', 'TYPE "THEME" is not supported yet'),
    ],
)
def test_a_bad_required_global_rejects_the_plugin(
    tmp_path: Path, name: str, value: str | None, expected: str
) -> None:
    path = write_plugin(tmp_path, **{name: value})
    error = rejected(path)
    (finding,) = error.findings
    assert expected in finding.message
    assert finding.severity is Severity.ERROR
    assert finding.location is not None and finding.location.file == str(path)
    if value is not None:
        assert finding.location.line == line_of(path, f"{name} = ")
    assert expected in str(error)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.org/plugin",
        "HTTP://[::1]:8080/plugin",
        "https://b\u00fccher.example/plugin",
        "https://git_team.corp./plugin?ref=main",
        "mailto:it@example.org",
    ],
)
def test_a_source_url_in_every_readable_form_is_accepted(tmp_path: Path, url: str) -> None:
    assert load_plugin(write_plugin(tmp_path, SOURCE_URL=f'"{url}"'), ORG).name == "Test plugin"


def test_every_required_global_is_checked_at_once(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, NAME=None, VERSION='"x"', CATEGORIES='{ "core" }')
    messages = [f.message for f in rejected(path).findings]
    assert len(messages) == 3
    assert messages[0].startswith("NAME") and messages[1].startswith("VERSION")


def _with_global(folder: Path, declared: PluginGlobal, value: str | None) -> Path:
    if declared.name == "CONFIG":
        return write_plugin(folder, config=None if value is None else f"CONFIG = {value}")
    return write_plugin(folder, **{declared.name: value})


def test_the_declared_example_of_every_global_is_read_and_accepted(tmp_path: Path) -> None:
    """The examples `policy template` writes, the optional globals included."""
    examples = {g.name: g.example for g in PLUGIN_GLOBALS if g.name != "CONFIG"}
    path = write_plugin(tmp_path, **examples)
    plugin = load_plugin(path, ORG)
    assert (plugin.findings, plugin.priority, plugin.version) == ((), 0, "1.0.0")


@pytest.mark.parametrize("declared", list(PLUGIN_GLOBALS), ids=lambda g: g.name)
def test_every_declared_global_is_read_as_its_declaration_says(
    tmp_path: Path, declared: PluginGlobal
) -> None:
    """The reader checks each global of `policy.config.plugin_globals` and names it with the
    declaration's words, which the site's plugin.lua reference shows; 1.5 suits no kind."""
    missing = _with_global(tmp_path / "missing", declared, None)
    wrong = _with_global(tmp_path / "wrong", declared, "1.5")
    if declared.required:
        assert [f.message for f in rejected(missing).findings] == [
            f"{declared.name} is missing; it must be {declared.wanted}"
        ]
        assert [f.message for f in rejected(wrong).findings] == [
            f"{declared.name} must be {declared.wanted}, not 1.5"
        ]
    else:
        assert load_plugin(missing, ORG).findings == ()
        said = f"{declared.name} must be {declared.wanted}, not 1.5"
        if declared.rejects_organization_plugin:
            (issue,) = rejected(wrong).findings
            assert issue.message.startswith(f"{said}; this rejects an organization plugin")
        else:
            (warning,) = load_plugin(wrong, ORG).findings
            assert warning.severity is Severity.WARNING
            assert warning.message == f"{said}; read as {declared.default}"
        (warning,) = load_plugin(wrong, PluginOrigin.LOCAL).findings
        assert warning.severity is Severity.WARNING
        assert warning.message == f"{said}; read as {declared.default}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"{5F0C7C1E-2B7A-4D3E-9F65-1C2D3E4F5A6B}"', "5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b"),
        ('"(5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b)"', "5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b"),
        ('"5f0c7c1e2b7a4d3e9f651c2d3e4f5a6b"', "5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b"),
    ],
)
def test_the_id_may_take_any_plain_guid_form(tmp_path: Path, value: str, expected: str) -> None:
    assert load_plugin(write_plugin(tmp_path, ID=value), ORG).id == expected


def test_parse_guid_refuses_near_misses() -> None:
    assert parse_guid("5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6") is None
    assert parse_guid("{5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b") is None
    assert parse_guid(12) is None


def test_invalid_categories_are_dropped_while_one_valid_remains(tmp_path: Path) -> None:
    path = write_plugin(
        tmp_path,
        CATEGORIES='{ "BOGUS", 5, "CORE" }',
        SOURCE_URL='"mailto:it@example.org?subject=AI"',
    )
    assert load_plugin(path, ORG).name == "Test plugin"


def test_an_unmaintained_plugin_only_warns(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, IS_MAINTAINED="false", DEPRECATION_MESSAGE='"use the new one"')
    plugin = load_plugin(path, ORG)
    assert codes(plugin) == ["not-maintained"]
    assert plugin.findings[0].location is not None
    assert plugin.findings[0].location.line == line_of(path, "IS_MAINTAINED")


def test_a_plugin_of_another_type_is_marked_as_such(tmp_path: Path) -> None:
    error = rejected(write_plugin(tmp_path, TYPE='"LANGUAGE"'))
    assert error.not_configuration
    assert 'TYPE is "LANGUAGE": not a configuration plugin' in error.findings[0].message
    assert not rejected(write_plugin(tmp_path / "t", TYPE='"THEME"')).not_configuration


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, "CONFIG is missing; it must be a table, e.g. CONFIG = {}"),
        ('CONFIG = "all"', 'CONFIG must be a table, e.g. CONFIG = {}, not "all"'),
        ("CONFIG = {}", 'CONFIG["SETTINGS"] is missing; write CONFIG["SETTINGS"] = {} at least'),
        ('CONFIG = { ["SETTINGS"] = true }', 'CONFIG["SETTINGS"] must be a table, not true'),
    ],
)
def test_config_and_its_settings_table_are_required(
    tmp_path: Path, config: str | None, expected: str
) -> None:
    error = rejected(write_plugin(tmp_path, config=config))
    assert [f.message for f in error.findings] == [expected]
    assert error.findings[0].location is not None
    assert error.plugin_id == "5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b"
    assert error.plugin_name == "Test plugin"


def test_an_empty_settings_table_is_fine(tmp_path: Path) -> None:
    plugin = load_plugin(write_plugin(tmp_path), ORG)
    assert plugin.settings == {} and plugin.providers == () and plugin.findings == ()


@pytest.mark.parametrize(
    ("value", "priority", "warned"),
    [
        ("100", 100, False),
        ("-5", -5, False),
        ("7.0", 7, False),
        ('"100"', 0, True),
        ("1.5", 0, True),
    ],
)
def test_priority(tmp_path: Path, value: str, priority: int, warned: bool) -> None:
    """A local plugin reads a wrong PRIORITY as 0, as AI Studio does, with a warning."""
    plugin = load_plugin(write_plugin(tmp_path, PRIORITY=value), PluginOrigin.LOCAL)
    assert plugin.priority == priority
    assert ("invalid-priority" in codes(plugin)) is warned
    if not warned:
        assert load_plugin(write_plugin(tmp_path, PRIORITY=value), ORG).priority == priority


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ('PRIORITY = "200"', "invalid-priority"),
        ("PRIORITY = 1.5", "invalid-priority"),
        ("PRIORTY = 200", "invalid-global"),
        ("Priority = 200", "invalid-global"),
    ],
)
def test_a_wrong_or_misspelled_priority_rejects_an_organization_plugin(
    tmp_path: Path, line: str, code: str
) -> None:
    """Read as 0, an organization plugin would lose to the plugin it was written to override
    (a restrictive department plugin under a permissive base one): it fails closed instead."""
    error = rejected(write_plugin(tmp_path, extra=line))
    (issue,) = [i for i in error.findings if i.code == code]
    assert "PRIORITY" in issue.message and "rejects an organization plugin" in issue.message
    assert issue.location is not None and issue.location.line > 0
    local = load_plugin(write_plugin(tmp_path, extra=line), PluginOrigin.LOCAL)
    assert local.priority == 0
    (warning,) = [f for f in local.findings if f.code == code]
    assert warning.severity is Severity.WARNING and "read as 0" in warning.message


def test_a_near_miss_of_another_global_is_named(tmp_path: Path) -> None:
    plugin = load_plugin(
        write_plugin(tmp_path, extra="DEPLOYED_USING_CONFIG_SERVERS = true\nhelpers = { 1 }"),
        ORG,
    )
    (finding,) = [f for f in plugin.findings if f.code == "invalid-global"]
    assert 'did you mean "DEPLOYED_USING_CONFIG_SERVER"' in finding.message
    assert finding.severity is Severity.WARNING
    error = rejected(write_plugin(tmp_path, VERSION=None, extra='VERSON = "1.0.0"'))
    assert any("VERSION is missing" in i.message for i in error.findings)


def test_a_plugin_that_does_not_run_is_rejected_with_its_line(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, extra='error("deliberately broken")')
    error = rejected(path)
    assert error.findings[0].code == "lua-error"
    assert "deliberately broken" in error.findings[0].message
    assert error.findings[0].location is not None
    assert error.findings[0].location.file == str(path)


def test_a_syntax_error_is_rejected(tmp_path: Path) -> None:
    error = rejected(write_plugin(tmp_path, extra="CONFIG[ = 3"))
    assert error.findings[0].code == "lua-error"


# -- settings -------------------------------------------------------------------------------------

MIN = 'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"]'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            '{ ["web_search"] = "UNKNOWN" }',
            'the level for "web_search" must be one of NONE, UNTRUSTED, VERY_LOW, LOW, MODERATE, MEDIUM, HIGH',
        ),
        ('{ ["web_search"] = "SUPER" }', "must be one of NONE, UNTRUSTED"),
        ('{ ["web_search"] = 300 }', "must be one of NONE"),
        ('{ "HIGH" }', "key 1 must be a non-blank string"),
        ('{ [" "] = "HIGH" }', "must be a non-blank string"),
        ('"HIGH"', "must be a table like"),
    ],
)
def test_a_malformed_minimum_confidence_table_rejects_the_plugin(
    tmp_path: Path, value: str, expected: str
) -> None:
    path = write_plugin(tmp_path, settings=f"{MIN} = {value}")
    error = rejected(path)
    assert expected in error.findings[0].message
    assert error.findings[0].location is not None
    assert error.findings[0].location.line == line_of(path, "MinimumProviderConfidenceByToolId")


def test_minimum_confidence_levels_are_case_insensitive(tmp_path: Path) -> None:
    path = write_plugin(
        tmp_path, settings=f'{MIN} = {{ ["web_search"] = "very_low", ["mailboxes"] = " High " }}'
    )
    value = load_plugin(path, ORG).settings["DataTools.MinimumProviderConfidenceByToolId"].value
    assert value == {"web_search": "VERY_LOW", "mailboxes": "HIGH"}


def test_bad_settings_are_skipped_with_a_warning_and_the_rest_applies(tmp_path: Path) -> None:
    settings = "\n".join(
        [
            'CONFIG["SETTINGS"]["DataTools.EnableTools"] = "yes"',
            'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {',
            '    "web_search",',
            "    42,",
            "}",
            'CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme"] = "TRUST_MARS"',
            'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {',
            '    ["nodot"] = "x",',
            '    ["web_search.maxResults"] = 10,',
            '    ["web_search.safe"] = { 1 },',
            '    ["web_search.searxng.baseUrl"] = "https://s.example.org",',
            "}",
            'CONFIG["SETTINGS"]["DataConfidence.CustomConfidenceScheme"] = { ["OPEN_AI"] = "HIGH", ["MARS"] = "LOW", ["GOOGLE"] = "BEST" }',
            'CONFIG["SETTINGS"]["DataTools.DefaultToolIdsByComponent"] = { ["chat"] = { "web_search" }, ["KITCHEN"] = { "x" } }',
            'CONFIG["SETTINGS"]["DataChat.PreselectedDataSourcesRetrievalMode"] = "every_message"',
        ]
    )
    path = write_plugin(tmp_path, settings=settings)
    plugin = load_plugin(path, ORG)
    s = plugin.settings
    assert "DataTools.EnableTools" not in s
    assert "DataConfidence.ConfidenceScheme" not in s
    assert s["DataTools.DisabledToolIds"].value == ("web_search",)
    assert s["DataTools.LockedToolSettings"].value == {
        "web_search.maxResults": "10",
        "web_search.searxng.baseUrl": "https://s.example.org",
    }
    assert s["DataConfidence.CustomConfidenceScheme"].value == {"OPEN_AI": "HIGH"}
    assert s["DataTools.DefaultToolIdsByComponent"].value == {"CHAT": ("web_search",)}
    assert s["DataChat.PreselectedDataSourcesRetrievalMode"].value == "EVERY_MESSAGE"

    by_line = {(f.location.line if f.location else 0): f for f in plugin.findings}
    enable = by_line[line_of(path, '"DataTools.EnableTools"')]
    assert 'must be true or false, not "yes"; the setting is skipped' in enable.message
    assert "entry 2 (42) is not a non-blank string" in by_line[line_of(path, "    42,")].message
    assert "TRUST_ALL, TRUST_USA_EUROPE" in by_line[line_of(path, "TRUST_MARS")].message
    assert (
        '"nodot" must name a tool field as "<toolId>.<field>"'
        in by_line[line_of(path, '"nodot"')].message
    )
    compat = by_line[line_of(path, '"web_search.maxResults"')]
    assert compat.code == "ai-studio-compat" and 'write "10"' in compat.message
    assert "must be a string, not a table" in by_line[line_of(path, '"web_search.safe"')].message
    # skipped values are errors for `policy check` (they do not take effect); the plugin applies
    skipped = [f for f in plugin.findings if f.code.startswith("invalid-setting")]
    assert skipped and all(f.severity is Severity.ERROR for f in skipped)
    assert all(f.severity is Severity.WARNING for f in plugin.findings if f not in skipped)


def test_allow_user_override_companions(tmp_path: Path) -> None:
    settings = "\n".join(
        [
            'CONFIG["SETTINGS"]["DataTools.EnableTools"] = false',
            'CONFIG["SETTINGS"]["DataTools.EnableTools.AllowUserOverride"] = "TRUE"',
            'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = { ["web_search"] = "HIGH" }',
            'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId.AllowUserOverride"] = true',
            'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_search" }',
            'CONFIG["SETTINGS"]["DataTools.DisabledToolIds.AllowUserOverride"] = true',
            'CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme"] = "TRUST_ALL"',
            'CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme.AllowUserOverride"] = "maybe"',
            'CONFIG["SETTINGS"]["DataConfidence.GlobalMinimumConfidence.AllowUserOverride"] = true',
        ]
    )
    path = write_plugin(tmp_path, settings=settings)
    plugin = load_plugin(path, ORG)
    s = plugin.settings
    assert s["DataTools.EnableTools"].allow_user_override is True
    assert s["DataTools.EnableTools"].override_location is not None
    assert s["DataTools.MinimumProviderConfidenceByToolId"].allow_user_override is True
    disabled = s["DataTools.DisabledToolIds"]
    assert disabled.allow_user_override is False and disabled.override_requested is True
    assert s["DataConfidence.ConfidenceScheme"].allow_user_override is False
    assert "DataConfidence.GlobalMinimumConfidence.AllowUserOverride" not in s
    assert codes(plugin) == ["invalid-override", "override-without-setting"]
    assert plugin.findings[0].location is not None
    assert plugin.findings[0].location.line == line_of(path, '"maybe"')


def test_unknown_keys_are_kept_with_a_hint(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, settings='CONFIG["SETTINGS"]["DataApp.UpdateIntervall"] = true')
    plugin = load_plugin(path, ORG)
    assert plugin.settings["DataApp.UpdateIntervall"].used_by_toolpolicy is False
    (finding,) = plugin.unused
    assert 'did you mean "DataApp.UpdateInterval"?' in finding.message
    assert finding.severity is Severity.WARNING  # toolpolicy acts on no DataApp key


def test_a_misspelled_key_toolpolicy_acts_on_rejects_an_organization_plugin(
    tmp_path: Path,
) -> None:
    """Spelled right it could have tightened the policy: the plugin fails closed."""
    path = write_plugin(tmp_path, settings='CONFIG["SETTINGS"]["datatools.enabletools"] = false')
    (finding,) = rejected(path).findings
    assert (finding.severity, finding.code) == (Severity.ERROR, "unknown-setting-key")
    assert 'did you mean "DataTools.EnableTools"? keys are case-sensitive' in finding.message
    assert finding.location is not None and finding.location.line == line_of(path, "datatools")
    local = load_plugin(path, PluginOrigin.LOCAL)  # it cannot loosen the organization's policy
    assert local.settings["datatools.enabletools"].used_by_toolpolicy is False
    (warning,) = local.findings
    assert (warning.severity, warning.code) == (Severity.WARNING, "unknown-setting-key")


def test_absent_is_not_empty(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, settings='CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {}')
    plugin = load_plugin(path, ORG)
    assert plugin.settings["DataTools.DisabledToolIds"].value == ()
    assert "DataTools.LockedToolSettings" not in plugin.settings


# -- configuration objects ------------------------------------------------------------------------

PROVIDER = """
CONFIG["LLM_PROVIDERS"] = {{}}
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {{
    ["Id"] = "{id}",
    ["InstanceName"] = "P",
    ["UsedLLMProvider"] = "{kind}",
    ["Host"] = "{host}",
    ["Hostname"] = "http://localhost:8000",
    ["Model"] = {{ ["Id"] = "m", ["DisplayName"] = "M" }},
    {extra}
}}
"""


WRITE_IT = "write it like https://llm.example.org/v1 or http://localhost:11434"


def provider(
    id: str = "11111111-1111-4111-8111-111111111111",
    kind: str = "SELF_HOSTED",
    host: str = "VLLM",
    extra: str = "",
) -> str:
    return PROVIDER.format(id=id, kind=kind, host=host, extra=extra)


def test_a_bad_provider_is_skipped_and_the_others_apply(tmp_path: Path) -> None:
    text = provider() + provider(
        id="22222222-2222-4222-8222-222222222222", host="LLAMACPP"
    ).replace('CONFIG["LLM_PROVIDERS"] = {}', "")
    path = write_plugin(tmp_path, extra=text)
    plugin = load_plugin(path, ORG)
    assert [p.id for p in plugin.providers] == ["11111111-1111-4111-8111-111111111111"]
    (finding,) = plugin.findings
    assert finding.code == "invalid-entry"
    assert (
        'CONFIG["LLM_PROVIDERS"] entry 2 skipped: Host is "LLAMACPP"; it must be one of NONE, LM_STUDIO, LLAMA_CPP'
        in finding.message
    )
    assert finding.location is not None and finding.location.line == line_of(path, '"22222222') - 1


def test_a_cloud_provider_needs_no_hostname(tmp_path: Path) -> None:
    text = provider(kind="OPEN_AI", host="NONE").replace('"http://localhost:8000"', '"  "')
    plugin = load_plugin(write_plugin(tmp_path, extra=text), ORG)
    (entry,) = plugin.providers
    assert entry.hostname == "  " and plugin.findings == ()


@pytest.mark.parametrize(
    ("kind", "host", "hostname", "expected"),
    [
        (
            "SELF_HOSTED",
            "OLLAMA",
            "",
            "a self-hosted Ollama needs Hostname, e.g. http://localhost:11434",
        ),
        ("SELF_HOSTED", "VLLM", "   ", "a self-hosted vLLM needs Hostname"),
        ("HETZNER", "NONE", "", "Hetzner has no default address; set Hostname to the base URL"),
        ("LITE_LLM", "NONE", " ", "LiteLLM has no default address; set Hostname"),
        (
            "SELF_HOSTED",
            "WHISPER_CPP",
            "http://localhost:8000",
            "Host 'WHISPER_CPP' cannot serve chat requests; use one of LM_STUDIO, LLAMA_CPP, "
            "OLLAMA, VLLM",
        ),
        ("SELF_HOSTED", "whisper_cpp", "", "Host 'WHISPER_CPP' cannot serve chat requests"),
        ("SELF_HOSTED", "NONE", "http://localhost:8000", "Host 'NONE' cannot serve chat requests"),
        *(
            ("OPEN_AI", "NONE", hostname, f"Hostname {hostname!r} {problem}")
            for hostname, problem in [
                ("ftp://llm.corp../", f"is not an http(s) address; {WRITE_IT}"),
                ("https://gateway..corp/v1", "names no host: its host is not a host name or IP"),
                ("gateway.corp", f"is not an http(s) address; {WRITE_IT}"),
            ]
        ),
        (
            "OPEN_AI",
            "NONE",
            "https://gateway.corp/v1#x",
            f"without query, fragment or user info; {WRITE_IT}",
        ),
    ],
)
def test_a_provider_the_runtime_cannot_call_is_skipped(
    tmp_path: Path, kind: str, host: str, hostname: str, expected: str
) -> None:
    bad = provider(id="22222222-2222-4222-8222-222222222222", kind=kind, host=host)
    bad = bad.replace('CONFIG["LLM_PROVIDERS"] = {}', "")
    bad = bad.replace('"http://localhost:8000"', f'"{hostname}"')
    path = write_plugin(tmp_path, extra=provider() + bad)
    plugin = load_plugin(path, ORG)
    assert [p.id for p in plugin.providers] == ["11111111-1111-4111-8111-111111111111"]
    (finding,) = plugin.findings
    assert finding.code == "invalid-entry"
    assert finding.message.startswith('CONFIG["LLM_PROVIDERS"] entry 2 skipped: ')
    assert expected in finding.message
    assert finding.location is not None and finding.location.line == line_of(path, '"22222222') - 1


@pytest.mark.parametrize(
    ("kind", "host"),
    [
        ("SELF_HOSTED", "LM_STUDIO"),
        ("SELF_HOSTED", "llama_cpp"),
        ("SELF_HOSTED", "OLLAMA"),
        ("SELF_HOSTED", "VLLM"),
        ("HETZNER", "NONE"),
        ("LITE_LLM", "WHISPER_CPP"),
        ("OPEN_AI", "WHISPER_CPP"),
    ],
)
def test_a_provider_the_runtime_calls_at_its_hostname_is_kept(
    tmp_path: Path, kind: str, host: str
) -> None:
    plugin = load_plugin(write_plugin(tmp_path, extra=provider(kind=kind, host=host)), ORG)
    (entry,) = plugin.providers
    assert (entry.kind, entry.hostname, plugin.findings) == (
        ProviderKind(kind),
        "http://localhost:8000",
        (),
    )


def test_provider_fields(tmp_path: Path, secret: str) -> None:
    extra = (
        '["CapabilityOverrides"] = { ["FunctionCalling"] = false },'
        '["APIKey"] = "sk-plaintext-key",'
        '["TokenizerPath"] = "/opt/tok.json",'
    )
    path = write_plugin(tmp_path, extra=provider(kind="open_ai", host="none", extra=extra))
    plugin = load_plugin(path, ORG)
    (p,) = plugin.providers
    assert p.kind is ProviderKind.OPEN_AI and p.host == "NONE"
    assert p.capability_overrides == {"FUNCTION_CALLING": False}
    assert p.api_key is None
    assert p.additional["TokenizerPath"] == "/opt/tok.json"
    messages = " | ".join(f.message for f in plugin.findings)
    assert "read as FUNCTION_CALLING" in messages
    assert "APIKey is not an ENC:v1: value; plaintext secrets are refused" in messages
    assert "sk-plaintext-key" not in messages
    assert all(f.severity is Severity.WARNING for f in plugin.findings)  # nothing loosens


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (
            '["CapabilityOverrides"] = { ["FUNCTION_CALING"] = false },',
            'did you mean "FUNCTION_CALLING"?',
        ),
        (
            '["CapabilityOverrides"] = { ["FUNCTION_CALLING"] = "no" },',
            "FUNCTION_CALLING must be true or false",
        ),
        (
            '["CapabilityOverride"] = { ["FUNCTION_CALLING"] = false },',
            'did you mean "CapabilityOverrides"?',
        ),
        (
            '["HFInferenceProvider"] = "CEREBAS",',
            'HFInferenceProvider is "CEREBAS"; it must be one of CEREBRAS,',
        ),
        (
            '["AdditionalJsonApiParameters"] = { ["store"] = false },',
            "AdditionalJsonApiParameters is a table; it must be a string",
        ),
    ],
)
def test_a_provider_field_that_could_loosen_when_ignored_skips_the_entry(
    tmp_path: Path, extra: str, said: str
) -> None:
    """A switched-off capability, another inference provider or a dropped `store: false`
    would loosen what the administrator wrote: the provider is skipped, an error."""
    path = write_plugin(tmp_path, extra=provider(extra=extra))
    plugin = load_plugin(path, ORG)
    assert plugin.providers == ()
    (finding,) = plugin.findings
    assert (finding.severity, finding.code) == (Severity.ERROR, "invalid-entry")
    assert said in finding.message, finding.message
    (skipped,) = plugin.skipped
    assert (skipped.section, skipped.location) == ("LLM_PROVIDERS", finding.location)


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ('{ ["Id"] = "m", ["DisplayName"] = "M", ["Temprature"] = 0 }', '"Temprature"'),
        ('"m"', 'Model is "m"; it must be a table like'),
        ('{ ["Id"] = "m" }', "Model.DisplayName missing"),
    ],
)
def test_a_provider_model_is_read_as_its_declared_table(
    tmp_path: Path, model: str, said: str
) -> None:
    """`Model` is read field by field as declared: a field it does not declare, a value that
    is no table or a missing field skips the provider, an error naming it."""
    text = provider().replace('{ ["Id"] = "m", ["DisplayName"] = "M" }', model)
    plugin = load_plugin(write_plugin(tmp_path, extra=text), ORG)
    assert plugin.providers == ()
    (finding,) = plugin.findings
    assert (finding.severity, finding.code) == (Severity.ERROR, "invalid-entry")
    assert said in finding.message, finding.message


def test_a_user_provided_key_wins_over_a_configured_one(tmp_path: Path, secret: str) -> None:
    key = encrypt("k", secret)
    extra = f'["AllowUserProvidedAPIKey"] = true, ["APIKey"] = "{key}",'
    plugin = load_plugin(write_plugin(tmp_path, extra=provider(extra=extra)), ORG)
    assert plugin.providers[0].api_key is None
    assert "APIKey is ignored because AllowUserProvidedAPIKey is true" in plugin.findings[0].message


def test_a_wrong_secret_leaves_the_provider_without_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = encrypt("k", SECRET)
    monkeypatch.setenv(ENV_SECRET, base64.b64encode(b"x" * 32).decode())
    plugin = load_plugin(
        write_plugin(tmp_path, extra=provider(extra=f'["APIKey"] = "{key}",')), ORG
    )
    assert plugin.providers[0].api_key is None
    assert "wrong secret" in plugin.findings[0].message


def test_the_later_of_two_entries_with_one_id_wins(tmp_path: Path) -> None:
    text = provider() + provider(kind="MISTRAL", host="NONE").replace(
        'CONFIG["LLM_PROVIDERS"] = {}', ""
    )
    plugin = load_plugin(write_plugin(tmp_path, extra=text), ORG)
    assert [p.kind for p in plugin.providers] == [ProviderKind.MISTRAL]
    assert codes(plugin) == ["duplicate-id"]
    assert plugin.findings[0].severity is Severity.ERROR  # the earlier may have been meant


def test_a_section_that_is_not_a_list_is_skipped(tmp_path: Path) -> None:
    plugin = load_plugin(write_plugin(tmp_path, extra='CONFIG["LLM_PROVIDERS"] = "none"'), ORG)
    assert plugin.providers == () and codes(plugin) == ["invalid-section"]


TEMPLATE = """
CONFIG["CHAT_TEMPLATES"] = {{
    {{ ["Id"] = "33333333-3333-4333-8333-333333333333", ["Name"] = "A", ["SystemPrompt"] = "x", ["ToolIds"] = {ids} }},
    {{ ["Id"] = "44444444-4444-4444-8444-444444444444", ["Name"] = "B", ["SystemPrompt"] = "y" }},
}}
"""


def test_template_tool_ids_skip_bad_entries(tmp_path: Path) -> None:
    plugin = load_plugin(
        write_plugin(tmp_path, extra=TEMPLATE.format(ids='{ "web_search", "", 3 }')), ORG
    )
    first, second = plugin.chat_templates
    assert first.tool_ids == ("web_search",) and second.tool_ids is None
    assert [f.code for f in plugin.findings] == ["invalid-entry-field", "invalid-entry-field"]


def test_a_template_with_unreadable_tool_ids_is_skipped(tmp_path: Path) -> None:
    plugin = load_plugin(write_plugin(tmp_path, extra=TEMPLATE.format(ids='"web_search"')), ORG)
    assert [t.name for t in plugin.chat_templates] == ["B"]
    assert "ToolIds must be a list" in plugin.findings[0].message


DATA_SOURCE = """
CONFIG["DATA_SOURCES"] = {{ {{
    ["Id"] = "55555555-5555-4555-8555-555555555555", ["Name"] = "Wiki", ["Type"] = "ERI_V1",
    ["Hostname"] = "https://eri.example.org", ["Port"] = {port}, ["AuthMethod"] = "{auth}",
    ["SecurityPolicy"] = "ALLOW_ANY", ["SelectedRetrievalId"] = "r", ["MaxMatches"] = 5, {extra}
}} }}
"""


@pytest.mark.parametrize(
    ("port", "auth", "extra", "expected"),
    [
        ("0", "NONE", "", "Port is 0; it must be a whole number from 1 to 65535"),
        ("443", "TOKEN", '["Token"] = "plain",', "Token is not an ENC:v1: value"),
        (
            "443",
            "USERNAME_PASSWORD",
            '["UsernamePasswordMode"] = "USER_MANAGED",',
            "UsernamePasswordMode",
        ),
        ("443", "OAUTH", "", "AuthMethod"),
    ],
)
def test_a_bad_data_source_is_skipped(
    tmp_path: Path, port: str, auth: str, extra: str, expected: str
) -> None:
    plugin = load_plugin(
        write_plugin(tmp_path, extra=DATA_SOURCE.format(port=port, auth=auth, extra=extra)), ORG
    )
    assert plugin.data_sources == ()
    assert expected in plugin.findings[0].message


def test_a_data_source_without_authentication(tmp_path: Path) -> None:
    plugin = load_plugin(
        write_plugin(tmp_path, extra=DATA_SOURCE.format(port="443", auth="none", extra="")), ORG
    )
    (source,) = plugin.data_sources
    assert source.security is DataSecurity.ALLOW_ANY and source.raw["Port"] == 443
    assert source.minimum_confidence is ConfidenceLevel.NONE


@pytest.mark.parametrize(
    ("written", "level"), [("HIGH", ConfidenceLevel.HIGH), ("low", ConfidenceLevel.LOW)]
)
def test_a_data_source_keeps_its_minimum_provider_confidence(
    tmp_path: Path, written: str, level: ConfidenceLevel
) -> None:
    extra = f'["MinimumProviderConfidence"] = "{written}",'
    plugin = load_plugin(
        write_plugin(tmp_path, extra=DATA_SOURCE.format(port="443", auth="NONE", extra=extra)), ORG
    )
    (source,) = plugin.data_sources
    assert source.minimum_confidence is level


# -- compatibility and discovery ------------------------------------------------------------------


def test_what_ai_studio_would_refuse_before_running_is_only_a_warning(tmp_path: Path) -> None:
    path = write_plugin(tmp_path, ID="'5f0c7c1e-2b7a-4d3e-9f65-1c2d3e4f5a6b'")
    plugin = load_plugin(path, ORG)
    assert codes(plugin) == ["ai-studio-compat"]
    assert "AI Studio would refuse this plugin" in plugin.findings[0].message
    commented = tmp_path / "c"
    path = write_plugin(commented, extra="")
    path.write_text('-- ID = "<your id>"\n' + path.read_text(encoding="utf-8"), encoding="utf-8")
    finding = load_plugin(path, ORG).findings[0]
    assert finding.code == "ai-studio-compat" and finding.location is not None
    assert finding.location.line == 1


def test_discovery_finds_plugins_at_any_depth_in_a_stable_order(tmp_path: Path) -> None:
    for name in ("b/plugin.lua", "a/deep/er/plugin.lua", "a/plugin.lua", "c/other.lua"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    found = [p.relative_to(tmp_path).as_posix() for p in discover_plugin_files(tmp_path)]
    assert found == ["a/deep/er/plugin.lua", "a/plugin.lua", "b/plugin.lua"]
    assert discover_plugin_files(tmp_path / "b") == [tmp_path / "b" / "plugin.lua"]
    assert discover_plugin_files(tmp_path / "c" / "other.lua") == [tmp_path / "c" / "other.lua"]
    assert discover_plugin_files(tmp_path / "c") == []
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        discover_plugin_files(tmp_path / "missing")


def test_an_unreadable_plugin_file_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "absent" / "plugin.lua"
    error = rejected(path)
    [finding] = error.findings
    assert finding.severity is Severity.ERROR
    assert finding.location is not None and finding.location.file == str(path)
    assert "does not exist" in finding.message
    assert str(error).startswith(f"{path}: ")


def test_odd_but_tolerated_input_only_warns(tmp_path: Path) -> None:
    extra = "\n".join(
        [
            'CONFIG["SETTINGS"][1] = "stray"',
            'CONFIG["CHAT_TEMPLATES"] = { "not a table" }',
            provider(extra='["TokenizerPath"] = 7,'),
        ]
    )
    path = write_plugin(tmp_path, extra=extra, DEPLOYED_USING_CONFIG_SERVER='"yes"')
    plugin = load_plugin(path, PluginOrigin.LOCAL)
    assert plugin.deployed_using_config_server is None
    assert "TokenizerPath" not in plugin.providers[0].additional
    assert plugin.chat_templates == ()
    by_code = {f.code: f for f in plugin.findings}
    assert set(by_code) == {
        "invalid-global",
        "invalid-setting",
        "invalid-entry",
        "invalid-entry-field",
    }
    assert "read as not declared" in by_code["invalid-global"].message
    assert "is not a setting name" in by_code["invalid-setting"].message
    assert (
        'CONFIG["CHAT_TEMPLATES"] entry 1 skipped: it is not a table'
        in by_code["invalid-entry"].message
    )
    assert "TokenizerPath" in by_code["invalid-entry-field"].message
    assert all(f.severity is Severity.WARNING and f.location is not None for f in plugin.findings)
