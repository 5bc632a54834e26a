"""Settings resolution: which value each tool field has, where it came from, and what it means.

Per field: locked organization value → user's saved value → organization
default → the definition's default. An explicitly saved empty string is a value. Secrets come only
from a locked `ENC:v1:` value or the user's OS keyring, never from a default. Every resolved value
carries its provenance so explain can name the plugin and line (or the user file) that set it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import field, replace
from typing import Any, Generic, NamedTuple, TypeVar

from policy import secrets
from policy._dataclass import dataclass
from policy.configuration import ManagedSetting, PolicyConfiguration, SecretValue, UserSettings
from policy.decision import Evidence
from policy.definitions import SettingField, ToolDefinition
from policy.provenance import Origin, SourceLocation
from policy.redaction import MASK
from policy.tools import CONFIGURED, Tool, ToolConfigurationState
from policy.vocabulary import (
    ConfidenceLevel,
    ConfidenceScheme,
    PluginOrigin,
    ProviderKind,
    SettingSource,
    option_values,
    parse_confidence_level,
    provider_confidence,
)

ENABLE_TOOLS = "DataTools.EnableTools"
DISABLED_TOOL_IDS = "DataTools.DisabledToolIds"
_MINIMUM_CONFIDENCE_BY_TOOL_ID = "DataTools.MinimumProviderConfidenceByToolId"
_LOCKED_TOOL_SETTINGS = "DataTools.LockedToolSettings"
_DEFAULT_TOOL_SETTINGS = "DataTools.DefaultToolSettings"
DEFAULT_TOOL_IDS_BY_COMPONENT = "DataTools.DefaultToolIdsByComponent"
_CONFIDENCE_SCHEME = "DataConfidence.ConfidenceScheme"
_CUSTOM_CONFIDENCE_SCHEME = "DataConfidence.CustomConfidenceScheme"
PRESELECTED_RETRIEVAL_MODE = "DataChat.PreselectedDataSourcesRetrievalMode"

SecretReader = Callable[[str, str], "str | None"]
"""(tool id, field name) → the user's keyring value, or None."""

SOURCE_LOCKED = "locked by organization"
_SOURCE_ORG_DEFAULT = "organization default"
SOURCE_EDITABLE = "organization default (user may change)"
_SOURCE_USER = "user settings"
_SOURCE_KEYRING = "user keyring"
_SOURCE_TOOL_DEFAULT = "tool default"
_SOURCE_BUILT_IN = "built-in default"


class SecretText:
    """A resolved secret. Its text only leaves through `reveal()`; str/repr/explain see a mask."""

    __slots__ = ("_text",)

    def __init__(self, text: str) -> None:
        self._text = text

    def reveal(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return MASK

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretText) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)


@dataclass(frozen=True, slots=True)
class ResolvedSetting:
    """One tool field after resolution. `value` None = no value from anywhere."""

    tool_id: str
    field: str
    value: str | SecretText | None
    source: SettingSource
    locked: bool
    secret: bool = False
    origin: Origin | None = None
    location: SourceLocation | None = None
    note: str = ""
    """Why a value was refused (e.g. a plaintext locked secret); never contains the secret."""
    beaten: tuple[ResolvedSetting, ...] = ()
    """The values this one won over: other layers' values for the field, and the tables of
    earlier plugins that a later plugin's table replaced (each with its source and origin)."""

    @property
    def key(self) -> str:
        return f"{self.tool_id}.{self.field}"

    def plain(self) -> str | None:
        """The value as the tool needs it (secrets revealed). Never log or render this."""
        return self.value.reveal() if isinstance(self.value, SecretText) else self.value

    def evidence(self) -> Evidence:
        shown: object = _shown_setting(self.value)
        if self.secret:
            shown = MASK if self.value is not None else None
        return Evidence(self.key, shown, _source_text(self), self.origin, self.location)


def _shown_setting(value: object) -> object:
    """A configured value as evidence shows it: a text may be an address, so its user info is
    masked (`without_user_info`). Evidence is masked by what it is where it is made; other
    evidence (a definition, a diff) is shown whole."""
    from policy.secrets import without_user_info

    return without_user_info(value) if isinstance(value, str) else value


