"""Small pieces every adapter needs: compact JSON, request bodies from pre-serialized parts,
reading untrusted stream payloads, streaming one round, the additional API parameters an
adapter may not give up, and `WireAdapter`, the state and round every adapter shares.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from runtime.adapters.base import RecordedTurns
from runtime.messages import (
    UNKNOWN_USAGE,
    AdapterEvent,
    ChatMessage,
    Round,
    RoundCompleted,
    TextDelta,
    Usage,
)
from runtime.providers.client import ProviderClient
from runtime.providers.errors import ProviderProtocolError, ProviderUnavailable

_log = logging.getLogger("runtime.adapters")

_Built_co = TypeVar("_Built_co", covariant=True)
_Built = TypeVar("_Built")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept literal (what every host reads, and shorter)."""
    return _dumps(value)


def loads_payload(data: str) -> Any:
    """One SSE payload parsed, or None when it is no JSON (malformed lines are skipped)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


class RawJson(str):
    """JSON text placed into a request body as is (serialized once, resent every round)."""

    __slots__ = ()


def messages_json(messages: Iterable[ChatMessage]) -> list[str]:
    """Each message as a `{"role", "content"}` object, serialized once per streaming call."""
    return [dumps({"role": m.role.value, "content": m.content}) for m in messages]


def _system_message_json(prompt: str) -> list[str]:
    """The leading system message of an OpenAI-style request, or nothing when there is no prompt."""
    return [dumps({"role": "system", "content": prompt})] if prompt else []


def openai_style_body(
    fields: Mapping[str, Any],
    array_key: str,
    system_prompt: str,
    final_response_instruction: str | None,
    turns_json: Iterable[str],
) -> bytes:
    """The OpenAI APIs' body: the system message (prompt and instruction) heads `array_key`."""
    prompt = with_instruction(system_prompt, final_response_instruction)
    return request_body(fields, array_key, [*_system_message_json(prompt), *turns_json])


def request_body(fields: Mapping[str, Any], array_key: str, items_json: Iterable[str]) -> bytes:
    """`fields` plus `array_key` whose elements are already JSON text (kept byte for byte).

    A lone surrogate (from a `\\udXXX` escape a host or app sent) cannot be UTF-8; it sits inside
    a JSON string, so it goes out as that same escape.
    """
    plain = {k: v for k, v in fields.items() if not isinstance(v, RawJson)}
    members = [dumps(k) + ":" + v for k, v in fields.items() if isinstance(v, RawJson)]
    members.append(dumps(array_key) + ":[" + ",".join(items_json) + "]")
    head = dumps(plain)
    separator = "," if len(head) > 2 else ""
    return (head[:-1] + separator + ",".join(members) + "}").encode("utf-8", "backslashreplace")


def error_message(payload: Any) -> str:
    """The human part of an error payload a host put into its stream."""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        kind = text_of(payload.get("type"))
        for key in ("message", "error", "detail"):
            inner = error_message(payload.get(key))
            if inner:
                return f"{kind}: {inner}" if kind and kind != "error" else inner
        return kind
    return ""


def error_text(error: Any) -> str:
    """An error a host put into its stream as "message (code N)" (the code when it gave one)."""
    message = error_message(error) or "unknown error"
    code = error.get("code") if isinstance(error, dict) else None
    if isinstance(code, (int, str)) and not isinstance(code, bool) and str(code).strip():
        return f"{message} (code {code})"
    return message


def without_reserved(
    extras: Mapping[str, Any] | None, reserved: frozenset[str], api: str
) -> dict[str, Any]:
    """Additional API parameters minus the fields the adapter owns (they cannot be overridden)."""
    if not extras:
        return {}
    kept = {k: v for k, v in extras.items() if k not in reserved}
    dropped = sorted(k for k in extras if k in reserved)
    if dropped:
        _log.warning(
            "Additional API parameters %s are ignored for %s: the tool-calling adapter sets them.",
            ", ".join(dropped),
            api,
        )
    return kept


def with_instruction(prompt: str, instruction: str | None) -> str:
    """The system prompt with the final-answer instruction of this round appended."""
    if not instruction:
        return prompt
    return f"{prompt}\n\n{instruction}" if prompt else instruction


