"""The registry: which tools exist, where they may be offered, and the ordered offer checks.

Built once per configuration change (`ToolRegistry(...)`): registration, settings resolution,
configuration states, minimum confidences and visibility are computed then, so a decision is a
handful of lookups (and cached per tool/provider/component/restriction). Explain, lint, the
retrieval-mode decision and request preparation all ask this one place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from policy.capabilities import ToolCallingAvailability, can_use_tools
from policy.configuration import (
    Finding,
    PolicyConfiguration,
    ProviderConfig,
    Severity,
    UserSettings,
)
from policy.decision import (
    CatalogEntry,
    Check,
    EffectiveRetrievalMode,
    Evidence,
    OfferDecision,
    ProviderSummary,
    RunnableTool,
    RunnableTools,
)
from policy.definitions import (
    DefinitionSource,
    ToolCollectionDefinition,
    ToolDefinition,
    ToolFunction,
    validate_definition,
    visible_components,
)
from policy.errors import ToolPolicyError
from policy.provenance import Origin, SourceLocation
from policy.resolve import (
    DEFAULT_TOOL_IDS_BY_COMPONENT,
    DISABLED_TOOL_IDS,
    PRESELECTED_RETRIEVAL_MODE,
    SOURCE_EDITABLE,
    SOURCE_LOCKED,
    MinimumConfidence,
    ResolvedSettings,
    SecretReader,
    confidence_scheme,
    configuration_state,
    disabled_tool_ids,
    effective_minimum_confidence,
    managed_layer,
    provider_confidence_under,
    resolve_setting,
    resolve_tool_settings,
    tools_enabled,
)
from policy.tools import (
    DefinedTool,
    RequestExtras,
    ResolutionContext,
    Tool,
    ToolConfigurationState,
    ToolGate,
)
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    DataSourceRetrievalMode,
    OutboundDataRestriction,
    ProviderKind,
    ToolActivation,
    ToolOfferBlockReason,
    is_outbound_data_allowed,
)

_log = logging.getLogger(__name__)
TRUSTED_PROVIDER_IDS = "DataSourceSecuritySettings.TrustedProviderIds"
_R = ToolOfferBlockReason
IMPLEMENTATIONS_SOURCE = "tool implementations"

TOOL_POLICY_HEADER = "# Tool usage instructions:"
TOOL_POLICY_INTRO = (
    "You can use several tools, each with its own purpose and its own usage policy. Choose the "
    "tool that fits the task, ask the user when you are unsure which one to use or whether to use "
    "one at all, and follow the policy of every tool you use. Here are the usage policies for "
    "each tool:"
)


class UnknownToolError(ToolPolicyError, KeyError):
    """Asked about a tool id the registry does not know."""

    code = "unknown-tool"

    def __init__(self, tool_id: str, known: Iterable[str]) -> None:
        super().__init__(tool_id)
        from policy.suggest import did_you_mean

        names = sorted(known)
        hint = did_you_mean(tool_id, names)
        self.message = f"unknown tool id '{tool_id}'{hint}; known tools: {', '.join(names)}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class _Collection:
    definition: ToolCollectionDefinition
    tool_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _SettingsFacts:
    """A tool's resolved settings and what they make of it: configured or not, with evidence."""

    settings: ResolvedSettings
    values: Mapping[str, str]
    state: ToolConfigurationState
    configured_check: Check


class _OnFirstUse:
    """The settings facts of a tool that reads a secret, resolved when first asked for.

    Reading the OS keyring starts its backend detection (which may spawn processes), so a
    command that never looks at such a tool's settings never touches the keyring. Two threads
    asking at once both resolve the same facts; the first assignment stands.
    """

    __slots__ = ("_make", "_value")

    def __init__(self, make: Callable[[], _SettingsFacts]) -> None:
        self._make: Callable[[], _SettingsFacts] | None = make
        self._value: _SettingsFacts | None = None

    def get(self) -> _SettingsFacts:
        if self._value is None:
            assert self._make is not None
            self._value = self._make()
        return self._value


