"""Lint rules of `policy check`: each warns about one thing, at the line that causes it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from policy.builtin import builtin_tools
from policy.configuration import (
    Beaten,
    ChatTemplateConfig,
    DataSourceConfig,
    Finding,
    ManagedSetting,
    PolicyConfiguration,
    ProviderConfig,
    Severity,
)
from policy.lint import lint_configuration
from policy.plugins import ConfigurationPlugin, PluginSetting
from policy.provenance import Origin, SourceLocation
from policy.secrets import encrypt, generate_secret
from policy.vocabulary import DataSecurity, PluginOrigin, ProviderKind

DEFINITIONS = {tool.definition.id: tool.definition for tool in builtin_tools()}
BASE = Origin("b", "Base", SourceLocation("/org/base/plugin.lua", 10))
DEPT = Origin("d", "Department", SourceLocation("/org/dept/plugin.lua", 20))


def managed(
    key: str,
    value: Any,
    *,
    origin: Origin = BASE,
    locked: bool = True,
    beaten: tuple[Beaten, ...] = (),
    entries: Mapping[str, int] | None = None,
) -> ManagedSetting:
    locations = {
        name: SourceLocation(origin.location.file, line) for name, line in (entries or {}).items()
    }
    return ManagedSetting(key, value, locked, origin, beaten, locations)


def lint(*settings: ManagedSetting, **extra: Any) -> list[Finding]:
    configuration = PolicyConfiguration(settings={s.key: s for s in settings}, **extra)
    return list(lint_configuration(configuration, DEFINITIONS))


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def test_a_sensible_configuration_has_no_warnings() -> None:
    findings = lint(
        managed("DataTools.DisabledToolIds", ("search_confluence",)),
        managed("DataTools.MinimumProviderConfidenceByToolId", {"web_search": "MEDIUM"}),
        managed(
            "DataTools.LockedToolSettings",
            {"web_search.searxng.baseUrl": "https://searx.example.org"},
        ),
        managed("DataTools.DefaultToolSettings", {"read_web_page.freeAddressChoice": "ON"}),
    )
    assert findings == []


def test_every_warning_is_a_warning() -> None:
    findings = lint(managed("DataTools.DefaultToolIdsByComponent", {"CHAT": ("web_search",)}))
    assert findings and all(f.severity is Severity.WARNING for f in findings)


def test_an_unknown_tool_id_that_could_have_tightened_is_an_error() -> None:
    findings = lint(
        managed("DataTools.DisabledToolIds", ("nope",)),
        managed("DataTools.MinimumProviderConfidenceByToolId", {"web_serch": "HIGH"}),
        managed("DataTools.DefaultToolIdsByComponent", {"CHAT": ("nope",)}),
        managed("DataTools.LockedToolSettings", {"web_serch.maxResults": "3"}),
        managed("DataTools.DefaultToolSettings", {"my_tool.x": "3"}),
        chat_templates=(ChatTemplateConfig("t", "Research", ("nope",), origin=DEPT),),
    )
    unknown = {
        f.message.split(" names")[0]: f.severity for f in findings if f.code == "unknown-tool-id"
    }
    assert unknown == {
        "DataTools.DisabledToolIds": Severity.ERROR,
        "DataTools.MinimumProviderConfidenceByToolId": Severity.ERROR,
        'DataTools.DefaultToolIdsByComponent["CHAT"]': Severity.ERROR,
        'DataTools.LockedToolSettings["web_serch.maxResults"]': Severity.ERROR,  # a near miss
        'DataTools.DefaultToolSettings["my_tool.x"]': Severity.WARNING,  # an app's tool, perhaps
        "chat template 'Research' (ToolIds)": Severity.WARNING,  # fewer tools is all it can mean
    }


def test_unknown_tool_ids_are_named_at_their_entry() -> None:
    findings = lint(
        managed("DataTools.DisabledToolIds", ("web_serch",), entries={"web_serch": 12}),
        managed("DataTools.MinimumProviderConfidenceByToolId", {"raed_web_page": "HIGH"}),
        managed("DataTools.DefaultToolSettings", {"confluence.baseUrl": "https://w"}),
        chat_templates=(ChatTemplateConfig("t", "Research", ("websearch",), origin=DEPT),),
    )
    unknown = [f for f in findings if f.code == "unknown-tool-id"]
    assert [f.location for f in unknown] == [
        SourceLocation("/org/base/plugin.lua", 12),
        BASE.location,
        BASE.location,
        DEPT.location,
    ]
    assert "'web_serch'" in unknown[0].message and "web_search" in unknown[0].message
    assert "Research" in unknown[3].message


def test_a_collection_id_the_registry_knows_is_not_unknown() -> None:
    configuration = PolicyConfiguration(
        settings={"DataTools.DisabledToolIds": managed("DataTools.DisabledToolIds", ("mailboxes",))}
    )
    found = lint_configuration(
        configuration, DEFINITIONS, lambda i: i in {*DEFINITIONS, "mailboxes"}
    )
    assert found == ()


def test_unknown_datatools_keys_suggest_the_right_spelling() -> None:
    findings = lint(managed("DataTools.disabledToolIds", ("web_search",)))
    assert codes(findings) == ["unknown-datatools-key"]
    assert '"DataTools.DisabledToolIds"' in findings[0].message


def test_a_field_the_tool_does_not_have() -> None:
    findings = lint(managed("DataTools.DefaultToolSettings", {"web_search.colour": "blue"}))
    assert codes(findings) == ["unknown-tool-setting"]
    assert "searxng.baseUrl" in findings[0].message


@pytest.mark.parametrize(
    ("entry", "value", "hint"),
    [
        ("read_web_page.freeAddressChoice", "on", 'did you mean "ON"'),
        ("web_search.defaultSafeSearch", "MEDIUM", "OFF, MODERATE, STRICT"),
        ("web_search.defaultLanguage", "german", "de-DE"),
    ],
)
def test_values_outside_a_fields_choices(entry: str, value: str, hint: str) -> None:
    findings = lint(managed("DataTools.LockedToolSettings", {entry: value}, entries={entry: 33}))
    assert codes(findings) == ["value-not-allowed"]
    assert hint in findings[0].message
    assert findings[0].location == SourceLocation("/org/base/plugin.lua", 33)


def test_an_empty_value_is_always_allowed() -> None:
    assert (
        lint(managed("DataTools.DefaultToolSettings", {"web_search.defaultSafeSearch": ""})) == []
    )


def test_plaintext_secrets_are_flagged_without_repeating_them() -> None:
    findings = lint(
        managed("DataTools.LockedToolSettings", {"web_search.tavily.apiKey": "tvly-123456"})
    )
    assert codes(findings) == ["plaintext-secret"]
    assert "tvly-123456" not in findings[0].message
    assert "policy encrypt" in findings[0].message


def test_an_encrypted_locked_secret_is_fine() -> None:
    value = encrypt("tvly-123456", generate_secret())
    assert lint(managed("DataTools.LockedToolSettings", {"web_search.tavily.apiKey": value})) == []


def test_a_secret_in_the_defaults_is_never_used() -> None:
    value = encrypt("tvly-123456", generate_secret())
    findings = lint(managed("DataTools.DefaultToolSettings", {"web_search.tavily.apiKey": value}))
    assert codes(findings) == ["secret-in-defaults"]


def test_a_plaintext_provider_key_is_flagged() -> None:
    provider = ProviderConfig(
        "p", "Cloud", ProviderKind.OPEN_AI, "gpt-4o", additional={"APIKey": "sk-abc"}, origin=BASE
    )
    findings = lint(providers=(provider,))
    assert codes(findings) == ["plaintext-secret"]
    assert "sk-abc" not in findings[0].message


def test_an_override_companion_the_key_cannot_honor() -> None:
    where = SourceLocation("/org/base/plugin.lua", 7)
    plugin = ConfigurationPlugin(
        id="b",
        name="Base",
        path="/org/base/plugin.lua",
        origin=PluginOrigin.ORGANIZATION,
        priority=0,
        settings={
            "DataTools.DisabledToolIds": PluginSetting(
                "DataTools.DisabledToolIds",
                ("web_search",),
                SourceLocation("/org/base/plugin.lua", 6),
                allow_user_override=False,
                override_requested=True,
                override_location=where,
            ),
            "DataTools.EnableTools": PluginSetting(
                "DataTools.EnableTools",
                True,
                SourceLocation("/org/base/plugin.lua", 8),
                allow_user_override=True,
                override_requested=True,
            ),
        },
    )
    found = lint_configuration(PolicyConfiguration(), DEFINITIONS, plugins=[plugin])
    assert [(f.code, f.location) for f in found] == [("override-not-honored", where)]
    assert "always locked" in found[0].message


def test_a_department_list_that_drops_base_entries() -> None:
    findings = lint(
        managed(
            "DataTools.DisabledToolIds",
            ("read_web_page",),
            origin=DEPT,
            beaten=(Beaten(("search_confluence", "read_web_page"), BASE),),
        )
    )
    assert codes(findings) == ["list-replaced"]
    message = findings[0].message
    assert "search_confluence" in message and "Base" in message and "Department" in message
    assert findings[0].location == DEPT.location


def test_a_department_list_that_keeps_every_base_entry_is_fine() -> None:
    findings = lint(
        managed(
            "DataTools.DisabledToolIds",
            ("search_confluence", "read_web_page"),
            origin=DEPT,
            beaten=(Beaten(("search_confluence",), BASE),),
        )
    )
    assert findings == []


def test_a_default_hidden_by_a_lock_has_no_effect() -> None:
    findings = lint(
        managed("DataTools.LockedToolSettings", {"read_web_page.freeAddressChoice": "OFF"}),
        managed(
            "DataTools.DefaultToolSettings",
            {"read_web_page.freeAddressChoice": "ON"},
            origin=DEPT,
        ),
    )
    assert codes(findings) == ["no-effect"]
    assert findings[0].location == DEPT.location


def test_settings_of_a_disabled_tool_have_no_effect() -> None:
    findings = lint(
        managed("DataTools.DisabledToolIds", ("search_confluence",)),
        managed("DataTools.MinimumProviderConfidenceByToolId", {"search_confluence": "HIGH"}),
    )
    assert codes(findings) == ["no-effect"]


def test_tool_settings_have_no_effect_while_tools_are_off() -> None:
    findings = lint(
        managed("DataTools.EnableTools", False),
        managed("DataTools.DisabledToolIds", ("web_search",)),
    )
    assert codes(findings) == ["no-effect"]
    assert "DataTools.EnableTools" in findings[0].message


def test_tools_kept_off_by_a_broken_plugin_make_no_no_effect_noise() -> None:
    from policy.configuration import BrokenPlugin

    findings = lint(
        managed("DataTools.EnableTools", False, origin=DEPT),
        managed("DataTools.DisabledToolIds", ("web_search",)),
        broken_organization_plugins=(BrokenPlugin("/org/dept/plugin.lua", "syntax error"),),
    )
    assert "no-effect" not in codes(findings)


def test_a_context_tool_in_a_selection_has_no_effect() -> None:
    findings = lint(
        managed("DataTools.DefaultToolIdsByComponent", {"CHAT": ("semantic_search",)}),
        chat_templates=(ChatTemplateConfig("t", "Docs", ("semantic_search",), origin=DEPT),),
    )
    assert codes(findings) == ["no-effect", "no-effect", "ai-studio-compat"]


def test_ai_studio_compatibility_warnings() -> None:
    provider = ProviderConfig("p", "Hosted", ProviderKind.IONOS, "m", origin=DEPT)
    findings = lint(
        managed("DataTools.MinimumProviderConfidenceByToolId", {"web_search": "LOW"}, locked=False),
        providers=(provider,),
    )
    assert codes(findings) == ["ai-studio-compat", "ai-studio-compat"]
    assert "IONOS" in findings[1].message


def test_findings_loading_already_reported_are_left_out() -> None:
    configuration = PolicyConfiguration(
        settings={"DataTools.DisabledToolIds": managed("DataTools.DisabledToolIds", ("nope",))}
    )
    first = lint_configuration(configuration, DEFINITIONS)
    assert lint_configuration(configuration, DEFINITIONS, already_reported=first) == ()


def test_an_unknown_key_loading_already_reported_is_not_reported_twice() -> None:
    setting = managed("DataTools.disabledToolIds", ("web_search",))
    loaded = Finding(
        Severity.WARNING,
        "not-used-by-toolpolicy",
        'CONFIG["SETTINGS"]["DataTools.disabledToolIds"] is not a setting toolpolicy knows',
        BASE.location,
    )
    configuration = PolicyConfiguration(settings={setting.key: setting})
    assert lint_configuration(configuration, DEFINITIONS, already_reported=[loaded]) == ()


ERI_AT = Origin("b", "Base", SourceLocation("/org/base/plugin.lua", 42))


def eri_entry(hostname: str, auth: str) -> DataSourceConfig:
    raw = {"Hostname": hostname, "AuthMethod": auth}
    return DataSourceConfig("eri-1", "Handbook", "ERI_V1", DataSecurity.ALLOW_ANY, raw, ERI_AT)


@pytest.mark.parametrize(
    ("hostname", "auth", "said"),
    [
        ("https://eri.example.org", "KERBEROS", "with Kerberos is not supported yet"),
        ("http://eri.example.org", "TOKEN", "would send the secret across the network"),
        ("eri.example.org", "NONE", "is not an http(s) address"),
    ],
)
def test_an_eri_data_source_the_client_cannot_search_is_named_at_its_line(
    hostname: str, auth: str, said: str
) -> None:
    (finding,) = lint(data_sources=(eri_entry(hostname, auth),))
    assert finding.code == "data-source-not-searched"
    assert finding.severity is Severity.WARNING and finding.location == ERI_AT.location
    assert finding.message.startswith("The data source 'Handbook' is never searched: ")
    assert said in finding.message


@pytest.mark.parametrize(
    ("hostname", "auth"),
    [("https://eri.example.org", "TOKEN"), ("http://127.0.0.1", "TOKEN"), ("http://eri", "NONE")],
)
def test_an_eri_data_source_the_client_can_search_is_not_reported(hostname: str, auth: str) -> None:
    assert lint(data_sources=(eri_entry(hostname, auth),)) == []


def os_user_entry(mode: str) -> DataSourceConfig:
    raw = {
        "Hostname": "https://eri.example.org",
        "AuthMethod": "username_password",
        "UsernamePasswordMode": mode,
    }
    return DataSourceConfig("eri-1", "Handbook", "ERI_V1", DataSecurity.ALLOW_ANY, raw, ERI_AT)


def test_an_eri_source_sending_the_os_user_name_is_named_where_people_sign_in() -> None:
    sign_in = (
        managed("DataGateway.Issuer", "https://login.example.org/realms/corp"),
        managed("DataGateway.Audience", "toolpolicy-gateway"),
    )
    (finding,) = lint(*sign_in, data_sources=(os_user_entry("os_username_shared_password"),))
    assert finding.code == "data-source-not-searched"
    assert finding.severity is Severity.WARNING and finding.location == ERI_AT.location
    assert finding.message.startswith(
        "The data source 'Handbook' is not searched for signed-in people"
    )
    assert "runs as its own service account" in finding.message
    assert lint(*sign_in, data_sources=(os_user_entry("SHARED_USERNAME_AND_PASSWORD"),)) == []
    assert lint(data_sources=(os_user_entry("OS_USERNAME_SHARED_PASSWORD"),)) == [], (
        "without a sign-in the entry is searched with the OS user name of each person's app"
    )


def test_administrator_groups_without_a_sign_in_have_no_effect() -> None:
    admins = managed("DataGateway.AdministratorGroups", ("toolpolicy-admins",))
    (finding,) = lint(admins)
    assert finding.code == "no-effect" and finding.severity is Severity.WARNING
    assert "DataGateway.AdministratorGroups has no effect without DataGateway.Issuer" in (
        finding.message
    )
    signed_in = (
        managed("DataGateway.Issuer", "https://login.example.org/realms/corp"),
        managed("DataGateway.Audience", "toolpolicy-gateway"),
    )
    assert lint(admins, *signed_in) == []
