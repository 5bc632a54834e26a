"""Configuration plugins: run a plugin.lua in the sandbox and turn its globals into typed data.

The rules follow AI Studio's loader: a problem with a required
global, TYPE, CONFIG or CONFIG["SETTINGS"] (or a malformed
`DataTools.MinimumProviderConfidenceByToolId`) rejects the whole plugin; a bad entry inside CONFIG is
skipped with a warning naming file:line and the rest applies. Sections and keys toolpolicy does not
act on are kept and reported as unused, never as errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from policy._dataclass import dataclass
from policy._patterns import LazyPattern
from policy.config.chat_templates import CHAT_TEMPLATES
from policy.config.data_sources import DATA_SOURCES
from policy.config.fields import FieldType
from policy.config.guid import GUID_EXAMPLE, TEMPLATE_GUID, parse_guid
from policy.config.mcp_servers import MCP_SERVERS, McpTransport
from policy.config.plugin_globals import (
    CATEGORIES,
    PLUGIN_GLOBALS,
    TARGET_GROUPS,
    GlobalKind,
    PluginGlobal,
)
from policy.config.providers import CAPABILITIES, LLM_PROVIDERS
from policy.config.reading import EntryReader, checked_secret, plain
from policy.config.sections import SECTIONS
from policy.config.settings import (
    OVERRIDE_SUFFIX,
    SettingKey,
    SettingKind,
    UnknownKey,
    companion_of,
    describe,
    is_override_companion,
    parse_bool,
    parse_choice,
    setting_key,
    unknown_key,
)
from policy.configuration import (
    ChatTemplateConfig,
    DataSourceConfig,
    Finding,
    ProviderConfig,
    SecretValue,
    Severity,
    SkippedEntry,
)
from policy.errors import ToolPolicyError
from policy.hosts import (
    HOST_RULE,
    provider_address_problem,
    read_base_url,
    read_web_address,
    shown_address,
)
from policy.lua_sandbox import (
    LuaSandboxError,
    LuaTable,
    PluginSource,
    SandboxLimits,
    read_plugin_source,
    run_plugin_sources,
)
from policy.provenance import Origin, SourceLocation
from policy.secrets import without_user_info
from policy.suggest import HintBudget
from policy.vocabulary import (
    PROVIDER_KIND_NAMES,
    ConfidenceLevel,
    DataSecurity,
    PluginOrigin,
    ProviderKind,
)

if TYPE_CHECKING:
    from policy.mcp import McpAuth, McpServerConfig

PLUGIN_FILE_NAME = "plugin.lua"

AI_STUDIO_PROVIDER_KINDS: tuple[str, ...] = (
    "OPEN_AI", "ANTHROPIC", "MISTRAL", "GOOGLE", "X", "DEEP_SEEK", "ALIBABA_CLOUD", "PERPLEXITY",
    "OPEN_ROUTER", "HETZNER", "FIREWORKS", "GROQ", "HUGGINGFACE", "SELF_HOSTED", "HELMHOLTZ", "GWDG",
)  # fmt: skip
"""The UsedLLMProvider names AI Studio knows; toolpolicy's other provider kinds are extensions."""
AI_STUDIO_SECTIONS: tuple[str, ...] = (
    "TRANSCRIPTION_PROVIDERS", "EMBEDDING_PROVIDERS", "PROFILES", "DOCUMENT_ANALYSIS_POLICIES",
    "MANDATORY_INFOS", "INTRODUCTIONS",
)  # fmt: skip

