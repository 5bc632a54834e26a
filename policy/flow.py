"""Flow rules: what a tool's calls and results do (its effects), what a chat holds, and whether
a tool is in conflict with what the chat holds.

A tool result can carry an injected instruction; the model, talked into it, may then use a tool
that was rightly offered at the start to send private data out or to change something. The flow
rule looks at what has reached the model (the chat's holdings) and at what a tool does (its
effects): a tool is *in conflict* when the two together cover untrusted content, private data and
an outward effect. `DataTools.FlowRule` says what happens to such a tool: nothing (OFF), not
offered and every call refused (BLOCK), or each call needs a person's approval (APPROVE).

This module is the one owner of that rule; the offer check, the runtime's per-call check, explain
and the approvals ask `flow_conflict`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from policy._dataclass import dataclass
from policy.provenance import Origin


class Effect(StrEnum):
    """What a tool's results bring in or its calls do."""

    UNTRUSTED_CONTENT = "UNTRUSTED_CONTENT"
    """Its results bring text from outside the organization's control (a web page, an email, a
    ticket written by anyone)."""
    PRIVATE_DATA = "PRIVATE_DATA"
    """Its results bring, or its calls reach, the organization's or the user's private data and
    systems (a tool that acts with the user's own account carries this too)."""
    SENDS_OUT = "SENDS_OUT"
    """Its calls can carry data to a party outside (a search query, an address fetched, a mail)."""
    CHANGES_STATE = "CHANGES_STATE"
    """Its calls change something (write, pay, post, delete)."""


EFFECT_NAMES: tuple[str, ...] = tuple(effect.value for effect in Effect)
_ALL_EFFECTS: frozenset[Effect] = frozenset(Effect)
HELD_EFFECTS: tuple[Effect, ...] = (Effect.UNTRUSTED_CONTENT, Effect.PRIVATE_DATA)
"""The effects a chat can hold: what reached the model."""
_OUTWARD_EFFECTS: frozenset[Effect] = frozenset({Effect.SENDS_OUT, Effect.CHANGES_STATE})


class FlowRule(StrEnum):
    """`DataTools.FlowRule`: what happens to a tool in conflict with what the chat holds."""

    OFF = "OFF"
    """Nothing: flows are not checked (AI Studio's behaviour)."""
    BLOCK = "BLOCK"
    """Not offered, and every call is checked again before it runs and refused."""
    APPROVE = "APPROVE"
    """Offered; each call needs a person's approval."""


FLOW_RULE_NAMES: tuple[str, ...] = tuple(rule.value for rule in FlowRule)


class EffectsOrigin(StrEnum):
    """Where a tool's effects come from, shown as evidence."""

    DEFINITION = "definition"
    """The tool's own definition (a built-in's room, an app's definition)."""
    MCP_ANNOTATIONS = "MCP annotations"
    """The pinned annotations of an MCP tool (readOnlyHint, destructiveHint, openWorldHint)."""
    PLUGIN = "plugin.lua"
    """The organization set them: `DataTools.ToolEffects` or an MCP server's `Effects`."""
    NOTHING_DECLARED = "declares nothing"
    """Nothing declared: the tool counts as having all four effects (fail closed)."""


@dataclass(frozen=True, slots=True)
class ToolEffects:
    """A tool's effects as resolved, with where they come from."""

    effects: frozenset[Effect]
    origin: EffectsOrigin
    detail: str = ""
    """What was read, in words (the annotations, the setting's key)."""
    where: Origin | None = None
    """The plugin and file:line that set them (origin PLUGIN)."""

    @property
    def declares_nothing(self) -> bool:
        return self.origin is EffectsOrigin.NOTHING_DECLARED

    @property
    def names(self) -> tuple[str, ...]:
        """The effects in their declared order."""
        return tuple(effect.value for effect in Effect if effect in self.effects)

    def described(self) -> str:
        """`SENDS_OUT, UNTRUSTED_CONTENT (definition)` — what explain shows."""
        shown = ", ".join(self.names) or "none"
        place = f" at {self.where.location}" if self.where is not None else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{shown} ({self.origin.value}{detail}{place})"


UNDECLARED = ToolEffects(_ALL_EFFECTS, EffectsOrigin.NOTHING_DECLARED)


def declared_effects(names: Iterable[Effect | str] | None) -> ToolEffects:
    """A definition's `effects` as a tool's effects: None declares nothing (all four)."""
    if names is None:
        return UNDECLARED
    return ToolEffects(frozenset(Effect(name) for name in names), EffectsOrigin.DEFINITION)


def annotation_effects(annotations: Mapping[str, Any]) -> ToolEffects:
    """An MCP tool's effects read from its annotations, an absent hint the conservative way (the
    MCP specification's defaults: not read-only, open world), so a tool annotated with nothing
    has all four.

    An open-world tool talks to the world outside: its results are untrusted and its calls send
    out (like web_search). A tool not declared open-world may reach the organization's own
    systems the server is configured for: private data. A tool not read-only changes state."""
    read_only = annotations.get("readOnlyHint") is True
    open_world = annotations.get("openWorldHint")
    effects: set[Effect] = set()
    if open_world is not False:
        effects |= {Effect.UNTRUSTED_CONTENT, Effect.SENDS_OUT}
    if open_world is not True:
        effects.add(Effect.PRIVATE_DATA)
    if not read_only:
        effects.add(Effect.CHANGES_STATE)
    read = ", ".join(
        f"{hint}={_hint_text(annotations.get(hint))}"
        for hint in ("readOnlyHint", "destructiveHint", "openWorldHint")
    )
    return ToolEffects(frozenset(effects), EffectsOrigin.MCP_ANNOTATIONS, read)


