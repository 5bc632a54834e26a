"""The protocol the registry asks of a tool. The runtime's tools implement it and add execution."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from policy._dataclass import dataclass
from policy.definitions import ToolDefinition, ToolFunction
from policy.flow import ToolEffects, declared_effects
from policy.provider_facts import EarlierProviderNames, ProviderFacts, given_provider
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    DataSourceRetrievalMode,
    OutboundDataRestriction,
    ProviderKind,
    ToolOutboundData,
)

if TYPE_CHECKING:
    from policy.decision import Evidence


@dataclass(frozen=True, slots=True)
class ToolConfigurationState:
    """Whether a tool's settings let it run; the message says what to fix."""

    is_configured: bool
    missing_required_fields: tuple[str, ...] = ()
    message: str = ""


CONFIGURED = ToolConfigurationState(True)


@dataclass(frozen=True, slots=True)
class ToolGate:
    """A tool's own verdict on one of the registry's checks, with what it looked at.

    A tool's `switch_off_gate` (the organization keeps it out by a rule of its own, e.g. an MCP
    server's DeniedTools) and `approval_gate` (whether its definition is approved, e.g. an MCP
    pin) are such verdicts; a tool whose gates are None passes both checks.
    """

    passed: bool
    detail: str
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class OfferedDataSource:
    """A data source semantic_search may offer, as its description lists it."""

    id: str
    name: str
    type_label: str
    results_per_page: int
    last_page: int
    description: str = ""
    num: int = 0


@dataclass(frozen=True, slots=True)
class RequestExtras:
    """What one request knows beyond a tool's own settings, typed.

    The registry fills `wiki_base_url` from what tools declare (`Tool.request_extras`, e.g.
    search_confluence's configured address, which read_web_page may read under a strict outbound
    restriction); the runtime adds the chat's `data_sources` a provider may use.
    """

    wiki_base_url: str = ""
    data_sources: tuple[OfferedDataSource, ...] = ()

    def merged(self, other: RequestExtras) -> RequestExtras:
        """These extras with every field `other` sets (non-empty) taking its place."""
        return RequestExtras(
            wiki_base_url=other.wiki_base_url or self.wiki_base_url,
            data_sources=other.data_sources or self.data_sources,
        )


NO_EXTRAS = RequestExtras()


@dataclass(frozen=True, slots=True, init=False)
class ResolutionContext(EarlierProviderNames):
    """What a tool may look at when it decides what to offer in one request.

    Built with `provider=ProviderFacts(...)`; `provider_kind=` and `provider_confidence=` are
    still taken in its place, and read back as properties.
    """

    component: Component
    provider: ProviderFacts
    """The provider of the request: kind, confidence under the scheme, whether it is trusted."""
    settings: Mapping[str, str]
    retrieval_mode: DataSourceRetrievalMode
    outbound_restriction: OutboundDataRestriction
    chat_id: str
    extras: RequestExtras

    def __init__(
        self,
        component: Component,
        provider: ProviderFacts | None = None,
        settings: Mapping[str, str] | None = None,
        retrieval_mode: DataSourceRetrievalMode = DataSourceRetrievalMode.SEMANTIC_SEARCH,
        outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED,
        chat_id: str = "",
        extras: RequestExtras = NO_EXTRAS,
        *,
        provider_kind: ProviderKind | None = None,
        provider_confidence: ConfidenceLevel | None = None,
    ) -> None:
        facts = given_provider("ResolutionContext", provider, provider_kind, provider_confidence)
        for name, value in (
            ("component", component),
            ("provider", facts),
            ("settings", {} if settings is None else settings),
            ("retrieval_mode", retrieval_mode),
            ("outbound_restriction", outbound_restriction),
            ("chat_id", chat_id),
            ("extras", extras),
        ):
            object.__setattr__(self, name, value)