_PROVIDER_KINDS = PROVIDER_KIND_NAMES
_FAIL_CLOSED_SECTIONS = tuple(section.name for section in SECTIONS if section.fails_closed)
_SECTION_NAMES = ("SETTINGS", *(section.name for section in SECTIONS))
_OWN_PROVIDER_FIELDS = frozenset({"APIKey"})
"""A provider's fields its reader reads itself: a key users bring their own of is not read."""
_PROVIDER_PASSED_ON = ("HFInferenceProvider", "AdditionalJsonApiParameters")
"""A provider's fields passed on to every request as given (`ProviderConfig.additional`)."""
_DATA_SOURCE_SECRETS = tuple(f.name for f in DATA_SOURCES if f.type is FieldType.SECRET)
_DATA_SOURCE_CHOICES = tuple(f.name for f in DATA_SOURCES if f.type is FieldType.CHOICE)
"""Kept in `raw` in their one spelling (the reader takes any case), so whatever reads the
entry later (the ERI client's sign-in) compares canonical names."""
_TEMPLATE_HEAD = tuple(CHAT_TEMPLATES[name] for name in ("Id", "Name", "SystemPrompt"))
"""The fields read first, in this order, before the rules across fields."""
_TOOL_SETTING_TABLES = ("DataTools.LockedToolSettings", "DataTools.DefaultToolSettings")
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
_PRECHECK_ID = re.compile(r'ID = "([^"]*)"')
_TEXT_ID = LazyPattern(r"""^\s*ID\s*=\s*["']([^"']+)["']""", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class PluginSetting:
    """One `CONFIG["SETTINGS"]` key as this plugin sets it.

    `allow_user_override` is the effective choice (False on keys that cannot honor the companion);
    `override_requested` records what the plugin asked for, so lint can point out an ignored companion.
    """

    key: str
    value: Any
    location: SourceLocation
    allow_user_override: bool = False
    override_requested: bool = False
    override_location: SourceLocation | None = None
    entry_locations: Mapping[str, SourceLocation] = field(default_factory=dict)
    used_by_toolpolicy: bool = True


@dataclass(frozen=True, slots=True)
class ConfigurationPlugin:
    """A loaded configuration plugin; `path` is its plugin.lua as given."""

    id: str
    name: str
    path: str
    origin: PluginOrigin
    priority: int
    settings: Mapping[str, PluginSetting] = field(default_factory=dict)
    providers: tuple[ProviderConfig, ...] = ()
    data_sources: tuple[DataSourceConfig, ...] = ()
    chat_templates: tuple[ChatTemplateConfig, ...] = ()
    mcp_servers: tuple[McpServerConfig, ...] = ()
    skipped: tuple[SkippedEntry, ...] = ()
    """The `CONFIG[...]` entries not applied because something in them is wrong."""
    unused: tuple[Finding, ...] = ()
    findings: tuple[Finding, ...] = ()
    version: str = ""
    description: str = ""
    files: tuple[str, ...] = ()
    other_sections: Mapping[str, Any] = field(default_factory=dict)
    deployed_using_config_server: bool | None = None
    contents: Mapping[str, bytes] = field(default_factory=dict, compare=False, repr=False)
    """The bytes of each file in `files` as the loader read and ran them (empty for a plugin made
    by hand): what its digest and last-known-good copy are made of."""

    def origin_at(self, location: SourceLocation) -> Origin:
        return Origin(self.id, self.name, location)

    @property
    def provenance(self) -> Origin:
        return Origin(self.id, self.name, SourceLocation(self.path, 0))


class PluginLoadError(ToolPolicyError):
    """The whole plugin is rejected; every finding names file:line and what would be valid."""

    code = "plugin-load"

    def __init__(
        self,
        path: str,
        findings: Iterable[Finding],
        plugin_id: str = "",
        plugin_name: str = "",
        not_configuration: bool = False,
    ) -> None:
        self.path = path
        self.findings = tuple(findings)
        self.plugin_id = plugin_id
        self.plugin_name = plugin_name
        self.not_configuration = not_configuration
        super().__init__(self.message)

    @property
    def message(self) -> str:
        return (
            "; ".join(_where(f) + f.message for f in self.findings)
            or f"{self.path}: plugin rejected"
        )

    @property
    def location(self) -> SourceLocation | None:
        return self.findings[0].location if self.findings else None


def discover_plugin_files(path: Path) -> list[Path]:
    """A plugin.lua, a plugin folder, or a folder of plugin folders (any depth), sorted.

    Raises FileNotFoundError when `path` does not exist.
    """
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if not path.is_dir():
        return [path]  # a file of any kind: reading it refuses what is not a regular file
    return sorted(path.rglob(PLUGIN_FILE_NAME), key=lambda p: p.relative_to(path).parts)


def load_plugin(
    plugin_file: Path, origin: PluginOrigin, limits: SandboxLimits | None = None
) -> ConfigurationPlugin:
    """Run and validate one configuration plugin; PluginLoadError rejects it as a whole.

    The file is read once, safely (see `policy.plugin_files`); `limits` defaults to
    `SandboxLimits()`."""
    (outcome,) = load_plugins([(plugin_file, origin)], limits)
    if isinstance(outcome, PluginLoadError):
        raise outcome
    return outcome


def load_plugins(
    plugin_files: Sequence[tuple[Path, PluginOrigin]], limits: SandboxLimits | None = None
) -> list[ConfigurationPlugin | PluginLoadError]:
    """Load the plugins of one configuration: each file read once, all of them run in one round
    trip to the sandbox (each in its own Lua state), each validated; one outcome per file, in
    order (a rejected plugin is its PluginLoadError, returned, not raised)."""
    chosen = limits if limits is not None else SandboxLimits()
    outcomes: list[ConfigurationPlugin | PluginLoadError | None] = [None] * len(plugin_files)
    texts: dict[int, str] = {}
    for index, (plugin_file, _origin) in enumerate(plugin_files):
        try:
            texts[index] = read_plugin_source(plugin_file, chosen)
        except LuaSandboxError as error:
            outcomes[index] = _not_run(str(plugin_file), error, "")
    sources = [
        PluginSource(text, str(plugin_files[index][0]), plugin_files[index][0].parent)
        for index, text in texts.items()
    ]
    for index, result in zip(texts, run_plugin_sources(sources, chosen), strict=True):
        file, text = str(plugin_files[index][0]), texts[index]
        if isinstance(result, LuaSandboxError):
            outcomes[index] = _not_run(file, result, text)
            continue
        origin = plugin_files[index][1]
        contents = dict(zip(result.files[1:], result.module_bytes, strict=True))
        contents[result.files[0]] = text.encode("utf-8")  # the bytes read: they decoded strictly
        loader = _Loader(
            file, origin, result.globals, result.locations, result.files, text, contents
        )
        try:
            outcomes[index] = loader.load()
        except PluginLoadError as failure:
            if not failure.plugin_id:
                failure.plugin_id = _id_in_text(text)
            outcomes[index] = failure
    return [outcome for outcome in outcomes if outcome is not None]


def _not_run(file: str, error: LuaSandboxError, text: str) -> PluginLoadError:
    if error.kind == "read":
        finding = _error(
            "unreadable", f"the plugin file cannot be read: {error.message}", error.location
        )
    else:
        finding = _error(
            "lua-error", f"the plugin could not be run: {error.message}", error.location
        )
    return PluginLoadError(file, [finding], plugin_id=_id_in_text(text))


def _id_in_text(text: str) -> str:
    """The plugin's ID read from its text, for a plugin that did not run or did not validate
    (a last-known-good copy is found by it)."""
    match = _TEXT_ID.search(text)
    return (parse_guid(match.group(1)) or "") if match else ""


class _Loader:
    """One plugin's validation; collects issues (rejecting), warnings and unused keys."""

    def __init__(
        self,
        file: str,
        origin: PluginOrigin,
        globals_: Mapping[str, Any],
        locations: Mapping[str, SourceLocation],
        files: tuple[str, ...],
        text: str = "",
        contents: Mapping[str, bytes] | None = None,
    ) -> None:
        self.file = file
        self.text = text
        self.contents = contents if contents is not None else {}
        self.origin = origin
        self.globals = globals_
        self.locations = locations
        self.files = files
        self.issues: list[Finding] = []
        self.warnings: list[Finding] = []
        self.unused: list[Finding] = []
        self.skipped: list[SkippedEntry] = []
        self.hints = HintBudget()
        self.plugin_id = ""
        self.name = ""

    # -- whole plugin ------------------------------------------------------------------------

    def load(self) -> ConfigurationPlugin:
        self.warnings.extend(_precheck_compatibility(self.file, self.text))
        self._misspelled_globals()
        read = {
            declared.name: self._READERS[declared.kind](self, declared)
            for declared in PLUGIN_GLOBALS
            if declared.kind is not GlobalKind.TABLE
        }
        self.plugin_id, self.name = read["ID"], read["NAME"]
        description, version = read["DESCRIPTION"], read["VERSION"]
        if read["IS_MAINTAINED"] is False:
            self._warn(
                "not-maintained",
                "IS_MAINTAINED is false: this plugin is no longer maintained",
                self._at("IS_MAINTAINED"),
            )
        plugin_type, deployed = read["TYPE"], read["DEPLOYED_USING_CONFIG_SERVER"]
        priority = read["PRIORITY"] or 0
        config = self._config() if plugin_type == "CONFIGURATION" else None
        settings_table = self._settings_table(config) if config is not None else None
        settings: dict[str, PluginSetting] = {}
        if settings_table is not None:
            settings = self._settings(settings_table)
        if self.issues or config is None:
            raise PluginLoadError(
                self.file,
                self.issues,
                self.plugin_id,
                self.name,
                not_configuration=plugin_type in ("LANGUAGE", "ASSISTANT")
                and len(self.issues) == 1,
            )
        providers = self._objects(config, "LLM_PROVIDERS", self._provider)
        data_sources = self._objects(config, "DATA_SOURCES", self._data_source)
        templates = self._objects(config, "CHAT_TEMPLATES", self._chat_template)
        mcp_servers = self._objects(config, "MCP_SERVERS", self._mcp_server)
        other = self._other_sections(config)
        return ConfigurationPlugin(
            id=self.plugin_id,
            name=self.name,
            path=self.file,
            origin=self.origin,
            priority=priority,
            settings=settings,
            providers=tuple(providers),
            data_sources=tuple(data_sources),
            chat_templates=tuple(templates),
            mcp_servers=tuple(mcp_servers),
            skipped=tuple(self.skipped),
            unused=tuple(self.unused),
            findings=tuple(self.warnings),
            version=version,
            description=description,
            files=self.files,
            other_sections=other,
            deployed_using_config_server=deployed,
            contents=self.contents,
        )

    def _at(self, name: str) -> SourceLocation:
        return self.locations.get(name) or SourceLocation(self.file, 0)

    def _issue(self, code: str, message: str, location: SourceLocation | None = None) -> None:
        self.issues.append(_error(code, message, location or SourceLocation(self.file, 0)))

    def _warn(self, code: str, message: str, location: SourceLocation | None) -> None:
        self.warnings.append(
            Finding(Severity.WARNING, code, message, location or SourceLocation(self.file, 0))
        )

    def _skip_value(self, code: str, message: str, location: SourceLocation | None) -> None:
        """A value that is skipped while the plugin still applies: an error for `policy check`
        (what the administrator wrote does not take effect), not a reason to reject the plugin."""
        self.warnings.append(
            Finding(Severity.ERROR, code, message, location or SourceLocation(self.file, 0))
        )

    def _not_in_force(self, code: str, message: str, location: SourceLocation | None) -> None:
        """Something the administrator wrote is left out of force and could have tightened the
        policy: an error in an organization plugin (`policy check` exits 1); a warning in a local
        one, which cannot loosen the organization's policy anyway."""
        severity = Severity.ERROR if self.origin is PluginOrigin.ORGANIZATION else Severity.WARNING
        self.warnings.append(
            Finding(severity, code, message, location or SourceLocation(self.file, 0))
        )

    def _skip_entry(
        self,
        section: str,
        label: str,
        entry: Any,
        reason: str,
        location: SourceLocation | None,
        code: str = "invalid-entry",
    ) -> None:
        where = location or SourceLocation(self.file, 0)
        named = (
            entry.get("InstanceName") or entry.get("Name") if isinstance(entry, LuaTable) else ""
        )
        skipped = SkippedEntry(
            section=section,
            label=label,
            name=named if isinstance(named, str) else "",
            reason=reason,
            location=where,
            plugin_name=self.name,
            by_organization=self.origin is PluginOrigin.ORGANIZATION,
        )
        self.skipped.append(skipped)
        if section in _FAIL_CLOSED_SECTIONS:
            self._not_in_force(code, skipped.message, where)
        else:  # a data source or chat template that is not there offers nothing
            self._warn(code, skipped.message, where)

    def _missing_or(self, declared: PluginGlobal) -> None:
        name = declared.name
        if name not in self.globals:
            self._issue("invalid-global", f"{name} is missing; it must be {declared.wanted}")
        else:
            value = self.globals[name]
            shown = without_user_info(value) if isinstance(value, str) else plain(value)
            self._issue(
                "invalid-global",
                f"{name} must be {declared.wanted}, not {describe(shown)}",
                self._at(name),
            )

    # -- the plugin's globals, each read as `policy.config.plugin_globals` declares it -------

    def _guid_global(self, declared: PluginGlobal) -> str:
        guid = parse_guid(self.globals.get(declared.name))
        if guid is None:
            self._missing_or(declared)
            return ""
        if guid == TEMPLATE_GUID:
            self._issue(
                "invalid-global",
                f"{declared.name} is the all-zero GUID of the template; generate a GUID of your own",
                self._at(declared.name),
            )
            return ""
        return guid

    def _text_global(self, declared: PluginGlobal) -> str:
        value = self.globals.get(declared.name)
        if isinstance(value, str) and (value.strip() or declared.kind is GlobalKind.TEXT):
            return value
        self._missing_or(declared)
        return ""

    def _version(self, declared: PluginGlobal) -> str:
        value = self.globals.get(declared.name)
        match = _VERSION.match(value) if isinstance(value, str) else None
        if match and any(int(part) for part in match.groups()):
            return str(value)
        self._missing_or(declared)
        return ""

    def _names(self, declared: PluginGlobal) -> None:
        value = self.globals.get(declared.name)
        if isinstance(value, LuaTable) and any(isinstance(v, str) for v in value.sequence()):
            return
        self._missing_or(declared)

    def _address(self, declared: PluginGlobal) -> None:
        value = self.globals.get(declared.name)
        if isinstance(value, str) and _is_source_url(value.strip()):
            return
        self._missing_or(declared)

    def _choices(self, declared: PluginGlobal) -> None:
        value = self.globals.get(declared.name)
        if isinstance(value, LuaTable) and any(
            isinstance(v, str) and v in declared.choices for v in value.sequence()
        ):
            return
        self._missing_or(declared)

    def _bool(self, declared: PluginGlobal) -> bool | None:
        value = self.globals.get(declared.name)
        if isinstance(value, bool) or (value is None and not declared.required):
            return value
        if declared.required:
            self._missing_or(declared)
        else:
            self._optional_mistake(
                declared,
                "invalid-global",
                f"{declared.name} must be {declared.wanted}, not {describe(plain(value))}",
            )
        return None

    def _plugin_type(self, declared: PluginGlobal) -> str:
        value = self.globals.get(declared.name)
        if not isinstance(value, str):
            self._missing_or(declared)
            return ""
        if value not in declared.choices:
            self._issue(
                "invalid-type",
                f'TYPE "{value}" is not a plugin type (case-sensitive: {", ".join(declared.choices)}); '
                'a configuration plugin says TYPE = "CONFIGURATION"',
                self._at("TYPE"),
            )
        elif value == "THEME":
            self._issue(
                "invalid-type",
                'TYPE "THEME" is not supported yet; a configuration plugin says TYPE = "CONFIGURATION"',
                self._at("TYPE"),
            )
        elif value != "CONFIGURATION":
            self._issue(
                "not-a-configuration-plugin",
                f'TYPE is "{value}": not a configuration plugin (TYPE = "CONFIGURATION")',
                self._at("TYPE"),
            )
        return value

    def _whole_number(self, declared: PluginGlobal) -> int | None:
        value = self.globals.get(declared.name)
        if value is None:
            return None
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and float(value).is_integer()
        ):
            return int(value)
        self._optional_mistake(
            declared,
            "invalid-priority",
            f"{declared.name} must be {declared.wanted}, not {describe(plain(value))}",
        )
        return None

    def _optional_mistake(
        self, declared: PluginGlobal, code: str, message: str, name: str = ""
    ) -> None:
        """A wrong optional global (`name`: the near miss of its name the plugin set): read as
        its default with a warning, unless that default could loosen an organization's policy
        (`rejects_organization_plugin`), which rejects the organization plugin."""
        where = self._at(name or declared.name)
        if declared.rejects_organization_plugin and self.origin is PluginOrigin.ORGANIZATION:
            self._issue(
                code,
                f"{message}; this rejects an organization plugin (it fails closed): read as "
                f"{declared.default}, the plugin could lose to one it was meant to override",
                where,
            )
        else:
            self._warn(code, f"{message}; read as {declared.default}", where)

    def _misspelled_globals(self) -> None:
        """A global the plugin sets whose name is a near miss of a declared global it does not
        set ("PRIORTY", "Priority") is that global misspelled: named with the global meant, and
        for an optional one treated as a wrong value of it (`_optional_mistake`). Upper-case
        names are looked at first, within the hint budget (a plugin may set many globals of
        its own)."""
        unset = [g.name for g in PLUGIN_GLOBALS if g.name not in self.globals]
        if not unset:
            return
        hints = HintBudget()
        declared_names = {g.name for g in PLUGIN_GLOBALS}
        names = [n for n in self.globals if isinstance(n, str) and n not in declared_names]
        for name in sorted(names, key=lambda n: not n.isupper()):
            meant = hints.closest_name(name, unset)
            if meant is None:
                continue
            message = f'{name} is not a global toolpolicy reads (did you mean "{meant}"?)'
            declared = PLUGIN_GLOBALS[meant]
            if declared.required:
                self._warn("unknown-global", f"{message} (it has no effect)", self._at(name))
            else:
                self._optional_mistake(declared, "invalid-global", message, name)

    _READERS: ClassVar[dict[GlobalKind, Callable[[_Loader, PluginGlobal], Any]]] = {
        GlobalKind.GUID: _guid_global,
        GlobalKind.NONBLANK_TEXT: _text_global,
        GlobalKind.TEXT: _text_global,
        GlobalKind.VERSION: _version,
        GlobalKind.NAMES: _names,
        GlobalKind.ADDRESS: _address,
        GlobalKind.CHOICES: _choices,
        GlobalKind.BOOL: _bool,
        GlobalKind.PLUGIN_TYPE: _plugin_type,
        GlobalKind.WHOLE_NUMBER: _whole_number,
    }
    """How each kind of global is read (`GlobalKind.TABLE`, CONFIG, by `_config`)."""

    def _config(self) -> LuaTable | None:
        value = self.globals.get("CONFIG")
        if isinstance(value, LuaTable):
            return value
        self._missing_or(PLUGIN_GLOBALS["CONFIG"])
        return None

    def _settings_table(self, config: LuaTable) -> LuaTable | None:
        value = config.get("SETTINGS")
        if isinstance(value, LuaTable):
            return value
        where = config.locations.get("SETTINGS") or config.location or self._at("CONFIG")
        if value is None:
            self._issue(
                "missing-settings",
                'CONFIG["SETTINGS"] is missing; write CONFIG["SETTINGS"] = {} at least',
                where,
            )
        else:
            self._issue(
                "missing-settings",
                f'CONFIG["SETTINGS"] must be a table, not {describe(plain(value))}',
                where,
            )
        return None

    # -- CONFIG["SETTINGS"] --------------------------------------------------------------

    def _settings(self, table: LuaTable) -> dict[str, PluginSetting]:
        settings: dict[str, PluginSetting] = {}
        companions: dict[str, tuple[Any, SourceLocation]] = {}
        for key, value in table.entries.items():
            where = table.locations.get(key) or table.location or SourceLocation(self.file, 0)
            if not isinstance(key, str):
                self._warn(
                    "invalid-setting",
                    f'CONFIG["SETTINGS"] key {describe(key)} is not a setting name; skipped',
                    where,
                )
            elif is_override_companion(key):
                companions[companion_of(key)] = (value, where)
            else:
                parsed = self._setting(key, value, where)
                if parsed is not None:
                    settings[key] = parsed
        for base, (value, where) in companions.items():
            self._companion(settings, base, value, where)
        return settings

    def _setting(self, key: str, value: Any, where: SourceLocation) -> PluginSetting | None:
        spec = setting_key(key)
        if spec is None or not spec.used_by_toolpolicy:
            unknown = unknown_key(key, self.hints) if spec is None else None
            if unknown is not None and unknown.misses_a_key_in_force:
                message = (
                    f'CONFIG["SETTINGS"]["{key}"] is not a setting toolpolicy knows{unknown.hint}'
                )
                if self.origin is PluginOrigin.ORGANIZATION:  # what it meant could tighten
                    self._issue(
                        "unknown-setting-key",
                        f"{message}; a misspelled key toolpolicy acts on rejects the plugin "
                        "(it fails closed until the key is fixed)",
                        where,
                    )
                    return None
                self._warn("unknown-setting-key", f"{message}; it has no effect (kept)", where)
            else:
                self.unused.append(
                    Finding(
                        Severity.WARNING,
                        "not-used-by-toolpolicy",
                        f'CONFIG["SETTINGS"]["{key}"] is {_unused_reason(spec, unknown)}; kept',
                        where,
                    )
                )
            entries = _entry_locations(value) if isinstance(value, LuaTable) else {}
            return PluginSetting(
                key, plain(value), where, entry_locations=entries, used_by_toolpolicy=False
            )
        typed, entries = _SettingParser(self, spec, where).parse(value)
        if typed is None:
            return None
        return PluginSetting(key, typed, where, entry_locations=entries)

    def _companion(
        self, settings: dict[str, PluginSetting], base: str, value: Any, where: SourceLocation
    ) -> None:
        name = base + OVERRIDE_SUFFIX
        allow = parse_bool(value)
        if allow is None:
            self._warn(
                "invalid-override",
                f"{name} must be true or false, not {describe(plain(value))}; the setting stays locked",
                where,
            )
            allow = False
        current = settings.get(base)
        if current is None:
            self._warn(
                "override-without-setting",
                f"{name} has no effect: {base} is not set (or was skipped) in this plugin",
                where,
            )
            return
        spec = setting_key(base)
        honored = allow and (spec is None or spec.honors_user_override)
        settings[base] = PluginSetting(
            current.key,
            current.value,
            current.location,
            allow_user_override=honored,
            override_requested=allow,
            override_location=where,
            entry_locations=current.entry_locations,
            used_by_toolpolicy=current.used_by_toolpolicy,
        )

    # -- configuration objects ----------------------------------------------------------

    def _objects(self, config: LuaTable, section: str, parse: Any) -> list[Any]:
        """The entries of one `CONFIG[...]` list; an entry with a mistake is skipped whole (never
        applied with a filter, pin or override silently dropped) and reported as not in force."""
        value = config.get(section)
        if value is None:
            return []
        where = config.locations.get(section) or config.location
        if not isinstance(value, LuaTable):
            self._skip_entry(
                section,
                f'CONFIG["{section}"]',
                None,
                "it must be a list of tables",
                where,
                "invalid-section",
            )
            return []
        self._skip_beyond_sequence(value, section, where)
        objects: dict[str, Any] = {}
        for index, entry in enumerate(value.sequence(), start=1):
            entry_where = value.locations.get(index) or where
            label = f'CONFIG["{section}"] entry {index}'
            if not isinstance(entry, LuaTable):
                self._skip_entry(section, label, entry, "it is not a table", entry_where)
                continue
            entry_where = entry.location or entry_where
            problems: list[str] = []
            parsed = parse(entry, entry_where, problems, label)
            if parsed is None:
                self._skip_entry(section, label, entry, "; ".join(problems), entry_where)
                continue
            for problem in problems:
                self._warn("invalid-entry-field", f"{label}: {problem}", entry_where)
            if parsed.id in objects:
                self._not_in_force(
                    "duplicate-id",
                    f"{label} repeats Id {parsed.id}; the later entry replaces the earlier",
                    entry_where,
                )
            objects[parsed.id] = parsed
        return list(objects.values())

    def _skip_beyond_sequence(
        self, table: LuaTable, section: str, where: SourceLocation | None
    ) -> None:
        """AI Studio reads only the array part 1..n of a list; the other keys are skipped."""
        length = len(table.sequence())
        for key in table.entries:
            if not (type(key) is int and 1 <= key <= length):
                self._skip_entry(
                    section,
                    f'CONFIG["{section}"][{describe(key)}]',
                    table.entries[key],
                    f"it is outside the list 1..{length} (AI Studio reads only consecutive "
                    "entries from 1, e.g. via [#list+1])",
                    table.locations.get(key) or where,
                )

    def _provider(
        self, entry: LuaTable, where: SourceLocation, problems: list[str], label: str
    ) -> ProviderConfig | None:
        fields = EntryReader(entry, problems, hints=self.hints)
        values = fields.read_entry(
            LLM_PROVIDERS, checks={"Hostname": _provider_address_problems}, own=_OWN_PROVIDER_FIELDS
        )
        provider_id, instance, kind, host = (
            values["Id"], values["InstanceName"], values["UsedLLMProvider"], values["Host"]
        )  # fmt: skip
        model = values["Model"] or {}
        model_id, display = model.get("Id"), model.get("DisplayName")
        hostname = values["Hostname"]
        if problems or None in (provider_id, instance, kind, host, hostname, model_id, display):
            return None
        additional: dict[str, Any] = {"DisplayName": display}
        for name in _PROVIDER_PASSED_ON:  # another inference provider, retention switched off
            if entry.get(name) is not None:
                additional[name] = values[name]
        allow_user_key = values["AllowUserProvidedAPIKey"]
        additional["AllowUserProvidedAPIKey"] = allow_user_key
        if entry.get("TokenizerPath") is not None and values["TokenizerPath"] is not None:
            additional["TokenizerPath"] = values["TokenizerPath"]
        additional.update(
            {
                str(k): plain(v)
                for k, v in entry.entries.items()
                if k not in LLM_PROVIDERS.field_names
            }
        )
        optional = fields.ignored
        api_key = self._api_key(entry.get("APIKey"), allow_user_key, optional)
        problems.extend(optional)
        assert provider_id and kind and host and model_id is not None and instance is not None
        for note in fields.compat:
            self._warn("ai-studio-compat", f"{label}: {note}", where)
        return ProviderConfig(
            id=provider_id,
            name=instance,
            kind=ProviderKind(kind),
            model=model_id,
            host=host,
            hostname=hostname,
            capability_overrides=values["CapabilityOverrides"],
            api_key=api_key,
            additional=additional,
            origin=Origin(self.plugin_id, self.name, where),
        )

    def _api_key(self, value: Any, allow_user_key: bool, problems: list[str]) -> SecretValue | None:
        """A provider's `APIKey`, unless users bring their own (then it is ignored, noted)."""
        if value is None:
            return None
        if allow_user_key:
            problems.append("APIKey is ignored because AllowUserProvidedAPIKey is true")
            return None
        return checked_secret(value, "APIKey", problems)

    def _data_source(
        self, entry: LuaTable, where: SourceLocation, problems: list[str], label: str
    ) -> DataSourceConfig | None:
        fields = EntryReader(entry, problems, hints=self.hints)
        values = fields.read_entry(DATA_SOURCES)
        auth = values["AuthMethod"]
        if auth != "USERNAME_PASSWORD" and isinstance(entry.get("UsernamePasswordMode"), str):
            fields.read(DATA_SOURCES["UsernamePasswordMode"])  # a wrong mode: never guessed
        source_id, name, kind, hostname, security, level = (
            values["Id"], values["Name"], values["Type"], values["Hostname"],
            values["SecurityPolicy"], values["MinimumProviderConfidence"],
        )  # fmt: skip
        if problems or None in (source_id, name, kind, hostname, values["Port"], auth, security):
            return None
        assert source_id and name and kind and security and hostname and level
        raw = {str(k): plain(v) for k, v in entry.entries.items()}
        for secret_field in _DATA_SOURCE_SECRETS:
            if values[secret_field] is not None:
                raw[secret_field] = values[secret_field]
        for choice_field in _DATA_SOURCE_CHOICES:
            if choice_field in raw and values[choice_field] is not None:
                raw[choice_field] = values[choice_field]
        raw["Hostname"] = hostname.strip().removesuffix("/")
        return DataSourceConfig(
            id=source_id,
            name=name,
            kind=kind,
            security=DataSecurity(security),
            raw=raw,
            origin=Origin(self.plugin_id, self.name, where),
            minimum_confidence=ConfidenceLevel[level],
        )

    def _chat_template(
        self, entry: LuaTable, where: SourceLocation, problems: list[str], label: str
    ) -> ChatTemplateConfig | None:
        fields = EntryReader(entry, problems, hints=self.hints)
        template_id, name, _prompt = fields.read_fields(_TEMPLATE_HEAD)
        tool_ids: tuple[str, ...] | None = None
        raw_ids = entry.get("ToolIds")
        notes: list[str] = []
        if raw_ids is not None:
            if not isinstance(raw_ids, LuaTable) or not raw_ids.is_sequence():
                problems.append(
                    'ToolIds must be a list such as { "web_search" } (or {} for no tools)'
                )
            else:
                ids: dict[str, None] = {}
                for position, item in enumerate(raw_ids.sequence(), start=1):
                    if isinstance(item, str) and item.strip():
                        ids[item.strip()] = None
                    else:
                        notes.append(
                            f"ToolIds entry {position} ({describe(plain(item))}) is not a tool id; skipped"
                        )
                tool_ids = tuple(ids)
        if template_id is None or name is None or problems:
            return None
        problems.extend(notes)
        raw = {str(k): plain(v) for k, v in entry.entries.items() if k != "ToolIds"}
        return ChatTemplateConfig(
            id=template_id,
            name=name,
            tool_ids=tool_ids,
            raw=raw,
            origin=Origin(self.plugin_id, self.name, where),
        )

    def _mcp_server(
        self, entry: LuaTable, where: SourceLocation, problems: list[str], label: str
    ) -> McpServerConfig | None:
        """A `CONFIG["MCP_SERVERS"]` entry; a wrong field skips the whole server (never a
        server with a filter or pin silently dropped)."""
        from policy.mcp import McpServerConfig

        values = EntryReader(entry, problems, hints=self.hints).read_entry(
            MCP_SERVERS, checks={"Url": _url_problems}
        )
        server_id, name, transport = values["Id"], values["Name"], values["Transport"]
        level = values["MinimumProviderConfidence"]
        auth = _mcp_auth(values["Auth"])
        if problems or None in (server_id, name, transport, level):
            return None
        return McpServerConfig(
            id=server_id,
            name=name,
            transport=McpTransport(transport),
            command=values["Command"] or "",
            args=values["Args"],
            env=values["Env"],
            url=values["Url"] or "",
            headers=values["Headers"],
            minimum_provider_confidence=ConfidenceLevel[level],
            allowed_tools=values["AllowedTools"],
            denied_tools=values["DeniedTools"],
            read_only_only=values["ReadOnlyOnly"],
            require_pins=values["RequirePins"],
            pins=values["Pins"],
            effects=values["Effects"],
            sensitive_arguments=values["SensitiveArguments"],
            require_approval=values["RequireApproval"],
            timeout_seconds=values["TimeoutSeconds"],
            max_message_bytes=values["MaxMessageBytes"],
            auth=auth,
            origin=Origin(self.plugin_id, self.name, where),
            by_organization=self.origin is PluginOrigin.ORGANIZATION,
        )

    def _other_sections(self, config: LuaTable) -> dict[str, Any]:
        other: dict[str, Any] = {}
        for key, value in config.entries.items():
            if key in _SECTION_NAMES:
                continue
            where = config.locations.get(key) or config.location
            known = key in AI_STUDIO_SECTIONS
            other[str(key)] = plain(value)
            if known and isinstance(value, LuaTable) and not value.entries:
                continue
            reason = (
                "an AI Studio section toolpolicy does not use"
                if known
                else "not a section toolpolicy knows"
            )
            self.unused.append(
                Finding(
                    Severity.WARNING,
                    "not-used-by-toolpolicy",
                    f'CONFIG["{key}"] is {reason}; kept',
                    where,
                )
            )
        return other


