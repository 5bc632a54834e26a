"""The protocol the registry asks of a tool. The runtime's tools implement it and add execution."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from policy.definitions import ToolDefinition, ToolFunction
from policy.flow import ToolEffects, declared_effects
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

    A tool may carry `switch_off_gate` (the organization keeps it out by a rule of its own, e.g.
    an MCP server's DeniedTools) and `approval_gate` (whether its definition is approved, e.g. an
    MCP pin); a tool without them passes both checks.
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


@dataclass(frozen=True, slots=True)
class ResolutionContext:
    """What a tool may look at when it decides what to offer in one request."""

    component: Component
    provider_kind: ProviderKind
    provider_confidence: ConfidenceLevel
    settings: Mapping[str, str]
    retrieval_mode: DataSourceRetrievalMode = DataSourceRetrievalMode.SEMANTIC_SEARCH
    outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED
    chat_id: str = ""
    extras: RequestExtras = NO_EXTRAS


@runtime_checkable
class Tool(Protocol):
    """A tool as the policy sees it. `definition` is fixed; the rest is asked per decision/request.

    Optional members the registry asks for when present: `companion_tool_ids` (tools selected
    along with this one, e.g. search_confluence brings read_web_page), `request_extras(settings)`
    (what this tool's resolved settings tell the other tools of a request, as `RequestExtras`),
    `switch_off_gate` / `approval_gate` (see `ToolGate`), `setting_problem(field, value)` (a
    field's own validity rule) and `effects` (a `policy.flow.ToolEffects`: what its calls and
    results do and where that is declared; a tool without it declares nothing, all four).
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


class DefinedTool:
    """A tool that is exactly its definition: available, validated only by its schema, untailored.

    Used for definitions that arrive as data and as the base the built-in tools extend.
    """

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