def _hint_text(value: Any) -> str:
    if value is None:
        return "absent"
    return "true" if value is True else "false" if value is False else repr(value)


def configured_effects(names: Iterable[str], key: str, where: Origin | None) -> ToolEffects:
    """Effects the organization set (`DataTools.ToolEffects`, an MCP server's `Effects`); the
    reader has checked each name already."""
    return ToolEffects(frozenset(Effect(name) for name in names), EffectsOrigin.PLUGIN, key, where)


@dataclass(frozen=True, slots=True)
class Holding:
    """One effect that reached the model in a chat: through which tool and call, from which
    source (a page's address as logs show it, a data source, what an app attached)."""

    effect: Effect
    tool_id: str = ""
    call_id: str = ""
    source: str = ""

    def described(self) -> str:
        """`UNTRUSTED_CONTENT from https://… (web_search, call c1)` — evidence text."""
        parts = [part for part in (self.tool_id, f"call {self.call_id}" if self.call_id else "")]
        via = ", ".join(part for part in parts if part)
        return (
            f"{self.effect.value}"
            + (f" from {self.source}" if self.source else "")
            + (f" ({via})" if via else "")
        )


@dataclass(frozen=True, slots=True)
class ChatHoldings:
    """What a chat holds: each effect that reached the model with what brought it, in arrival
    order. Holdings only grow; the offer decision and the per-call check take this value."""

    holdings: tuple[Holding, ...] = ()

    @property
    def effects(self) -> frozenset[Effect]:
        return frozenset(holding.effect for holding in self.holdings)

    def brought(self, effect: Effect) -> tuple[Holding, ...]:
        """What brought `effect` into the chat."""
        return tuple(holding for holding in self.holdings if holding.effect is effect)

    def joined(self, arriving: Iterable[Holding]) -> ChatHoldings:
        """These holdings and the arriving ones, one per (effect, tool, source), first kept."""
        joined: dict[tuple[Effect, str, str], Holding] = {}
        for holding in (*self.holdings, *arriving):
            joined.setdefault((holding.effect, holding.tool_id, holding.source), holding)
        return ChatHoldings(tuple(joined.values()))

    @classmethod
    def what_if(cls, effects: Iterable[Effect | str]) -> ChatHoldings:
        """Holdings as an administrator supposes them (`policy explain --chat-holds`)."""
        return cls(tuple(Holding(Effect(effect), source="what-if") for effect in effects))


NO_HOLDINGS = ChatHoldings()


def parse_held_effects(text: str) -> tuple[Effect, ...]:
    """`UNTRUSTED_CONTENT,PRIVATE_DATA` (any case) as effects a chat can hold; ValueError names
    a word that is none of them."""
    held: list[Effect] = []
    for word in (part.strip().upper() for part in text.split(",")):
        if not word:
            continue
        if word not in (effect.value for effect in HELD_EFFECTS):
            raise ValueError(
                f'"{word}" is not an effect a chat can hold; use '
                + " and/or ".join(effect.value for effect in HELD_EFFECTS)
                + ", comma-separated"
            )
        held.append(Effect(word))
    return tuple(dict.fromkeys(held))


@dataclass(frozen=True, slots=True)
class FlowConflict:
    """A tool in conflict with what the chat holds: why, and what brought each part."""

    tool_id: str
    tool_effects: ToolEffects
    held: tuple[Holding, ...]
    """The holdings that, with the tool's effects, complete the conflict."""

    @property
    def message(self) -> str:
        brought = "; ".join(holding.described() for holding in self.held)
        outward = ", ".join(
            effect.value
            for effect in Effect
            if effect in self.tool_effects.effects & _OUTWARD_EFFECTS
        )
        return (
            f"The chat holds {brought or 'nothing'}; {self.tool_id} has the effects "
            f"{self.tool_effects.described()}, so together they cover untrusted content, private "
            f"data and an outward effect ({outward}): injected text could make it carry private "
            "data out or change something."
        )


def flow_conflict(
    tool_id: str, tool_effects: ToolEffects, holdings: ChatHoldings
) -> FlowConflict | None:
    """Whether the tool is in conflict with what the chat holds: the chat's holdings plus the
    tool's effects cover UNTRUSTED_CONTENT, PRIVATE_DATA and SENDS_OUT or CHANGES_STATE.

    The one rule: the offer check, every call's check before it runs, explain and approvals ask
    it. None when the tool may run."""
    effects = tool_effects.effects
    if not effects & _OUTWARD_EFFECTS:
        return None
    covered = effects | holdings.effects
    if not all(effect in covered for effect in HELD_EFFECTS):
        return None
    held = tuple(
        holding
        for effect in HELD_EFFECTS
        if effect not in effects
        for holding in holdings.brought(effect)
    )
    return FlowConflict(tool_id, tool_effects, held)
