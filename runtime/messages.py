"""The one message model every adapter translates to and from. Nothing else knows a wire format."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class SourceOrigin(StrEnum):
    """Who brought a source: the provider itself, a tool, or the chat's data sources."""

    LLM = "LLM"
    TOOL = "TOOL"
    RAG = "RAG"


@dataclass(frozen=True, slots=True)
class Source:
    """A citation shown to the user: from the provider (LLM), a tool (TOOL) or data sources (RAG)."""

    title: str
    url: str
    origin: SourceOrigin = SourceOrigin.TOOL


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of a request; None fields are unknown."""

    input_tokens: int | None = None
    output_tokens: int | None = None

    @property
    def is_known(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None


UNKNOWN_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class RequestedCall:
    """A tool call the model asked for. call_id is "" when the provider gave none."""

    call_id: str
    tool_name: str
    arguments_json: str
    is_valid: bool = True


class StopReason(StrEnum):
    """Why the provider ended a response, in one vocabulary over every wire API.

    Anything but COMPLETED means the text is not the whole answer the model meant to give:
    MAX_TOKENS (cut at the output limit: `finish_reason` "length", Responses `incomplete` for
    max_output_tokens, Anthropic `max_tokens`), CONTENT_FILTER (the host filtered it), REFUSAL
    (the model declined; the text is its refusal), PAUSED (Anthropic `pause_turn` left unfinished
    after the continuations the loop allows), APPROVAL_REQUIRED (the loop stopped the turn
    before a call that needs a person's approval).
    """

    COMPLETED = "completed"
    MAX_TOKENS = "max_tokens"
    CONTENT_FILTER = "content_filter"
    REFUSAL = "refusal"
    PAUSED = "paused"
    APPROVAL_REQUIRED = "approval_required"
    """Set by the loop, never by a provider: the turn stopped before a call that waits for a
    person's approval (`FinalAnswer.pending_approvals`)."""


@dataclass(frozen=True, slots=True)
class Round:
    """What one provider response brought: text, calls, provider-native sources, usage, and why
    it ended."""

    text_output: str = ""
    calls: tuple[RequestedCall, ...] = ()
    sources: tuple[Source, ...] = ()
    usage: Usage = UNKNOWN_USAGE
    stop_reason: StopReason = StopReason.COMPLETED


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of streamed answer text (possibly empty, carrying sources or usage)."""

    content: str
    sources: tuple[Source, ...] = ()
    usage: Usage = UNKNOWN_USAGE


@dataclass(frozen=True, slots=True)
class RoundCompleted:
    """The last event of a round: what the whole response brought."""

    round: Round


AdapterEvent = TextDelta | RoundCompleted
"""What an adapter yields for one round: any TextDeltas, then exactly one RoundCompleted."""


class Role(StrEnum):
    """Author of a conversation message, spelled as every wire API spells it."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """A message of the conversation before the tool loop starts (attachments already inlined)."""

    role: Role
    content: str


@dataclass(slots=True)
class Conversation:
    """The request an adapter starts from: system prompt, messages and the tools on offer."""

    system_prompt: str
    messages: list[ChatMessage]
    tools: list[Any] = field(default_factory=list)
    """`policy.definitions.ToolDefinition`s as offered in this request."""
