"""Anthropic Messages API ⇄ the shared message model.

The model's turn is one assistant message of content blocks (text, thinking with its signature,
redacted thinking, tool use) and goes back unchanged and in order. All tool results of a round go
into ONE user message, flushed when the next round starts; splitting them teaches the model to
stop asking for several calls at once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.adapters import _wire
from runtime.arguments import is_arguments_object
from runtime.messages import (
    UNKNOWN_USAGE,
    Conversation,
    RequestedCall,
    Role,
    Round,
    StopReason,
    TextDelta,
    Usage,
)
from runtime.providers.client import ProviderClient
from runtime.schema import anthropic_tool

_log = logging.getLogger(__name__)

_DEFAULT_MAX_TOKENS = 4096
_NO_TOOL_CALLS = _wire.RawJson('{"type":"none"}')
_RESERVED = frozenset({"model", "messages", "system", "stream", "tools", "tool_choice"})
_INPUT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


_STOP_REASONS = {
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "pause_turn": StopReason.PAUSED,
    "refusal": StopReason.REFUSAL,
}
"""Anthropic stop reasons that are no complete answer (end_turn, tool_use, stop_sequence are)."""


class _BlockBuilder:
    __slots__ = ("arguments", "citations", "seed", "signature", "text", "thinking")

    def __init__(self, seed: dict[str, Any]) -> None:
        self.seed = seed
        self.text: list[str] = []
        self.arguments: list[str] = []
        self.thinking: list[str] = []
        self.citations: list[Any] = []
        self.signature: str | None = None

    def finish(self) -> tuple[dict[str, Any], str | None]:
        """The block as it goes back, and the raw arguments when they never parsed."""
        seed = self.seed
        kind = seed.get("type")
        if kind == "text":
            text = _wire.text_of(seed.get("text")) + "".join(self.text)
            block = {**seed, "type": "text", "text": text}
            if self.citations:
                given = seed.get("citations")
                block["citations"] = [*(given if isinstance(given, list) else []), *self.citations]
            return block, None
        if kind == "thinking":
            start = _wire.text_of(seed.get("thinking"))
            seeded = _wire.text_of(seed.get("signature"))
            signature = self.signature if self.signature is not None else seeded
            return {
                **seed,
                "type": "thinking",
                "thinking": start + "".join(self.thinking),
                "signature": signature,
            }, None
        if "input" in seed or self.arguments:
            return self._with_input()
        return seed, None

    def _with_input(self) -> tuple[dict[str, Any], str | None]:
        """A tool_use block, or a server's (server_tool_use, mcp_tool_use), with its streamed
        input joined."""
        raw = "".join(self.arguments)
        if not raw.strip():
            seeded = self.seed.get("input")
            return {**self.seed, "input": seeded if isinstance(seeded, dict) else {}}, None
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            return {**self.seed, "input": parsed}, None
        return {**self.seed, "input": {}}, raw


@dataclass(frozen=True, slots=True)
class StreamedMessage:
    """The assistant message of one round: its content blocks in order, as they go back."""

    blocks: tuple[dict[str, Any], ...]
    unparsable_arguments: Mapping[str, str]
    """Raw argument text of tool_use blocks (by id) that never formed a JSON object."""
    usage: Usage
    stop_reason: StopReason = StopReason.COMPLETED


_SEED_STRINGS = ("text", "thinking", "signature", "id", "name")
"""The string members of a content block's start that are read."""
_DELTA_STRINGS = {
    "text_delta": "text",
    "input_json_delta": "partial_json",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
}
"""The member holding each kind of block delta's piece."""


