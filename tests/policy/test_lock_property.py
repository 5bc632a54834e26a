"""Property: no sequence of plugins and user settings makes a locked value lose to a user value,
and a broken organization plugin never releases a lock (every tool stays off)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from policy.configuration import BrokenPlugin, PolicyConfiguration, ProviderConfig, UserSettings
from policy.decide.registry import ToolRegistry
from policy.definitions import SettingField, SettingsSchema, ToolDefinition, ToolFunction
from policy.merge import merge_plugins, plugin_order
from policy.plugins import ConfigurationPlugin, PluginSetting
from policy.provenance import SourceLocation
from policy.tools import DefinedTool
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    PluginOrigin,
    ProviderKind,
    SettingSource,
    ToolOfferBlockReason,
)

FIELDS = ("a", "b")
LOCKED = "DataTools.LockedToolSettings"
DEFAULTS = "DataTools.DefaultToolSettings"
ENABLE = "DataTools.EnableTools"
MINIMUMS = "DataTools.MinimumProviderConfidenceByToolId"
PROVIDER = ProviderConfig("local", "Local", ProviderKind.SELF_HOSTED, "llama-3.3-70b")
TOOL = DefinedTool(
    ToolDefinition(
        id="demo",
        implementation_key="demo",
        function=ToolFunction(name="demo"),
        settings_schema=SettingsSchema(
            properties={f: SettingField(default=f"default-{f}") for f in FIELDS}
        ),
    )
)

_values = st.sampled_from(["org-1", "org-2", "local-1", ""])
_tables = st.dictionaries(st.sampled_from([f"demo.{f}" for f in FIELDS]), _values, max_size=2)
_levels = st.sampled_from(["NONE", "LOW", "HIGH", "UNKNOWN", "bogus"])


@dataclass(frozen=True)
class _PluginSpec:
    organization: bool
    priority: int
    locked: dict[str, str] | None
    defaults: dict[str, str] | None
    enable: bool | None
    enable_override: bool
    minimums: dict[str, str] | None
    minimums_override: bool


_plugin_specs = st.builds(
    _PluginSpec,
    organization=st.booleans(),
    priority=st.integers(0, 3),
    locked=st.none() | _tables,
    defaults=st.none() | _tables,
    enable=st.none() | st.booleans(),
    enable_override=st.booleans(),
    minimums=st.none() | st.dictionaries(st.just("demo"), _levels, max_size=1),
    minimums_override=st.booleans(),
)

_users = st.builds(
    UserSettings,
    tools_enabled=st.none() | st.booleans(),
    tool_settings=st.dictionaries(
        st.just("demo"), st.dictionaries(st.sampled_from(FIELDS), st.sampled_from(["user", ""]))
    ),
    minimum_provider_confidence=st.dictionaries(st.just("demo"), st.sampled_from(["NONE", "LOW"])),
)


def _plugin(index: int, spec: _PluginSpec) -> ConfigurationPlugin:
    path = f"p{index}/plugin.lua"
    settings: dict[str, PluginSetting] = {}

    def put(key: str, value: object, override: bool = False) -> None:
        settings[key] = PluginSetting(
            key, value, SourceLocation(path, 10), allow_user_override=override
        )

    if spec.locked is not None:
        put(LOCKED, spec.locked)
    if spec.defaults is not None:
        put(DEFAULTS, spec.defaults)
    if spec.enable is not None:
        put(ENABLE, spec.enable, spec.enable_override)
    if spec.minimums is not None:
        put(MINIMUMS, spec.minimums, spec.minimums_override)
    origin = PluginOrigin.ORGANIZATION if spec.organization else PluginOrigin.LOCAL
    return ConfigurationPlugin(
        f"id-{index}", f"Plugin {index}", path, origin, spec.priority, settings
    )


def _winner(plugins: list[ConfigurationPlugin], key: str) -> PluginSetting | None:
    """The value the documented merge rules give a key: org plugins before local ones, higher
    priority later; a local plugin never takes an org-managed key."""
    held: tuple[PluginSetting, bool] | None = None
    for plugin in sorted(plugins, key=plugin_order):
        setting = plugin.settings.get(key)
        if setting is None:
            continue
        is_org = plugin.origin is PluginOrigin.ORGANIZATION
        if held is not None and held[1] and not is_org:
            continue
        held = (setting, is_org)
    return held[0] if held else None


def _registry(configuration: PolicyConfiguration, user: UserSettings) -> ToolRegistry:
    return ToolRegistry([TOOL], configuration, user, secret_reader=lambda t, f: None)


@settings(max_examples=150, deadline=None)
@given(st.lists(_plugin_specs, max_size=5), _users, _users)
def test_a_locked_value_never_loses_to_a_user_value(
    specs: list[_PluginSpec], user: UserSettings, other_user: UserSettings
) -> None:
    plugins = [_plugin(i, s) for i, s in enumerate(specs)]
    configuration = merge_plugins(plugins)
    registry = _registry(configuration, user)
    other = _registry(configuration, other_user)
    locked = _winner(plugins, LOCKED)
    for name in FIELDS:
        resolved = registry.settings("demo")[name]
        expected = locked.value.get(f"demo.{name}") if locked is not None else None
        if expected is not None:
            assert (resolved.value, resolved.source, resolved.locked) == (
                expected,
                SettingSource.LOCKED,
                True,
            )
            assert other.settings("demo")[name].value == expected
        elif name in user.tool_settings.get("demo", {}):
            assert resolved.source is SettingSource.USER
    enable = _winner(plugins, ENABLE)
    if enable is not None and not enable.allow_user_override:
        assert registry.tools_enabled is enable.value is other.tools_enabled
    minimums = _winner(plugins, MINIMUMS)
    if minimums is not None and not minimums.allow_user_override and "demo" in minimums.value:
        assert (
            registry.effective_minimum_confidence("demo").level
            == other.effective_minimum_confidence("demo").level
        )
        if minimums.value["demo"] in ("UNKNOWN", "bogus"):
            assert registry.effective_minimum_confidence("demo").level is ConfidenceLevel.HIGH


@settings(max_examples=100, deadline=None)
@given(st.lists(_plugin_specs, max_size=4), _users)
def test_a_broken_organization_plugin_never_releases_a_lock(
    specs: list[_PluginSpec], user: UserSettings
) -> None:
    plugins = [_plugin(i, s) for i, s in enumerate(specs)]
    broken = BrokenPlugin("org/broken/plugin.lua", "syntax error", "broken", "Broken")
    configuration = merge_plugins(plugins, [broken])
    registry = _registry(configuration, replace(user, tools_enabled=True))
    decision = registry.offer_decision("demo", PROVIDER, Component.CHAT)
    assert decision.reason is ToolOfferBlockReason.TOOLS_SWITCHED_OFF
    assert not registry.tools_enabled
    runnable = asyncio.run(registry.runnable_tools(["demo"], PROVIDER, Component.CHAT))
    assert runnable.tools == ()
    names = [e.origin.plugin_name for e in decision.checks[0].evidence if e.origin is not None]
    assert "Broken" in names
