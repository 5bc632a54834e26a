"""Every field an adapter reads, given JSON of the wrong type: never a crash, and where the wire
API fixes the type, a ProviderProtocolError naming the field."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.adapters.anthropic import AnthropicAccumulator, AnthropicAdapter
from runtime.adapters.anthropic import round_of as anthropic_round
from runtime.adapters.chat_completions import ChatCompletionAccumulator, ChatCompletionsAdapter
from runtime.adapters.responses import ResponsesAccumulator, ResponsesAdapter
from runtime.adapters.responses import round_of as responses_round
from runtime.providers import (
    ANTHROPIC,
    OPENAI_CHAT_COMPLETIONS,
    OPENAI_RESPONSES,
    ProviderError,
    ProviderProtocolError,
    RetryPolicy,
)
from tests.runtime.test_fuzz_streams import _anthropic_stream, _chat_stream, _responses_stream
from tests.servers.provider_server import ProviderServer, Reply, running_provider_server
from tests.servers.provider_testkit import client_for, conversation, run_round, web_search_tool

WRONG_VALUES = [{}, {"type": {}}, [], [{}], 0, -1, 2.5, True, False, "", "x", None]
_STREAMS: list[tuple[type, Callable[[], list[Any]], Callable[[Any], Any] | None]] = [
    (ChatCompletionAccumulator, _chat_stream, None),
    (ResponsesAccumulator, _responses_stream, responses_round),
    (AnthropicAccumulator, _anthropic_stream, anthropic_round),
]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for position, inner in enumerate(value):
            yield from _paths(inner, (*prefix, position))


def _replaced(event: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(event)
    target = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


def _every_field() -> list[tuple[int, int, tuple[Any, ...]]]:
    found = []
    for which, (_, stream, _) in enumerate(_STREAMS):
        for position, event in enumerate(stream()):
            if not isinstance(event, str):
                found += [(which, position, path) for path in _paths(event)]
    return found


FIELDS = _every_field()


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(FIELDS), st.sampled_from(WRONG_VALUES), st.lists(st.sampled_from(FIELDS)))
def test_a_wrong_type_in_any_field_never_raises_out_of_an_accumulator(
    field: tuple[int, int, tuple[Any, ...]],
    value: Any,
    more: list[tuple[int, int, tuple[Any, ...]]],
) -> None:
    which, position, path = field
    accumulator_type, stream, round_of = _STREAMS[which]
    events = stream()
    events[position] = _replaced(events[position], path, value)
    for other_which, other_position, other_path in more[:3]:
        if other_which == which:
            with contextlib.suppress(KeyError, IndexError, TypeError):  # path already replaced
                events[other_position] = _replaced(events[other_position], other_path, value)
    _play(accumulator_type, round_of, events)


UNREAD: list[frozenset[str]] = [
    frozenset({"id", "object", "choices[0].index", "choices[0].delta.role"}),
    frozenset(
        {"response.id", "response.output[0].id", "response.output[0].role", "item.id", "item.role"}
        | {"response.output[1].id", "response.output[0].status", "item.status"}
    ),
    frozenset(
        {"message.id", "message.type", "message.role", "message.content"}
        | {"message.usage.output_tokens", "content_block_stop:index"}
        | {"message_delta:usage", "message_delta:usage.output_tokens"}
        | {"message_delta:usage.input_tokens"}
    ),
]
"""Fields the adapters never read (so any type is theirs to send): ids, roles, echoes; written
`event type:field` where the field is read in other events."""
ALTERNATIVE_TYPES = {
    "choices[0].delta.content": "an array",
    "choices[0].message.content": "an array",
}
"""A second JSON type the API documents for a field (content as an array of parts)."""


def _field_name(path: tuple[Any, ...]) -> str:
    """How the adapters name a field: members joined by dots, positions in brackets."""
    name = ""
    for step in path:
        name += f"[{step}]" if isinstance(step, int) else (f".{step}" if name else str(step))
    return name


def _json_type(value: Any) -> str:
    from runtime.adapters._wire import json_type_name

    return json_type_name(value)


def _play(accumulator_type: type, round_of: Callable[[Any], Any] | None, events: list[Any]) -> str:
    """Feed the events; the round is read too unless a protocol problem ended it (never raises)."""
    accumulator = accumulator_type()
    for event in events:
        accumulator.feed(event if isinstance(event, str) else json.dumps(event))
    message = accumulator.build()
    if round_of is not None and message is not None and accumulator.protocol_error is None:
        round_of(message)
    return accumulator.protocol_error or ""


def _is_wrong(value: Any, original: Any, field: str) -> bool:
    """Whether `value` has another JSON type than the field's (null stands for absent)."""
    allowed = (_json_type(original), ALTERNATIVE_TYPES.get(field))
    return value is not None and original is not None and _json_type(value) not in allowed