@runtime_checkable
class Tool(Protocol):
    """A tool as the policy sees it. `definition` is fixed; the rest is asked per decision/request.

    Every member is declared here, the optional ones too; `DefinedTool` gives each optional one
    its default (extend it), so the registry reads members, never guesses at them.
    """

    @property
    def definition(self) -> ToolDefinition: ...

    @property
    def display_name(self) -> str: ...

    @property
    def outbound_data(self) -> ToolOutboundData: ...

    @property
    def enforces_outbound_data_restriction(self) -> bool: ...

    def is_available(self) -> bool: ...

    def validate_configuration(self, settings: Mapping[str, str]) -> ToolConfigurationState: ...

    async def resolve_function(self, context: ResolutionContext) -> ToolFunction | None:
        """The function to offer in this request; None = nothing to offer now."""
        ...

    async def resolve_instructions(self, context: ResolutionContext) -> str:
        """System prompt instructions for this request."""
        ...

    # --- optional: `DefinedTool` gives each its default -----------------------------------

    @property
    def companion_tool_ids(self) -> tuple[str, ...]:
        """Tools selected along with this one (search_confluence brings read_web_page)."""
        ...

    @property
    def switch_off_gate(self) -> ToolGate | None:
        """The organization keeps the tool out by a rule of its own (see `ToolGate`)."""
        ...

    @property
    def approval_gate(self) -> ToolGate | None:
        """Whether the tool's definition is approved, e.g. an MCP pin (see `ToolGate`)."""
        ...

    @property
    def minimum_confidence_floor(self) -> ConfidenceLevel:
        """The lowest provider confidence the tool is ever offered to, whatever is configured."""
        ...

    @property
    def minimum_confidence_floor_evidence(self) -> Evidence | None:
        """Where the floor comes from (None: the tool's own rule)."""
        ...

    @property
    def effects(self) -> ToolEffects:
        """What its calls and results do and where that is declared (`policy.flow`; a tool that
        declares nothing has all four)."""
        ...

    @property
    def searches_chat_data_sources(self) -> bool:
        """The tool is how the model searches the chat's data sources: its offer decision decides
        the retrieval mode (`ToolRegistry.retrieval_mode`)."""
        ...

    def request_extras(self, settings: Mapping[str, str]) -> RequestExtras:
        """What this tool's resolved settings tell the other tools of a request."""
        ...

    def setting_problem(self, name: str, value: str) -> str | None:
        """Why one value of one of its setting fields is refused, beyond the schema (None: fine)."""
        ...

    @property
    def sensitive_trace_argument_names(self) -> frozenset[str]:
        """Argument names whose values traces, events and decision records mask."""
        ...

    @property
    def returns_untrusted_external_content(self) -> bool:
        """Its results bring text from outside the organization's control (web pages, mails,
        tickets, an MCP server's answers): the executor filters them for prompt injections
        unless the result says the tool did (`ToolExecutionResult.injection_filtered`)."""
        ...


class DefinedTool:
    """A tool that is exactly its definition: available, validated only by its schema, untailored.

    Used for definitions that arrive as data and as the base every tool extends: it gives each
    optional member of the `Tool` protocol its default.
    """

    companion_tool_ids: tuple[str, ...] = ()
    switch_off_gate: ToolGate | None = None
    approval_gate: ToolGate | None = None
    minimum_confidence_floor: ConfidenceLevel = ConfidenceLevel.NONE
    minimum_confidence_floor_evidence: Evidence | None = None
    searches_chat_data_sources: bool = False
    sensitive_trace_argument_names: frozenset[str] = frozenset()
    returns_untrusted_external_content: bool = False

    def __init__(
        self,
        definition: ToolDefinition,
        display_name: str | None = None,
        outbound_data: ToolOutboundData = ToolOutboundData.MODEL_CHOSEN_ADDRESSES,
        enforces_outbound_data_restriction: bool = False,
    ) -> None:
        self._definition = definition
        self._display_name = display_name or definition.id
        self._outbound_data = outbound_data
        self._enforces = enforces_outbound_data_restriction

    @property
    def definition(self) -> ToolDefinition:
        return self._definition

    @property
    def display_name(self) -> str:
        return self._display_name

    @property
    def outbound_data(self) -> ToolOutboundData:
        return self._outbound_data

    @property
    def enforces_outbound_data_restriction(self) -> bool:
        return self._enforces

    @property
    def effects(self) -> ToolEffects:
        """What its calls and results do, from its definition (nothing declared: all four)."""
        return declared_effects(self._definition.effects)

    def is_available(self) -> bool:
        return True

    def validate_configuration(self, settings: Mapping[str, str]) -> ToolConfigurationState:
        return CONFIGURED

    async def resolve_function(self, context: ResolutionContext) -> ToolFunction | None:
        return self._definition.function

    async def resolve_instructions(self, context: ResolutionContext) -> str:
        return self._definition.system_prompt_instructions

    def request_extras(self, settings: Mapping[str, str]) -> RequestExtras:
        return NO_EXTRAS

    def setting_problem(self, name: str, value: str) -> str | None:
        return None


def _protocol_members(protocol: type) -> tuple[str, ...]:
    """The public members a protocol declares, its bases' first, in declaration order."""
    names: dict[str, None] = {}
    for base in reversed(protocol.__mro__):
        if base is Protocol or not getattr(base, "_is_protocol", False):
            continue
        for name in (*vars(base), *getattr(base, "__annotations__", {})):
            if not name.startswith("_"):
                names[name] = None
    return tuple(names)


def missing_members(tool: object, protocol: type | None = None) -> tuple[str, ...]:
    """The members of `protocol` (default `Tool`) that `tool` lacks, in declaration order: a tool
    written to the protocol without `DefinedTool`, which gives every optional member its
    default."""
    return tuple(m for m in _protocol_members(protocol or Tool) if not hasattr(tool, m))


@cache
def misspelled_members(kind: type) -> tuple[tuple[str, str], ...]:
    """(name, meant) for each public member a tool class adds that is a near miss of a `Tool`
    member: never read, so what it means to say would be silently ignored."""
    from policy.suggest import closest_name

    members = _protocol_members(Tool)
    added = sorted(n for n in set(dir(kind)) - set(dir(DefinedTool)) if not n.startswith("_"))
    return tuple(
        (name, meant)
        for name in added
        if name not in members and (meant := closest_name(name, members)) is not None
    )
