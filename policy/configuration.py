"""The merged configuration the policy decides on: plugins combined, each value with its provenance.

Produced by `policy.merge` from loaded plugins (and read by `policy.resolve`, `policy.decide`,
lint and explain); nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from policy._dataclass import dataclass
from policy.provenance import Origin, SourceLocation
from policy.vocabulary import ConfidenceLevel, DataSecurity, PluginOrigin, ProviderKind

if TYPE_CHECKING:
    from policy.mcp import McpServerConfig
    from policy.plugins import ConfigurationPlugin


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem found while loading or linting; `code` is stable for tooling (e.g. "unknown-tool-id")."""

    severity: Severity
    code: str
    message: str
    location: SourceLocation | None = None


@dataclass(frozen=True, slots=True)
class Beaten:
    """A value that lost the merge, and who set it."""

    value: Any
    origin: Origin


@dataclass(frozen=True, slots=True)
class ManagedSetting:
    """One `CONFIG["SETTINGS"]` key after the merge.

    `value` is typed by the key's parser (bool, str, tuple[str, ...], Mapping[str, str], ...).
    `locked` is False when `.AllowUserOverride = true` made it an editable default.
    For tables, `entry_locations` gives the line of each entry.
    """

    key: str
    value: Any
    locked: bool
    origin: Origin
    beaten: tuple[Beaten, ...] = ()
    entry_locations: Mapping[str, SourceLocation] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SecretValue:
    """An `ENC:v1:` value as configured. The plaintext is only produced on demand, never stored here."""

    encrypted: str

    def __repr__(self) -> str:
        from policy.redaction import MASK

        return f"SecretValue({MASK})"

    __str__ = __repr__


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """An entry of `CONFIG["LLM_PROVIDERS"]`."""

    id: str
    name: str
    kind: ProviderKind
    model: str
    host: str = ""
    hostname: str = ""
    capability_overrides: Mapping[str, bool] = field(default_factory=dict)
    api_key: SecretValue | None = None
    additional: Mapping[str, Any] = field(default_factory=dict)
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class DataSourceConfig:
    """An entry of `CONFIG["DATA_SOURCES"]` (kept as data; semantic_search describes them)."""

    id: str
    name: str
    kind: str
    security: DataSecurity = DataSecurity.NOT_SPECIFIED
    raw: Mapping[str, Any] = field(default_factory=dict)
    origin: Origin | None = None
    minimum_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    """`MinimumProviderConfidence`: the lowest provider confidence that may search it."""


@dataclass(frozen=True, slots=True)
class ChatTemplateConfig:
    """An entry of `CONFIG["CHAT_TEMPLATES"]`. `tool_ids` None = says nothing; () = wants no tools."""

    id: str
    name: str
    tool_ids: tuple[str, ...] | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    origin: Origin | None = None


@dataclass(frozen=True, slots=True)
class SkippedEntry:
    """A `CONFIG[...]` entry (a provider, MCP server, data source or chat template) that is not in
    force because something in it is wrong: explain, `policy mcp list` and the status page name
    it where its absence matters ("no providers")."""

    section: str
    """`LLM_PROVIDERS`, `MCP_SERVERS`, `DATA_SOURCES` or `CHAT_TEMPLATES`."""
    label: str
    """How the entry is named in messages, e.g. `CONFIG["MCP_SERVERS"] entry 1`."""
    name: str
    """Its `InstanceName` or `Name` where readable, else empty."""
    reason: str
    location: SourceLocation
    plugin_name: str = ""
    by_organization: bool = True

    @property
    def message(self) -> str:
        """How `policy check` reports it (at `location`)."""
        return f"{self.label} skipped: {self.reason}"

    def __str__(self) -> str:
        named = f" ({self.name})" if self.name else ""
        return f"{self.location}: {self.label}{named} skipped: {self.reason}"


@dataclass(frozen=True, slots=True)
class BrokenPlugin:
    """An organization plugin that failed to load. Without a last-known-good copy, tools are off."""

    path: str
    message: str
    plugin_id: str = ""
    plugin_name: str = ""
    location: SourceLocation | None = None
    replaced_by_last_known_good: bool = False


@dataclass(frozen=True, slots=True)
class PluginInForce:
    """A plugin that took part in the merge, as a decision record names it.

    `sha256` is over its Lua files (relative path and bytes); `last_known_good` is True when the
    plugin itself did not load and its kept copy stood in.
    """

    id: str
    name: str
    origin: PluginOrigin
    priority: int
    sha256: str
    last_known_good: bool = False


@dataclass(frozen=True, slots=True)
class PolicyConfiguration:
    """Everything the plugins say, merged. Absent keys are absent (not empty)."""

    settings: Mapping[str, ManagedSetting] = field(default_factory=dict)
    providers: tuple[ProviderConfig, ...] = ()
    data_sources: tuple[DataSourceConfig, ...] = ()
    chat_templates: tuple[ChatTemplateConfig, ...] = ()
    mcp_servers: tuple[McpServerConfig, ...] = ()
    broken_organization_plugins: tuple[BrokenPlugin, ...] = ()
    findings: tuple[Finding, ...] = ()
    plugins: tuple[Origin, ...] = ()
    """The plugins that took part, in the order they were applied."""
    applied_plugins: tuple[ConfigurationPlugin, ...] = ()
    """The same plugins whole (origin, priority, version, what each one asked for), for
    lint and the status page."""
    plugins_in_force: tuple[PluginInForce, ...] = ()
    """The same plugins with their origin, priority and content digest (for decision records)."""
    revision: str = ""
    """SHA-256 over the effective plugins (order, origin, id, content) and the organization
    plugins that failed closed: equal revisions decide alike. See `configuration_revision`."""

    def setting(self, key: str) -> ManagedSetting | None:
        return self.settings.get(key)

    def skipped_entries(self, section: str | None = None) -> tuple[SkippedEntry, ...]:
        """Every entry of the plugins in force that was skipped (of one `section`, when given)."""
        return tuple(
            entry
            for plugin in self.applied_plugins
            for entry in plugin.skipped
            if section is None or entry.section == section
        )

    @property
    def fails_closed(self) -> bool:
        """True when a broken organization plugin has no last-known-good copy: all tools are off."""
        return any(not b.replaced_by_last_known_good for b in self.broken_organization_plugins)


@dataclass(frozen=True, slots=True)
class UserSettings:
    """The user's YAML file, parsed. None/empty = the user said nothing there."""

    tools_enabled: bool | None = None
    tool_settings: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    minimum_provider_confidence: Mapping[str, str] = field(default_factory=dict)
    default_tool_ids_by_component: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    confidence_scheme: str | None = None
    path: str | None = None
    locations: Mapping[str, SourceLocation] = field(default_factory=dict)
    """Dotted key (e.g. "tools.settings.web_search.searxng.baseUrl") → where it stands in the file."""