def _mcp_auth(values: Mapping[str, Any] | None) -> McpAuth:
    """An MCP server's `Auth` as read (absent: STATIC)."""
    from policy.mcp import McpAuth, McpAuthType

    if not values:
        return McpAuth()
    return McpAuth(McpAuthType(values["Type"]), values["Audience"] or "")


class _SettingParser:
    """Parses one used setting by its kind; entry problems become warnings (or rejecting issues)."""

    def __init__(self, loader: _Loader, spec: SettingKey, where: SourceLocation) -> None:
        self.loader = loader
        self.spec = spec
        self.where = where
        self.label = f'CONFIG["SETTINGS"]["{spec.name}"]'

    def _skip(self, wanted: str, value: Any) -> None:
        shown = "a value not shown here" if self.spec.secret else describe(plain(value))
        message = f"{self.label} must be {wanted}, not {shown}"
        if self.spec.rejects_plugin:
            self.loader._issue("invalid-setting", message, self.where)
        else:
            self.loader._skip_value(
                "invalid-setting", message + "; the setting is skipped", self.where
            )

    def _entry(self, table: LuaTable, key: Any, message: str) -> None:
        where = table.locations.get(key) or self.where
        if self.spec.rejects_plugin:
            self.loader._issue("invalid-setting", f"{self.label}: {message}", where)
        else:
            self.loader._skip_value(
                "invalid-setting-entry", f"{self.label}: {message}; entry skipped", where
            )

    def parse(self, value: Any) -> tuple[Any, dict[str, SourceLocation]]:
        kind = self.spec.kind
        if kind is SettingKind.BOOL:
            flag = parse_bool(value)
            if flag is None:
                self._skip("true or false", value)
            return flag, {}
        if kind in (SettingKind.ENUM, SettingKind.LEVEL):
            name = parse_choice(value, self.spec.choices)
            if name is None and self.spec.mistake_reads_as:
                name = self.spec.mistake_reads_as
                self.loader._skip_value(
                    "invalid-setting",
                    f"{self.label} must be one of {', '.join(self.spec.choices)}, not "
                    f"{describe(plain(value))}; read as {name} (the strictest) until it is fixed",
                    self.where,
                )
            elif name is None:
                self._skip(f"one of {', '.join(self.spec.choices)}", value)
            return name, {}
        if kind is SettingKind.STRING:
            if not isinstance(value, str):
                self._skip("a string", value)
                return None, {}
            wanted = self.spec.text_rule(value) if self.spec.text_rule else None
            if wanted is not None:
                self._skip(wanted, value)
                return None, {}
            return value, {}
        if not isinstance(value, LuaTable):
            self._skip(f"a table like {self.spec.example or '{ ... }'}", value)
            return None, {}
        if kind is SettingKind.STRING_SET:
            return self._string_set(value)
        if kind is SettingKind.COMPONENT_IDS:
            return self._component_ids(value)
        if kind is SettingKind.CHOICE_LISTS:
            return self._choice_lists(value)
        if kind is SettingKind.GROUP_IDS:
            return self._group_ids(value)
        if kind is SettingKind.CALL_LIMITS:
            return self._call_limits(value)
        return self._map(value)

    def _string_set(self, table: LuaTable) -> tuple[Any, dict[str, SourceLocation]]:
        if not table.is_sequence():
            self._skip(f"a list like {self.spec.example}", table)
            return None, {}
        items: dict[str, SourceLocation] = {}
        for index, item in enumerate(table.sequence(), start=1):
            if isinstance(item, str) and item.strip():
                items.setdefault(item.strip(), table.locations.get(index) or self.where)
            else:
                self._entry(
                    table,
                    index,
                    f"entry {index} ({describe(plain(item))}) is not a non-blank string",
                )
        if self.spec.name == "DataSourceSecuritySettings.TrustedProviderIds":
            items = {k.lower(): v for k, v in items.items()}
        return tuple(items), items

    def _component_ids(self, table: LuaTable) -> tuple[Any, dict[str, SourceLocation]]:
        result: dict[str, tuple[str, ...]] = {}
        locations: dict[str, SourceLocation] = {}
        for key, item in table.entries.items():
            component = parse_choice(key, self.spec.key_choices)
            if component is None:
                self._entry(
                    table,
                    key,
                    f"{describe(key)} is not a component (e.g. CHAT, WRITER, EMAIL_ASSISTANT)",
                )
                continue
            if not isinstance(item, LuaTable) or not item.is_sequence():
                self._entry(
                    table,
                    key,
                    f'the value for {component} must be a list of tool ids like {{ "web_search" }}',
                )
                continue
            ids = [i.strip() for i in item.sequence() if isinstance(i, str) and i.strip()]
            if len(ids) != len(item.sequence()):
                self._entry(
                    table,
                    key,
                    f"the list for {component} holds entries that are not tool ids; they are skipped",
                )
            result[component] = tuple(dict.fromkeys(ids))
            locations[component] = table.locations.get(key) or self.where
        return result, locations

    def _choice_lists(self, table: LuaTable) -> tuple[Any, dict[str, SourceLocation]]:
        """Id → list of choices; a word that is none of them makes the entry every choice (an
        error: the strictest reading until it is fixed, never a looser one)."""
        choices = self.spec.choices
        result: dict[str, tuple[str, ...]] = {}
        locations: dict[str, SourceLocation] = {}
        for key, item in table.entries.items():
            where = table.locations.get(key) or self.where
            if not isinstance(key, str) or not key.strip():
                self._entry(table, key, f"key {describe(key)} must be a non-blank tool id")
                continue
            name = key.strip()
            words = item.sequence() if isinstance(item, LuaTable) and item.is_sequence() else None
            read = [parse_choice(word, choices) for word in words or ()]
            if words is None or None in read:
                wrong = (
                    f'the value must be a list like {{ "{choices[0]}" }}, not '
                    f"{describe(plain(item))}"
                    if words is None
                    else ", ".join(
                        describe(plain(word))
                        for word, got in zip(words, read, strict=True)
                        if got is None
                    )
                    + f" is not one of {', '.join(choices)}"
                )
                self.loader._skip_value(
                    "invalid-setting-entry",
                    f'{self.label}["{name}"]: {wrong}; read as all of them until it is fixed',
                    where,
                )
                read = list(choices)
            result[name] = tuple(word for word in choices if word in read)
            locations[name] = where
        return result, locations

    def _group_ids(self, table: LuaTable) -> tuple[Any, dict[str, SourceLocation]]:
        """Group → configuration ids (GUIDs, kept in their one form)."""
        result: dict[str, tuple[str, ...]] = {}
        locations: dict[str, SourceLocation] = {}
        for key, item in table.entries.items():
            if not isinstance(key, str) or not key.strip():
                self._entry(table, key, f"key {describe(key)} must be a non-blank group name")
                continue
            group = key.strip()
            items = item.sequence() if isinstance(item, LuaTable) and item.is_sequence() else None
            ids = [parse_guid(i) for i in items or ()]
            if items is None or None in ids:
                self._entry(
                    table,
                    key,
                    f'the value for "{group}" must be a list of configuration ids (GUIDs) like '
                    f'{{ "{GUID_EXAMPLE}" }}, not {describe(plain(item))}',
                )
                continue
            result[group] = tuple(dict.fromkeys(i for i in ids if i is not None))
            locations[group] = table.locations.get(key) or self.where
        return result, locations

    def _call_limits(self, table: LuaTable) -> tuple[Any, dict[str, SourceLocation]]:
        """Tool id or glob → a call limit; a malformed one reads as no call at all (an error:
        the strictest reading until it is fixed, never no limit)."""
        from policy.quotas import LIMIT_FORM, parse_limit, zero_limit

        result: dict[str, str] = {}
        locations: dict[str, SourceLocation] = {}
        for key, item in table.entries.items():
            where = table.locations.get(key) or self.where
            if not isinstance(key, str) or not key.strip():
                self._entry(table, key, f"key {describe(key)} must be a tool id or glob")
                continue
            name = key.strip()
            limit = parse_limit(item)
            if limit is None:
                self.loader._skip_value(
                    "invalid-setting-entry",
                    f'{self.label}["{name}"] must be {LIMIT_FORM}, not {describe(plain(item))}; '
                    "read as 0 calls (every call refused) until it is fixed",
                    where,
                )
                limit = zero_limit()
            result[name] = limit.text
            locations[name] = where
        return result, locations

    def _map(self, table: LuaTable) -> tuple[Any, dict[str, SourceLocation]]:
        spec = self.spec
        result: dict[str, str] = {}
        locations: dict[str, SourceLocation] = {}
        for key, item in table.entries.items():
            if not isinstance(key, str) or not key.strip():
                self._entry(table, key, f"key {describe(key)} must be a non-blank string")
                continue
            name = key.strip()
            if spec.kind is SettingKind.ENUM_MAP:
                canonical = parse_choice(name, spec.key_choices)
                if canonical is None:
                    self._entry(table, key, f'"{name}" is not one of {", ".join(spec.key_choices)}')
                    continue
                name = canonical
                if spec.key_choices == _PROVIDER_KINDS and name not in AI_STUDIO_PROVIDER_KINDS:
                    self.loader._warn(
                        "ai-studio-compat",
                        f'{self.label}["{name}"]: {name} is a toolpolicy provider kind AI Studio '
                        "does not know; AI Studio drops this entry",
                        table.locations.get(key) or self.where,
                    )
            if spec.name in _TOOL_SETTING_TABLES and not _is_tool_field(name):
                self._entry(
                    table,
                    key,
                    f'"{name}" must name a tool field as "<toolId>.<field>", e.g. "web_search.defaultLanguage"',
                )
                continue
            if spec.kind in (SettingKind.LEVEL_MAP, SettingKind.ENUM_MAP):
                level = parse_choice(item, spec.choices)
                if level is None:
                    self._entry(
                        table,
                        key,
                        f'the level for "{name}" must be one of {", ".join(spec.choices)}, not {describe(plain(item))}',
                    )
                    continue
                result[name] = level
            elif isinstance(item, str):
                result[name] = item
            elif isinstance(item, bool | int | float):
                text = _scalar_text(item)
                self.loader._warn(
                    "ai-studio-compat",
                    f'{self.label}["{name}"] is {describe(item)}; read as "{text}", but AI Studio skips values that are not strings — write "{text}"',
                    table.locations.get(key) or self.where,
                )
                result[name] = text
            else:
                self._entry(
                    table,
                    key,
                    f'the value for "{name}" must be a string, not {describe(plain(item))}',
                )
                continue
            locations[name] = table.locations.get(key) or self.where
        return result, locations