def text_of(value: Any) -> str:
    """`value` if it is a string, else "" (stream payloads are untrusted)."""
    return value if isinstance(value, str) else ""


def non_blank(value: Any) -> str | None:
    """`value` if it is a string with more than white space, else None."""
    return value if isinstance(value, str) and value.strip() else None


_JSON_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "a number"),
    (float, "a number"),
    (str, "a string"),
    (list, "an array"),
    (dict, "an object"),
)


def json_type_name(value: Any) -> str:
    """How JSON calls the type of a parsed value ("an object", "a string", "null" ...)."""
    if value is None:
        return "null"
    return next((name for kind, name in _JSON_TYPE_NAMES if isinstance(value, kind)), "a value")


def wrong_type(field: str, value: Any, expected: str) -> str:
    """The protocol problem of a provider field that has the wrong JSON type."""
    return f"the field {field} is {json_type_name(value)}, expected {expected}"


class TypedFields:
    """Checks the JSON type of fields a provider sent; the first wrong one is kept as the
    round's protocol problem (accumulators never raise: the streaming step does)."""

    __slots__ = ("protocol_error",)

    def __init__(self) -> None:
        self.protocol_error: str | None = None

    def typed(self, field: str, value: Any, kind: type, expected: str) -> bool:
        """Whether `value` is absent (null) or has the JSON type the API documents."""
        if value is None or type(value) is kind:
            return True
        if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
            return True
        self.protocol_error = self.protocol_error or wrong_type(field, value, expected)
        return False

    def string(self, parent: Mapping[str, Any], key: str, field: str) -> str | None:
        """`parent[key]` when it is a string; absent is None, any other type a protocol problem."""
        value = parent.get(key)
        if value is None or type(value) is str:
            return value
        return value if self.typed(field, value, str, "a string") else None

    def mapping(self, parent: Mapping[str, Any], key: str, field: str) -> dict[str, Any] | None:
        """`parent[key]` when it is an object; absent is None, any other type a protocol problem."""
        value = parent.get(key)
        if value is None or type(value) is dict:
            return value
        return value if self.typed(field, value, dict, "an object") else None

    def array(self, parent: Mapping[str, Any], key: str, field: str) -> list[Any] | None:
        """`parent[key]` when it is an array; absent is None, any other type a protocol problem."""
        value = parent.get(key)
        if value is None or type(value) is list:
            return value
        return value if self.typed(field, value, list, "an array") else None

    def integer(self, parent: Mapping[str, Any], key: str, field: str) -> int | None:
        """`parent[key]` when it is a whole number; absent is None, any other type a problem."""
        value = parent.get(key)
        if value is None or type(value) is int:
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if self.typed(field, value, int, "an integer") else None

    def objects(self, items: list[Any], field: str) -> list[tuple[int, dict[str, Any]]]:
        """The elements of an array that are objects, with their positions; others are problems."""
        kept: list[tuple[int, dict[str, Any]]] = []
        for position, item in enumerate(items):
            if type(item) is dict:
                kept.append((position, item))
            elif item is not None:
                self.typed(f"{field}[{position}]", item, dict, "an object")
        return kept

    def usage_at(
        self, parent: Mapping[str, Any], key: str, field: str, names: tuple[str, str]
    ) -> Usage:
        """The usage object under `key`: each count typed (a negative count is unknown)."""
        payload = self.mapping(parent, key, field)
        if payload is None:
            return UNKNOWN_USAGE
        counts = [self.integer(payload, name, f"{field}.{name}") for name in names]
        given_in, given_out = (c if c is not None and c >= 0 else None for c in counts)
        if given_in is None and given_out is None:
            return UNKNOWN_USAGE
        return Usage(given_in, given_out)


class _StreamAccumulator(Protocol):
    """What each adapter's accumulator offers the shared streaming step.

    `error` is what the host reported; `protocol_error` names a field the host sent with the
    wrong type (the first one seen).
    """

    error: str | None
    protocol_error: str | None

    def feed(self, data: str) -> TextDelta | None: ...


