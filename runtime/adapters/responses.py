"""OpenAI Responses API ⇄ the shared message model.

Requests are sent with `store: false`, so nothing lives on the host between rounds: the whole
output of a round — reasoning items included — goes back in the next request exactly as it
arrived (the raw JSON text of each item), since the API refuses a continuation whose reasoning was
dropped or rewritten. Reasoning models are asked for `reasoning.encrypted_content`, the only form
in which a reasoning item can be sent back unstored. Call ids come from the provider and are
never made up.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime.adapters import _spans, _wire
from runtime.arguments import is_arguments_object
from runtime.messages import (
    UNKNOWN_USAGE,
    Conversation,
    RequestedCall,
    Round,
    Source,
    SourceOrigin,
    StopReason,
    TextDelta,
    Usage,
)
from runtime.providers.client import ProviderClient
from runtime.schema import responses_tool

_log = logging.getLogger(__name__)

_RESERVED = frozenset(
    {"model", "input", "stream", "store", "tools", "tool_choice", "parallel_tool_calls"}
)
_USAGE_SAFE_ITEM_TYPES = frozenset({"message", "reasoning", "function_call"})
"""Item types whose round's usage describes the conversation (a hosted tool inflates it)."""


@dataclass(frozen=True, slots=True)
class _OutputItem:
    """One output item: parsed for reading, raw for sending back unchanged."""

    item: Mapping[str, Any]
    raw_json: str


@dataclass(frozen=True, slots=True)
class _StreamedResponse:
    """One round's response: its output items in order, the API's output_text, usage, and why
    it ended."""

    output: tuple[_OutputItem, ...]
    output_text: str
    usage: Usage
    stop_reason: StopReason = StopReason.COMPLETED


_INCOMPLETE_REASONS = {"content_filter": StopReason.CONTENT_FILTER}
"""Responses `incomplete_details.reason` other than max_output_tokens (which is MAX_TOKENS)."""

_ITEM_STRINGS: dict[str, tuple[str, ...]] = {
    "function_call": ("name", "arguments", "call_id"),
    "reasoning": ("encrypted_content",),
}
"""The string members read from an output item of each type."""
_PART_TEXT = {"output_text": "text", "refusal": "refusal"}
"""The member holding the text of each message content part read."""