def _source_text(s: ResolvedSetting) -> str:
    return {
        SettingSource.LOCKED: SOURCE_LOCKED,
        SettingSource.USER: _SOURCE_KEYRING if s.secret else _SOURCE_USER,
        SettingSource.ORG_DEFAULT: _SOURCE_ORG_DEFAULT,
        SettingSource.DEFAULT: _SOURCE_TOOL_DEFAULT,
        SettingSource.UNSET: "not set",
    }[s.source]


@dataclass(frozen=True, slots=True)
class _MisspelledField:
    """An organization entry of a tool-settings table whose field the tool does not have but
    that is a near miss of one it has (`web_search.defaultSafeSerach`): what it meant to set is
    not in force, so the tool is not configured until it is fixed (fails closed)."""

    table: str
    entry: str
    meant: str
    origin: Origin

    @property
    def message(self) -> str:
        tool_id, _, name = self.entry.partition(".")
        return (
            f'{self.table}["{self.entry}"] ({self.origin.location}): {tool_id} has no setting '
            f'"{name}"; did you mean "{self.meant}"? {tool_id} is not offered until it is fixed'
        )

    def evidence(self) -> Evidence:
        return Evidence(
            f'{self.table}["{self.entry}"]',
            f"did you mean {self.meant}?",
            "unknown field",
            self.origin,
        )


@dataclass(frozen=True, slots=True)
class ResolvedSettings:
    """Every field of one tool, in schema order."""

    tool_id: str
    fields: Mapping[str, ResolvedSetting] = field(default_factory=dict)
    misspelled: tuple[_MisspelledField, ...] = ()
    """Organization entries that meant one of these fields and missed it (see _MisspelledField)."""

    def values_for_tool(self) -> dict[str, str]:
        """Plain field → value for the tool (secrets revealed); fields without a value are absent."""
        return {name: plain for name, s in self.fields.items() if (plain := s.plain()) is not None}

    def __getitem__(self, name: str) -> ResolvedSetting:
        return self.fields[name]

    def value_below(self, name: str) -> str | None:
        """What field `name` would be without the value in force: the next layer's value by
        `resolve_setting`'s precedence (None: the tool's default)."""
        for beaten in self.fields[name].beaten:
            if beaten.source in (SettingSource.USER, SettingSource.ORG_DEFAULT):
                return beaten.plain()
        return None

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(f"{s.key}: {s.note}" for s in self.fields.values() if s.note)


# --- precedence ---------------------------------------------------------------------------------


T = TypeVar("T")


class _Chosen(NamedTuple, Generic[T]):
    """The layer a setting's value came from, and that value (None: no layer had one)."""

    source: SettingSource
    value: T | None


def resolve_setting(
    *,
    locked: T | None = None,
    user: T | None = None,
    organization: T | None = None,
    default: T | None = None,
) -> _Chosen[T]:
    """THE precedence of every setting: locked → user → organization default → tool default.

    Each argument is what that layer holds (None: nothing there). Tool fields, the global
    switches (EnableTools, the confidence scheme), the minimum confidence per tool and the
    component's default tools all ask this one function, so no caller orders layers by hand.
    """
    for source, value in (
        (SettingSource.LOCKED, locked),
        (SettingSource.USER, user),
        (SettingSource.ORG_DEFAULT, organization),
        (SettingSource.DEFAULT, default),
    ):
        if value is not None:
            return _Chosen(source, value)
    return _Chosen(SettingSource.UNSET, None)


def managed_layer(setting: ManagedSetting | None, value: T | None) -> tuple[T | None, T | None]:
    """A managed value as (locked, organization default): `AllowUserOverride` makes it the latter."""
    if setting is None or value is None:
        return None, None
    return (value, None) if setting.locked else (None, value)


# --- reading the managed configuration ------------------------------------------------------------


def _entry_origin(setting: ManagedSetting, entry: str | None = None) -> Origin:
    location = setting.entry_locations.get(entry) if entry is not None else None
    if location is None:
        return setting.origin
    return Origin(setting.origin.plugin_id, setting.origin.plugin_name, location)


def _table(
    configuration: PolicyConfiguration, key: str
) -> tuple[Mapping[str, object], ManagedSetting | None]:
    setting = configuration.setting(key)
    if setting is None or not isinstance(setting.value, Mapping):
        return {}, setting
    return setting.value, setting