async def _stream_deltas(
    client: ProviderClient, body: bytes, accumulator: _StreamAccumulator
) -> AsyncIterator[TextDelta]:
    """Send `body` and pass on what the user should see; an error the host reports ends the
    round at once as ProviderUnavailable, a field of the wrong type as ProviderProtocolError
    naming it, with any secret redacted."""
    async for data in client.stream(body):
        delta = accumulator.feed(data)
        if delta is not None:
            yield delta
        if accumulator.protocol_error is not None:
            raise ProviderProtocolError(
                f"{client.provider_name} sent an answer that does not follow its wire API: "
                f"{client.redact(accumulator.protocol_error)}",
                provider=client.provider_name,
            )
        if accumulator.error is not None:
            raise ProviderUnavailable(
                f"{client.provider_name} reported an error during the answer: "
                f"{client.redact(accumulator.error)}",
                provider=client.provider_name,
            )


class _RoundAccumulator(_StreamAccumulator, Protocol[_Built_co]):
    """An accumulator that, once the stream ends, builds what the host answered (or None)."""

    def build(self) -> _Built_co | None: ...


async def _stream_round(
    client: ProviderClient,
    body: bytes,
    accumulator: _RoundAccumulator[_Built],
    completed: Callable[[_Built], Round],
    *,
    log: logging.Logger,
    missing: str,
) -> AsyncIterator[AdapterEvent]:
    """One round: the deltas as they come, then the round `completed` makes of the answer.

    A stream that ends before the answer is whole yields no RoundCompleted; `missing` says so in
    the adapter's own log.
    """
    async for delta in _stream_deltas(client, body, accumulator):
        yield delta
    built = accumulator.build()
    if built is None:
        log.warning("%s: %s", client.provider_name, missing)
        return
    yield RoundCompleted(completed(built))


class WireAdapter(ABC, Generic[_Built]):
    """What every adapter shares: its client, the JSON of every turn it recorded (resent each
    round), the texts later rounds resend, and one round streamed. A wire API's adapter says how
    its request looks, what reads its stream and what a finished answer is as a `Round`."""

    _log: ClassVar[logging.Logger]
    _missing: ClassVar[str]
    """What the adapter's log says when a stream ends before the answer is whole."""

    def __init__(self, client: ProviderClient) -> None:
        self._client = client
        self._recorded_json: list[str] = []
        self._recorded_texts: list[str] = []

    @abstractmethod
    def request_body(self, final_response_instruction: str | None, include_tools: bool) -> bytes:
        """The JSON body of the next round (exposed for inspection and benchmarks)."""

    @abstractmethod
    def _accumulator(self) -> _RoundAccumulator[_Built]:
        """A fresh reader of one round's stream."""

    @abstractmethod
    def _completed(self, built: _Built) -> Round:
        """The round the host's whole answer is, kept for `record_assistant_turn`."""

    @abstractmethod
    def _start_round(self) -> None:
        """Forget the last round's answer (a round that fails records none of it)."""

    async def execute_round(
        self, final_response_instruction: str | None, include_tools: bool
    ) -> AsyncIterator[AdapterEvent]:
        self._start_round()
        async for event in _stream_round(
            self._client,
            self.request_body(final_response_instruction, include_tools),
            self._accumulator(),
            self._completed,
            log=self._log,
            missing=self._missing,
        ):
            yield event

    def _record_result_text(self, content: str) -> None:
        """A tool result's text counts for later rounds unless it is blank."""
        if content.strip():
            self._recorded_texts.append(content)

    @property
    def recorded_request_texts(self) -> Sequence[str]:
        return tuple(self._recorded_texts)

    def _record_queued(self) -> None:
        """Record what is still queued for the next request (none unless the wire API groups
        results, as Anthropic's does)."""

    def recorded_turns(self) -> RecordedTurns:
        """Everything recorded so far, queued results included: kept with a turn that waits
        for approval."""
        self._record_queued()
        return RecordedTurns(tuple(self._recorded_json), tuple(self._recorded_texts))

    def restore_turns(self, turns: RecordedTurns) -> None:
        """Continue after `turns`, recorded by an adapter of this kind over the same
        conversation (a resumed turn)."""
        self._recorded_json = list(turns.wire_json)
        self._recorded_texts = list(turns.texts)