def _provider_address_problems(
    hostname: str | None, problems: list[str], values: Mapping[str, Any]
) -> None:
    """A provider's `Hostname` as the runtime will call it, for its kind and host: the runtime
    refuses what this refuses, so such an entry never applies."""
    if hostname is None:
        return
    base_url = ""
    if hostname.strip():
        try:
            base_url = read_base_url(hostname, "Hostname")
        except ValueError as error:
            problems.append(str(error))
            return
    kind, host = values["UsedLLMProvider"], values["Host"]
    if kind is not None and host is not None:
        problem = provider_address_problem(ProviderKind(kind), host, base_url)
        if problem is not None:
            problems.append(problem)


def _url_problems(url: str | None, problems: list[str], _values: Mapping[str, Any]) -> None:
    """An MCP server's Url as the runtime will connect to it."""
    if not url:
        return
    address = read_web_address(url)
    if address is None:
        problems.append(
            f"Url {shown_address(url)} is not an http:// or https:// address (a host, "
            "a port up to 65535, no control characters), e.g. http://127.0.0.1:8080/mcp"
        )
    elif address is not None and address.host is None:
        problems.append(f"Url {shown_address(url)} names no host: its host is not {HOST_RULE}")


def _unused_reason(spec: SettingKey | None, unknown: UnknownKey | None) -> str:
    if spec is None:
        return f"not a setting toolpolicy knows{unknown.hint if unknown else ''}"
    if spec.replaced_by:
        return (
            "a retired AI Studio setting that neither toolpolicy nor current AI Studio reads; "
            f"write {spec.replaced_by} instead (DefaultToolSettings when users may change it)"
        )
    return "an AI Studio setting toolpolicy does not use"


