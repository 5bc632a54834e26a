"""Decisions as data: what the registry answers and explain renders. Nothing here decides.

An `OfferDecision` lists every offer check in order, passed or not, each with the
evidence it looked at (setting key, value, and who set it). Its `reason` is the first failure.
"""

from __future__ import annotations

from collections.abc import Iterator

from policy._dataclass import dataclass
from policy.definitions import ToolDefinition
from policy.provenance import Origin, SourceLocation
from policy.tools import Tool, ToolConfigurationState
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    DataSourceRetrievalMode,
    ProviderKind,
    ToolOfferBlockReason,
)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One thing a check looked at: a setting key, its value, and where the value came from.

    `source` says what kind of place (e.g. "locked by organization", "user settings",
    "tool default"); `origin` names the plugin and its file:line; `location` a user-file line.
    Secret values are always `policy.redaction.MASK` here.
    """

    key: str
    value: object
    source: str = ""
    origin: Origin | None = None
    location: SourceLocation | None = None


@dataclass(frozen=True, slots=True)
class Check:
    """One offer check's verdict: the reason it guards, whether it passed, why, what it looked
    at, and the check's own name (unique among the checks, unlike the reason: two checks guard
    NOT_AVAILABLE_HERE; empty for a verdict made elsewhere, shown as its reason)."""

    guards: ToolOfferBlockReason
    passed: bool
    detail: str
    evidence: tuple[Evidence, ...] = ()
    name: str = ""

    @property
    def title(self) -> str:
        """What explain and the web page call the check: its name, else its reason."""
        return self.name or self.guards.value


@dataclass(frozen=True, slots=True)
class ProviderSummary:
    """The provider a decision was made for, with its confidence under the current scheme."""

    id: str
    kind: ProviderKind
    model: str
    confidence: ConfidenceLevel


@dataclass(frozen=True, slots=True)
class OfferDecision:
    """Whether a tool can be offered to a provider in a component, and why (not)."""

    tool_id: str
    component: Component
    provider: ProviderSummary | None
    reason: ToolOfferBlockReason
    message: str
    checks: tuple[Check, ...]

    @property
    def offered(self) -> bool:
        return self.reason is ToolOfferBlockReason.NONE

    @property
    def first_failure(self) -> Check | None:
        return next((c for c in self.checks if not c.passed), None)


@dataclass(frozen=True, slots=True)
class EffectiveRetrievalMode:
    """Who searches the chat's data sources, and what keeps semantic_search out (if any).

    `fallback_reason` is reported whatever the user prefers, so a UI can hide a choice that is none.
    """

    mode: DataSourceRetrievalMode
    fallback_reason: ToolOfferBlockReason
    decision: OfferDecision | None = None


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One selectable entry: a standalone tool or a whole collection."""

    id: str
    display_name: str
    description_for_llm: str
    tool_ids: tuple[str, ...]
    configuration_state: ToolConfigurationState
    is_active: bool
    minimum_provider_confidence: ConfidenceLevel
    is_collection: bool = False


@dataclass(frozen=True, slots=True)
class RunnableTool:
    """A tool offered in one request: the definition as offered (tailored or registered) and the tool."""

    definition: ToolDefinition
    tool: Tool

    def __iter__(self) -> Iterator[ToolDefinition | Tool]:
        """Unpacks as `definition, tool`."""
        return iter((self.definition, self.tool))


@dataclass(frozen=True, slots=True)
class RunnableTools:
    """What one request offers: tools in catalog order, their combined instructions, the decisions."""

    tools: tuple[RunnableTool, ...]
    instructions: str
    decisions: tuple[OfferDecision, ...]
    left_out: tuple[tuple[str, str], ...] = ()
    """(tool id, why) for candidates that passed the checks but offered nothing or failed."""

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        return tuple(t.definition for t in self.tools)

    @property
    def tool_ids(self) -> tuple[str, ...]:
        return tuple(t.definition.id for t in self.tools)
