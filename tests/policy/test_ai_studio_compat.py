"""AI Studio compatibility: what AI Studio's configuration template offers loads here unchanged.

The fixture `ai_studio_shapes` writes out every construct of AI Studio's configuration template
(checked against MindWorkAI/AI-Studio, see "Compatibility with AI Studio" in
docs/administrators/writing-plugins.md). It must load with no errors and no warnings other than
the expected "kept, not used by toolpolicy" notices, with the typed values and lines below. The remaining tests pin the compatibility fixes.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from policy.config.settings import setting_key
from policy.configuration import SecretValue, Severity
from policy.merge import load_configuration
from policy.plugins import ConfigurationPlugin, PluginLoadError, load_plugin
from policy.secrets import AI_STUDIO_ENV_SECRET, ENV_SECRET, decrypt
from policy.vocabulary import DataSecurity, PluginOrigin, ProviderKind
from tests.servers.cli_runner import CliRun, run_policy

ROOT = Path(__file__).resolve().parents[2]
SHAPES_DIR = Path(__file__).parent / "plugin_fixtures" / "ai_studio_shapes"
SHAPES = SHAPES_DIR / "plugin.lua"
SECRET = base64.b64encode(bytes(range(32))).decode()
ORG = PluginOrigin.ORGANIZATION
UNUSED = "not-used-by-toolpolicy"
PROVIDER_A = "ab12cd34-0001-4a00-8000-0000000000a1"

HEADER = """\
ID = "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
NAME = "Compat test"
DESCRIPTION = "A plugin for compatibility tests"
VERSION = "1.0.0"
TYPE = "CONFIGURATION"
AUTHORS = { "Tests" }
SUPPORT_CONTACT = "tests@example.org"
SOURCE_URL = "https://example.org/compat"
CATEGORIES = { "CORE" }
TARGET_GROUPS = { "EVERYONE" }
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
CONFIG = {}
CONFIG["SETTINGS"] = {}
"""


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv(AI_STUDIO_ENV_SECRET, raising=False)
    monkeypatch.setenv(ENV_SECRET, SECRET)
    return SECRET


@pytest.fixture(scope="module")
def shapes() -> ConfigurationPlugin:
    previous = os.environ.get(ENV_SECRET)
    os.environ[ENV_SECRET] = SECRET
    try:
        return load_plugin(SHAPES, ORG)
    finally:
        if previous is None:
            del os.environ[ENV_SECRET]
        else:
            os.environ[ENV_SECRET] = previous


def line_of(path: Path, text: str) -> int:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def write(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "plugin.lua"
    path.write_text(HEADER + body, encoding="utf-8")
    return path


def reveal(value: object) -> str:
    assert isinstance(value, SecretValue)
    return decrypt(value.encrypted, SECRET)


# -- the fixture loads cleanly ------------------------------------------------------------------


def test_every_template_construct_loads_without_errors_or_unexpected_warnings(
    shapes: ConfigurationPlugin,
) -> None:
    assert shapes.findings == ()
    assert {f.code for f in shapes.unused} == {UNUSED}
    assert all(f.severity is Severity.WARNING for f in shapes.unused)
    unknown = [f.message for f in shapes.unused if "not a setting toolpolicy knows" in f.message]
    assert unknown == []
    assert all(f.location is not None and f.location.line > 0 for f in shapes.unused)


def test_globals_are_read_as_ai_studio_reads_them(shapes: ConfigurationPlugin) -> None:
    assert shapes.id == "c0ffee00-1d2e-4f3a-8b4c-5d6e7f809a1b"
    assert shapes.name == "Fabrikam Labs - shapes of an AI Studio configuration"
    assert shapes.version == "2.3.4" and shapes.priority == 50
    assert shapes.deployed_using_config_server is True
    assert any(Path(f).name == "icon.lua" for f in shapes.files)


def test_language_model_entries(shapes: ConfigurationPlugin) -> None:
    vllm, hugging = shapes.providers
    assert vllm.id == PROVIDER_A
    assert vllm.name == "Fabrikam vLLM cluster"
    assert vllm.kind is ProviderKind.SELF_HOSTED and vllm.host == "VLLM"
    assert vllm.hostname == "https://vllm.fabrikam.example/"
    assert vllm.model == "qwen2.5-72b-instruct"
    assert vllm.additional["DisplayName"] == "Qwen 2.5 72B"
    assert vllm.additional["AdditionalJsonApiParameters"] == (
        '"temperature": 0.2, "max_tokens": 2048'
    )
    assert vllm.capability_overrides == {
        "VIDEO_INPUT": False,
        "OPTIONAL_REASONING": True,
        "REASONING_BY_DEFAULT": True,
    }
    assert reveal(vllm.api_key) == "sk-shapes-provider"
    assert vllm.origin is not None
    assert vllm.origin.location.line == line_of(SHAPES, "models[#models + 1] = {")

    assert hugging.kind is ProviderKind.HUGGINGFACE and hugging.host == "NONE"
    assert hugging.name == "" and hugging.hostname == ""
    assert hugging.additional["HFInferenceProvider"] == "TOGETHER_AI"
    assert hugging.additional["AllowUserProvidedAPIKey"] is True
    assert hugging.api_key is None


def test_eri_data_sources_with_each_authentication(shapes: ConfigurationPlugin) -> None:
    notebooks, contracts, personal = shapes.data_sources
    assert notebooks.kind == "ERI_V1" and notebooks.security is DataSecurity.SELF_HOSTED
    assert notebooks.raw["Hostname"] == "https://eri-notebooks.fabrikam.example"
    assert notebooks.raw["Port"] == 8443 and notebooks.raw["MaxMatches"] == 12
    assert reveal(notebooks.raw["Token"]) == "shapes-wiki-token"
    assert contracts.security is DataSecurity.ALLOW_ANY
    assert contracts.raw["Username"] == "svc-contracts-reader"
    assert reveal(contracts.raw["Password"]) == "shapes-archive-password"
    assert personal.raw["UsernamePasswordMode"] == "OS_USERNAME_SHARED_PASSWORD"
    assert personal.origin is not None
    assert personal.origin.location.line == line_of(SHAPES, '"Personal HR folder"') - 2


def test_chat_templates_keep_tools_attachments_and_examples(shapes: ConfigurationPlugin) -> None:
    reviewer, bare = shapes.chat_templates
    assert reviewer.name == "Lab report reviewer"
    assert reviewer.tool_ids == ("read_web_page", "web_search")
    assert reviewer.raw["AllowProfileUsage"] is False
    assert reviewer.raw["FileAttachments"] == (
        "attachments/report-checklist.md",
        "C:\\Shared\\Templates\\lab.docx",
    )
    assert reviewer.raw["ExampleConversation"][0] == {
        "Role": "user",
        "Content": "Here is my draft.",
    }
    assert reviewer.raw["DataSourceOptions"]["AutomaticDataSourceSelection"] is True
    assert bare.tool_ids == ()


def test_settings_toolpolicy_acts_on_are_typed(shapes: ConfigurationPlugin) -> None:
    s = shapes.settings
    minimums = s["DataTools.MinimumProviderConfidenceByToolId"]
    assert minimums.value == {"web_search": "MODERATE", "read_web_page": "HIGH"}
    assert minimums.location.line == line_of(SHAPES, "DataTools.MinimumProviderConfidenceByToolId")
    scheme = s["DataConfidence.ConfidenceScheme"]
    assert scheme.value == "CUSTOM" and scheme.allow_user_override is True
    custom = s["DataConfidence.CustomConfidenceScheme"].value
    assert len(custom) == 16 and custom["HETZNER"] == "MEDIUM" and custom["X"] == "UNTRUSTED"
    assert s["DataConfidence.EnforceGlobalMinimumConfidence"].value is True
    minimum = s["DataConfidence.GlobalMinimumConfidence"]
    assert minimum.value == "LOW" and minimum.allow_user_override is False
    assert minimum.override_requested is False and minimum.override_location is not None
    assert s["DataSourceSecuritySettings.TrustedProviderIds"].value == (PROVIDER_A,)


def test_ai_studio_settings_are_kept_raw_with_their_lines(shapes: ConfigurationPlugin) -> None:
    s = shapes.settings
    bundle = s["DataApp.ExternalHttpCustomRootCertificateBundlePath"]
    assert bundle.used_by_toolpolicy is False and bundle.value == "/etc/fabrikam/roots.pem"
    assert s["DataApp.HttpClientTimeoutSeconds"].value == 900
    assert s["DataApp.StartPage"].allow_user_override is True
    assert s["DataVisualBriefing.PreselectedOtherLanguage"].value == "Swiss German"
    assert s["DataBatchProcessing.MinimumProviderConfidence"].value == "UNKNOWN"
    approvals = s["DataAssistantPluginAudit.EnterpriseApprovedPlugins"].value
    assert approvals[0] == "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
    assert approvals[1]["Activate"] is True
    assert s["DataApp.EnabledPreviewFeatures"].value == ("PRE_RAG_2024", "PRE_WRITER_MODE_2024")
    assert s["DataChat.PreselectedProfile"].value == ""
    for section in (
        "TRANSCRIPTION_PROVIDERS",
        "EMBEDDING_PROVIDERS",
        "INTRODUCTIONS",
        "MANDATORY_INFOS",
        "DOCUMENT_ANALYSIS_POLICIES",
        "PROFILES",
    ):
        assert section in shapes.other_sections
    assert shapes.other_sections["PROFILES"][0]["Name"] == "Chemist"
    assert "## First steps" in shapes.other_sections["INTRODUCTIONS"][0]["Markdown"]


def test_the_merged_view_keeps_origins_and_lines() -> None:
    configuration = load_configuration(org=[SHAPES_DIR])
    assert not configuration.fails_closed
    assert [f.code for f in configuration.findings if f.severity is Severity.ERROR] == []
    assert {f.code for f in configuration.findings} <= {UNUSED}
    scheme = configuration.setting("DataConfidence.ConfidenceScheme")
    assert scheme is not None and scheme.locked is False
    assert scheme.origin.plugin_name == "Fabrikam Labs - shapes of an AI Studio configuration"
    assert scheme.origin.location.line == line_of(SHAPES, '"DataConfidence.ConfidenceScheme"] =')
    custom = configuration.setting("DataConfidence.CustomConfidenceScheme")
    assert custom is not None
    assert custom.entry_locations["GWDG"].line == line_of(SHAPES, '["GWDG"] = "HIGH"')
    assert [p.id for p in configuration.providers] == [
        PROVIDER_A,
        "ab12cd34-0002-4a00-8000-0000000000a2",
    ]
    assert len(configuration.data_sources) == 3 and len(configuration.chat_templates) == 2


def _run(*args: str) -> CliRun:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    env.pop(AI_STUDIO_ENV_SECRET, None)
    env[AI_STUDIO_ENV_SECRET] = SECRET
    done = run_policy(args, env=env, cwd=ROOT)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def test_policy_check_and_explain_accept_the_fixture() -> None:
    checked = _run("check", "--org", str(SHAPES_DIR), "--format", "json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    report = json.loads(checked.stdout)
    assert report["ok"] is True and report["errors"] == []
    assert {w["code"] for w in report["warnings"]} == {UNUSED}
    assert "sk-shapes-provider" not in checked.stdout
    explained = _run("explain", "--org", str(SHAPES_DIR), "--all")
    assert explained.returncode == 0, explained.stderr
    assert "Fabrikam vLLM cluster" in explained.stdout
    assert "shapes-wiki-token" not in explained.stdout


def test_the_template_as_delivered_is_refused_for_its_placeholders(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    text = path.read_text(encoding="utf-8")
    text = text.replace(
        'ID = "0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"', 'ID = "00000000-0000-0000-0000-000000000000"'
    ).replace('"https://example.org/compat"', '"<internal repository>"')
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PluginLoadError) as caught:
        load_plugin(path, ORG)
    problems = [(f.location.line if f.location else 0, f.message) for f in caught.value.findings]
    assert [line for line, _ in problems] == [1, 8]
    assert "all-zero GUID" in problems[0][1] and "SOURCE_URL" in problems[1][1]


# -- fixes ----------------------------------------------------------------------------------------


def test_the_certificate_bundle_key_uses_ai_studio_spelling(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'CONFIG["SETTINGS"]["DataApp.ExternalHttpCustomRootCertificateBundlePath"] = "/r.pem"\n',
    )
    (finding,) = load_plugin(path, ORG).unused
    assert "an AI Studio setting toolpolicy does not use" in finding.message
    assert setting_key("DataApp.ExternalHttpCustomRootCertificatesBundlePath") is None


def test_visual_briefing_settings_are_known_ai_studio_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'CONFIG["SETTINGS"]["DataVisualBriefing.PreselectedAudienceExpertise"] = "EXPERTS"\n'
        'CONFIG["SETTINGS"]["DataVisualBriefing.OptimizeImages"] = false\n',
    )
    plugin = load_plugin(path, ORG)
    assert len(plugin.unused) == 2
    assert all("an AI Studio setting toolpolicy does not use" in f.message for f in plugin.unused)
    assert plugin.settings["DataVisualBriefing.OptimizeImages"].value is False


@pytest.mark.parametrize(
    ("key", "replacement"),
    [
        ("DataTools.WebSearchBaseUrl", '["web_search.searxng.baseUrl"]'),
        ("DataTools.ReadWebPageAllowedPrivateHosts", '["read_web_page.allowedPrivateHosts"]'),
    ],
)
def test_retired_tool_keys_point_to_the_tool_settings_tables(
    tmp_path: Path, key: str, replacement: str
) -> None:
    path = write(tmp_path, f'CONFIG["SETTINGS"]["{key}"] = "https://search.example.org"\n')
    plugin = load_plugin(path, ORG)
    (finding,) = plugin.unused
    assert finding.code == UNUSED and finding.location is not None
    assert finding.location.line == line_of(path, key)
    assert "retired AI Studio setting" in finding.message
    assert f"DataTools.LockedToolSettings{replacement}" in finding.message
    assert plugin.settings[key].used_by_toolpolicy is False
    assert plugin.findings == ()


def test_a_list_section_with_stray_keys_keeps_its_consecutive_entries(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'CONFIG["CHAT_TEMPLATES"] = {\n'
        '  { ["Id"] = "2b3c4d5e-6f70-4182-93a4-b5c6d7e8f901", ["Name"] = "Kept", '
        '["SystemPrompt"] = "" },\n'
        '  note = "not an entry",\n'
        "}\n"
        'CONFIG["CHAT_TEMPLATES"][4] = { ["Id"] = "3b3c4d5e-6f70-4182-93a4-b5c6d7e8f901" }\n',
    )
    plugin = load_plugin(path, ORG)
    assert [t.name for t in plugin.chat_templates] == ["Kept"]
    stray = [f for f in plugin.findings if f.code == "invalid-entry"]
    assert [f.location.line if f.location else 0 for f in stray] == [
        line_of(path, "not an entry"),
        line_of(path, '["CHAT_TEMPLATES"][4]'),
    ]
    assert all("outside the list 1..1" in f.message for f in stray)


def test_a_non_table_section_is_still_skipped_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, 'CONFIG["LLM_PROVIDERS"] = "none"\n')
    plugin = load_plugin(path, ORG)
    assert plugin.providers == ()
    assert [f.code for f in plugin.findings] == ["invalid-section"]


def test_a_provider_kind_ai_studio_does_not_know_warns_in_the_custom_scheme(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        'CONFIG["SETTINGS"]["DataConfidence.CustomConfidenceScheme"] = {\n'
        '  ["LITE_LLM"] = "HIGH",\n'
        '  ["OPEN_AI"] = "LOW",\n'
        "}\n",
    )
    plugin = load_plugin(path, ORG)
    assert plugin.settings["DataConfidence.CustomConfidenceScheme"].value == {
        "LITE_LLM": "HIGH",
        "OPEN_AI": "LOW",
    }
    (finding,) = plugin.findings
    assert finding.code == "ai-studio-compat" and "LITE_LLM" in finding.message
    assert finding.location is not None
    assert finding.location.line == line_of(path, '["LITE_LLM"]')


def test_a_capability_spelling_ai_studio_ignores_warns(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'CONFIG["LLM_PROVIDERS"] = { {\n'
        '  ["Id"] = "4c3c4d5e-6f70-4182-93a4-b5c6d7e8f901", ["InstanceName"] = "m",\n'
        '  ["UsedLLMProvider"] = "SELF_HOSTED", ["Host"] = "OLLAMA", ["Hostname"] = "http://localhost:11434",\n'
        '  ["Model"] = { ["Id"] = "m", ["DisplayName"] = "M" },\n'
        '  ["CapabilityOverrides"] = { ["VideoInput"] = true, ["AUDIO_INPUT"] = false },\n'
        "} }\n",
    )
    plugin = load_plugin(path, ORG)
    (provider,) = plugin.providers
    assert provider.capability_overrides == {"VIDEO_INPUT": True, "AUDIO_INPUT": False}
    (finding,) = plugin.findings
    assert finding.code == "ai-studio-compat"
    assert '"VideoInput" is read as VIDEO_INPUT' in finding.message


@pytest.mark.parametrize("mode", ["USER_MANAGED", "SHARED"])
def test_a_bad_username_password_mode_rejects_the_entry_whatever_the_auth_method(
    tmp_path: Path, mode: str
) -> None:
    path = write(
        tmp_path,
        'CONFIG["DATA_SOURCES"] = { {\n'
        '  ["Id"] = "5d3c4d5e-6f70-4182-93a4-b5c6d7e8f901", ["Name"] = "Wiki",\n'
        '  ["Type"] = "ERI_V1", ["Hostname"] = "https://eri.example.org", ["Port"] = 443,\n'
        '  ["AuthMethod"] = "NONE", ["SecurityPolicy"] = "SELF_HOSTED",\n'
        '  ["SelectedRetrievalId"] = "r1", ["MaxMatches"] = 10,\n'
        f'  ["UsernamePasswordMode"] = "{mode}",\n'
        "} }\n",
    )
    plugin = load_plugin(path, ORG)
    assert plugin.data_sources == ()
    (finding,) = plugin.findings
    assert finding.code == "invalid-entry"
    assert f'UsernamePasswordMode is "{mode}"' in finding.message
    assert "SHARED_USERNAME_AND_PASSWORD" in finding.message


def test_a_valid_username_password_mode_next_to_a_token_is_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'CONFIG["DATA_SOURCES"] = { {\n'
        '  ["Id"] = "6d3c4d5e-6f70-4182-93a4-b5c6d7e8f901", ["Name"] = "Wiki",\n'
        '  ["Type"] = "ERI_V1", ["Hostname"] = "https://eri.example.org", ["Port"] = 443,\n'
        '  ["AuthMethod"] = "NONE", ["SecurityPolicy"] = "SELF_HOSTED",\n'
        '  ["SelectedRetrievalId"] = "r1", ["MaxMatches"] = 10,\n'
        '  ["UsernamePasswordMode"] = "shared_username_and_password",\n'
        "} }\n",
    )
    plugin = load_plugin(path, ORG)
    assert [d.name for d in plugin.data_sources] == ["Wiki"] and plugin.findings == ()


def test_the_host_spelling_from_ai_studio_comments_gets_a_hint(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'CONFIG["LLM_PROVIDERS"] = { {\n'
        '  ["Id"] = "7d3c4d5e-6f70-4182-93a4-b5c6d7e8f901", ["InstanceName"] = "llama",\n'
        '  ["UsedLLMProvider"] = "SELF_HOSTED", ["Host"] = "LLAMACPP", ["Hostname"] = "",\n'
        '  ["Model"] = { ["Id"] = "m", ["DisplayName"] = "M" },\n'
        "} }\n",
    )
    plugin = load_plugin(path, ORG)
    assert plugin.providers == ()
    (finding,) = plugin.findings
    assert finding.code == "invalid-entry" and finding.location is not None
    assert finding.location.line == line_of(path, 'CONFIG["LLM_PROVIDERS"]')
    assert 'Host is "LLAMACPP"' in finding.message
    assert "(did you mean LLAMA_CPP?)" in finding.message


def test_allow_user_provided_api_key_counts_only_as_a_lua_bool(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        'CONFIG["LLM_PROVIDERS"] = { {\n'
        '  ["Id"] = "8d3c4d5e-6f70-4182-93a4-b5c6d7e8f901", ["InstanceName"] = "cloud",\n'
        '  ["UsedLLMProvider"] = "OPEN_AI", ["Host"] = "NONE", ["Hostname"] = "",\n'
        '  ["AllowUserProvidedAPIKey"] = "true",\n'
        '  ["APIKey"] = "ENC:v1:W4iK51uTFQArtXfXBeqCX1dWxIjOSFnzfuCb0qBJrbkb1HmRnWAr6DOpcoH212wH",\n'
        '  ["Model"] = { ["Id"] = "gpt-4o", ["DisplayName"] = "GPT-4o" },\n'
        "} }\n",
    )
    plugin = load_plugin(path, ORG)
    (provider,) = plugin.providers
    assert provider.additional["AllowUserProvidedAPIKey"] is False
    assert reveal(provider.api_key) == "sk-shapes-provider"
    (finding,) = plugin.findings
    assert finding.code == "invalid-entry-field"
    assert 'AllowUserProvidedAPIKey must be true or false, not "true"' in finding.message


def test_the_template_with_its_placeholders_filled_in_loads_without_any_notice(
    tmp_path: Path,
) -> None:
    (tmp_path / "icon.lua").write_text('SVG = [[<svg viewBox="0 0 1 1"/>]]\n', encoding="utf-8")
    path = write(
        tmp_path,
        "ICON_SVG = SVG\n"
        "PRIORITY = 0\n"
        "DEPLOYED_USING_CONFIG_SERVER = false\n"
        'CONFIG["LLM_PROVIDERS"] = {}\n'
        'CONFIG["TRANSCRIPTION_PROVIDERS"] = {}\n'
        'CONFIG["EMBEDDING_PROVIDERS"] = {}\n'
        'CONFIG["DATA_SOURCES"] = {}\n'
        'CONFIG["CHAT_TEMPLATES"] = {}\n'
        'CONFIG["INTRODUCTIONS"] = {}\n'
        'CONFIG["MANDATORY_INFOS"] = {}\n'
        'CONFIG["DOCUMENT_ANALYSIS_POLICIES"] = {}\n'
        'CONFIG["PROFILES"] = {}\n',
    )
    path.write_text('require("icon")\n' + path.read_text(encoding="utf-8"), encoding="utf-8")
    plugin = load_plugin(path, ORG)
    assert plugin.findings == () and plugin.unused == ()
    assert plugin.other_sections["PROFILES"] == ()
    assert plugin.deployed_using_config_server is False


def test_a_filled_ai_studio_section_is_still_reported_as_kept(tmp_path: Path) -> None:
    path = write(tmp_path, 'CONFIG["PROFILES"] = { { ["Id"] = "x", ["Name"] = "P" } }\n')
    (finding,) = load_plugin(path, ORG).unused
    assert finding.code == UNUSED and 'CONFIG["PROFILES"]' in finding.message
