"""OpenAI Chat Completions (and every compatible host) ⇄ the shared message model.

Tool-call fragments are put together by `index` (then by id, then "the open one"); a missing call
id is made up, because here it only has to match between our request and our answer. Names and
arguments that cannot be sent back are answered but replaced in the history we resend.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from policy._runtime_seam import is_valid_function_name
from runtime.adapters import _wire
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
from runtime.schema import chat_completions_tool

_log = logging.getLogger(__name__)

_INVALID_TOOL_CALL_NAME = "invalid_tool_call"
_RESERVED = frozenset(
    {"model", "messages", "stream", "tools", "tool_choice", "parallel_tool_calls"}
)
_CALL_KEYS = frozenset({"index", "id", "type", "function"})
_REASONING_KEYS = frozenset({"reasoning_content", "reasoning", "reasoning_details"})


class _CallBuilder:
    __slots__ = ("arguments", "call_id", "call_type", "extra", "has_function", "name")

    def __init__(self) -> None:
        self.call_id: str | None = None
        self.call_type: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []
        self.has_function = False
        self.extra: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
class _StreamedCall:
    """One tool call as the stream delivered it (before any repair)."""

    call_id: str | None
    call_type: str
    name: str | None
    arguments: str
    has_function: bool
    extra: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StreamedMessage:
    """The assistant message of one round; `content` is None when the model wrote no text.

    `reasoning` holds each plain reasoning field as it arrived (`reasoning_content`,
    `reasoning`), `reasoning_details` OpenRouter's structured entries put back together, and
    `think` the text of a leading `<think>…</think>` block split off the answer.
    """

    content: str | None
    reasoning: Mapping[str, str]
    calls: tuple[_StreamedCall, ...]
    usage: Usage
    sources: tuple[Source, ...]
    reasoning_details: tuple[Mapping[str, Any], ...] = ()
    think: str = ""
    stop_reason: StopReason = StopReason.COMPLETED


_FINISH_REASONS = {
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.CONTENT_FILTER,
}
_PLAIN_REASONING_FIELDS = ("reasoning_content", "reasoning")
_OTHER_MEMBERS = ("reasoning_details", "tool_calls", "refusal", "content", "annotations")
_MEMBER_FIELDS = {
    prefix: {name: f"{prefix}.{name}" for name in (*_PLAIN_REASONING_FIELDS, *_OTHER_MEMBERS)}
    for prefix in ("choices[0].delta", "choices[0].message")
}
"""The names of the message members read, per place (spelled once, not per chunk)."""
_JOINED_DETAIL_KEYS = frozenset({"text", "summary", "data"})
"""Text members of a `reasoning_details` entry that a stream delivers in pieces."""


class _ThinkSplitter:
    """Splits a leading `<think>…</think>` block off the streamed content (Groq's raw reasoning
    format, many self-hosted reasoning models); tags later in the answer are left as text."""

    __slots__ = ("_buffer", "_state", "think")

    _OPEN = "<think>"
    _CLOSE = "</think>"

    def __init__(self) -> None:
        self._state = "start"
        self._buffer = ""
        self.think: list[str] = []

    def feed(self, text: str) -> str:
        """The answer text of this piece (possibly held back while a tag may be forming)."""
        if self._state == "answer":
            return text
        if self._state == "after":
            text = text.lstrip()
            if text:
                self._state = "answer"
            return text
        self._buffer += text
        if self._state == "start":
            leading = self._buffer.lstrip()
            if not leading:
                return ""
            if not leading.startswith(self._OPEN):
                if self._OPEN.startswith(leading):
                    return ""
                self._state = "answer"
                answer, self._buffer = self._buffer, ""
                return answer
            self._state = "thinking"
            self._buffer = leading[len(self._OPEN) :]
        end = self._buffer.find(self._CLOSE)
        if end < 0:
            keep = _partial_suffix(self._buffer, self._CLOSE)
            self.think.append(self._buffer[: len(self._buffer) - keep])
            self._buffer = self._buffer[len(self._buffer) - keep :]
            return ""
        self.think.append(self._buffer[:end])
        rest = self._buffer[end + len(self._CLOSE) :]
        self._state, self._buffer = "after", ""
        return self.feed(rest)

    def flush(self) -> str:
        """What is still held back once the stream ended (an unfinished tag is answer text)."""
        held, self._buffer = self._buffer, ""
        if self._state == "thinking":
            self.think.append(held)
            return ""
        return held


def _partial_suffix(text: str, tag: str) -> int:
    """How many trailing characters of `text` could be the start of `tag`."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ChatCompletionAccumulator(_wire.TypedFields):
    """Reads the `data:` payloads of one Chat Completions stream; never raises on bad input.

    Every field it reads is type-checked: a wrong JSON type is kept as the round's protocol
    problem, naming the field.
    """

    __slots__ = (
        "_by_id",
        "_by_index",
        "_calls",
        "_details",
        "_finish",
        "_latest_at",
        "_read_something",
        "_reasoning",
        "_refused",
        "_seen_urls",
        "_sources",
        "_text",
        "_think",
        "error",
        "usage",
    )

    def __init__(self, *, split_think_tags: bool = True) -> None:
        super().__init__()
        self._text: list[str] = []
        self._reasoning: dict[str, list[str]] = {}
        self._details: dict[tuple[str | None, int | None, int], dict[str, Any]] = {}
        self._latest_at: dict[int, tuple[str | None, int | None, int]] = {}
        self._calls: list[_CallBuilder] = []
        self._by_index: dict[int, _CallBuilder] = {}
        self._by_id: dict[str, _CallBuilder] = {}
        self._read_something = False
        self._refused = False
        self._finish: str | None = None
        self._seen_urls: set[str] = set()
        self._sources: list[Source] = []
        self._think = _ThinkSplitter() if split_think_tags else None
        self.usage: Usage = UNKNOWN_USAGE
        self.error: str | None = None

    def feed(self, data: str) -> TextDelta | None:
        """Take one payload; return what the user should see of it (text, sources, usage)."""
        if data == "[DONE]":
            held = self._flush_think()
            return TextDelta(held) if held else None
        chunk = _wire.loads_payload(data)
        if not isinstance(chunk, dict):
            return None
        if chunk.get("error") is not None:
            # Hosts (OpenRouter, gateways) put it next to choices whose finish_reason is "error",
            # null or anything else: it is the host's error all the same.
            self.error = _wire.error_text(chunk["error"])
            return None
        usage = self._new_usage(chunk)
        sources = (
            self._new_sources(chunk) if "search_results" in chunk or "citations" in chunk else []
        )
        text = ""
        choices = self.array(chunk, "choices", "choices")
        if choices:
            choice = choices[0]
            if self.typed("choices[0]", choice, dict, "an object") and isinstance(choice, dict):
                finish = self.string(choice, "finish_reason", "choices[0].finish_reason")
                if finish:
                    self._finish = finish
                delta = self.mapping(choice, "delta", "choices[0].delta")
                if delta is None:
                    delta = self.mapping(choice, "message", "choices[0].message")
                    prefix = "choices[0].message"
                else:
                    prefix = "choices[0].delta"
                if delta is not None:
                    self._read_something = True
                    text = self._read_delta(delta, prefix)
                    where = _MEMBER_FIELDS[prefix]["annotations"]
                    annotations = self.array(delta, "annotations", where)
                    if annotations:
                        sources += self._annotation_sources(annotations, where)
        if self._finish is not None:
            text += self._flush_think()
        if text or usage.is_known or sources:
            return TextDelta(text, tuple(sources), usage)
        return None

    def _flush_think(self) -> str:
        """Answer text the think splitter still holds, once the answer is over."""
        if self._think is None:
            return ""
        held = self._think.flush()
        if held:
            self._text.append(held)
        return held

    def _new_usage(self, chunk: dict[str, Any]) -> Usage:
        """The usage this chunk reports (Groq nests it under `x_groq`) if it is news, else unknown."""
        names = ("prompt_tokens", "completion_tokens")
        if "usage" in chunk:
            found = self.usage_at(chunk, "usage", "usage", names)
        else:
            groq = self.mapping(chunk, "x_groq", "x_groq")
            if groq is None:
                return UNKNOWN_USAGE
            found = self.usage_at(groq, "usage", "x_groq.usage", names)
        if not found.is_known or found == self.usage:
            return UNKNOWN_USAGE
        self.usage = found
        return found

    def _read_delta(self, delta: dict[str, Any], prefix: str) -> str:
        names = _MEMBER_FIELDS[prefix]
        for name in _PLAIN_REASONING_FIELDS:
            reasoning = self.string(delta, name, names[name])
            if reasoning:
                self._reasoning.setdefault(name, []).append(reasoning)
        details = self.array(delta, "reasoning_details", names["reasoning_details"])
        if details:
            self._read_details(details, names["reasoning_details"])
        fragments = self.array(delta, "tool_calls", names["tool_calls"])
        if fragments:
            for position, fragment in self.objects(fragments, names["tool_calls"]):
                self._read_fragment(fragment, f"{names['tool_calls']}[{position}]")
        refusal = self.string(delta, "refusal", names["refusal"])
        content = delta.get("content")
        if content is None or type(content) is str:
            text = content or ""
        elif isinstance(content, list):
            text = "".join(
                piece
                for position, part in self.objects(content, names["content"])
                if (piece := self.string(part, "text", f"{names['content']}[{position}].text"))
            )
        else:
            self.typed(names["content"], content, str, "a string or an array")
            text = ""
        if refusal:
            self._refused = True
            text += refusal
        if self._think is not None and not refusal:
            text = self._think.feed(text)
        if text:
            self._text.append(text)
        return text

    def _read_details(self, details: list[Any], field: str) -> None:
        """OpenRouter's `reasoning_details`: entries by (`type`, `index`) — Gemini sends a
        `reasoning.summary` and a `reasoning.encrypted` entry at the same index —, streamed text
        joined, the signature and other members as last sent; kept verbatim, in the order they
        arrived, for the next request. A piece without a `type` continues the latest entry at its
        index."""
        for position, entry in self.objects(details, field):
            index = self.integer(entry, "index", f"{field}[{position}].index")
            kind = self.string(entry, "type", f"{field}[{position}].type")
            key: tuple[str | None, int | None, int]
            if index is None:
                key = (kind, None, len(self._details))
            elif kind is None and (latest := self._latest_at.get(index)) is not None:
                key = latest
            else:
                key = (kind, index, 0)
                self._latest_at[index] = key
            held = self._details.setdefault(key, {})
            for name, value in entry.items():
                before = held.get(name)
                if (
                    name in _JOINED_DETAIL_KEYS
                    and isinstance(value, str)
                    and isinstance(before, str)
                ):
                    held[name] = before + value
                elif value is not None or name not in held:
                    held[name] = value

    def _read_fragment(self, fragment: dict[str, Any], field: str) -> None:
        index = self.integer(fragment, "index", f"{field}.index")
        fragment_id = _wire.non_blank(self.string(fragment, "id", f"{field}.id"))
        if index is not None:
            call = self._by_index.get(index) or self._open(index=index)
        elif fragment_id is not None:
            call = self._by_id.get(fragment_id) or self._open()
        else:
            call = self._calls[-1] if self._calls else self._open()
        if fragment_id is not None and call.call_id is None:
            call.call_id = fragment_id
            self._by_id[fragment_id] = call
        call_type = _wire.non_blank(self.string(fragment, "type", f"{field}.type"))
        if call.call_type is None:
            call.call_type = call_type
        function = self.mapping(fragment, "function", f"{field}.function")
        if function is not None:
            call.has_function = True
            name = self.string(function, "name", f"{field}.function.name")
            if call.name is None:
                call.name = _wire.non_blank(name)
            arguments = self.string(function, "arguments", f"{field}.function.arguments")
            if arguments:
                call.arguments.append(arguments)
        for key, value in fragment.items():
            if key not in _CALL_KEYS and value is not None:
                call.extra.setdefault(key, value)

    def _open(self, index: int | None = None) -> _CallBuilder:
        call = _CallBuilder()
        self._calls.append(call)
        if index is not None:
            self._by_index[index] = call
        return call

    def _new_sources(self, chunk: dict[str, Any]) -> list[Source]:
        """Citations some hosts (Perplexity) send next to the text, each passed on once."""
        found: list[Source] = []
        results = self.array(chunk, "search_results", "search_results")
        for position, result in self.objects(results or [], "search_results"):
            where = f"search_results[{position}]"
            title = self.string(result, "title", f"{where}.title")
            self._add_source(found, title, self.string(result, "url", f"{where}.url"))
        citations = self.array(chunk, "citations", "citations")
        for position, url in enumerate(citations or []):
            if self.typed(f"citations[{position}]", url, str, "a string"):
                self._add_source(found, url, url)
        return found

    def _annotation_sources(self, annotations: list[Any], field: str) -> list[Source]:
        found: list[Source] = []
        for position, annotation in self.objects(annotations, field):
            where = f"{field}[{position}]"
            if self.string(annotation, "type", f"{where}.type") != "url_citation":
                continue
            cited = self.mapping(annotation, "url_citation", f"{where}.url_citation")
            if cited is not None:
                where += ".url_citation"
            else:
                cited = annotation
            title = self.string(cited, "title", f"{where}.title")
            self._add_source(found, title, self.string(cited, "url", f"{where}.url"))
        return found

    def _add_source(self, found: list[Source], title: Any, url: Any) -> None:
        url_text = _wire.non_blank(url)
        if url_text is None or url_text in self._seen_urls:
            return
        self._seen_urls.add(url_text)
        source = Source(_wire.non_blank(title) or url_text, url_text, SourceOrigin.LLM)
        found.append(source)
        self._sources.append(source)

    def build(self) -> StreamedMessage | None:
        """The round's message, or None when the stream said nothing (a failed round)."""
        if not self._read_something:
            return None
        self._flush_think()
        calls = tuple(
            _StreamedCall(
                call_id=c.call_id,
                call_type=c.call_type or "function",
                name=c.name,
                arguments="".join(c.arguments) or "{}",
                has_function=c.has_function,
                extra=c.extra,
            )
            for c in self._calls
        )
        text = "".join(self._text)
        if self._refused:
            stop = StopReason.REFUSAL
        else:
            stop = _FINISH_REASONS.get(self._finish or "", StopReason.COMPLETED)
        return StreamedMessage(
            content=text or None,
            reasoning={name: "".join(parts) for name, parts in self._reasoning.items()},
            calls=calls,
            usage=self.usage,
            sources=tuple(self._sources),
            reasoning_details=tuple(self._details.values()),
            think="".join(self._think.think) if self._think is not None else "",
            stop_reason=stop,
        )