class ResponsesAccumulator(_wire.TypedFields):
    """Reads the events of one Responses stream; never raises on bad input.

    Every field it reads is type-checked: a wrong JSON type is kept as the round's protocol
    problem, naming the field.
    """

    __slots__ = ("_completed", "_done_items", "error")

    def __init__(self) -> None:
        super().__init__()
        self._completed: _StreamedResponse | None = None
        self._done_items: dict[int, _OutputItem] = {}
        self.error: str | None = None

    def _typed_items(self, field: str, items: list[Any]) -> list[dict[str, Any]]:
        """The output items whose `type` is a string; any other is a protocol problem."""
        kept: list[dict[str, Any]] = []
        for position, item in self.objects(items, field):
            if self._typed_item(item, f"{field}[{position}]"):
                kept.append(item)
        return kept

    def _typed_item(self, item: dict[str, Any], field: str) -> bool:
        """Whether the item has a string `type`; the members read of its type are checked."""
        kind = self.string(item, "type", f"{field}.type")
        if kind is None and item.get("type") is not None:
            return False
        for name in _ITEM_STRINGS.get(kind or "", ()):
            self.string(item, name, f"{field}.{name}")
        if kind == "message":
            content = self.array(item, "content", f"{field}.content")
            for position, part in self.objects(content or [], f"{field}.content"):
                where = f"{field}.content[{position}]"
                part_kind = self.string(part, "type", f"{where}.type")
                member = _PART_TEXT.get(part_kind or "")
                if member is not None:
                    self.string(part, member, f"{where}.{member}")
                annotations = self.array(part, "annotations", f"{where}.annotations")
                for number, annotation in self.objects(annotations or [], f"{where}.annotations"):
                    self._typed_citation(annotation, f"{where}.annotations[{number}]")
        return True

    def _typed_citation(self, annotation: dict[str, Any], field: str) -> None:
        if self.string(annotation, "type", f"{field}.type") == "url_citation":
            self.string(annotation, "title", f"{field}.title")
            self.string(annotation, "url", f"{field}.url")

    def feed(self, data: str) -> TextDelta | None:
        event = _wire.loads_payload(data)
        if not isinstance(event, dict):
            return None
        kind = self.string(event, "type", "type")
        if kind == "response.output_text.delta":
            text = self.string(event, "delta", "delta")
            return TextDelta(text) if text else None
        if kind == "response.output_text.annotation.added":
            annotation = self.mapping(event, "annotation", "annotation")
            if annotation is None:
                return None
            self._typed_citation(annotation, "annotation")
            source = _url_citation(annotation)
            return TextDelta("", (source,)) if source is not None else None
        if kind == "response.output_item.done":
            self._keep_done_item(event, data)
            return None
        if kind in ("response.completed", "response.incomplete"):
            return self._complete(event, data)
        if kind in ("error", "response.failed"):
            response = event.get("response")
            detail = response.get("error") if isinstance(response, dict) else event
            self.error = _wire.error_text(detail)
        return None

    def _keep_done_item(self, event: dict[str, Any], data: str) -> None:
        item = self.mapping(event, "item", "item")
        if item is None or not self._typed_item(item, "item"):
            return
        index = self.integer(event, "output_index", "output_index")
        if index is None:
            index = len(self._done_items)
        raw = _raw_or_dumped(item, lambda: _spans.value_text(data, ("item",)))
        self._done_items[index] = _OutputItem(item, raw)

    def _complete(self, event: dict[str, Any], data: str) -> TextDelta | None:
        response = self.mapping(event, "response", "response")
        if response is None:
            return None
        output = self.array(response, "output", "response.output") or []
        items = self._typed_items("response.output", output)
        output_text = self.string(response, "output_text", "response.output_text")
        usage = self.usage_at(
            response, "usage", "response.usage", ("input_tokens", "output_tokens")
        )
        stop = self._stop_reason(response, items)
        if self.protocol_error is not None:
            return None
        raws = _raw_elements(data, items)
        if not all(i.get("type") in _USAGE_SAFE_ITEM_TYPES for i in items):
            usage = UNKNOWN_USAGE
        self._completed = _StreamedResponse(
            tuple(_OutputItem(i, r) for i, r in zip(items, raws, strict=True)),
            output_text or "",
            usage,
            stop,
        )
        return TextDelta("", (), usage) if usage.is_known else None

    def _stop_reason(self, response: dict[str, Any], items: list[dict[str, Any]]) -> StopReason:
        """incomplete (cut at max_output_tokens, or filtered), a refusal, or completed."""
        status = self.string(response, "status", "response.status")
        details = self.mapping(response, "incomplete_details", "response.incomplete_details")
        reason = self.string(details or {}, "reason", "response.incomplete_details.reason")
        if status == "incomplete" or reason:
            return _INCOMPLETE_REASONS.get(reason or "", StopReason.MAX_TOKENS)
        refused = any(
            isinstance(part, dict) and part.get("type") == "refusal"
            for item in items
            if item.get("type") == "message" and isinstance(item.get("content"), list)
            for part in item["content"]
        )
        return StopReason.REFUSAL if refused else StopReason.COMPLETED

    def build(self) -> _StreamedResponse | None:
        """The completed response; else one rebuilt from its done items; else None (failed)."""
        if self._completed is not None:
            return self._completed
        if self._done_items:
            items = tuple(self._done_items[k] for k in sorted(self._done_items))
            return _StreamedResponse(items, "", UNKNOWN_USAGE)
        return None


def _raw_elements(data: str, items: list[dict[str, Any]]) -> list[str]:
    try:
        raws = _spans.array_element_texts(data, ("response", "output"))
    except (ValueError, IndexError, RecursionError):
        raws = None
    if raws is None or len(raws) != len(items):
        return [_wire.dumps(i) for i in items]
    return raws


def _raw_or_dumped(item: dict[str, Any], find: Any) -> str:
    try:
        raw = find()
    except (ValueError, IndexError, RecursionError):
        raw = None
    return raw if isinstance(raw, str) else _wire.dumps(item)


def _url_citation(annotation: Any) -> Source | None:
    if not isinstance(annotation, dict) or annotation.get("type") != "url_citation":
        return None
    title = _wire.non_blank(annotation.get("title"))
    url = _wire.non_blank(annotation.get("url"))
    if title is None or url is None:
        return None
    return Source(title, url, SourceOrigin.LLM)


def round_of(response: _StreamedResponse) -> Round:
    """What the loop needs from a response: text, calls (id "" when missing), sources, usage."""
    text_parts: list[str] = []
    sources: list[Source] = []
    calls: list[RequestedCall] = []
    for output in response.output:
        item = output.item
        kind = item.get("type")
        if kind == "message":
            _read_message(item.get("content"), text_parts, sources)
        elif kind == "function_call":
            name = _wire.text_of(item.get("name"))
            arguments = _wire.text_of(item.get("arguments"))
            call_id = _wire.text_of(item.get("call_id"))
            valid = bool(name.strip()) and is_arguments_object(arguments)
            calls.append(RequestedCall(call_id, name, arguments, valid))
    text = response.output_text if response.output_text.strip() else "".join(text_parts)
    unique = tuple({s.url: s for s in reversed(sources)}.values())[::-1]
    return Round(text, tuple(calls), unique, response.usage, response.stop_reason)


