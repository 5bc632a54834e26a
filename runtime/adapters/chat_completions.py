"""OpenAI Chat Completions (and every compatible host) ⇄ the shared message model.

Tool-call fragments are put together by `index` (then by id, then "the open one"); a missing call
id is made up, because here it only has to match between our request and our answer. Names and
arguments that cannot be sent back are answered but replaced in the history we resend.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from policy.definitions import is_valid_function_name
from runtime.adapters import _wire
from runtime.messages import (
    UNKNOWN_USAGE,
    AdapterEvent,
    Conversation,
    RequestedCall,
    Round,
    Source,
    SourceOrigin,
    TextDelta,
    Usage,
)
from runtime.providers.client import ProviderClient
from runtime.schema import chat_completions_tool

_log = logging.getLogger(__name__)

INVALID_TOOL_CALL_NAME = "invalid_tool_call"
_RESERVED = frozenset(
    {"model", "messages", "stream", "tools", "tool_choice", "parallel_tool_calls"}
)
_CALL_KEYS = frozenset({"index", "id", "type", "function"})


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
class StreamedCall:
    """One tool call as the stream delivered it (before any repair)."""

    call_id: str | None
    call_type: str
    name: str | None
    arguments: str
    has_function: bool
    extra: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StreamedMessage:
    """The assistant message of one round; `content` is None when the model wrote no text."""

    content: str | None
    reasoning: str
    calls: tuple[StreamedCall, ...]
    usage: Usage
    sources: tuple[Source, ...]


class ChatCompletionAccumulator(_wire.TypedFields):
    """Reads the `data:` payloads of one Chat Completions stream; never raises on bad input."""

    __slots__ = (
        "_by_id",
        "_by_index",
        "_calls",
        "_read_something",
        "_reasoning",
        "_seen_urls",
        "_sources",
        "_text",
        "error",
        "usage",
    )

    def __init__(self) -> None:
        super().__init__()
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_CallBuilder] = []
        self._by_index: dict[int, _CallBuilder] = {}
        self._by_id: dict[str, _CallBuilder] = {}
        self._read_something = False
        self._seen_urls: set[str] = set()
        self._sources: list[Source] = []
        self.usage: Usage = UNKNOWN_USAGE
        self.error: str | None = None

    def feed(self, data: str) -> TextDelta | None:
        """Take one payload; return what the user should see of it (text, sources, usage)."""
        if data == "[DONE]":
            return None
        chunk = _wire.loads_payload(data)
        if not isinstance(chunk, dict):
            return None
        if chunk.get("error") is not None:
            self.error = _error_text(chunk["error"])
            return None
        choices = chunk.get("choices")
        usage = self._new_usage(chunk)
        sources = self._new_sources(chunk)
        text = ""
        if (
            self.typed("choices", choices, list, "an array")
            and isinstance(choices, list)
            and choices
            and self.typed("choices[0]", choices[0], dict, "an object")
            and isinstance(choices[0], dict)
        ):
            delta = choices[0].get("delta")
            if self.typed("choices[0].delta", delta, dict, "an object") and isinstance(delta, dict):
                self._read_something = True
                text = self._read_delta(delta)
                if "annotations" in delta:
                    sources += self._annotation_sources(delta["annotations"])
        if text or usage.is_known or sources:
            return TextDelta(text, tuple(sources), usage)
        return None

    def _new_usage(self, chunk: dict[str, Any]) -> Usage:
        """The usage this chunk reports (Groq nests it under `x_groq`) if it is news, else unknown."""
        if "usage" in chunk:
            payload = chunk["usage"]
        elif isinstance(chunk.get("x_groq"), dict):
            payload = chunk["x_groq"].get("usage")
        else:
            return UNKNOWN_USAGE
        found = _wire.usage_from(payload, "prompt_tokens", "completion_tokens")
        if not found.is_known or found == self.usage:
            return UNKNOWN_USAGE
        self.usage = found
        return found

    def _read_delta(self, delta: dict[str, Any]) -> str:
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self._reasoning.append(reasoning)
        fragments = delta.get("tool_calls")
        if self.typed("choices[0].delta.tool_calls", fragments, list, "an array") and isinstance(
            fragments, list
        ):
            for fragment in fragments:
                if isinstance(fragment, dict):
                    self._read_fragment(fragment)
        content = delta.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "".join(
                part["text"]
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
        else:
            return ""
        if text:
            self._text.append(text)
        return text

    def _read_fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        fragment_id = _wire.non_blank(fragment.get("id"))
        if _wire.is_index(index):
            call = self._by_index.get(index) or self._open(index=index)
        elif fragment_id is not None:
            call = self._by_id.get(fragment_id) or self._open()
        else:
            call = self._calls[-1] if self._calls else self._open()
        if fragment_id is not None and call.call_id is None:
            call.call_id = fragment_id
            self._by_id[fragment_id] = call
        if call.call_type is None:
            call.call_type = _wire.non_blank(fragment.get("type"))
        function = fragment.get("function")
        if isinstance(function, dict):
            call.has_function = True
            if call.name is None:
                call.name = _wire.non_blank(function.get("name"))
            arguments = function.get("arguments")
            if isinstance(arguments, str) and arguments:
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
        results = chunk.get("search_results")
        if isinstance(results, list):
            for result in results:
                if isinstance(result, dict):
                    self._add_source(found, result.get("title"), result.get("url"))
        citations = chunk.get("citations")
        if isinstance(citations, list):
            for url in citations:
                self._add_source(found, url, url)
        return found

    def _annotation_sources(self, annotations: Any) -> list[Source]:
        found: list[Source] = []
        if isinstance(annotations, list):
            for annotation in annotations:
                if isinstance(annotation, dict) and annotation.get("type") == "url_citation":
                    cited = annotation.get("url_citation")
                    cited = cited if isinstance(cited, dict) else annotation
                    self._add_source(found, cited.get("title"), cited.get("url"))
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
        calls = tuple(
            StreamedCall(
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
        return StreamedMessage(
            content=text or None,
            reasoning="".join(self._reasoning),
            calls=calls,
            usage=self.usage,
            sources=tuple(self._sources),
        )


def _error_text(error: Any) -> str:
    """A chunk's `error` object as "message (code N)": hosts (OpenRouter, gateways) put it next to
    choices whose finish_reason is "error", null or anything else — it is the host's error all
    the same."""
    message = _wire.error_message(error) or "unknown error"
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, (int, str)) and not isinstance(code, bool) and str(code).strip():
        return f"{message} (code {code})"
    return message


class ChatCompletionsAdapter:
    """One streaming call's conversation over Chat Completions. Stateful; never share it."""

    def __init__(
        self,
        client: ProviderClient,
        conversation: Conversation,
        model: str,
        *,
        max_output_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        profile = client.profile
        self._client = client
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
        self._recorded_json: list[str] = []
        self._recorded_texts: list[str] = []
        self._last_turn: dict[str, Any] | None = None

    def request_body(self, final_response_instruction: str | None, include_tools: bool) -> bytes:
        """The JSON body of the next round (exposed for inspection and benchmarks)."""
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

    async def execute_round(
        self, final_response_instruction: str | None, include_tools: bool
    ) -> AsyncIterator[AdapterEvent]:
        self._last_turn = None
        async for event in _wire.stream_round(
            self._client,
            self.request_body(final_response_instruction, include_tools),
            ChatCompletionAccumulator(),
            self._completed,
            log=_log,
            missing="the stream ended without a message.",
        ):
            yield event

    def _completed(self, message: StreamedMessage) -> Round:
        calls, self._last_turn = self._prepare(message)
        return Round(message.content or "", calls, message.sources, message.usage)

    def _prepare(
        self, message: StreamedMessage
    ) -> tuple[tuple[RequestedCall, ...], dict[str, Any]]:
        requested: list[RequestedCall] = []
        wire_calls: list[dict[str, Any]] = []
        for call in message.calls:
            call_id = call.call_id or f"call_{uuid.uuid4().hex}"
            name, name_ok = self._normalized_name(call.name)
            arguments_ok = _wire.is_json_object(call.arguments)
            if not call.has_function:
                _log.warning("A tool call was invalid: the call names no function.")
            elif not name_ok:
                _log.warning(
                    "A tool call was invalid: the function name is missing or not a valid "
                    "function name."
                )
            elif not arguments_ok:
                _log.warning("A tool call was invalid: the arguments are not a JSON object.")
            arguments = call.arguments if arguments_ok else "{}"
            sent_name = name if name_ok else INVALID_TOOL_CALL_NAME
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
        if message.reasoning:
            turn["reasoning_content"] = message.reasoning
        if wire_calls:
            turn["tool_calls"] = wire_calls
        return tuple(requested), turn

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
        texts = [turn.get("content") or "", turn.get("reasoning_content") or ""]
        texts += [
            c["function"]["name"] + c["function"]["arguments"] for c in turn.get("tool_calls", ())
        ]
        self._recorded_texts.extend(t for t in texts if t.strip())

    def record_tool_result(self, call_id: str, content: str, is_error: bool = False) -> None:
        """One `role: "tool"` message per result; this API has no error flag (the text says it)."""
        self._recorded_json.append(
            _wire.dumps({"role": "tool", "content": content, "tool_call_id": call_id})
        )
        if content.strip():
            self._recorded_texts.append(content)

    @property
    def recorded_request_texts(self) -> Sequence[str]:
        return tuple(self._recorded_texts)