def setting_text(value: object) -> str:
    """A configured value as the text a tool reads (an `ENC:v1:` secret stays encrypted)."""
    if isinstance(value, SecretValue):
        return value.encrypted
    return value if isinstance(value, str) else str(value)


def _user_location(user: UserSettings, dotted: str) -> SourceLocation:
    return user.locations.get(dotted) or SourceLocation(user.path or "user settings", 0)


_MACOS_KEYCHAIN_BINDINGS = "keyring.backends.macOS.api"
"""keyring's ctypes bindings to the macOS frameworks; importing them outside macOS only runs
`ctypes.util.find_library`, which starts ldconfig, gcc and ld (about 15 programs) and then fails."""


def _keyring() -> Any:
    """The `keyring` package, its backend chosen without starting a program.

    keyring picks its backend by importing every backend module; outside macOS the macOS
    bindings cannot load (their import fails, which keyring already takes as "not viable"), so
    they are marked unimportable first. The backend keyring then chooses is the same one: its
    macOS backend refuses every other platform before it looks at the bindings.
    """
    if sys.platform != "darwin" and _MACOS_KEYCHAIN_BINDINGS not in sys.modules:
        sys.modules[_MACOS_KEYCHAIN_BINDINGS] = None  # type: ignore[assignment]  # import refused
    import keyring

    return keyring


def default_secret_reader(tool_id: str, field_name: str) -> str | None:
    """The user's OS keyring entry `tool::<tool id>` / field; an unusable keyring reads as empty."""
    try:
        value = _keyring().get_password(f"tool::{tool_id}", field_name)
    except Exception:  # any keyring backend failure means: no stored secret
        return None
    return value if isinstance(value, str) else None


def _locked_secret(tool_id: str, name: str, raw: str, origin: Origin) -> ResolvedSetting:
    def refused(note: str) -> ResolvedSetting:
        return ResolvedSetting(
            tool_id, name, None, SettingSource.LOCKED, True, True, origin, None, note
        )

    if not secrets.is_encrypted(raw):
        return refused(
            f"the locked value is not encrypted; secrets must be deployed as {secrets.PREFIX} "
            "values (plaintext refused)"
        )
    secret = secrets.configured_secret()
    if secret is None:
        return refused(
            f"the locked value is encrypted but no encryption secret is configured "
            f"(set {secrets.SECRET_SOURCES})"
        )
    try:
        plain = secrets.decrypt(raw, secret)
    except secrets.SecretError as error:
        return refused(f"the locked value cannot be decrypted: {error.message}")
    return ResolvedSetting(
        tool_id, name, SecretText(plain), SettingSource.LOCKED, True, True, origin
    )


def resolve_tool_setting(
    tool_id: str,
    name: str,
    definition: SettingField,
    configuration: PolicyConfiguration,
    user: UserSettings,
    secret_reader: SecretReader | None = None,
) -> ResolvedSetting:
    """One field by `resolve_setting`'s precedence (secrets: locked `ENC:v1:` → keyring only)."""
    key = f"{tool_id}.{name}"
    locked_table, locked_setting = _table(configuration, _LOCKED_TOOL_SETTINGS)
    is_locked = key in locked_table and locked_setting is not None
    unset = ResolvedSetting(tool_id, name, None, SettingSource.UNSET, False, definition.secret)
    if definition.secret:
        locked_secret = (
            _locked_secret(
                tool_id, name, setting_text(locked_table[key]), _entry_origin(locked_setting, key)
            )
            if is_locked and locked_setting is not None
            else None
        )
        stored = None if is_locked else (secret_reader or default_secret_reader)(tool_id, name)
        chosen = resolve_setting(
            locked=locked_secret,
            user=ResolvedSetting(tool_id, name, SecretText(stored), SettingSource.USER, False, True)
            if stored
            else None,
        )
        return _with_beaten(chosen.value or unset, (), configuration, key)

    user_values = user.tool_settings.get(tool_id, {})
    default_table, default_setting = _table(configuration, _DEFAULT_TOOL_SETTINGS)
    layers = dict(
        locked=ResolvedSetting(
            tool_id,
            name,
            setting_text(locked_table[key]),
            SettingSource.LOCKED,
            True,
            origin=_entry_origin(locked_setting, key),
        )
        if is_locked and locked_setting is not None
        else None,
        user=ResolvedSetting(
            tool_id,
            name,
            setting_text(user_values[name]),
            SettingSource.USER,
            False,
            location=_user_location(user, f"tools.settings.{key}"),
        )
        if name in user_values
        else None,
        organization=ResolvedSetting(
            tool_id,
            name,
            setting_text(default_table[key]),
            SettingSource.ORG_DEFAULT,
            False,
            origin=_entry_origin(default_setting, key),
        )
        if key in default_table and default_setting is not None
        else None,
        default=ResolvedSetting(tool_id, name, definition.default, SettingSource.DEFAULT, False)
        if definition.default is not None
        else None,
    )
    chosen = resolve_setting(**layers)
    winner = chosen.value or unset
    others = tuple(
        layer
        for role, layer in layers.items()
        if layer is not None and layer is not winner and role != "default"
    )
    return _with_beaten(winner, others, configuration, key)