def _read_message(content: Any, text_parts: list[str], sources: list[Source]) -> None:
    if not isinstance(content, list):
        return
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "output_text" and isinstance(part.get("text"), str):
            text_parts.append(part["text"])
            annotations = part.get("annotations")
            if isinstance(annotations, list):
                sources.extend(s for a in annotations if (s := _url_citation(a)) is not None)
        elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            text_parts.append(part["refusal"])


def _resendable_items(response: _StreamedResponse) -> list[str]:
    """The response's output items as the next request sends them under `store: false`.

    Each item goes back verbatim (ids included) while every reasoning item carries its
    `encrypted_content`. A reasoning item without it cannot be resolved (nothing is stored), so it
    is left out, and the other items of that response go back without their `id`, since the API
    refuses an item whose id pairs it with a reasoning item that is not sent.
    """
    unresolved = [
        o
        for o in response.output
        if o.item.get("type") == "reasoning"
        and not _wire.non_blank(o.item.get("encrypted_content"))
    ]
    if not unresolved:
        return [o.raw_json for o in response.output]
    _log.warning(
        "A reasoning item came without encrypted_content, so it cannot be sent back under "
        'store: false; it is left out (ask for include: ["reasoning.encrypted_content"]).'
    )
    return [
        _wire.dumps({k: v for k, v in o.item.items() if k != "id"})
        for o in response.output
        if o not in unresolved
    ]


class ResponsesAdapter(_wire.WireAdapter[_StreamedResponse]):
    """One streaming call's conversation over the Responses API. Stateful; never share it."""

    _log = _log
    _missing = "the stream ended without a response."

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
        self._system_prompt = conversation.system_prompt
        self._conversation_json = _wire.messages_json(conversation.messages)
        extras = dict(extra_body or {})
        hosted = extras.get("tools")
        self._fields: dict[str, Any] = {"model": model, "stream": True, "store": False}
        if max_output_tokens is not None:
            self._fields["max_output_tokens"] = max_output_tokens
        self._fields.update(_wire.without_reserved(extras, _RESERVED - {"tools"}, "Responses"))
        self._fields.pop("tools", None)
        if client.profile.is_reasoning_model(model) or "reasoning" in extras:
            self._fields["include"] = _with_encrypted_reasoning(extras.get("include"))
        local = [responses_tool(t) for t in conversation.tools]
        local_names = {t["name"] for t in local}
        native = [
            t
            for t in (hosted if isinstance(hosted, list) else [])
            if not (isinstance(t, dict) and t.get("type") in local_names)
        ]
        self._tools = _wire.RawJson(_wire.dumps([*native, *local]))
        self._last: _StreamedResponse | None = None

    def request_body(self, final_response_instruction: str | None, include_tools: bool) -> bytes:
        fields = dict(self._fields)
        fields["tools"] = self._tools if include_tools else _wire.RawJson("[]")
        return _wire.openai_style_body(
            fields,
            "input",
            self._system_prompt,
            final_response_instruction,
            [*self._conversation_json, *self._recorded_json],
        )

    def _start_round(self) -> None:
        self._last = None

    def _accumulator(self) -> ResponsesAccumulator:
        return ResponsesAccumulator()

    def _completed(self, response: _StreamedResponse) -> Round:
        self._last = response
        return round_of(response)

    def record_assistant_turn(self) -> None:
        """Every output item of the last response, verbatim, reasoning included."""
        response = self._last
        if response is None:
            return
        self._last = None
        for item_json in _resendable_items(response):
            self._recorded_json.append(item_json)
            self._recorded_texts.append(item_json)

    def record_tool_result(self, call_id: str, content: str, is_error: bool = False) -> None:
        """A `function_call_output` item; this API has no error flag (the text says it)."""
        self._recorded_json.append(
            _wire.dumps({"type": "function_call_output", "call_id": call_id, "output": content})
        )
        self._record_result_text(content)


_ENCRYPTED_REASONING = "reasoning.encrypted_content"


def _with_encrypted_reasoning(given: Any) -> list[Any]:
    """The administrator's `include` list (if any) with the encrypted reasoning added once."""
    kept = list(given) if isinstance(given, list) else []
    return kept if _ENCRYPTED_REASONING in kept else [*kept, _ENCRYPTED_REASONING]
