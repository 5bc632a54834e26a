"""Settings resolution, minimum confidences, schemes."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from policy import secrets
from policy.capabilities import can_use_tools
from policy.configuration import ManagedSetting, PolicyConfiguration, ProviderConfig, UserSettings
from policy.definitions import SettingField, SettingsSchema, ToolDefinition, ToolFunction
from policy.provenance import Origin, SourceLocation
from policy.resolve import (
    SecretText,
    confidence_scheme,
    configuration_state,
    effective_minimum_confidence,
    provider_confidence_under,
    resolve_tool_setting,
    resolve_tool_settings,
    tools_enabled,
)
from policy.tools import CONFIGURED, DefinedTool, ToolConfigurationState
from policy.vocabulary import ConfidenceLevel, ProviderKind, SettingSource

ORG = Origin("org", "Organization", SourceLocation("org/plugin.lua", 3))
SECRET = secrets.generate_secret()


def _managed(
    key: str, value: object, *, locked: bool = True, lines: Mapping[str, int] | None = None
) -> ManagedSetting:
    locations = {k: SourceLocation("org/plugin.lua", n) for k, n in (lines or {}).items()}
    return ManagedSetting(key, value, locked, ORG, entry_locations=locations)


def _config(*settings: ManagedSetting) -> PolicyConfiguration:
    return PolicyConfiguration(settings={s.key: s for s in settings})


def _locked(values: Mapping[str, str], lines: Mapping[str, int] | None = None) -> ManagedSetting:
    return _managed("DataTools.LockedToolSettings", values, lines=lines)


def _defaults(values: Mapping[str, str]) -> ManagedSetting:
    return _managed("DataTools.DefaultToolSettings", values)


def _user(values: Mapping[str, str], **extra: object) -> UserSettings:
    return UserSettings(
        tool_settings={"demo": values},
        path="settings.yaml",
        locations={"tools.settings.demo.url": SourceLocation("settings.yaml", 7)},
        **extra,  # type: ignore[arg-type]
    )


PLAIN = SettingField(default="tool-default")
NO_DEFAULT = SettingField()
HIDDEN = SettingField(secret=True, default="never-used")


def _resolve(field: SettingField, config: PolicyConfiguration, user: UserSettings, reader=None):  # type: ignore[no-untyped-def]
    return resolve_tool_setting("demo", "url", field, config, user, reader or (lambda t, f: None))


def test_a_locked_value_beats_everything() -> None:
    config = _config(
        _locked({"demo.url": "locked"}, {"demo.url": 12}), _defaults({"demo.url": "d"})
    )
    setting = _resolve(PLAIN, config, _user({"url": "mine"}))
    assert (setting.value, setting.source, setting.locked) == ("locked", SettingSource.LOCKED, True)
    assert setting.origin is not None and setting.origin.location.line == 12
    assert setting.origin.plugin_name == "Organization"


def test_the_users_value_beats_an_organization_default() -> None:
    setting = _resolve(PLAIN, _config(_defaults({"demo.url": "org"})), _user({"url": "mine"}))
    assert (setting.value, setting.source, setting.locked) == ("mine", SettingSource.USER, False)
    assert setting.location == SourceLocation("settings.yaml", 7)


def test_an_explicitly_saved_empty_string_is_a_value() -> None:
    setting = _resolve(PLAIN, _config(_defaults({"demo.url": "org"})), _user({"url": ""}))
    assert (setting.value, setting.source) == ("", SettingSource.USER)


def test_the_organization_default_comes_before_the_tools_default() -> None:
    setting = _resolve(PLAIN, _config(_defaults({"demo.url": "org"})), UserSettings())
    assert (setting.value, setting.source) == ("org", SettingSource.ORG_DEFAULT)
    assert setting.origin == ORG


def test_the_tools_default_comes_last_and_nothing_means_unset() -> None:
    assert _resolve(PLAIN, _config(), UserSettings()).source is SettingSource.DEFAULT
    unset = _resolve(NO_DEFAULT, _config(), UserSettings())
    assert (unset.value, unset.source) == (None, SettingSource.UNSET)


def test_a_locked_encrypted_secret_is_decrypted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(secrets.ENV_SECRET, SECRET)
    config = _config(_locked({"demo.url": secrets.encrypt("s3cr3t", SECRET)}))
    setting = _resolve(HIDDEN, config, UserSettings(), lambda t, f: "keyring-value")
    assert isinstance(setting.value, SecretText)
    assert setting.plain() == "s3cr3t"
    assert "s3cr3t" not in repr(setting) and "s3cr3t" not in str(setting.evidence())
    assert setting.evidence().value == "*****"


def test_a_plaintext_locked_secret_is_refused_and_the_keyring_is_not_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(secrets.ENV_SECRET, SECRET)
    read: list[str] = []
    setting = _resolve(
        HIDDEN,
        _config(_locked({"demo.url": "plain-key"})),
        UserSettings(),
        lambda t, f: read.append(f) or "keyring-value",  # type: ignore[func-returns-value]
    )
    assert setting.value is None and setting.locked
    assert "plaintext refused" in setting.note
    assert "plain-key" not in setting.note
    assert read == []


def test_a_locked_secret_without_an_encryption_secret_stays_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in secrets.SECRET_ENV_NAMES:
        monkeypatch.delenv(name, raising=False)
    config = _config(_locked({"demo.url": secrets.encrypt("s3cr3t", SECRET)}))
    setting = _resolve(HIDDEN, config, UserSettings())
    assert setting.value is None
    assert secrets.ENV_SECRET in setting.note


def test_a_locked_secret_under_the_wrong_secret_stays_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(secrets.ENV_SECRET, secrets.generate_secret())
    config = _config(_locked({"demo.url": secrets.encrypt("s3cr3t", SECRET)}))
    setting = _resolve(HIDDEN, config, UserSettings())
    assert setting.value is None
    assert "cannot be decrypted" in setting.note and "s3cr3t" not in setting.note


def test_a_secret_comes_from_the_keyring_and_never_from_a_default() -> None:
    config = _config(_defaults({"demo.url": "pre-filled"}))
    from_keyring = _resolve(HIDDEN, config, _user({"url": "yaml"}), lambda t, f: f"{t}/{f}")
    assert from_keyring.plain() == "demo/url" and from_keyring.source is SettingSource.USER
    nothing = _resolve(HIDDEN, config, _user({"url": "yaml"}), lambda t, f: None)
    assert (nothing.value, nothing.source) == (None, SettingSource.UNSET)


def test_values_for_the_tool_reveal_secrets_and_leave_out_unset_fields() -> None:
    definition = ToolDefinition(
        id="demo",
        implementation_key="demo",
        function=ToolFunction(name="demo"),
        settings_schema=SettingsSchema(properties={"url": PLAIN, "key": HIDDEN, "x": NO_DEFAULT}),
    )
    resolved = resolve_tool_settings(definition, _config(), UserSettings(), lambda t, f: "k")
    assert resolved.values_for_tool() == {"url": "tool-default", "key": "k"}
    assert "'k'" not in repr(resolved)


# --- configuration state ------------------------------------------------------------------------


class _Validating(DefinedTool):
    def __init__(self, state: ToolConfigurationState | Exception) -> None:
        super().__init__(
            ToolDefinition(id="demo", implementation_key="demo", function=ToolFunction(name="demo"))
        )
        self.state = state

    def validate_configuration(self, settings: Mapping[str, str]) -> ToolConfigurationState:
        if isinstance(self.state, Exception):
            raise self.state
        return self.state


def _state(values: Mapping[str, str], tool: object = None) -> ToolConfigurationState:
    definition = ToolDefinition(
        id="demo",
        implementation_key="demo",
        function=ToolFunction(name="demo"),
        settings_schema=SettingsSchema(
            properties={
                "url": NO_DEFAULT,
                "safe": SettingField(option_source="safe_search"),
                "depth": SettingField(enum=("basic", "advanced")),
            },
            required=("url",),
        ),
    )
    user = UserSettings(tool_settings={"demo": values})
    settings = resolve_tool_settings(definition, _config(), user, lambda t, f: None)
    return configuration_state(definition, settings, tool)  # type: ignore[arg-type]


def test_a_missing_or_blank_required_field_is_not_configured() -> None:
    for values in ({}, {"url": "   "}):
        state = _state(values)
        assert not state.is_configured
        assert state.missing_required_fields == ("url",)
        assert "demo.url" in state.message


def test_an_offered_value_passes_and_an_empty_one_too() -> None:
    assert _state({"url": "x", "safe": "MODERATE", "depth": ""}) == CONFIGURED


@pytest.mark.parametrize(
    ("field", "value"), [("safe", "moderate"), ("safe", "MEDIUM"), ("depth", "Basic")]
)
def test_a_value_not_offered_is_reported_with_key_and_value(field: str, value: str) -> None:
    state = _state({"url": "x", field: value})
    assert not state.is_configured
    assert f"demo.{field}" in state.message and f"'{value}'" in state.message


def test_the_tools_own_validation_comes_last_and_a_crash_fails_closed() -> None:
    refusal = ToolConfigurationState(False, (), "demo.url: not HTTPS")
    assert _state({"url": "x"}, _Validating(refusal)) == refusal
    crashed = _state({"url": "x"}, _Validating(RuntimeError("boom")))
    assert not crashed.is_configured and "could not be checked" in crashed.message


# --- global switch, minimum confidence, schemes ----------------------------------------------------


def test_tools_are_on_unless_switched_off_and_a_lock_beats_the_user() -> None:
    assert tools_enabled(_config(), UserSettings())[0] is True
    assert tools_enabled(_config(), UserSettings(tools_enabled=False))[0] is False
    off = _managed("DataTools.EnableTools", False)
    assert tools_enabled(_config(off), UserSettings(tools_enabled=True))[0] is False
    editable = _managed("DataTools.EnableTools", False, locked=False)
    assert tools_enabled(_config(editable), UserSettings(tools_enabled=True))[0] is True
    assert tools_enabled(_config(editable), UserSettings())[0] is False


def _minimum(
    config: PolicyConfiguration,
    user: UserSettings | None = None,
    ids: tuple[str, ...] = ("demo",),
):  # type: ignore[no-untyped-def]
    return effective_minimum_confidence(
        ids, ConfidenceLevel.VERY_LOW, config, user or UserSettings()
    )


def test_without_entries_the_default_applies() -> None:
    result = _minimum(_config())
    assert (result.level, result.source) == (ConfidenceLevel.VERY_LOW, "default fallback")


def test_a_managed_entry_may_raise_or_lower_the_default() -> None:
    table = "DataTools.MinimumProviderConfidenceByToolId"
    assert _minimum(_config(_managed(table, {"demo": "high"}))).level is ConfidenceLevel.HIGH
    lowered = _minimum(_config(_managed(table, {"demo": "NONE"})))
    assert (lowered.level, lowered.source) == (ConfidenceLevel.NONE, "managed config")


def test_an_invalid_managed_entry_means_high() -> None:
    table = "DataTools.MinimumProviderConfidenceByToolId"
    for bad in ("UNKNOWN", "300", "sort of"):
        result = _minimum(_config(_managed(table, {"demo": bad})))
        assert (result.level, result.source) == (
            ConfidenceLevel.HIGH,
            "invalid managed config; safe fallback",
        )


def test_a_locked_table_ignores_the_user_and_an_editable_one_yields() -> None:
    table = "DataTools.MinimumProviderConfidenceByToolId"
    user = UserSettings(minimum_provider_confidence={"demo": "LOW"})
    assert _minimum(_config(_managed(table, {"demo": "HIGH"})), user).level is ConfidenceLevel.HIGH
    editable = _config(_managed(table, {"demo": "HIGH"}, locked=False))
    result = _minimum(editable, user)
    assert (result.level, result.source) == (ConfidenceLevel.LOW, "stored override")
    assert _minimum(_config(), user).level is ConfidenceLevel.LOW


def test_of_several_entries_the_highest_wins() -> None:
    table = "DataTools.MinimumProviderConfidenceByToolId"
    config = _config(_managed(table, {"box": "LOW", "a": "HIGH", "b": "NONE"}))
    result = _minimum(config, ids=("box", "a", "b"))
    assert result.level is ConfidenceLevel.HIGH
    assert len(result.evidence) == 3


@pytest.mark.parametrize(
    ("kind", "scheme", "expected"),
    [
        (ProviderKind.SELF_HOSTED, "TRUST_ALL", ConfidenceLevel.HIGH),
        (ProviderKind.OPEN_AI, "trust_all", ConfidenceLevel.MEDIUM),
        (ProviderKind.MISTRAL, "TRUST_EUROPE", ConfidenceLevel.MEDIUM),
        (ProviderKind.OPEN_AI, "TRUST_EUROPE", ConfidenceLevel.LOW),
        (ProviderKind.OPEN_AI, "NO_SUCH_SCHEME", ConfidenceLevel.UNKNOWN),
        (ProviderKind.NONE, "TRUST_ALL", ConfidenceLevel.NONE),
    ],
)
def test_provider_confidence_follows_the_scheme(
    kind: ProviderKind, scheme: str, expected: ConfidenceLevel
) -> None:
    assert provider_confidence_under(kind, scheme) is expected


def test_a_custom_scheme_reads_the_table_and_a_missing_kind_is_unknown() -> None:
    custom = {"OPEN_AI": "HIGH", "ANTHROPIC": "not a level"}
    assert provider_confidence_under(ProviderKind.OPEN_AI, "CUSTOM", custom) is ConfidenceLevel.HIGH
    assert (
        provider_confidence_under(ProviderKind.ANTHROPIC, "CUSTOM", custom)
        is ConfidenceLevel.UNKNOWN
    )
    assert (
        provider_confidence_under(ProviderKind.MISTRAL, "CUSTOM", custom) is ConfidenceLevel.UNKNOWN
    )


def test_the_scheme_in_force_locked_then_user_then_editable_then_trust_all() -> None:
    key = "DataConfidence.ConfidenceScheme"
    user = UserSettings(confidence_scheme="TRUST_EUROPE")
    assert confidence_scheme(_config(), UserSettings()).scheme == "TRUST_ALL"
    assert confidence_scheme(_config(), user).scheme == "TRUST_EUROPE"
    assert confidence_scheme(_config(_managed(key, "TRUST_USA")), user).scheme == "TRUST_USA"
    editable = _config(_managed(key, "TRUST_USA", locked=False))
    assert confidence_scheme(editable, user).scheme == "TRUST_EUROPE"
    assert confidence_scheme(editable, UserSettings()).scheme == "TRUST_USA"


# --- tool-calling capability ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "model", "capable"),
    [
        (ProviderKind.OPEN_AI, "gpt-4o-mini", True),
        (ProviderKind.OPEN_AI, "o3", True),
        (ProviderKind.OPEN_AI, "o1-mini", False),
        (ProviderKind.OPEN_AI, "gpt-4o-audio-preview", False),
        (ProviderKind.ANTHROPIC, "claude-sonnet-4-5", True),
        (ProviderKind.ANTHROPIC, "claude-3-5-haiku-latest", True),
        (ProviderKind.MISTRAL, "mistral-large-latest", True),
        (ProviderKind.PERPLEXITY, "sonar-pro", False),
        (ProviderKind.OPEN_ROUTER, "openai/gpt-4.1", True),
        (ProviderKind.GROQ, "llama-3.3-70b-versatile", True),
        (ProviderKind.SELF_HOSTED, "my-own-finetune", False),
        (ProviderKind.SELF_HOSTED, "Qwen3-32B", True),
    ],
)
def test_the_model_table_decides_without_an_override(
    kind: ProviderKind, model: str, capable: bool
) -> None:
    provider = ProviderConfig("p", "Provider", kind, model)
    assert can_use_tools(provider).is_available is capable


def test_an_override_always_wins_and_names_what_to_do_otherwise() -> None:
    on = ProviderConfig(
        "p",
        "Mine",
        ProviderKind.SELF_HOSTED,
        "my-own",
        capability_overrides={"FunctionCalling": True},
    )
    assert can_use_tools(on).is_available
    off = ProviderConfig(
        "p",
        "Mine",
        ProviderKind.OPEN_AI,
        "gpt-4o",
        capability_overrides={"FUNCTION_CALLING": False},
    )
    refusal = can_use_tools(off)
    assert not refusal.is_available
    assert "gpt-4o" in refusal.message and "FUNCTION_CALLING" in refusal.message
    other = ProviderConfig(
        "p", "Mine", ProviderKind.OPEN_AI, "gpt-4o", capability_overrides={"VISION": False}
    )
    assert can_use_tools(other).is_available


def test_no_provider_asks_for_one() -> None:
    assert can_use_tools(None).message == "Please select an LLM provider."
    assert not can_use_tools(ProviderConfig("p", "P", ProviderKind.NONE, "gpt-4o")).is_available