def _with_beaten(
    winner: ResolvedSetting,
    others: tuple[ResolvedSetting, ...],
    configuration: PolicyConfiguration,
    key: str,
) -> ResolvedSetting:
    """`winner` with what it beat: `others` (the layers `resolve_setting` did not choose) and
    the entries for `key` in the tables a later plugin's table replaced in the merge."""
    replaced: list[ResolvedSetting] = []
    for table_key, source in (
        (_LOCKED_TOOL_SETTINGS, SettingSource.LOCKED),
        (_DEFAULT_TOOL_SETTINGS, SettingSource.ORG_DEFAULT),
    ):
        setting = configuration.setting(table_key)
        for lost in setting.beaten if setting is not None else ():
            if isinstance(lost.value, Mapping) and key in lost.value:
                replaced.append(
                    ResolvedSetting(
                        winner.tool_id,
                        winner.field,
                        setting_text(lost.value[key]),
                        source,
                        source is SettingSource.LOCKED,
                        winner.secret,
                        lost.origin,
                    )
                )
    if not others and not replaced:
        return winner
    return replace(winner, beaten=(*others, *replaced))


def resolve_tool_settings(
    definition: ToolDefinition,
    configuration: PolicyConfiguration,
    user: UserSettings,
    secret_reader: SecretReader | None = None,
) -> ResolvedSettings:
    """Every field of a tool's settings schema, resolved."""
    return ResolvedSettings(
        definition.id,
        {
            name: resolve_tool_setting(
                definition.id, name, spec, configuration, user, secret_reader
            )
            for name, spec in definition.settings_schema.properties.items()
        },
        misspelled_fields(definition, configuration),
    )


def misspelled_fields(
    definition: ToolDefinition, configuration: PolicyConfiguration
) -> tuple[_MisspelledField, ...]:
    """The organization plugins' entries for this tool that name no field of it but are a near
    miss of one (`policy.suggest`). A local plugin's cannot loosen the organization's policy:
    `policy check` warns about those, and they leave the tool as it is."""
    from policy.suggest import HintBudget

    local = {p.id for p in configuration.plugins_in_force if p.origin is PluginOrigin.LOCAL}
    properties = definition.settings_schema.properties
    prefix = f"{definition.id}."
    hints = HintBudget()
    found: list[_MisspelledField] = []
    for table_key in (_LOCKED_TOOL_SETTINGS, _DEFAULT_TOOL_SETTINGS):
        table, setting = _table(configuration, table_key)
        if setting is None:
            continue
        for entry in table:
            name = str(entry).removeprefix(prefix)
            if not str(entry).startswith(prefix) or name in properties:
                continue
            origin = _entry_origin(setting, str(entry))
            if origin.plugin_id in local:
                continue
            meant = hints.closest_name(name, properties)
            if meant is not None:
                found.append(_MisspelledField(table_key, str(entry), meant, origin))
    return tuple(found)


# --- configuration state ------------------------------------------------------------------------


def _option_problem(key: str, spec: SettingField, value: str) -> str | None:
    """The shared option check: blank passes; otherwise the value must be offered exactly."""
    if not value.strip():
        return None
    offered = setting_choices(spec)
    if not offered or value in offered:
        return None
    if spec.secret:
        return f"{key}: '{MASK}' is not one of the offered values ({', '.join(offered)})"
    near = next((v for v in offered if v.lower() == value.strip().lower()), None)
    hint = f'; did you mean "{near}"? values are case-sensitive' if near else ""
    return f"{key}: '{value}' is not one of the offered values ({', '.join(offered)}){hint}"


