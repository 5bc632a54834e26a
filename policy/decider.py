"""The offer decider: the ordered checks that say whether a tool may be offered.

For one tool, provider, component and outbound restriction: tools switched on, the model calls
tools, visibility, switch-off, availability, approval, configuration, provider confidence and
where the tool sends data — each a `Check` with its evidence, the first failure the reason.
The facts come precomputed from the `ToolCatalog`; each decision is cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from policy.capabilities import ToolCallingAvailability, can_use_tools
from policy.catalog import ToolCatalog, ToolFacts
from policy.configuration import (
    PolicyConfiguration,
    ProviderConfig,
    UserSettings,
)
from policy.decision import (
    Check,
    EffectiveRetrievalMode,
    Evidence,
    OfferDecision,
    ProviderSummary,
)
from policy.provenance import Origin, SourceLocation
from policy.resolve import (
    PRESELECTED_RETRIEVAL_MODE,
    SOURCE_EDITABLE,
    SOURCE_LOCKED,
    confidence_scheme,
    provider_confidence_under,
    tools_enabled,
)
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    DataSourceRetrievalMode,
    OutboundDataRestriction,
    ToolOfferBlockReason,
    is_outbound_data_allowed,
)

_R = ToolOfferBlockReason
TRUSTED_PROVIDER_IDS = "DataSourceSecuritySettings.TrustedProviderIds"


def is_trusted_provider(
    configuration: PolicyConfiguration, provider: ProviderConfig | None
) -> bool:
    """In `DataSourceSecuritySettings.TrustedProviderIds` (case-insensitive): counts as
    self-hosted for data security, never as confidence. The one rule the decider and the
    injection filter's provider check ask."""
    if provider is None:
        return False
    setting = configuration.setting(TRUSTED_PROVIDER_IDS)
    value = setting.value if setting is not None else ()
    ids = (value,) if isinstance(value, str) else tuple(value or ())
    return provider.id.casefold() in {str(i).casefold() for i in ids}


@dataclass(frozen=True, slots=True)
class ProviderOfferFacts:
    """What an offer decision needs about one provider (the runtime's checks need less:
    `policy.provider_facts.ProviderFacts`)."""

    key: tuple[Any, ...]
    """Everything about the provider a decision depends on (the decision cache key)."""
    summary: ProviderSummary | None
    availability: ToolCallingAvailability
    capability_check: Check
    confidence: ConfidenceLevel