class AnthropicAccumulator(_wire.TypedFields):
    """Reads the events of one Messages stream; never raises on bad input.

    Every field it reads is type-checked: a wrong JSON type is kept as the round's protocol
    problem, naming the field.
    """

    __slots__ = ("_blocks", "_ended", "_stop", "error", "usage")

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _BlockBuilder] = {}
        self._ended = False
        self._stop = StopReason.COMPLETED
        self.usage: Usage = UNKNOWN_USAGE
        self.error: str | None = None

    def feed(self, data: str) -> TextDelta | None:
        event = _wire.loads_payload(data)
        if not isinstance(event, dict):
            return None
        kind = self.string(event, "type", "type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            index = self.integer(event, "index", "index")
            seed = self.mapping(event, "content_block", "content_block")
            if seed is not None and self._typed_seed(seed) and index is not None:
                self._blocks[index] = _BlockBuilder(seed)
        elif kind == "message_start":
            return self._start(self.mapping(event, "message", "message"))
        elif kind == "message_delta":
            delta = self.mapping(event, "delta", "delta")
            reason = _wire.non_blank(self.string(delta or {}, "stop_reason", "delta.stop_reason"))
            if reason is not None:
                self._ended = True
                self._stop = _STOP_REASONS.get(reason, StopReason.COMPLETED)
        elif kind == "message_stop":
            self._ended = True
        elif kind == "error":
            self.error = _wire.error_message(event.get("error")) or "unknown error"
        return None

    def _typed_seed(self, seed: dict[str, Any]) -> bool:
        """Whether a block's start can be read: its type a string, its members typed."""
        if self.string(seed, "type", "content_block.type") is None and "type" in seed:
            return False
        for name in _SEED_STRINGS:
            self.string(seed, name, f"content_block.{name}")
        if seed.get("type") != "text" or seed.get("input") is not None:
            self.mapping(seed, "input", "content_block.input")
        self.array(seed, "citations", "content_block.citations")
        return self.protocol_error is None

    def _start(self, message: dict[str, Any] | None) -> TextDelta | None:
        """The only usage passed on: what this request carried (cache reads and writes count)."""
        if message is None:
            return None
        usage = self.mapping(message, "usage", "message.usage")
        if usage is None:
            return None
        counts = (self.integer(usage, k, f"message.usage.{k}") for k in _INPUT_KEYS)
        known = [c for c in counts if c is not None and c >= 0]
        if not known:
            return None
        self.usage = Usage(input_tokens=sum(known))
        return TextDelta("", (), self.usage)

    def _delta(self, event: dict[str, Any]) -> TextDelta | None:
        delta = self.mapping(event, "delta", "delta")
        index = self.integer(event, "index", "index")
        if delta is None or index is None:
            return None
        kind = self.string(delta, "type", "delta.type")
        if kind == "citations_delta":
            citation = self.mapping(delta, "citation", "delta.citation")
            block = self._blocks.get(index)
            if citation is not None and block is not None:
                block.citations.append(citation)
            return None
        member = _DELTA_STRINGS.get(kind or "")
        if member is None:
            return None
        piece = self.string(delta, member, f"delta.{member}")
        block = self._blocks.get(index)
        if block is None:
            if kind != "text_delta":
                return None
            block = self._blocks[index] = _BlockBuilder({"type": "text", "text": ""})
        if piece is None:
            return None
        if kind == "text_delta":
            if piece:
                block.text.append(piece)
                return TextDelta(piece)
        elif kind == "input_json_delta":
            block.arguments.append(piece)
        elif kind == "thinking_delta":
            block.thinking.append(piece)
        else:
            block.signature = piece
        return None

    def build(self) -> StreamedMessage | None:
        """The finished message (blocks by index), or None unless the message ended."""
        if not self._ended:
            return None
        blocks: list[dict[str, Any]] = []
        unparsable: dict[str, str] = {}
        for index in sorted(self._blocks):
            block, raw = self._blocks[index].finish()
            blocks.append(block)
            block_id = block.get("id")
            if raw is not None and isinstance(block_id, str):
                unparsable[block_id] = raw
        return StreamedMessage(tuple(blocks), unparsable, self.usage, self._stop)


def round_of(message: StreamedMessage) -> Round:
    """Text of the text blocks; calls of the tool_use blocks with an id and a name (a server's
    own tool use is the host's business and only goes back with the turn)."""
    text: list[str] = []
    calls: list[RequestedCall] = []
    for block in message.blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text.append(block["text"])
        elif kind == "tool_use":
            call_id, name = _wire.non_blank(block.get("id")), _wire.non_blank(block.get("name"))
            if call_id is None or name is None:
                continue
            raw = message.unparsable_arguments.get(call_id)
            arguments = raw if raw is not None else _wire.dumps(block.get("input", {}))
            calls.append(RequestedCall(call_id, name, arguments, is_arguments_object(arguments)))
    return Round("".join(text), tuple(calls), (), message.usage, message.stop_reason)


class AnthropicAdapter(_wire.WireAdapter[StreamedMessage]):
    """One streaming call's conversation over the Messages API. Stateful; never share it."""

    _log = _log
    _missing = "the stream ended before the message did."

    def __init__(
        self,
        client: ProviderClient,
        conversation: Conversation,
        model: str,
        *,
        max_output_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(client)
        system_parts = [conversation.system_prompt] if conversation.system_prompt else []
        system_parts += [m.content for m in conversation.messages if m.role is Role.SYSTEM]
        self._system_prompt = "\n\n".join(system_parts)
        self._conversation_json = _wire.messages_json(
            m for m in conversation.messages if m.role is not Role.SYSTEM
        )
        extras = _wire.without_reserved(extra_body, _RESERVED, "Anthropic Messages")
        max_tokens = extras.pop("max_tokens", None)
        if max_tokens is None:
            max_tokens = max_output_tokens if max_output_tokens is not None else _DEFAULT_MAX_TOKENS
        self._fields: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "stream": True,
            **extras,
        }
        tools = [anthropic_tool(t) for t in conversation.tools]
        self._tools = _wire.RawJson(_wire.dumps(tools)) if tools else None
        self._pending_results: list[dict[str, Any]] = []
        self._last: StreamedMessage | None = None

    def request_body(self, final_response_instruction: str | None, include_tools: bool) -> bytes:
        fields = dict(self._fields)
        prompt = _wire.with_instruction(self._system_prompt, final_response_instruction)
        if prompt:
            fields["system"] = prompt
        if self._tools is not None and (include_tools or self._recorded_json):
            fields["tools"] = self._tools
            if not include_tools:
                # Anthropic refuses tool_use/tool_result blocks in a request that defines no
                # tools, so a final round keeps them defined and forbids calling them.
                fields["tool_choice"] = _NO_TOOL_CALLS
        return _wire.request_body(
            fields, "messages", [*self._conversation_json, *self._recorded_json]
        )

    def _flush_results(self) -> None:
        if self._pending_results:
            self._recorded_json.append(
                _wire.dumps({"role": "user", "content": self._pending_results})
            )
            self._pending_results = []

    _record_queued = _flush_results

    def _start_round(self) -> None:
        self._flush_results()
        self._last = None

    def _accumulator(self) -> AnthropicAccumulator:
        return AnthropicAccumulator()

    def _completed(self, message: StreamedMessage) -> Round:
        self._last = message
        return round_of(message)

    def record_assistant_turn(self) -> None:
        """All blocks exactly as they arrived, thinking signatures included."""
        message = self._last
        if message is None:
            return
        self._last = None
        blocks_json = [_wire.dumps(b) for b in message.blocks]
        self._recorded_json.append('{"role":"assistant","content":[' + ",".join(blocks_json) + "]}")
        self._recorded_texts.extend(blocks_json)

    def record_tool_result(self, call_id: str, content: str, is_error: bool = False) -> None:
        """Queued; the next round sends all of them in one user message."""
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if is_error:
            result["is_error"] = True
        self._pending_results.append(result)
        self._record_result_text(content)