def test_every_field_of_every_stream_is_covered_with_every_wrong_type() -> None:
    """The exhaustive pass behind the random one: each field, each wrong value, once. A value
    of another JSON type in a field an adapter reads is a protocol problem naming that field."""
    unnamed: list[str] = []
    for which, position, path in FIELDS:
        accumulator_type, stream, round_of = _STREAMS[which]
        original = _value_at(stream()[position], path)
        field = _field_name(path)
        kind = stream()[position].get("type")
        unread = field in UNREAD[which] or f"{kind}:{field}" in UNREAD[which]
        for value in WRONG_VALUES:
            events = stream()
            events[position] = _replaced(events[position], path, value)
            problem = _play(accumulator_type, round_of, events)
            named = problem.startswith(f"the field {field} is ")
            if _is_wrong(value, original, field) and not unread and not named:
                unnamed.append(f"{accumulator_type.__name__} {field} = {value!r}: {problem!r}")
    assert not unnamed, "\n".join(unnamed)


def _value_at(event: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        event = event[step]
    return event


# -- through HTTP: the field is named ------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderServer]:
    with running_provider_server() as running:
        yield running


_RESPONSES_ITEM_TYPE = {"type": "response.completed", "response": {"output": [{"type": {}}]}}
_NAMED_CASES = [
    (OPENAI_RESPONSES, ResponsesAdapter, [_RESPONSES_ITEM_TYPE], "response.output[0].type"),
    (
        OPENAI_RESPONSES,
        ResponsesAdapter,
        [{"type": "response.output_item.done", "output_index": 0, "item": {"type": []}}],
        "item.type",
    ),
    (
        OPENAI_RESPONSES,
        ResponsesAdapter,
        [{"type": "response.completed", "response": {"output": "many"}}],
        "response.output",
    ),
    (
        OPENAI_RESPONSES,
        ResponsesAdapter,
        [{"type": "response.completed", "response": {"output": [7]}}],
        "response.output[0]",
    ),
    (OPENAI_CHAT_COMPLETIONS, ChatCompletionsAdapter, [{"choices": {}}], "choices"),
    (OPENAI_CHAT_COMPLETIONS, ChatCompletionsAdapter, [{"choices": ["x"]}], "choices[0]"),
    (
        OPENAI_CHAT_COMPLETIONS,
        ChatCompletionsAdapter,
        [{"choices": [{"delta": "hello"}]}],
        "choices[0].delta",
    ),
    (
        OPENAI_CHAT_COMPLETIONS,
        ChatCompletionsAdapter,
        [{"choices": [{"delta": {"tool_calls": {"id": "c"}}}]}],
        "choices[0].delta.tool_calls",
    ),
    (
        ANTHROPIC,
        AnthropicAdapter,
        [{"type": "content_block_start", "index": 0, "content_block": "text"}],
        "content_block",
    ),
    (
        ANTHROPIC,
        AnthropicAdapter,
        [{"type": "content_block_delta", "index": 0, "delta": ["text_delta"]}],
        "delta",
    ),
]


def _round_error(
    server: ProviderServer, profile: Any, adapter_type: Any, reply: Reply
) -> ProviderError:
    """The ProviderError one round ends with when the host sends `reply` (never another error)."""
    server.replies.clear()
    server.queue(reply)

    async def play() -> ProviderError:
        client = client_for(profile, server.base_url, retry=RetryPolicy(max_attempts=1))
        try:
            with pytest.raises(ProviderError) as caught:
                await run_round(adapter_type(client, conversation(web_search_tool()), "m"))
            return caught.value
        finally:
            await client.aclose()

    return asyncio.run(play())


@pytest.mark.parametrize(("profile", "adapter_type", "events", "field"), _NAMED_CASES)
def test_a_field_of_the_wrong_type_is_a_protocol_error_naming_it(
    server: ProviderServer, profile: Any, adapter_type: Any, events: list[Any], field: str
) -> None:
    error = _round_error(server, profile, adapter_type, Reply(events))
    assert isinstance(error, ProviderProtocolError)
    assert f"the field {field} is " in str(error)
    assert "expected" in str(error)


@pytest.mark.parametrize(
    ("profile", "adapter_type"),
    [
        (OPENAI_CHAT_COMPLETIONS, ChatCompletionsAdapter),
        (OPENAI_RESPONSES, ResponsesAdapter),
        (ANTHROPIC, AnthropicAdapter),
    ],
)
@pytest.mark.parametrize(
    "body",
    ['{"error": ' * 100_000, '{"error": ' * 990 + '"deep"' + "}" * 990],
    ids=["too deep to parse", "deep but whole"],
)
def test_an_error_body_nested_too_deep_is_the_status_error(
    server: ProviderServer, profile: Any, adapter_type: Any, body: str
) -> None:
    error = _round_error(server, profile, adapter_type, Reply(status=400, body=body))
    assert "rejected the request (HTTP 400)" in str(error)
    assert len(str(error)) < 1000, "the host's text is cut to length"


# -- the recorded streams: every field a host really sends ---------------------------------------

RECORDED = Path(__file__).parent / "recorded"
_RECORDED_ACCUMULATORS: dict[str, tuple[type, Callable[[Any], Any] | None]] = {
    "openrouter": (ChatCompletionAccumulator, None),
    "groq": (ChatCompletionAccumulator, None),
    "deepseek": (ChatCompletionAccumulator, None),
    "mistral": (ChatCompletionAccumulator, None),
    "openai_chat": (ChatCompletionAccumulator, None),
    "xai": (ChatCompletionAccumulator, None),
    "google": (ChatCompletionAccumulator, None),
    "huggingface": (ChatCompletionAccumulator, None),
    "ollama": (ChatCompletionAccumulator, None),
    "openai_responses": (ResponsesAccumulator, responses_round),
    "anthropic": (AnthropicAccumulator, anthropic_round),
}
RECORDED_UNREAD = (
    # Chat Completions: ids, echoes, provider bookkeeping, usage details, verbatim members
    "id",
    "object",
    "created",
    "model",
    "provider",
    "system_fingerprint",
    "service_tier",
    "obfuscation",
    "num_sources_used",
    "usage.num_sources_used",
    "choices[*].index",
    "choices[*].logprobs",
    "choices[*].native_finish_reason",
    "choices[*].*.role",
    "usage.total_tokens",
    "usage.cost",
    "usage.prompt_tokens_details*",
    "usage.completion_tokens_details*",
    "usage.prompt_cache_*",
    "x_groq.id",
    "x_groq.usage.queue_time",
    "x_groq.usage.prompt_time",
    "x_groq.usage.completion_time",
    "x_groq.usage.total_tokens",
    "x_groq.usage.total_time",
    "choices[*].*.reasoning_details[*].*",
    "time_info*",
    # Responses: the response object's echo of the request, events not read
    "sequence_number",
    "response.created_at",
    "response.object",
    "response.background",
    "response.error",
    "response.instructions",
    "response.max_output_tokens",
    "response.model",
    "response.parallel_tool_calls",
    "response.previous_response_id",
    "response.reasoning*",
    "response.store",
    "response.temperature",
    "response.text*",
    "response.tool_choice",
    "response.tools*",
    "response.service_tier",
    "response.top_logprobs",
    "response.max_tool_calls",
    "response.prompt_cache_key",
    "response.safety_identifier",
    "response.top_p",
    "response.truncation",
    "response.user",
    "response.metadata",
    "response.id",
    "response.usage.*_details*",
    "response.usage.total_tokens",
    "response.output[*].id",
    "response.output[*].status",
    "response.output[*].role",
    "response.output[*].summary",
    "response.output[*].content[*].logprobs",
    "item.id",
    "item.status",
    "item.role",
    "item.summary",
    "item.content[*].logprobs",
    "item_id",
    "content_index",
    "logprobs",
    "response.created:*",
    "response.in_progress:*",
    "response.output_item.added:*",
    "response.content_part.added:*",
    "response.function_call_arguments.delta:*",
    "response.function_call_arguments.done:*",
    "response.output_text.done:*",
    "response.output_text.delta:output_index",
    # Anthropic: message metadata, usage beyond input, stop events, verbatim block members
    "message.id",
    "message.type",
    "message.role",
    "message.model",
    "message.content",
    "message.stop_reason",
    "message.stop_sequence",
    "message.usage.cache_creation",
    "message.usage.output_tokens",
    "message.usage.service_tier",
    "message.usage.server_tool_use*",
    "message.container*",
    "delta.container*",
    "content_block_stop:*",
    "message_delta:usage*",
    "delta.stop_sequence",
    "content_block.content*",
    "content_block.tool_use_id",
    "delta.citation.*",
    "content_block.input.*",
)
"""Fields no adapter reads (each passes through or is ignored): `*` matches any text,
`event type:` limits a pattern to one event."""


def _recorded_events(path: Path) -> list[Any]:
    events: list[Any] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            parsed = json.loads(data) if data.startswith("{") else data
            events.append(parsed)
    return events


def _unread(kind: Any, field: str) -> bool:
    import fnmatch

    general = field.replace("[", "\x00").replace("]", "\x01")
    for pattern in RECORDED_UNREAD:
        scope, _, rest = pattern.rpartition(":") if ":" in pattern else ("", "", pattern)
        if scope and scope != kind:
            continue
        escaped = rest.replace("[*]", "\x00*\x01").replace("[", "\x00").replace("]", "\x01")
        if fnmatch.fnmatchcase(general, escaped) or fnmatch.fnmatchcase(general, escaped + ".*"):
            return True
    return False


def _recorded_cases() -> list[tuple[str, int, tuple[Any, ...]]]:
    found = []
    for path in sorted(RECORDED.glob("*.sse")):
        for position, event in enumerate(_recorded_events(path)):
            if isinstance(event, dict):
                found += [(path.stem, position, p) for p in _paths(event)]
    return found


def test_every_field_of_every_recorded_stream_is_read_typed_or_known_unread() -> None:
    """A value of another JSON type in any field a host really sends is a protocol problem
    naming the field, unless the field is one the adapters never read (listed above)."""
    unnamed: list[str] = []
    for stem, position, path in _recorded_cases():
        prefix = next(p for p in _RECORDED_ACCUMULATORS if stem.startswith(p))
        accumulator_type, round_of = _RECORDED_ACCUMULATORS[prefix]
        events = _recorded_events(RECORDED / f"{stem}.sse")
        original = _value_at(events[position], path)
        field = _field_name(path)
        if original is None or _unread(events[position].get("type"), field):
            continue
        if "error" in events[position]:
            continue  # the host's error: the chunk ends the round, nothing else in it is read
        for value in WRONG_VALUES:
            if not _is_wrong(value, original, field):
                continue
            changed = list(events)
            changed[position] = _replaced(events[position], path, value)
            problem = _play(accumulator_type, round_of, changed)
            if not problem.startswith(f"the field {field} is "):
                unnamed.append(f"{stem} #{position} {field} = {value!r}: {problem!r}")
    assert not unnamed, "\n".join(unnamed[:80])