class ChatCompletionsAdapter(_wire.WireAdapter[StreamedMessage]):
    """One streaming call's conversation over Chat Completions. Stateful; never share it."""

    _log = _log
    _missing = "the stream ended without a message."

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
        profile = client.profile
        self._system_prompt = conversation.system_prompt
        self._conversation_json = _wire.messages_json(conversation.messages)
        self._tool_names = frozenset(t.function.name for t in conversation.tools)
        self._fields: dict[str, Any] = {"model": model, "stream": True}
        if profile.asks_for_stream_usage:
            self._fields["stream_options"] = {"include_usage": True}
        if max_output_tokens is not None:
            self._fields[profile.max_tokens_field] = max_output_tokens
        self._fields.update(_wire.without_reserved(extra_body, _RESERVED, "Chat Completions"))
        tools = [
            chat_completions_tool(t, profile.enforces_strict_tool_schemas)
            for t in conversation.tools
        ]
        self._tools = _wire.RawJson(_wire.dumps(tools)) if tools else None
        self._ask_for_sequential_calls = profile.accepts_parallel_tool_calls
        self._reasoning_fields = profile.reasoning_fields
        self._think_field = profile.think_tags_resent_as
        self._last_turn: dict[str, Any] | None = None

    def request_body(self, final_response_instruction: str | None, include_tools: bool) -> bytes:
        fields = dict(self._fields)
        if include_tools and self._tools is not None:
            fields["tools"] = self._tools
            if self._ask_for_sequential_calls:
                fields["parallel_tool_calls"] = False
        return _wire.openai_style_body(
            fields,
            "messages",
            self._system_prompt,
            final_response_instruction,
            [*self._conversation_json, *self._recorded_json],
        )

    def _start_round(self) -> None:
        self._last_turn = None

    def _accumulator(self) -> ChatCompletionAccumulator:
        return ChatCompletionAccumulator()

    def _completed(self, message: StreamedMessage) -> Round:
        calls, self._last_turn = self._prepare(message)
        return Round(
            message.content or "", calls, message.sources, message.usage, message.stop_reason
        )

    def _prepare(
        self, message: StreamedMessage
    ) -> tuple[tuple[RequestedCall, ...], dict[str, Any]]:
        requested: list[RequestedCall] = []
        wire_calls: list[dict[str, Any]] = []
        for call in message.calls:
            call_id = call.call_id or f"call_{uuid.uuid4().hex}"
            name, name_ok = self._normalized_name(call.name)
            arguments_ok = is_arguments_object(call.arguments)
            if not call.has_function:
                _log.warning("A tool call was invalid: the call names no function.")
            elif not name_ok:
                _log.warning(
                    "A tool call was invalid: the function name is missing or not a valid "
                    "function name."
                )
            elif not arguments_ok:
                _log.warning("A tool call was invalid: the arguments are not a JSON object.")
            arguments = call.arguments if arguments_ok and call.arguments.strip() else "{}"
            sent_name = name if name_ok else _INVALID_TOOL_CALL_NAME
            requested.append(
                RequestedCall(
                    call_id, sent_name, arguments, call.has_function and name_ok and arguments_ok
                )
            )
            wire_calls.append(
                {
                    **call.extra,
                    "id": call_id,
                    "type": call.call_type,
                    "function": {"name": sent_name, "arguments": arguments},
                }
            )
        turn: dict[str, Any] = {"role": "assistant"}
        if message.content is not None:
            turn["content"] = message.content
        turn.update(self._reasoning_of(message))
        if wire_calls:
            turn["tool_calls"] = wire_calls
        return tuple(requested), turn

    def _reasoning_of(self, message: StreamedMessage) -> dict[str, Any]:
        """The reasoning members of the turn as this host takes them back (its profile says
        which fields; a split-off `<think>` block goes where the profile puts it, if anywhere)."""
        members: dict[str, Any] = {
            name: text for name, text in message.reasoning.items() if name in self._reasoning_fields
        }
        if message.reasoning_details and "reasoning_details" in self._reasoning_fields:
            members["reasoning_details"] = [dict(d) for d in message.reasoning_details]
        think = self._think_field
        if message.think.strip() and think is not None and think not in members:
            members[think] = message.think
        return members

    def _normalized_name(self, returned: str | None) -> tuple[str, bool]:
        name = (returned or "").strip()
        if name in self._tool_names:
            if name != returned:
                _log.warning("A tool call named its function with surrounding whitespace.")
            return name, True
        return name, is_valid_function_name(name)

    def record_assistant_turn(self) -> None:
        turn = self._last_turn
        if turn is None:
            return
        self._last_turn = None
        self._recorded_json.append(_wire.dumps(turn))
        texts = [turn.get("content") or ""]
        texts += [
            v if isinstance(v, str) else _wire.dumps(v)
            for k, v in turn.items()
            if k in _REASONING_KEYS
        ]
        texts += [
            c["function"]["name"] + c["function"]["arguments"] for c in turn.get("tool_calls", ())
        ]
        self._recorded_texts.extend(t for t in texts if t.strip())

    def record_tool_result(self, call_id: str, content: str, is_error: bool = False) -> None:
        """One `role: "tool"` message per result; this API has no error flag (the text says it)."""
        self._recorded_json.append(
            _wire.dumps({"role": "tool", "content": content, "tool_call_id": call_id})
        )
        self._record_result_text(content)