@dataclass(frozen=True, slots=True)
class _ToolFacts:
    """Everything a decision needs about one tool, computed once per configuration."""

    definition: ToolDefinition
    tool: Tool
    available: bool
    visible_in: frozenset[Component]
    collection_id: str
    active: bool
    switched_off_check: Check
    available_check: Check
    approved_check: Check
    settings_facts: _SettingsFacts | _OnFirstUse
    notes: tuple[str, ...]
    """What resolution refused (locked plaintext secrets and the like); known without a keyring."""
    minimum: MinimumConfidence
    untailored: bool
    visibility_evidence: tuple[Evidence, ...]
    """Resolution would only hand back the registered definition (a plain `DefinedTool`)."""

    def _settled(self) -> _SettingsFacts:
        facts = self.settings_facts
        return facts.get() if isinstance(facts, _OnFirstUse) else facts

    @property
    def settings(self) -> ResolvedSettings:
        return self._settled().settings

    @property
    def values(self) -> Mapping[str, str]:
        return self._settled().values

    @property
    def state(self) -> ToolConfigurationState:
        return self._settled().state

    @property
    def configured_check(self) -> Check:
        return self._settled().configured_check


@dataclass(frozen=True, slots=True)
class _ProviderFacts:
    key: tuple[Any, ...]
    """Everything about the provider a decision depends on (the decision cache key)."""
    summary: ProviderSummary | None
    availability: ToolCallingAvailability
    capability_check: Check
    confidence: ConfidenceLevel


def _warning(code: str, message: str) -> Finding:
    return Finding(Severity.WARNING, code, message)


def _visibility_evidence(definition: ToolDefinition) -> tuple[Evidence, ...]:
    shown = definition.visible_in
    value: dict[str, object] = {"chat": shown.chat, "assistants": shown.assistants}
    if shown.allowed_components or shown.denied_components:
        value = {
            "allowed_components": [str(c) for c in shown.allowed_components],
            "denied_components": [str(c) for c in shown.denied_components],
        }
    return (Evidence("visible_in", value, "tool definition"),)


def _collection_id_problem(
    collection_id: str, tools: Mapping[str, ToolDefinition], registered: Mapping[str, object]
) -> str:
    """Why a collection cannot be registered under this ID ("" when it can)."""
    if not collection_id.strip():
        return "its ID is empty"
    if collection_id in tools:
        return "a tool already has this ID"
    if collection_id in registered:
        return "the ID is already registered"
    return ""


def _member_problem(
    tool_id: str, tools: Mapping[str, ToolDefinition], collection_of: Mapping[str, str]
) -> str:
    """Why a tool cannot join a collection ("" when it can)."""
    if tool_id not in tools:
        return "it is not registered"
    if tools[tool_id].activation is not ToolActivation.SELECTION:
        return "nobody selects the tool (it offers itself from the chat)"
    if tool_id in collection_of:
        return f"it already belongs to collection '{collection_of[tool_id]}'"
    return ""


def _is_untailored(tool: Tool) -> bool:
    kind = type(tool)
    return (
        getattr(kind, "resolve_function", None) is DefinedTool.resolve_function
        and getattr(kind, "resolve_instructions", None) is DefinedTool.resolve_instructions
    )


_NEEDS_NO_APPROVAL = Check(
    _R.DEFINITION_NOT_APPROVED, True, "Its definition ships with the installation; no pin applies."
)


def _gate(tool: Tool, name: str) -> ToolGate | None:
    """A tool's own verdict on a check (`ToolGate`), if it carries one."""
    gate = getattr(tool, name, None)
    return gate if isinstance(gate, ToolGate) else None


def _safely_available(tool: Tool) -> bool:
    try:
        return bool(tool.is_available())
    except Exception:  # a tool that cannot say is not offered
        _log.exception("is_available failed for a tool; treating it as unavailable")
        return False