class OfferDecider:
    """Every offer check in order, for (tool, provider, component, outbound restriction), over a
    `ToolCatalog`: the verdict with its evidence, cached per question."""

    def __init__(
        self, catalog: ToolCatalog, configuration: PolicyConfiguration, user: UserSettings
    ) -> None:
        self._catalog = catalog
        self.configuration = configuration
        self._enabled, self._enabled_evidence = tools_enabled(configuration, user)
        self.global_check = self._build_global_check()
        """TOOLS_SWITCHED_OFF, the same for every tool of this configuration."""
        self._scheme = confidence_scheme(configuration, user)
        self._decisions: dict[tuple[Any, ...], OfferDecision] = {}
        self._providers: dict[tuple[Any, ...], ProviderOfferFacts] = {}
        self._provider_objects: dict[int, tuple[ProviderConfig | None, ProviderOfferFacts]] = {}
        self._confidence_checks: dict[tuple[str, ConfidenceLevel], Check] = {}

    def _build_global_check(self) -> Check:
        """TOOLS_SWITCHED_OFF: a broken organization plugin, or EnableTools = false."""
        broken = [b for b in self.configuration.broken_organization_plugins]
        if self.configuration.fails_closed:
            evidence = tuple(
                Evidence(
                    "organization plugin",
                    b.message,
                    "did not load; no last known good copy",
                    Origin(
                        b.plugin_id or b.path,
                        b.plugin_name or b.path,
                        b.location or SourceLocation(b.path, 0),
                    ),
                )
                for b in broken
                if not b.replaced_by_last_known_good
            )
            names = ", ".join(
                b.plugin_name or b.path for b in broken if not b.replaced_by_last_known_good
            )
            return Check(
                _R.TOOLS_SWITCHED_OFF,
                False,
                f"An organization plugin did not load ({names}), so every tool stays off until "
                "it loads again.",
                evidence,
            )
        if not self._enabled:
            return Check(
                _R.TOOLS_SWITCHED_OFF,
                False,
                "Tools are switched off altogether (DataTools.EnableTools = false).",
                self._enabled_evidence,
            )
        return Check(_R.TOOLS_SWITCHED_OFF, True, "Tools are switched on.", self._enabled_evidence)

    def provider_facts(self, provider: ProviderConfig | None) -> ProviderOfferFacts:
        """What a decision depends on about a provider, computed once per provider."""
        seen = self._provider_objects.get(id(provider))
        if seen is not None and seen[0] is provider:
            return seen[1]
        facts = self._provider_facts_by_value(provider)
        self._provider_objects[id(provider)] = (provider, facts)
        return facts

    def _provider_facts_by_value(self, provider: ProviderConfig | None) -> ProviderOfferFacts:
        key: tuple[Any, ...] = (
            ()
            if provider is None
            else (
                provider.id,
                provider.kind,
                provider.model,
                tuple(sorted(provider.capability_overrides.items())),
            )
        )
        cached = self._providers.get(key)
        if cached is not None:
            return cached
        availability = can_use_tools(provider)
        if provider is None:
            summary = None
            confidence = ConfidenceLevel.NONE
        else:
            confidence = provider_confidence_under(
                provider.kind, self._scheme.scheme, self._scheme.custom
            )
            summary = ProviderSummary(provider.id, provider.kind, provider.model, confidence)
        evidence: tuple[Evidence, ...] = ()
        if provider is not None:
            evidence = (
                Evidence("provider.model", provider.model, "provider settings", provider.origin),
                *(
                    Evidence(f"CapabilityOverrides.{k}", v, "provider settings", provider.origin)
                    for k, v in sorted(provider.capability_overrides.items())
                ),
            )
        check = Check(
            _R.MODEL_CANNOT_USE_TOOLS,
            availability.is_available,
            "The model can call tools." if availability.is_available else availability.message,
            evidence,
        )
        facts = ProviderOfferFacts(key, summary, availability, check, confidence)
        self._providers[key] = facts
        return facts

    def _confidence_check(self, facts: ToolFacts, confidence: ConfidenceLevel) -> Check:
        key = (facts.definition.id, confidence)
        cached = self._confidence_checks.get(key)
        if cached is not None:
            return cached
        minimum = facts.minimum.level
        passed = minimum is ConfidenceLevel.NONE or confidence >= minimum
        if minimum is ConfidenceLevel.NONE:
            detail = "The tool requires no particular provider confidence."
        elif passed:
            detail = (
                f"The provider's confidence {confidence.name} meets the minimum {minimum.name}."
            )
        else:
            detail = (
                f"The provider's confidence {confidence.name} is below the minimum "
                f"{minimum.name} this tool requires ({facts.minimum.source})."
            )
        check = Check(
            _R.PROVIDER_CONFIDENCE_TOO_LOW,
            passed,
            detail,
            (*facts.minimum.evidence, *self._scheme.evidence),
        )
        self._confidence_checks[key] = check
        return check

    # --- decisions -------------------------------------------------------------------------

    def offer_decision(
        self,
        tool_id: str,
        provider: ProviderConfig | None,
        component: Component = Component.CHAT,
        *,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
    ) -> OfferDecision:
        """Every offer check in order, with evidence; the reason is the first failure."""
        return self.decision(
            tool_id, self.provider_facts(provider), component, outbound_restriction
        )

    def decision(
        self,
        tool_id: str,
        provider: ProviderOfferFacts,
        component: Component,
        restriction: OutboundDataRestriction,
    ) -> OfferDecision:
        """`offer_decision` for provider facts already looked up (cached)."""
        key = (tool_id, provider.key, component, restriction)
        cached = self._decisions.get(key)
        if cached is None:
            cached = self._decide(tool_id, provider, component, restriction)
            self._decisions[key] = cached
        return cached

    def _decide(
        self,
        tool_id: str,
        provider: ProviderOfferFacts,
        component: Component,
        restriction: OutboundDataRestriction,
    ) -> OfferDecision:
        facts = self._catalog.facts(tool_id)
        if facts is None:
            refusal = self._catalog.refused.get(tool_id)
            known = Check(
                _R.NOT_AVAILABLE_HERE,
                False,
                f"This installation does not know a tool '{tool_id}'."
                if refusal is None
                else f"The definition of '{tool_id}' is refused, so it is never offered: {refusal}.",
            )
            unknown = "Not evaluated: the tool is unknown."
            later = tuple(
                Check(reason, False, unknown)
                for reason in (
                    _R.TOOL_SWITCHED_OFF,
                    _R.NOT_AVAILABLE_HERE,
                    _R.DEFINITION_NOT_APPROVED,
                    _R.NOT_CONFIGURED,
                    _R.PROVIDER_CONFIDENCE_TOO_LOW,
                    _R.OUTBOUND_DATA_RESTRICTED,
                )
            )
            checks = (self.global_check, provider.capability_check, known, *later)
        else:
            visible = component in facts.visible_in
            visibility = Check(
                _R.NOT_AVAILABLE_HERE,
                visible,
                f"It is meant for {component.value}."
                if visible
                else f"It is not meant for {component.value}.",
                facts.visibility_evidence,
            )
            outbound_ok = is_outbound_data_allowed(
                restriction, facts.tool.outbound_data, facts.tool.enforces_outbound_data_restriction
            )
            outbound = Check(
                _R.OUTBOUND_DATA_RESTRICTED,
                outbound_ok,
                "Where it sends data is allowed in this chat."
                if outbound_ok
                else f"This chat read a mailbox ({restriction.name}), and the tool would send "
                "data further than allowed; a new chat can use it again.",
                (Evidence("outbound data", facts.tool.outbound_data.name, "tool"),),
            )
            checks = (
                self.global_check,
                provider.capability_check,
                visibility,
                facts.switched_off_check,
                facts.available_check,
                facts.approved_check,
                facts.configured_check,
                self._confidence_check(facts, provider.confidence),
                outbound,
            )
        failed = next((c for c in checks if not c.passed), None)
        reason = failed.guards if failed is not None else _R.NONE
        message = failed.detail if failed is not None else "Nothing is in the way."
        return OfferDecision(tool_id, component, provider.summary, reason, message, checks)

    @property
    def tools_enabled(self) -> bool:
        return self.global_check.passed

    def is_trusted_provider(self, provider: ProviderConfig | None) -> bool:
        """In `DataSourceSecuritySettings.TrustedProviderIds` (case-insensitive). Counts only for
        data-source security, never as confidence."""
        return is_trusted_provider(self.configuration, provider)

    def provider_confidence(self, provider: ProviderConfig | None) -> ConfidenceLevel:
        return self.provider_facts(provider).confidence

    # --- retrieval mode -------------------------------------------------------------------

    def retrieval_mode(
        self,
        preferred: DataSourceRetrievalMode,
        provider: ProviderConfig | None,
        component: Component = Component.CHAT,
    ) -> EffectiveRetrievalMode:
        """semantic_search's offer decision decides; its reason is reported whatever the preference."""
        from policy.builtin import SEMANTIC_SEARCH

        decision = self.offer_decision(SEMANTIC_SEARCH, provider, component)
        searches_itself = preferred is DataSourceRetrievalMode.SEMANTIC_SEARCH and decision.offered
        mode = (
            DataSourceRetrievalMode.SEMANTIC_SEARCH
            if searches_itself
            else DataSourceRetrievalMode.EVERY_MESSAGE
        )
        return EffectiveRetrievalMode(mode, decision.reason, decision)

    def preselected_retrieval_mode(self) -> tuple[DataSourceRetrievalMode, Evidence]:
        """The retrieval mode new chats start with: the organization's choice, else SEMANTIC_SEARCH."""
        setting = self.configuration.setting(PRESELECTED_RETRIEVAL_MODE)
        if setting is not None and isinstance(setting.value, str):
            text = setting.value.strip().upper()
            if text in DataSourceRetrievalMode.__members__:
                mode = DataSourceRetrievalMode[text]
                source = SOURCE_LOCKED if setting.locked else SOURCE_EDITABLE
                return mode, Evidence(setting.key, mode.value, source, setting.origin)
        return DataSourceRetrievalMode.SEMANTIC_SEARCH, Evidence(
            PRESELECTED_RETRIEVAL_MODE,
            DataSourceRetrievalMode.SEMANTIC_SEARCH.value,
            "built-in default",
        )
