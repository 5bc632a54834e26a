"""The registry: the one place every question about offering a tool is asked.

`ToolRegistry` is built once per configuration change and answers through its three parts,
each with one job: the `ToolCatalog` (`policy.catalog`: which tools exist, their collections,
settings, configuration states and the selection rules, precomputed), the `OfferDecider`
(`policy.decider`: the ordered offer checks for a tool, provider, component and outbound
restriction, with evidence, cached) and the `RequestPlanner` (`policy.request_planner`: a
request's candidates, the decider's verdict on each and what each passing tool offers now).
Explain, lint, the retrieval-mode decision, replay and request preparation all ask it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from policy.catalog import IMPLEMENTATIONS_SOURCE, ToolCatalog, UnknownToolError, flow_rule
from policy.configuration import Finding, PolicyConfiguration, ProviderConfig, UserSettings
from policy.decider import TRUSTED_PROVIDER_IDS, OfferDecider
from policy.decision import (
    CatalogEntry,
    EffectiveRetrievalMode,
    Evidence,
    OfferDecision,
    RunnableTools,
)
from policy.definitions import DefinitionSource, ToolCollectionDefinition, ToolDefinition
from policy.flow import UNDECLARED, ChatHoldings, FlowConflict, FlowRule, ToolEffects, flow_conflict
from policy.request_planner import TOOL_POLICY_HEADER, TOOL_POLICY_INTRO, RequestPlanner
from policy.resolve import MinimumConfidence, ResolvedSettings, SecretReader
from policy.tools import RequestExtras, Tool, ToolConfigurationState
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    DataSourceRetrievalMode,
    OutboundDataRestriction,
)

__all__ = [
    "IMPLEMENTATIONS_SOURCE",
    "TOOL_POLICY_HEADER",
    "TOOL_POLICY_INTRO",
    "TRUSTED_PROVIDER_IDS",
    "ToolRegistry",
    "UnknownToolError",
]


class ToolRegistry:
    """Catalog, offer checks and request planning for one configuration (see the module)."""

    def __init__(
        self,
        tools: Sequence[Tool],
        configuration: PolicyConfiguration,
        user: UserSettings,
        *,
        definition_sources: Sequence[DefinitionSource] = (),
        collections: Sequence[ToolCollectionDefinition] = (),
        secret_reader: SecretReader | None = None,
    ) -> None:
        self.configuration = configuration
        self.user = user
        self._catalog = ToolCatalog(
            tools,
            configuration,
            user,
            definition_sources=definition_sources,
            collections=collections,
            secret_reader=secret_reader,
        )
        self._decider = OfferDecider(self._catalog, configuration, user)
        self._planner = RequestPlanner(self._catalog, self._decider)
        self.findings: tuple[Finding, ...] = self._catalog.findings

    # --- decisions (the decider) -------------------------------------------------------------

    def offer_decision(
        self,
        tool_id: str,
        provider: ProviderConfig | None,
        component: Component = Component.CHAT,
        *,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
    ) -> OfferDecision:
        """Every offer check in order, with evidence; the reason is the first failure."""
        return self._decider.offer_decision(
            tool_id, provider, component, outbound_restriction=outbound_restriction
        )

    @property
    def tools_enabled(self) -> bool:
        return self._decider.tools_enabled

    def is_trusted_provider(self, provider: ProviderConfig | None) -> bool:
        """In `DataSourceSecuritySettings.TrustedProviderIds` (case-insensitive). Counts only for
        data-source security, never as confidence."""
        return self._decider.is_trusted_provider(provider)

    def provider_confidence(self, provider: ProviderConfig | None) -> ConfidenceLevel:
        return self._decider.provider_confidence(provider)

    def retrieval_mode(
        self,
        preferred: DataSourceRetrievalMode,
        provider: ProviderConfig | None,
        component: Component = Component.CHAT,
    ) -> EffectiveRetrievalMode:
        """semantic_search's offer decision decides; its reason is reported whatever the preference."""
        return self._decider.retrieval_mode(preferred, provider, component)

    def preselected_retrieval_mode(self) -> tuple[DataSourceRetrievalMode, Evidence]:
        """The retrieval mode new chats start with: the organization's choice, else SEMANTIC_SEARCH."""
        return self._decider.preselected_retrieval_mode()

    # --- requests (the planner) --------------------------------------------------------------

    def request_decisions(
        self,
        selected_ids: Iterable[str],
        provider: ProviderConfig | None,
        component: Component,
        *,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
    ) -> tuple[OfferDecision, ...]:
        """The checks' verdict on every candidate of one request, before any tool is asked what
        it offers: what `runnable_tools` decides first, and what `policy replay` re-decides."""
        return self._planner.request_decisions(
            selected_ids, provider, component, outbound_restriction=outbound_restriction
        )

    async def runnable_tools(
        self,
        selected_ids: Iterable[str],
        provider: ProviderConfig | None,
        component: Component,
        *,
        may_run_tools: bool = True,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
        retrieval_mode: DataSourceRetrievalMode = DataSourceRetrievalMode.SEMANTIC_SEARCH,
        chat_id: str = "",
        extras: RequestExtras | None = None,
    ) -> RunnableTools:
        """The tools one request offers: checks first, then each passing tool is asked what it
        offers; a failing resolution costs only that tool."""
        return await self._planner.runnable_tools(
            selected_ids,
            provider,
            component,
            may_run_tools=may_run_tools,
            outbound_restriction=outbound_restriction,
            retrieval_mode=retrieval_mode,
            chat_id=chat_id,
            extras=extras,
        )

    @staticmethod
    def tool_instructions(offered: Sequence[ToolDefinition]) -> str:
        """One section per offered tool with non-empty instructions, under one header."""
        return RequestPlanner.tool_instructions(offered)

    # --- the catalog ---------------------------------------------------------------------------

    def is_known(self, tool_or_collection_id: str) -> bool:
        return self._catalog.is_known(tool_or_collection_id)

    def collection_id(self, tool_id: str) -> str:
        """A tool's collection id; a collection id or an unknown id comes back unchanged."""
        return self._catalog.collection_id(tool_id)

    def normalize_selection(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Collection ids, de-duplicated in first-seen order; context tools dropped; unknown kept;
        a tool brings the companions it declares along (search_confluence: read_web_page)."""
        return self._catalog.normalize_selection(ids)

    def expand_selection(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Normalize, then each collection becomes its tools in listed order."""
        return self._catalog.expand_selection(ids)

    def default_tool_ids(self, component: Component) -> tuple[str, ...]:
        """The component's default selection (user's stored choice unless locked), normalized."""
        return self._catalog.default_tool_ids(component)

    @property
    def request_extras(self) -> RequestExtras:
        """What the tools' settings tell every request (each tool's `request_extras(settings)`)."""
        return self._catalog.request_extras

    def catalog(self, component: Component | None = None) -> tuple[CatalogEntry, ...]:
        """One entry per collection or standalone tool, sorted by display name.

        For a component: only selectable tools visible there. Without one (the app settings
        list): every available tool, context tools included, so they can be switched off.
        """
        return self._catalog.catalog(component, tools_on=self._decider.global_check.passed)

    def definitions(self, component: Component | None = None) -> tuple[ToolDefinition, ...]:
        """Available definitions (visible in `component` if given), by display name."""
        return self._catalog.definitions(component)

    def definition(self, tool_id: str) -> ToolDefinition:
        return self._catalog.definition(tool_id)

    def tool(self, tool_id: str) -> Tool:
        return self._catalog.tool(tool_id)

    def tool_named(self, function_name: str) -> Tool | None:
        """The registered tool whose function has this name, offered or not (None: unknown)."""
        return self._catalog.tool_named(function_name)

    @property
    def tool_ids(self) -> tuple[str, ...]:
        """Every registered tool id, available or not, by display name."""
        return self._catalog.tool_ids

    def collection_tool_ids(self, collection_id: str) -> tuple[str, ...]:
        return self._catalog.collection_tool_ids(collection_id)

    def settings(self, tool_id: str) -> ResolvedSettings:
        """Every field of the tool, resolved, with its source and provenance (secrets masked)."""
        return self._catalog.settings(tool_id)

    def configuration_state(self, tool_id: str) -> ToolConfigurationState:
        return self._catalog.configuration_state(tool_id)

    def effective_minimum_confidence(self, tool_id: str) -> MinimumConfidence:
        """The minimum that applies to the tool (its collection's), with source and evidence."""
        return self._catalog.effective_minimum_confidence(tool_id)

    @property
    def flow_rule(self) -> FlowRule:
        """`DataTools.FlowRule` in force (OFF when not set)."""
        return flow_rule(self.configuration)

    def effects(self, tool_id: str) -> ToolEffects:
        """A tool's effects with where they come from (definition, MCP annotations, plugin.lua
        file:line, or nothing declared: all four); computed once per configuration."""
        return self._catalog._facts_of(tool_id).effects

    def flow_conflict(self, tool_id: str, holdings: ChatHoldings) -> FlowConflict | None:
        """Whether the tool is in conflict with what the chat holds while a flow rule is on
        (None: no conflict, or the rule is OFF). BLOCK refuses such a tool, APPROVE asks for
        each of its calls; an unknown tool counts as declaring nothing."""
        if self.flow_rule is FlowRule.OFF:
            return None
        facts = self._catalog.facts(tool_id)
        effects = facts.effects if facts is not None else UNDECLARED
        return flow_conflict(tool_id, effects, holdings)