def _settings_facts(
    definition: ToolDefinition, tool: Tool, settings: ResolvedSettings
) -> _SettingsFacts:
    state = configuration_state(definition, settings, tool)
    return _SettingsFacts(
        settings,
        MappingProxyType(settings.values_for_tool()),
        state,
        Check(
            _R.NOT_CONFIGURED,
            state.is_configured,
            "Its settings are complete and valid." if state.is_configured else state.message,
            tuple(s.evidence() for s in settings.fields.values()),
        ),
    )


class ToolRegistry:
    """Catalog, selection rules, ordered offer checks and runnable tools for one configuration."""

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
        findings: list[Finding] = []
        implementations = self._register_implementations(tools, findings)
        self._refused: dict[str, str] = {}
        definitions = self._register_definitions(
            implementations, definition_sources, findings, self._refused
        )
        self._collections, self._collection_of = self._register_collections(
            collections, definitions, findings
        )
        self._enabled, self._enabled_evidence = tools_enabled(configuration, user)
        self._global_check = self._build_global_check()
        self._disabled, self._disabled_setting = disabled_tool_ids(configuration)
        scheme = confidence_scheme(configuration, user)
        self._scheme = scheme
        self._facts: dict[str, _ToolFacts] = {}
        for definition in definitions:
            tool = implementations[definition.implementation_key]
            facts = self._tool_facts(definition, tool, secret_reader)
            self._facts[definition.id] = facts
            findings.extend(_warning("tool-setting-refused", note) for note in facts.notes)
        self.findings: tuple[Finding, ...] = tuple(findings)
        self._ordered = tuple(
            sorted(self._facts.values(), key=lambda f: f.tool.display_name.casefold())
        )
        self._by_function = {f.definition.function.name: f.tool for f in self._facts.values()}
        self._request_extras: RequestExtras | None = None
        self._decisions: dict[tuple[Any, ...], OfferDecision] = {}
        self._providers: dict[tuple[Any, ...], _ProviderFacts] = {}
        self._provider_objects: dict[int, tuple[ProviderConfig | None, _ProviderFacts]] = {}
        self._candidates: dict[Component, tuple[_ToolFacts, ...]] = {}
        self._confidence_checks: dict[tuple[str, ConfidenceLevel], Check] = {}

    # --- registration ----------------------------------------------------------------

    @staticmethod
    def _register_implementations(
        tools: Sequence[Tool], findings: list[Finding]
    ) -> dict[str, Tool]:
        implementations: dict[str, Tool] = {}
        for tool in tools:
            key = tool.definition.implementation_key
            if not key.strip():
                findings.append(
                    _warning(
                        "blank-implementation-key",
                        f"Skipping tool implementation {type(tool).__name__}: its implementation "
                        "key is empty",
                    )
                )
            elif key in implementations:
                findings.append(
                    _warning(
                        "duplicate-implementation",
                        f"Skipping tool implementation {type(tool).__name__}: the implementation "
                        f"key '{key}' is already registered",
                    )
                )
            else:
                implementations[key] = tool
        return implementations

    @staticmethod
    def _register_definitions(
        implementations: Mapping[str, Tool],
        sources: Sequence[DefinitionSource],
        findings: list[Finding],
        refused: dict[str, str],
    ) -> list[ToolDefinition]:
        """The accepted definitions; `refused` gets why each invalid one was skipped, so a
        decision about its id can say so instead of "unknown"."""
        own = DefinitionSource(
            IMPLEMENTATIONS_SOURCE, tuple(t.definition for t in implementations.values())
        )
        accepted: list[ToolDefinition] = []
        ids: set[str] = set()
        names: set[str] = set()
        for source in (own, *sources):
            for definition in source.definitions:
                prefix = f"Skipping tool definition '{definition.id}' from source '{source.name}'"
                issue = validate_definition(definition)
                if issue:
                    findings.append(_warning("invalid-tool-definition", f"{prefix}: {issue}"))
                    refused.setdefault(definition.id, issue)
                elif definition.implementation_key not in implementations:
                    findings.append(
                        _warning(
                            "unknown-implementation",
                            f"{prefix}: no implementation is registered under "
                            f"'{definition.implementation_key}'",
                        )
                    )
                elif definition.id in ids:
                    findings.append(
                        _warning(
                            "duplicate-tool-id",
                            f"{prefix}: a tool with this ID is already registered",
                        )
                    )
                elif definition.function.name in names:
                    findings.append(
                        _warning(
                            "duplicate-function-name",
                            f"{prefix}: the function name '{definition.function.name}' is "
                            "already registered",
                        )
                    )
                else:
                    accepted.append(definition)
                    ids.add(definition.id)
                    names.add(definition.function.name)
        return accepted

    @staticmethod
    def _register_collections(
        collections: Sequence[ToolCollectionDefinition],
        definitions: Sequence[ToolDefinition],
        findings: list[Finding],
    ) -> tuple[dict[str, _Collection], dict[str, str]]:
        by_id = {d.id: d for d in definitions}
        registered: dict[str, _Collection] = {}
        collection_of: dict[str, str] = {}
        for declared in collections:
            prefix = f"Skipping tool collection '{declared.id}'"
            problem = _collection_id_problem(declared.id, by_id, registered)
            if problem:
                findings.append(_warning("invalid-collection", f"{prefix}: {problem}"))
                continue
            members: list[str] = []
            for tool_id in dict.fromkeys(declared.tool_ids):
                why = _member_problem(tool_id, by_id, collection_of)
                if why:
                    findings.append(
                        _warning(
                            "collection-member-left-out",
                            f"Tool '{tool_id}' is left out of collection '{declared.id}': {why}",
                        )
                    )
                else:
                    members.append(tool_id)
            if not members:
                findings.append(
                    _warning("invalid-collection", f"{prefix}: none of its tools is registered")
                )
                continue
            for tool_id in members:
                collection_of[tool_id] = declared.id
            registered[declared.id] = _Collection(declared, tuple(members))
        return registered, collection_of

    # --- precomputation ---------------------------------------------------------------------------

    def _build_global_check(self) -> Check:
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

    def _settings_ids(self, tool_id: str) -> tuple[str, ...]:
        collection_id = self._collection_of.get(tool_id)
        if collection_id is None:
            return (tool_id,)
        return (collection_id, *self._collections[collection_id].tool_ids)

    def _tool_facts(
        self, definition: ToolDefinition, tool: Tool, secret_reader: SecretReader | None
    ) -> _ToolFacts:
        collection_id = self._collection_of.get(definition.id, definition.id)
        settings_ids = self._settings_ids(definition.id)
        disabled_by = [i for i in settings_ids if i in self._disabled]
        active = not disabled_by
        if active:
            switched = Check(
                _R.TOOL_SWITCHED_OFF, True, "The organization has not switched it off."
            )
        else:
            setting = self._disabled_setting
            evidence = tuple(
                Evidence(
                    DISABLED_TOOL_IDS,
                    ident,
                    SOURCE_LOCKED,
                    setting.origin if setting is not None else None,
                )
                for ident in disabled_by
            )
            what = "its collection" if collection_id != definition.id else "it"
            switched = Check(
                _R.TOOL_SWITCHED_OFF,
                False,
                f"The organization switched {what} off ({', '.join(disabled_by)} in "
                f"{DISABLED_TOOL_IDS}).",
                evidence,
            )
        gate = _gate(tool, "switch_off_gate")
        if active and gate is not None and not gate.passed:
            switched = Check(_R.TOOL_SWITCHED_OFF, False, gate.detail, gate.evidence)
            active = False
        approval = _gate(tool, "approval_gate")
        approved_check = (
            Check(_R.DEFINITION_NOT_APPROVED, approval.passed, approval.detail, approval.evidence)
            if approval is not None
            else _NEEDS_NO_APPROVAL
        )
        available = _safely_available(tool)
        available_check = Check(
            _R.NOT_AVAILABLE_HERE,
            available,
            "Its implementation is available."
            if available
            else "Its implementation is not available in this installation (e.g. a preview "
            "feature is off).",
        )
        secrets_asked: list[str] = []

        def unread_secret(_tool_id: str, field_name: str) -> None:
            secrets_asked.append(field_name)

        settings = resolve_tool_settings(definition, self.configuration, self.user, unread_secret)
        settings_facts: _SettingsFacts | _OnFirstUse = (
            _OnFirstUse(
                lambda: _settings_facts(
                    definition,
                    tool,
                    resolve_tool_settings(definition, self.configuration, self.user, secret_reader),
                )
            )
            if secrets_asked
            else _settings_facts(definition, tool, settings)
        )
        collection = self._collections.get(collection_id)
        default = (
            collection.definition.minimum_provider_confidence
            if collection is not None
            else definition.minimum_provider_confidence
        )
        minimum = effective_minimum_confidence(
            settings_ids,
            default,
            self.configuration,
            self.user,
            "collection default" if collection is not None else "tool default",
        )
        floor = getattr(tool, "minimum_confidence_floor", ConfidenceLevel.NONE)
        if isinstance(floor, ConfidenceLevel) and floor > minimum.level:
            said = getattr(tool, "minimum_confidence_floor_evidence", None)
            minimum = MinimumConfidence(
                floor,
                "tool floor",
                (
                    *minimum.evidence,
                    said
                    if isinstance(said, Evidence)
                    else Evidence(
                        "minimum_provider_confidence",
                        floor.name,
                        "the tool always requires at least this level",
                    ),
                ),
            )
        return _ToolFacts(
            definition=definition,
            tool=tool,
            available=available,
            visible_in=visible_components(definition.visible_in),
            collection_id=collection_id,
            active=active,
            switched_off_check=switched,
            available_check=available_check,
            approved_check=approved_check,
            settings_facts=settings_facts,
            notes=settings.notes,
            minimum=minimum,
            untailored=_is_untailored(tool),
            visibility_evidence=_visibility_evidence(definition),
        )

    def _provider_facts(self, provider: ProviderConfig | None) -> _ProviderFacts:
        seen = self._provider_objects.get(id(provider))
        if seen is not None and seen[0] is provider:
            return seen[1]
        facts = self._provider_facts_by_value(provider)
        self._provider_objects[id(provider)] = (provider, facts)
        return facts

    def _provider_facts_by_value(self, provider: ProviderConfig | None) -> _ProviderFacts:
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
        facts = _ProviderFacts(key, summary, availability, check, confidence)
        self._providers[key] = facts
        return facts

    def _confidence_check(self, facts: _ToolFacts, confidence: ConfidenceLevel) -> Check:
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
        return self._decision(
            tool_id, self._provider_facts(provider), component, outbound_restriction
        )

    def _decision(
        self,
        tool_id: str,
        provider: _ProviderFacts,
        component: Component,
        restriction: OutboundDataRestriction,
    ) -> OfferDecision:
        key = (tool_id, provider.key, component, restriction)
        cached = self._decisions.get(key)
        if cached is None:
            cached = self._decide(tool_id, provider, component, restriction)
            self._decisions[key] = cached
        return cached

    def _decide(
        self,
        tool_id: str,
        provider: _ProviderFacts,
        component: Component,
        restriction: OutboundDataRestriction,
    ) -> OfferDecision:
        facts = self._facts.get(tool_id)
        if facts is None:
            refusal = self._refused.get(tool_id)
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
            checks = (self._global_check, provider.capability_check, known, *later)
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
                self._global_check,
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

    # --- requests -------------------------------------------------------------------

    def _candidates_for(self, component: Component) -> tuple[_ToolFacts, ...]:
        cached = self._candidates.get(component)
        if cached is None:
            cached = tuple(f for f in self._ordered if f.available and component in f.visible_in)
            self._candidates[component] = cached
        return cached

    def _request_candidates(
        self, selected_ids: Iterable[str], component: Component
    ) -> list[_ToolFacts]:
        """The tools one request asks the checks about: context tools and the expanded selection."""
        wanted = set(self.expand_selection(selected_ids))
        return [
            f
            for f in self._candidates_for(component)
            if f.definition.activation is ToolActivation.CONTEXT or f.definition.id in wanted
        ]

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
        provider_facts = self._provider_facts(provider)
        return tuple(
            self._decision(f.definition.id, provider_facts, component, outbound_restriction)
            for f in self._request_candidates(selected_ids, component)
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
        provider_facts = self._provider_facts(provider)
        if not may_run_tools:
            return RunnableTools((), "", ())
        candidates = self._request_candidates(selected_ids, component)
        decisions = tuple(
            self._decision(f.definition.id, provider_facts, component, outbound_restriction)
            for f in candidates
        )
        if not self._global_check.passed or not provider_facts.availability.is_available:
            return RunnableTools((), "", decisions)
        shared_extras = self.request_extras.merged(extras) if extras else self.request_extras
        offered: list[RunnableTool] = []
        left_out: list[tuple[str, str]] = []
        for facts, decision in zip(candidates, decisions, strict=True):
            if not decision.offered:
                continue
            if facts.untailored:
                offered.append(RunnableTool(facts.definition, facts.tool))
                continue
            context = ResolutionContext(
                component=component,
                provider_kind=provider_facts.summary.kind
                if provider_facts.summary
                else ProviderKind.NONE,
                provider_confidence=provider_facts.confidence,
                settings=facts.values,
                retrieval_mode=retrieval_mode,
                outbound_restriction=outbound_restriction,
                chat_id=chat_id,
                extras=shared_extras,
            )
            definition, why = await self._resolve(facts, context)
            if definition is None:
                left_out.append((facts.definition.id, why))
            else:
                offered.append(RunnableTool(definition, facts.tool))
        definitions = [t.definition for t in offered]
        return RunnableTools(
            tuple(offered), self.tool_instructions(definitions), decisions, tuple(left_out)
        )

    async def _resolve(
        self, facts: _ToolFacts, context: ResolutionContext
    ) -> tuple[ToolDefinition | None, str]:
        registered = facts.definition
        tool_id = registered.id
        try:
            function = await facts.tool.resolve_function(context)
        except Exception:  # a broken resolution costs this tool only
            _log.exception("Tool '%s' failed to resolve its function; left out", tool_id)
            return None, "its function could not be resolved"
        if function is None:
            return None, "nothing to offer in this request"
        try:
            instructions = await facts.tool.resolve_instructions(context)
        except Exception:
            _log.exception("Tool '%s' failed to resolve its instructions; left out", tool_id)
            return None, "its instructions could not be resolved"
        offered_function = self._offered_function(registered.function, function, tool_id)
        if (
            offered_function is registered.function
            and instructions == registered.system_prompt_instructions
        ):
            return registered, ""
        return (
            registered.model_copy(
                update={
                    "function": offered_function,
                    "system_prompt_instructions": instructions,
                }
            ),
            "",
        )

    @staticmethod
    def _offered_function(
        registered: ToolFunction, tailored: ToolFunction, tool_id: str
    ) -> ToolFunction:
        if tailored is registered:
            return registered
        if not isinstance(tailored.parameters, Mapping):
            _log.warning(
                "Tool '%s' tailored parameters that are no JSON object; the registered function "
                "is offered",
                tool_id,
            )
            return registered
        if tailored.name != registered.name or tailored.strict != registered.strict:
            _log.warning(
                "Tool '%s' tried to change its function name or strict mode; both stay as "
                "registered",
                tool_id,
            )
        if tailored == registered:
            return registered
        return registered.model_copy(
            update={
                "description_for_llm": tailored.description_for_llm,
                "parameters": tailored.parameters,
            }
        )

    @staticmethod
    def tool_instructions(offered: Sequence[ToolDefinition]) -> str:
        """One section per offered tool with non-empty instructions, under one header."""
        sections: dict[str, None] = {}
        for definition in offered:
            text = definition.system_prompt_instructions.strip()
            if text:
                sections[f"## Tool `{definition.function.name}`\n{text}"] = None
        if not sections:
            return ""
        return f"{TOOL_POLICY_HEADER}\n{TOOL_POLICY_INTRO}\n\n" + "\n\n".join(sections)

    # --- selection -------------------------------------------------------------

    def is_known(self, tool_or_collection_id: str) -> bool:
        return tool_or_collection_id in self._facts or tool_or_collection_id in self._collections

    def collection_id(self, tool_id: str) -> str:
        """A tool's collection id; a collection id or an unknown id comes back unchanged."""
        return self._collection_of.get(tool_id, tool_id)

    def normalize_selection(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Collection ids, de-duplicated in first-seen order; context tools dropped; unknown kept;
        a tool brings the companions it declares along (search_confluence: read_web_page)."""
        result: dict[str, None] = {}
        for ident in ids:
            facts = self._facts.get(ident)
            if facts is not None and facts.definition.activation is ToolActivation.CONTEXT:
                continue
            result[self.collection_id(ident)] = None
        for ident in tuple(result):
            for companion in self._companions(ident):
                result.setdefault(self.collection_id(companion), None)
        return tuple(result)

    def _companions(self, ident: str) -> tuple[str, ...]:
        """The tool ids a tool (or each tool of a collection) declares as selected along."""
        collection = self._collections.get(ident)
        found: list[str] = []
        for tool_id in collection.tool_ids if collection is not None else (ident,):
            facts = self._facts.get(tool_id)
            declared = getattr(facts.tool, "companion_tool_ids", ()) if facts else ()
            found.extend(str(c) for c in declared if isinstance(c, str) and c in self._facts)
        return tuple(found)

    @property
    def request_extras(self) -> RequestExtras:
        """What the tools' settings tell every request: each tool's `request_extras(settings)`,
        merged in catalog order once, when first asked (a declaration that fails adds nothing)."""
        if self._request_extras is None:
            self._request_extras = self._declared_extras()
        return self._request_extras

    def _declared_extras(self) -> RequestExtras:
        merged = RequestExtras()
        for facts in self._ordered:
            declare = getattr(facts.tool, "request_extras", None)
            if not callable(declare):
                continue
            try:
                declared = declare(facts.values)
            except Exception:  # a broken declaration costs this tool's extras only
                _log.exception(
                    "Tool '%s' failed to declare its request extras", facts.definition.id
                )
                continue
            if isinstance(declared, RequestExtras):
                merged = merged.merged(declared)
        return merged

    def expand_selection(self, ids: Iterable[str]) -> tuple[str, ...]:
        """Normalize, then each collection becomes its tools in listed order."""
        result: dict[str, None] = {}
        for ident in self.normalize_selection(ids):
            collection = self._collections.get(ident)
            for tool_id in collection.tool_ids if collection is not None else (ident,):
                result[tool_id] = None
        return tuple(result)

    def default_tool_ids(self, component: Component) -> tuple[str, ...]:
        """The component's default selection (user's stored choice unless locked), normalized."""
        managed = self.configuration.setting(DEFAULT_TOOL_IDS_BY_COMPONENT)
        managed_map: Mapping[str, Sequence[str]] = (
            managed.value if managed is not None and isinstance(managed.value, Mapping) else {}
        )
        locked, organization = managed_layer(managed, managed_map.get(component.value, ()))
        chosen = (
            resolve_setting(
                locked=locked,
                user=self.user.default_tool_ids_by_component.get(component.value),
                organization=organization,
            ).value
            or ()
        )
        return self.normalize_selection(chosen)

    # --- catalog and settings --------------------------------------------------------

    def catalog(self, component: Component | None = None) -> tuple[CatalogEntry, ...]:
        """One entry per collection or standalone tool, sorted by display name.

        For a component: only selectable tools visible there. Without one (the app settings
        list): every available tool, context tools included, so they can be switched off.
        """
        grouped: dict[str, list[_ToolFacts]] = {}
        for facts in self._ordered:
            if not facts.available:
                continue
            if component is not None and (
                component not in facts.visible_in
                or facts.definition.activation is not ToolActivation.SELECTION
            ):
                continue
            grouped.setdefault(facts.collection_id, []).append(facts)
        entries: list[CatalogEntry] = []
        for entry_id, members in grouped.items():
            collection = self._collections.get(entry_id)
            if collection is not None:
                order = {t: i for i, t in enumerate(collection.tool_ids)}
                members.sort(key=lambda f: order[f.definition.id])
            first = members[0]
            unconfigured = next((f.state for f in members if not f.state.is_configured), None)
            declared = collection.definition if collection is not None else None
            entries.append(
                CatalogEntry(
                    id=entry_id,
                    display_name=(declared.display_name if declared else "")
                    or first.tool.display_name,
                    description_for_llm=(declared.description_for_llm if declared else "")
                    or first.definition.function.description_for_llm,
                    tool_ids=tuple(f.definition.id for f in members),
                    configuration_state=unconfigured or first.state,
                    is_active=self._global_check.passed and first.active,
                    minimum_provider_confidence=first.minimum.level,
                    is_collection=collection is not None,
                )
            )
        return tuple(sorted(entries, key=lambda e: e.display_name.casefold()))

    def definitions(self, component: Component | None = None) -> tuple[ToolDefinition, ...]:
        """Available definitions (visible in `component` if given), by display name."""
        return tuple(
            f.definition
            for f in self._ordered
            if f.available and (component is None or component in f.visible_in)
        )

    def definition(self, tool_id: str) -> ToolDefinition:
        return self._facts_of(tool_id).definition

    def tool(self, tool_id: str) -> Tool:
        return self._facts_of(tool_id).tool

    def tool_named(self, function_name: str) -> Tool | None:
        """The registered tool whose function has this name, offered or not (None: unknown).

        A model may call a tool this request did not offer; its trace still masks what the
        tool's definition calls sensitive."""
        return self._by_function.get(function_name)

    def _facts_of(self, tool_id: str) -> _ToolFacts:
        facts = self._facts.get(tool_id)
        if facts is None:
            raise UnknownToolError(tool_id, self._facts)
        return facts

    @property
    def tool_ids(self) -> tuple[str, ...]:
        """Every registered tool id, available or not, by display name."""
        return tuple(f.definition.id for f in self._ordered)

    def collection_tool_ids(self, collection_id: str) -> tuple[str, ...]:
        collection = self._collections.get(collection_id)
        return collection.tool_ids if collection is not None else ()

    def settings(self, tool_id: str) -> ResolvedSettings:
        """Every field of the tool, resolved, with its source and provenance (secrets masked)."""
        return self._facts_of(tool_id).settings

    def configuration_state(self, tool_id: str) -> ToolConfigurationState:
        return self._facts_of(tool_id).state

    @property
    def tools_enabled(self) -> bool:
        return self._global_check.passed

    def effective_minimum_confidence(self, tool_id: str) -> MinimumConfidence:
        """The minimum that applies to the tool (its collection's), with source and evidence."""
        facts = self._facts.get(tool_id)
        if facts is not None:
            return facts.minimum
        collection = self._collections.get(tool_id)
        if collection is not None:
            return self._facts[collection.tool_ids[0]].minimum
        return effective_minimum_confidence(
            (tool_id,), ConfidenceLevel.NONE, self.configuration, self.user
        )

    def is_trusted_provider(self, provider: ProviderConfig | None) -> bool:
        """In `DataSourceSecuritySettings.TrustedProviderIds` (case-insensitive). Counts only for
        data-source security, never as confidence."""
        if provider is None:
            return False
        setting = self.configuration.setting(TRUSTED_PROVIDER_IDS)
        value = setting.value if setting is not None else ()
        ids = (value,) if isinstance(value, str) else tuple(value or ())
        return provider.id.casefold() in {str(i).casefold() for i in ids}

    def provider_confidence(self, provider: ProviderConfig | None) -> ConfidenceLevel:
        return self._provider_facts(provider).confidence

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
