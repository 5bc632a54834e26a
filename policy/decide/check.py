"""What an offer check is: one object with the reason it guards, its place in the order, what its
verdict depends on, and the verdict itself (a `Check` with its evidence).

The checks live one per module in `policy/decide/checks/`; `policy.decide.order.CHECKS` finds
them and orders them by `place`. A check never knows a tool by name: it reads what the catalog
computed about the tool (`ToolFacts`, whose members the `Tool` protocol declares) and what the
decider knows about the provider and the configuration.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import Enum
from typing import TYPE_CHECKING, ClassVar

from policy._dataclass import dataclass
from policy.decision import Check, Evidence
from policy.flow import NO_HOLDINGS, ChatHoldings
from policy.vocabulary import Component, OutboundDataRestriction, ToolOfferBlockReason

if TYPE_CHECKING:
    from policy.catalog import ToolFacts
    from policy.configuration import PolicyConfiguration
    from policy.decide.provider import ProviderOfferFacts
    from policy.resolve import ConfidenceSchemeChoice


class Scope(Enum):
    """What a verdict depends on, so the decider computes it once per that and looks it up after."""

    CONFIGURATION = "configuration"
    """The configuration alone: once per configuration."""
    TOOL = "tool"
    """The tool under the configuration: once per tool, when it is first decided about."""
    PROVIDER = "provider"
    """The provider: once per provider."""
    TOOL_AND_PROVIDER = "tool and provider"
    """Once per tool and provider."""
    QUESTION = "question"
    """Also the component or the chat's outbound restriction: asked for every new question."""


@dataclass(frozen=True, slots=True)
class Setup:
    """What every check may read about the configuration, computed once per configuration."""

    configuration: PolicyConfiguration
    tools_enabled: bool
    tools_enabled_evidence: tuple[Evidence, ...]
    scheme: ConfidenceSchemeChoice


@dataclass(frozen=True, slots=True)
class Question:
    """One offer question: may `tool_id` be offered to this provider, in this component, in a
    chat under this outbound restriction and with these holdings? A check reads only what its
    `scope` names."""

    tool_id: str
    tool: ToolFacts | None
    """What the catalog computed about the tool; None when no tool has this id."""
    provider: ProviderOfferFacts
    component: Component
    restriction: OutboundDataRestriction
    setup: Setup
    holdings: ChatHoldings = NO_HOLDINGS
    """What the chat holds (`policy.flow`): effects that reached the model and what brought
    them (the FLOW_RULE check reads it)."""


class OfferCheck(ABC):
    """One offer check. Subclasses set the class attributes and implement `verdict`."""

    name: ClassVar[str]
    """The check's own name, unique among the checks (explain and the web page show it)."""
    reason: ClassVar[ToolOfferBlockReason]
    """What a decision says when this is the first check that fails (several checks may guard
    one reason: AI Studio's reasons are the decision's contract)."""
    place: ClassVar[int]
    """Its place in the order: checks run by ascending place (unique; leave gaps)."""
    scope: ClassVar[Scope]
    needs_tool: ClassVar[bool] = True
    """False for a check that decides without the tool (it runs for an unknown id too)."""

    @abstractmethod
    def verdict(self, question: Question) -> Check:
        """This check's verdict on `question`, with what it looked at."""

    def verdict_for_unknown(self, question: Question, refusal: str | None) -> Check:
        """The verdict when no tool has the id (`refusal`: why its definition was refused)."""
        return self.failed("Not evaluated: the tool is unknown.")

    def passed(self, detail: str, evidence: tuple[Evidence, ...] = ()) -> Check:
        return Check(self.reason, True, detail, evidence, self.name)

    def failed(self, detail: str, evidence: tuple[Evidence, ...] = ()) -> Check:
        return Check(self.reason, False, detail, evidence, self.name)

    def judged(self, passed: bool, detail: str, evidence: tuple[Evidence, ...] = ()) -> Check:
        return Check(self.reason, passed, detail, evidence, self.name)
