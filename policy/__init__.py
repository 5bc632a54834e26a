"""toolpolicy's policy side: decides which tools may be offered, with which settings, and why.

Start with `load_policy`: it loads the organization's and local configuration plugins, the user's
settings file and the installed tools, and gives back a `Policy` that answers, for a tool, a
provider and a part of the app, whether the tool may be offered — as an `OfferDecision` with
every check and its evidence.

    >>> from policy import load_policy, Component
    >>> policy = load_policy(org=["examples/organization"])
    >>> decision = policy.offer_decision("web_search", policy.providers[0], Component.CHAT)
    >>> decision.reason  # ToolOfferBlockReason.NONE when nothing is in the way

Importing this package is cheap: the heavier modules (Lua, pydantic models, the registry) load
when first used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING

from policy._dataclass import dataclass
from policy._lazy import lazy_attributes
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    ConfidenceScheme,
    DataSecurity,
    DataSourceRetrievalMode,
    InjectionFilterKind,
    ProviderKind,
    SettingSource,
    ToolActivation,
    ToolOfferBlockReason,
    ToolOutboundData,
)

if TYPE_CHECKING:
    from policy.config_sources import ConfigurationReference, DeliveryStatus
    from policy.configuration import (
        Finding,
        PolicyConfiguration,
        ProviderConfig,
        SkippedEntry,
        UserSettings,
    )
    from policy.decide.registry import ToolRegistry
    from policy.decision import Check, Evidence, OfferDecision
    from policy.decision_record import DecisionRecord, decision_log_schema
    from policy.definitions import SettingField, SettingsSchema, ToolDefinition, ToolFunction
    from policy.errors import ToolPolicyError, UnknownProviderError
    from policy.flow import (
        ChatHoldings,
        Effect,
        EffectsOrigin,
        FlowConflict,
        FlowRule,
        Holding,
        ToolEffects,
        flow_conflict,
    )
    from policy.identity import Caller
    from policy.injection_filter import InjectionFilterChoice, injection_filter_choice
    from policy.mcp import (
        McpAuth,
        McpAuthType,
        McpServerConfig,
        McpServerListing,
        McpTool,
        McpToolListing,
        McpTransport,
        PinState,
    )
    from policy.people import UserSettingsFolder
    from policy.tools import (
        CONFIGURED,
        DefinedTool,
        RequestExtras,
        ResolutionContext,
        Tool,
        ToolConfigurationState,
        ToolGate,
    )

__all__ = [
    "CONFIGURED",
    "Caller",
    "ChatHoldings",
    "Check",
    "Component",
    "ConfidenceLevel",
    "ConfidenceScheme",
    "ConfigurationReference",
    "DataSecurity",
    "DataSourceRetrievalMode",
    "DecisionRecord",
    "DefinedTool",
    "DeliveryStatus",
    "Effect",
    "EffectsOrigin",
    "Evidence",
    "Finding",
    "FlowConflict",
    "FlowRule",
    "Holding",
    "InjectionFilterChoice",
    "InjectionFilterKind",
    "McpAuth",
    "McpAuthType",
    "McpServerConfig",
    "McpServerListing",
    "McpTool",
    "McpToolListing",
    "McpTransport",
    "OfferDecision",
    "PinState",
    "Policy",
    "PolicyConfiguration",
    "ProviderConfig",
    "ProviderKind",
    "RequestExtras",
    "ResolutionContext",
    "SettingField",
    "SettingSource",
    "SettingsSchema",
    "SkippedEntry",
    "Tool",
    "ToolActivation",
    "ToolConfigurationState",
    "ToolDefinition",
    "ToolEffects",
    "ToolFunction",
    "ToolGate",
    "ToolOfferBlockReason",
    "ToolOutboundData",
    "ToolPolicyError",
    "ToolRegistry",
    "UnknownProviderError",
    "UserSettings",
    "UserSettingsFolder",
    "decision_log_schema",
    "flow_conflict",
    "injection_filter_choice",
    "load_policy",
]

_LAZY = {
    "Caller": "policy.identity",
    "UserSettingsFolder": "policy.people",
    "ChatHoldings": "policy.flow",
    "Effect": "policy.flow",
    "EffectsOrigin": "policy.flow",
    "FlowConflict": "policy.flow",
    "FlowRule": "policy.flow",
    "Holding": "policy.flow",
    "ToolEffects": "policy.flow",
    "flow_conflict": "policy.flow",
    "InjectionFilterChoice": "policy.injection_filter",
    "injection_filter_choice": "policy.injection_filter",
    "ConfigurationReference": "policy.config_sources",
    "DeliveryStatus": "policy.config_sources",
    "CONFIGURED": "policy.tools",
    "DefinedTool": "policy.tools",
    "ResolutionContext": "policy.tools",
    "RequestExtras": "policy.tools",
    "ToolConfigurationState": "policy.tools",
    "SettingField": "policy.definitions",
    "SettingsSchema": "policy.definitions",
    "ToolDefinition": "policy.definitions",
    "ToolFunction": "policy.definitions",
    "Finding": "policy.configuration",
    "PolicyConfiguration": "policy.configuration",
    "ProviderConfig": "policy.configuration",
    "SkippedEntry": "policy.configuration",
    "UserSettings": "policy.configuration",
    "OfferDecision": "policy.decision",
    "Check": "policy.decision",
    "Evidence": "policy.decision",
    "DecisionRecord": "policy.decision_record",
    "decision_log_schema": "policy.decision_record",
    "ToolRegistry": "policy.decide.registry",
    "Tool": "policy.tools",
    "ToolGate": "policy.tools",
    "McpServerConfig": "policy.mcp",
    "McpServerListing": "policy.mcp",
    "McpTool": "policy.mcp",
    "McpToolListing": "policy.mcp",
    "McpAuth": "policy.mcp",
    "McpAuthType": "policy.mcp",
    "McpTransport": "policy.mcp",
    "PinState": "policy.mcp",
    "ToolPolicyError": "policy.errors",
    "UnknownProviderError": "policy.errors",
}

StrPath = str | PathLike[str]


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)


@dataclass(frozen=True, slots=True)
class Policy:
    """A loaded configuration, the user's settings and the tools, ready to decide.

    Built once per configuration change; every question after that is a lookup in `registry`.
    """

    configuration: PolicyConfiguration
    user: UserSettings
    registry: ToolRegistry
    tools: tuple[Tool, ...]
    findings: tuple[Finding, ...]
    _registration: tuple[Finding, ...] = ()
    """Everything worth telling an administrator: load errors and warnings, skipped tools."""
    mcp_listings: Mapping[str, McpServerListing] = field(default_factory=dict)
    """Every configured MCP server's listing its tools came from, by server id, with where it
    came from (`McpServerListing.status`: listed live, cached at <time>, not listed: <error>)."""

    @property
    def tool_ids(self) -> tuple[str, ...]:
        return tuple(tool.definition.id for tool in self.tools)

    @property
    def providers(self) -> tuple[ProviderConfig, ...]:
        return self.configuration.providers

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity.value == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity.value != "error")

    def provider(self, id_or_name: str) -> ProviderConfig:
        """A configured provider by id (case-insensitive) or, failing that, by name.

        Raises `UnknownProviderError` (a `LookupError`) naming a near miss and the configured
        providers when none matches.
        """
        wanted = id_or_name.strip().lower()
        for provider in self.providers:
            if provider.id.lower() == wanted:
                return provider
        for provider in self.providers:
            if provider.name.strip().lower() == wanted:
                return provider
        from policy.errors import UnknownProviderError

        raise UnknownProviderError(id_or_name, self.providers)

    def offer_decision(
        self,
        tool_id: str,
        provider: ProviderConfig | None,
        component: Component = Component.CHAT,
        *,
        holdings: ChatHoldings | None = None,
    ) -> OfferDecision:
        """Every check for the tool, in order, with evidence; `holdings`: what the chat holds
        (`policy.ChatHoldings`), which the FLOW_RULE check reads."""
        if holdings is None:
            decision: OfferDecision = self.registry.offer_decision(tool_id, provider, component)
        else:
            decision = self.registry.offer_decision(tool_id, provider, component, holdings=holdings)
        return decision

    @property
    def base_tools(self) -> tuple[Tool, ...]:
        """The tools that do not come from MCP servers."""
        from policy.mcp import McpTool

        return tuple(t for t in self.tools if not isinstance(t, McpTool))

    def with_user_settings(self, user: UserSettings) -> Policy:
        """The same plugins and tools decided for other user settings (a what-if): no plugin is
        loaded again and nothing is written."""
        from policy.decide.registry import ToolRegistry
        from policy.user_settings import ignored_user_settings

        registry = ToolRegistry(self.tools, self.configuration, user)
        registration = registry.findings
        replaced = {*ignored_user_settings(self.user, self.configuration), *self._registration}
        earlier = tuple(f for f in self.findings if f not in replaced)
        return Policy(
            configuration=self.configuration,
            user=user,
            registry=registry,
            tools=self.tools,
            findings=(*earlier, *ignored_user_settings(user, self.configuration), *registration),
            _registration=registration,
            mcp_listings=self.mcp_listings,
        )

    def with_tools(self, tools: Sequence[Tool]) -> Policy:
        """The same configuration over other tools (e.g. MCP tools listed anew): the registry is
        rebuilt once, and its registration findings replace the previous ones."""
        from policy.decide.registry import ToolRegistry

        registry = ToolRegistry(tools, self.configuration, self.user)
        registration = registry.findings
        earlier = tuple(f for f in self.findings if f not in self._registration)
        return Policy(
            configuration=self.configuration,
            user=self.user,
            registry=registry,
            tools=tuple(tools),
            findings=(*earlier, *registration),
            _registration=registration,
            mcp_listings=self.mcp_listings,
        )

    def with_mcp_listings(self, listings: Mapping[str, McpServerListing]) -> Policy:
        """The same configuration with the MCP tools of these listings (by server id; a server
        missing there keeps its listing): pins and filters are checked again over them."""
        from dataclasses import replace

        from policy.mcp import mcp_tools

        known = {**self.mcp_listings, **listings}
        servers = self.configuration.mcp_servers
        tools = (*self.base_tools, *mcp_tools(servers, known))
        return replace(
            self.with_tools(tools),
            mcp_listings={s.id: known[s.id] for s in servers if s.id in known},
        )


def load_policy(
    org: Iterable[StrPath] = (),
    local: Iterable[StrPath] = (),
    user_settings: StrPath | None = None,
    *,
    state_dir: StrPath | None = None,
    tools: Sequence[Tool] | None = None,
    extra_tools: Sequence[Tool] = (),
    use_entry_points: bool = True,
    mcp_listings: Mapping[str, McpServerListing] | None = None,
    mcp_listing_dir: StrPath | None = None,
    executable_tools: bool = True,
    keep_last_known_good: bool = True,
) -> Policy:
    """Load plugins (a plugin.lua, a plugin folder or a folder of plugin folders), user settings
    and tools, and build the registry.

    Bad plugins never raise: they become error findings, and a broken organization plugin makes
    the policy fail closed. A broken user settings file raises `UserSettingsError` (its message
    names the file and line). `tools` replaces discovery (an embedding app passing its own);
    `extra_tools` are registered next to the discovered ones (`policy --tools-file`).
    With `state_dir`, the configurations `policy fetch` put in force there load first, as
    organization plugins (one whose copy is damaged fails closed: its last-known-good copy, else
    every tool switched off), and the tools of the configuration's MCP servers come from their last
    listings cached there (`mcp_listings`, by server id, replaces the cache; `mcp_listing_dir`
    reads it from another folder, as the other side of `policy diff` does; the runtime lists
    servers live, see `runtime.McpSessions`). `executable_tools=False` suits a caller that
    only decides and never runs a tool: the built-in tools are their policy-side halves (the
    same decisions, without importing the runtime's tool modules). `keep_last_known_good=False`
    reads `state_dir` without writing to it (no copy of what loads is kept, the copies kept
    stand in as always): the candidate side of `policy diff`.
    """
    from policy.merge import load_configuration
    from policy.user_settings import ignored_user_settings, load_user_settings

    organization = [Path(p) for p in org]
    unreadable: list[tuple[Path, str, str]] = []
    if state_dir is not None:
        from policy.config_sources import delivered_configurations

        delivered = delivered_configurations(Path(state_dir))
        organization = [*delivered.roots, *organization]
        unreadable = [(d.home, d.id, d.message) for d in delivered.damaged]
    configuration = load_configuration(
        organization,
        [Path(p) for p in local],
        Path(state_dir) if state_dir is not None else None,
        unreadable=unreadable,
        keep_copies=keep_last_known_good,
    )
    user = load_user_settings(Path(user_settings) if user_settings is not None else None)
    # Imported only now: the plugins above are run by the Lua worker, forked on first use, and a
    # process without pydantic and the tool-definition models yet is cheaper to fork (less to
    # copy at the fork and after it).
    from policy.decide.registry import ToolRegistry
    from policy.discovery import discover_tools

    discovery_findings: tuple[Finding, ...] = ()
    if tools is None:
        discovered = discover_tools(use_entry_points=use_entry_points, executable=executable_tools)
        chosen, discovery_findings = discovered.tools, discovered.findings
    else:
        chosen = tuple(tools)
    chosen = (*chosen, *extra_tools)
    listings: dict[str, McpServerListing] = {}
    if configuration.mcp_servers:
        from policy.mcp import cached_listings, mcp_tools

        listing_home = mcp_listing_dir if mcp_listing_dir is not None else state_dir
        listings = (
            dict(mcp_listings)
            if mcp_listings is not None
            else cached_listings(
                Path(listing_home) if listing_home is not None else None,
                configuration.mcp_servers,
            )
        )
        chosen = (*chosen, *mcp_tools(configuration.mcp_servers, listings))
    registry = ToolRegistry(chosen, configuration, user)
    registration = registry.findings
    return Policy(
        configuration=configuration,
        user=user,
        registry=registry,
        tools=chosen,
        findings=(
            *configuration.findings,
            *ignored_user_settings(user, configuration),
            *discovery_findings,
            *registration,
        ),
        _registration=registration,
        mcp_listings=listings,
    )