def _is_source_url(text: str) -> bool:
    parts = urlsplit(text)
    if parts.scheme.lower() in ("http", "https"):
        address = read_web_address(text)
        return address is not None and address.host is not None
    if parts.scheme == "mailto":
        return bool(parts.path.strip())
    return False


def _is_tool_field(name: str) -> bool:
    tool, _, field_name = name.partition(".")
    return bool(tool.strip() and field_name.strip())


def _scalar_text(value: bool | int | float) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _entry_locations(table: LuaTable) -> dict[str, SourceLocation]:
    if table.is_sequence():
        return {
            str(plain(v)): table.locations[i]
            for i, v in enumerate(table.sequence(), 1)
            if i in table.locations
        }
    return {str(k): loc for k, loc in table.locations.items()}


def _precheck_compatibility(file: str, text: str) -> list[Finding]:
    """AI Studio refuses a plugin whose text lacks a literal `ID = "<guid>"` before Lua runs."""
    match = _PRECHECK_ID.search(text)
    if match is None:
        reason = 'its text has no literal ID = "..." (AI Studio looks for exactly that spelling)'
    elif parse_guid(match.group(1)) is None:
        reason = f'the first literal ID = "..." in its text ("{match.group(1)[:40]}") is not a GUID'
    else:
        return []
    line = text.count("\n", 0, match.start()) + 1 if match else 0
    return [
        Finding(
            Severity.WARNING,
            "ai-studio-compat",
            f"AI Studio would refuse this plugin: {reason}; toolpolicy loads it",
            SourceLocation(file, line),
        )
    ]


def _error(code: str, message: str, location: SourceLocation | None = None) -> Finding:
    return Finding(Severity.ERROR, code, message, location)


def _where(finding: Finding) -> str:
    return f"{finding.location}: " if finding.location else ""


__all__ = [
    "AI_STUDIO_PROVIDER_KINDS",
    "AI_STUDIO_SECTIONS",
    "CAPABILITIES",
    "CATEGORIES",
    "PLUGIN_FILE_NAME",
    "TARGET_GROUPS",
    "ConfigurationPlugin",
    "PluginLoadError",
    "PluginSetting",
    "discover_plugin_files",
    "load_plugin",
    "load_plugins",
    "parse_guid",
]
