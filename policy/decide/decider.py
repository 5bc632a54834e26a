"""The offer decider: every offer check (`policy.decide.order.CHECKS`) asked in order for a tool,
provider, component and outbound restriction, each verdict with its evidence; the first failure
is the decision's reason.

A check's verdict is computed once per what it depends on (its `Scope`) and looked up after;
whole decisions are cached per question, so a repeated question is one lookup.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from policy.catalog import ToolCatalog
from policy.configuration import ProviderConfig
from policy.decide.check import Question, Scope, Setup
from policy.decide.order import CHECKS
from policy.decide.provider import (
    ProviderOfferFacts,
    is_trusted_provider,
    provider_key,
    provider_offer_facts,
)
from policy.decision import Check, EffectiveRetrievalMode, Evidence, OfferDecision
from policy.flow import NO_HOLDINGS, ChatHoldings
from policy.resolve import (
    PRESELECTED_RETRIEVAL_MODE,
    SOURCE_EDITABLE,
    SOURCE_LOCKED,
    confidence_scheme,
    tools_enabled,
)
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    DataSourceRetrievalMode,
    OutboundDataRestriction,
    ToolOfferBlockReason,
)

_BY_SCOPE = {scope: tuple(i for i, c in enumerate(CHECKS) if c.scope is scope) for scope in Scope}


class OfferDecider(ToolCatalog):
    """The catalog of one configuration and every offer check over it, in order, with evidence,
    cached per question."""

    def _prepare(self) -> None:
        super()._prepare()
        configuration, user = self.configuration, self.user
        enabled, enabled_evidence = tools_enabled(configuration, user)
        self._setup = Setup(
            configuration, enabled, enabled_evidence, confidence_scheme(configuration, user)
        )
        self._decided: dict[tuple[Any, ...], OfferDecision] = {}
        self._providers: dict[tuple[Any, ...], ProviderOfferFacts] = {}
        self._provider_objects: dict[int, tuple[ProviderConfig | None, ProviderOfferFacts]] = {}
        self._once: dict[str, tuple[Check | None, ...]] = {}
        self._pairs: dict[tuple[int, str, tuple[Any, ...]], Check] = {}
        nobody = self.provider_facts(None)
        question = Question(
            "", None, nobody, Component.NONE, OutboundDataRestriction.UNRESTRICTED, self._setup
        )
        self._configuration_verdicts = {
            i: CHECKS[i].verdict(question) for i in _BY_SCOPE[Scope.CONFIGURATION]
        }
        for facts in self.ordered:  # a tool that waits to read a secret is judged when asked
            if facts.resolved_at_build:
                tool_id = facts.definition.id
                asked = replace(question, tool_id=tool_id, tool=facts)
                self._once[tool_id] = self._verdicts_once(asked)

    # --- providers --------------------------------------------------------------------------

    def provider_facts(self, provider: ProviderConfig | None) -> ProviderOfferFacts:
        """What a decision depends on about a provider, computed once per provider."""
        seen = self._provider_objects.get(id(provider))
        if seen is not None and seen[0] is provider:
            return seen[1]
        key = provider_key(provider)
        facts = self._providers.get(key)
        if facts is None:
            facts = provider_offer_facts(provider, key, self._setup.scheme)
            self._providers[key] = facts
        self._provider_objects[id(provider)] = (provider, facts)
        return facts

    @property
    def tools_enabled(self) -> bool:
        """Tools are switched on at all (the configuration-wide check passes)."""
        return all(c.passed for c in self._configuration_verdicts.values())

    def is_trusted_provider(self, provider: ProviderConfig | None) -> bool:
        """In `DataSourceSecuritySettings.TrustedProviderIds` (case-insensitive). Counts only for
        data-source security, never as confidence."""
        return is_trusted_provider(self.configuration, provider)

    def provider_confidence(self, provider: ProviderConfig | None) -> ConfidenceLevel:
        return self.provider_facts(provider).confidence

    # --- decisions --------------------------------------------------------------------------

    def offer_decision(
        self,
        tool_id: str,
        provider: ProviderConfig | None,
        component: Component = Component.CHAT,
        *,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
        holdings: ChatHoldings = NO_HOLDINGS,
    ) -> OfferDecision:
        """Every offer check in order, with evidence; the reason is the first failure.
        `holdings`: what the chat holds (`policy.flow`), which the FLOW_RULE check reads."""
        return self.decision(
            tool_id, self.provider_facts(provider), component, outbound_restriction, holdings
        )

    def decision(
        self,
        tool_id: str,
        provider: ProviderOfferFacts,
        component: Component,
        restriction: OutboundDataRestriction,
        holdings: ChatHoldings = NO_HOLDINGS,
    ) -> OfferDecision:
        """`offer_decision` for provider facts already looked up (cached while the chat holds
        nothing: a question with holdings names what brought them, so it is decided anew; its
        other verdicts are still looked up per scope)."""
        key = (tool_id, provider.key, component, restriction)
        cached = None if holdings.holdings else self._decided.get(key)
        if cached is not None:
            return cached
        question = Question(
            tool_id, self.facts(tool_id), provider, component, restriction, self._setup, holdings
        )
        checks = self._verdicts(question)
        failed = next((c for c in checks if not c.passed), None)
        decided = (
            OfferDecision(
                tool_id,
                component,
                provider.summary,
                ToolOfferBlockReason.NONE,
                "Nothing is in the way.",
                checks,
            )
            if failed is None
            else OfferDecision(
                tool_id, component, provider.summary, failed.guards, failed.detail, checks
            )
        )
        if not holdings.holdings:
            self._decided[key] = decided
        return decided

    def _verdicts(self, question: Question) -> tuple[Check, ...]:
        if question.tool is None:
            refusal = self.refused.get(question.tool_id)
            return tuple(
                check.verdict_for_unknown(question, refusal)
                if check.needs_tool
                else self._verdict_without_tool(i, question)
                for i, check in enumerate(CHECKS)
            )
        once = self._once.get(question.tool_id)
        if once is None:
            once = self._once[question.tool_id] = self._verdicts_once(question)
        verdicts = list(once)
        for i in _BY_SCOPE[Scope.PROVIDER]:
            verdicts[i] = self._provider_verdict(i, question)
        for i in _BY_SCOPE[Scope.TOOL_AND_PROVIDER]:
            key = (i, question.tool_id, question.provider.key)
            pair = self._pairs.get(key)
            if pair is None:
                pair = self._pairs[key] = CHECKS[i].verdict(question)
            verdicts[i] = pair
        for i in _BY_SCOPE[Scope.QUESTION]:
            verdicts[i] = CHECKS[i].verdict(question)
        return tuple(v for v in verdicts if v is not None)

    def _verdicts_once(self, question: Question) -> tuple[Check | None, ...]:
        """The verdicts that depend on the configuration or the tool alone, by place (None for
        the others)."""
        return tuple(
            self._configuration_verdicts.get(i)
            or (check.verdict(question) if check.scope is Scope.TOOL else None)
            for i, check in enumerate(CHECKS)
        )

    def _verdict_without_tool(self, index: int, question: Question) -> Check:
        """A check that decides without the tool, asked about an id no tool has."""
        scope = CHECKS[index].scope
        if scope is Scope.CONFIGURATION:
            return self._configuration_verdicts[index]
        if scope is Scope.PROVIDER:
            return self._provider_verdict(index, question)
        return CHECKS[index].verdict(question)

    @staticmethod
    def _provider_verdict(index: int, question: Question) -> Check:
        memo = question.provider.verdicts
        verdict = memo.get(index)
        if verdict is None:
            verdict = memo[index] = CHECKS[index].verdict(question)
        return verdict

    # --- retrieval mode -------------------------------------------------------------------

    def retrieval_mode(
        self,
        preferred: DataSourceRetrievalMode,
        provider: ProviderConfig | None,
        component: Component = Component.CHAT,
    ) -> EffectiveRetrievalMode:
        """The data-source search tool's offer decision decides; its reason is reported whatever
        the preference."""
        if self.data_source_search_id is None:
            return EffectiveRetrievalMode(
                DataSourceRetrievalMode.EVERY_MESSAGE, ToolOfferBlockReason.NOT_AVAILABLE_HERE
            )
        decision = self.offer_decision(self.data_source_search_id, provider, component)
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