def setting_choices(spec: SettingField) -> tuple[str, ...]:
    """The values a field offers (its option source, else its enum); empty = any text."""
    if spec.option_source.strip():
        return tuple(v for v, _ in option_values(spec.option_source))
    return tuple(spec.enum_values)


def field_problem(
    definition: ToolDefinition, name: str, value: str, tool: Tool | None = None
) -> str | None:
    """Why one value of one setting field is refused, or None: THE validity rule of a field.

    `policy check`, `policy settings set` / `settings show`, `policy explain`, the registry's
    NOT_CONFIGURED check and the tool at run time all ask this, so they always agree. It checks
    the offered values, then the tool's own `setting_problem(name, value)` (range, address
    shape, …) when the tool has one. A check that breaks refuses the value (fails closed).
    """
    spec = definition.settings_schema.properties.get(name)
    key = f"{definition.id}.{name}"
    if spec is None:
        return None
    problem = _option_problem(key, spec, value)
    if problem is not None:
        return problem
    if tool is None or not value.strip():
        return None
    try:
        result = tool.setting_problem(name, value)
    except Exception as error:  # a field check that breaks must not let the value through
        return f"{key}: the value could not be checked ({type(error).__name__})"
    return result if isinstance(result, str) and result else None


def configuration_state(
    definition: ToolDefinition, settings: ResolvedSettings, tool: Tool | None = None
) -> ToolConfigurationState:
    """A misspelled organization field, required fields, then each field's validity, then the
    tool's own check (fails closed)."""
    if settings.misspelled:
        return ToolConfigurationState(False, (), settings.misspelled[0].message)
    return values_state(definition, settings.values_for_tool(), tool)


def values_state(
    definition: ToolDefinition, values: Mapping[str, str], tool: Tool | None = None
) -> ToolConfigurationState:
    """`configuration_state` over plain field → value: the registry's NOT_CONFIGURED check, and
    what a tool asks before it reads its settings at run time."""
    missing = tuple(
        name for name in definition.settings_schema.required if not values.get(name, "").strip()
    )
    if missing:
        keys = ", ".join(f"{definition.id}.{n}" for n in missing)
        return ToolConfigurationState(False, missing, f"Required settings are missing: {keys}")
    for name in definition.settings_schema.properties:
        problem = field_problem(definition, name, values.get(name, ""), tool)
        if problem:
            return ToolConfigurationState(False, (), problem)
    if tool is None:
        return CONFIGURED
    try:
        state = tool.validate_configuration(values)
    except Exception as error:  # a validation that breaks must not let the tool run
        return ToolConfigurationState(
            False,
            (),
            f"{definition.id}: its settings could not be checked ({type(error).__name__})",
        )
    return CONFIGURED if state.is_configured else state


def value_problem(
    definition: ToolDefinition,
    values: Mapping[str, str],
    name: str,
    value: str,
    tool: Tool | None = None,
    instead: str | None = None,
) -> str | None:
    """Why `value` for field `name` is refused when the other fields are as in `values`, or None.

    The field's own rule (`field_problem`) first; then the rules across fields (a content budget
    too small for its per-result share, SPECIFIC without a preferred backend, a required field
    left blank, ...): a value that leaves the tool NOT_CONFIGURED where the field's own default
    would not — or not for that reason — is refused with the reason. A field without a default
    is compared with `instead`, the value it has without this one. So a tool that is not
    configured for another reason (no search backend yet) does not make every value wrong.
    `policy check` (for each organization value in force), `policy settings set` and `settings
    show` ask this, so they agree with the registry.
    """
    problem = field_problem(definition, name, value, tool)
    if problem is not None:
        return problem
    after = values_state(definition, {**values, name: value}, tool)
    if after.is_configured:
        return None
    spec = definition.settings_schema.properties.get(name)
    default = spec.default if spec is not None else None
    reference = default if default is not None else instead or ""
    before = values_state(definition, {**values, name: reference}, tool)
    if before.is_configured or before.message != after.message:
        return after.message
    return None


# --- global switches ------------------------------------------------------------------------------


def _managed_evidence(setting: ManagedSetting, shown: object) -> Evidence:
    source = SOURCE_LOCKED if setting.locked else SOURCE_EDITABLE
    return Evidence(setting.key, _shown_setting(shown), source, setting.origin)


def tools_enabled(
    configuration: PolicyConfiguration, user: UserSettings
) -> tuple[bool, tuple[Evidence, ...]]:
    """`DataTools.EnableTools` by `resolve_setting`'s precedence; nothing set → on."""
    setting = configuration.setting(ENABLE_TOOLS)
    managed: Evidence | None = None
    if setting is not None:
        managed = _managed_evidence(setting, setting.value is not False)
    locked, organization = managed_layer(setting, managed)
    user_evidence = (
        Evidence(
            ENABLE_TOOLS,
            user.tools_enabled,
            _SOURCE_USER,
            None,
            _user_location(user, "tools.enabled"),
        )
        if user.tools_enabled is not None
        else None
    )
    built_in = Evidence(ENABLE_TOOLS, True, _SOURCE_BUILT_IN)
    chosen = (
        resolve_setting(
            locked=locked, user=user_evidence, organization=organization, default=built_in
        ).value
        or built_in
    )
    return chosen.value is True, (chosen,)


def disabled_tool_ids(
    configuration: PolicyConfiguration,
) -> tuple[frozenset[str], ManagedSetting | None]:
    setting = configuration.setting(DISABLED_TOOL_IDS)
    if setting is None:
        return frozenset(), None
    value = setting.value
    ids = (value,) if isinstance(value, str) else tuple(value or ())
    return frozenset(str(i) for i in ids), setting


def misspelled_tool_ids(
    configuration: PolicyConfiguration, known: Collection[str]
) -> dict[str, tuple[str, ...]]:
    """The ids in `DataTools.DisabledToolIds` and `MinimumProviderConfidenceByToolId` that name
    no known tool, by the known tool each most likely meant (did-you-mean).

    A typo there is read the strict way, never as nothing: the tool it meant is switched off,
    or gets at least that level, until the entry is fixed (`policy check` reports it as an
    error). A hostile plugin's thousands of unknown ids cost one budget of searches."""
    from policy.suggest import HintBudget

    disabled, _ = disabled_tool_ids(configuration)
    minimums = configuration.setting(_MINIMUM_CONFIDENCE_BY_TOOL_ID)
    table = minimums.value if minimums is not None and isinstance(minimums.value, Mapping) else {}
    hints = HintBudget()
    meant: dict[str, list[str]] = {}
    for ident in dict.fromkeys((*sorted(disabled), *map(str, table))):
        if ident not in known:
            match = hints.closest_name(ident, known)
            if match is not None:
                meant.setdefault(match, []).append(ident)
    return {tool_id: tuple(idents) for tool_id, idents in meant.items()}


# --- minimum provider confidence ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MinimumConfidence:
    """The effective minimum of a tool or collection, with its source text and evidence."""

    level: ConfidenceLevel
    source: str
    evidence: tuple[Evidence, ...]


def _minimum_entry(
    managed: ManagedSetting, key: str, ident: str, raw: object
) -> tuple[ConfidenceLevel, str, Evidence]:
    """One organization entry of the minimum table; an unreadable one means HIGH (fails safe)."""
    level = parse_confidence_level(raw)
    origin = _entry_origin(managed, ident)
    source = SOURCE_LOCKED if managed.locked else SOURCE_EDITABLE
    if level is None:
        return (
            ConfidenceLevel.HIGH,
            "invalid managed config; safe fallback",
            Evidence(key, setting_text(raw), f"{source}; unreadable, HIGH applies", origin),
        )
    return level, "managed config", Evidence(key, level.name, source, origin)


def effective_minimum_confidence(
    settings_ids: Sequence[str],
    default: ConfidenceLevel,
    configuration: PolicyConfiguration,
    user: UserSettings,
    default_description: str = "",
) -> MinimumConfidence:
    """Per settings-id the entry that counts; of several, the highest; none → the default.

    Locked table: only its entries count; an unreadable one means HIGH (safe fallback).
    Editable table: a valid user entry wins over the table's entry for the same id.
    """
    managed = configuration.setting(_MINIMUM_CONFIDENCE_BY_TOOL_ID)
    table: Mapping[str, object] = (
        managed.value if managed is not None and isinstance(managed.value, Mapping) else {}
    )
    locked = managed is not None and managed.locked
    found: list[tuple[ConfidenceLevel, str, Evidence]] = []
    for ident in settings_ids:
        key = f"{_MINIMUM_CONFIDENCE_BY_TOOL_ID}[{ident}]"
        user_level = (
            None if locked else parse_confidence_level(user.minimum_provider_confidence.get(ident))
        )
        entry = (
            _minimum_entry(managed, key, ident, table[ident])
            if managed is not None and ident in table
            else None
        )
        locked_entry, organization_entry = managed_layer(managed, entry)
        chosen = resolve_setting(
            locked=locked_entry,
            user=(
                user_level,
                "stored override",
                Evidence(
                    key,
                    user_level.name,
                    _SOURCE_USER,
                    None,
                    _user_location(user, f"tools.minimum_provider_confidence.{ident}"),
                ),
            )
            if user_level is not None
            else None,
            organization=organization_entry,
        ).value
        if chosen is not None:
            found.append(chosen)
    if not found:
        what = default_description or _SOURCE_TOOL_DEFAULT
        return MinimumConfidence(
            default,
            "default fallback",
            (
                Evidence(
                    f"minimum_provider_confidence[{settings_ids[0] if settings_ids else ''}]",
                    default.name,
                    what,
                ),
            ),
        )
    level, source, _ = max(found, key=lambda item: item[0])
    return MinimumConfidence(level, source, tuple(e for _, _, e in found))


# --- provider confidence ----------------------------------------------------------------------------


def provider_confidence_under(
    kind: ProviderKind, scheme: str, custom: Mapping[str, object] | None = None
) -> ConfidenceLevel:
    """A kind's level under a scheme; CUSTOM reads the organization's table (missing → UNKNOWN)."""
    table: dict[ProviderKind, ConfidenceLevel] = {}
    for name, raw in (custom or {}).items():
        level = parse_confidence_level(raw)
        if level is not None and str(name).strip().upper() in ProviderKind.__members__:
            table[ProviderKind[str(name).strip().upper()]] = level
    return provider_confidence(kind, scheme.strip().upper(), table)


@dataclass(frozen=True, slots=True)
class ConfidenceSchemeChoice:
    """The confidence scheme in force, a custom scheme's levels and the evidence for it."""

    scheme: str
    custom: Mapping[str, object]
    evidence: tuple[Evidence, ...]


def confidence_scheme(
    configuration: PolicyConfiguration, user: UserSettings
) -> ConfidenceSchemeChoice:
    """The scheme in force: locked org value → user choice → editable org value → the key's
    declared default (TRUST_ALL, declared in policy/config/settings.py)."""
    setting = configuration.setting(_CONFIDENCE_SCHEME)
    custom_table, custom_setting = _table(configuration, _CUSTOM_CONFIDENCE_SCHEME)
    managed = None
    if setting is not None:
        text = setting_text(setting.value)
        managed = (text, _managed_evidence(setting, text))
    locked, organization = managed_layer(setting, managed)
    from policy.config.settings import setting_key  # loaded with any configuration

    declared = setting_key(_CONFIDENCE_SCHEME)
    assert declared is not None and isinstance(declared.default, str)
    built_in = (declared.default, Evidence(_CONFIDENCE_SCHEME, declared.default, _SOURCE_BUILT_IN))
    chosen = (
        resolve_setting(
            locked=locked,
            user=(
                user.confidence_scheme,
                Evidence(
                    _CONFIDENCE_SCHEME,
                    user.confidence_scheme,
                    _SOURCE_USER,
                    None,
                    _user_location(user, "confidence.scheme"),
                ),
            )
            if user.confidence_scheme
            else None,
            organization=organization,
            default=built_in,
        ).value
        or built_in
    )
    scheme = chosen[0]
    evidence: list[Evidence] = [chosen[1]]
    if scheme.strip().upper() == ConfidenceScheme.CUSTOM.value and custom_setting is not None:
        evidence.append(
            _managed_evidence(
                custom_setting, {str(k): setting_text(v) for k, v in custom_table.items()}
            )
        )
    return ConfidenceSchemeChoice(scheme, custom_table, tuple(evidence))
