"""The stream events of the three wire APIs, as the dev provider writes them and the tests'
loopback provider (tests/servers/provider_server.py) writes its scripted answers: one writer of
each event's shape, so the stand-in and the tests speak the same wire format."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def sse_text(events: Sequence[Any]) -> str:
    """Server-sent events: a dict/list is sent as JSON data, a str as the data as is, an
    (event name, payload) pair under that event name."""
    lines: list[str] = []
    for event in events:
        name = None
        if isinstance(event, tuple):
            name, event = event
        data = event if isinstance(event, str) else json.dumps(event)
        if name:
            lines.append(f"event: {name}")
        lines.extend(f"data: {line}" for line in data.split("\n"))
        lines.append("")
    return "\n".join(lines) + "\n"


# --- Chat Completions ---------------------------------------------------------------------------


def chat_chunk(delta: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """One `chat.completion.chunk`: `delta` as its only choice's delta, or the `top` members."""
    chunk: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", **top}
    if delta is not None:
        chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": None}]
    elif "choices" not in top:
        chunk["choices"] = []
    return chunk


def chat_text(*pieces: str) -> list[dict[str, Any]]:
    """The chunks of an answer streamed in `pieces`."""
    return [chat_chunk({"role": "assistant", "content": p}) for p in pieces]


def chat_call(
    index: int | None,
    call_id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
) -> dict[str, Any]:
    """The chunk of one tool call's fragment (any member left out stays out)."""
    fragment: dict[str, Any] = {}
    if index is not None:
        fragment["index"] = index
    if call_id is not None:
        fragment["id"] = call_id
        fragment["type"] = "function"
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    fragment["function"] = function
    return chat_chunk({"tool_calls": [fragment]})


def chat_finished(reason: str) -> dict[str, Any]:
    """The last chunk of a choice: why it finished (`stop`, `tool_calls`)."""
    return chat_chunk(choices=[{"index": 0, "delta": {}, "finish_reason": reason}])


# --- Responses ----------------------------------------------------------------------------------


def responses_text(*pieces: str) -> list[dict[str, Any]]:
    return [{"type": "response.output_text.delta", "delta": p} for p in pieces]


def responses_item_done(index: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.output_item.done", "output_index": index, "item": item}


def responses_completed(
    output: list[dict[str, Any]], input_tokens: int | None = None
) -> dict[str, Any]:
    response: dict[str, Any] = {"id": "resp_1", "status": "completed", "output": output}
    if input_tokens is not None:
        response["usage"] = {"input_tokens": input_tokens, "output_tokens": 7}
    return {"type": "response.completed", "response": response}


def responses_message(text: str, annotations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": annotations or []}],
    }


def responses_call(call_id: str | None, name: str, arguments: str) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "function_call",
        "id": "fc_1",
        "name": name,
        "arguments": arguments,
    }
    if call_id is not None:
        item["call_id"] = call_id
    return item


# --- Anthropic Messages -------------------------------------------------------------------------


def message_start(input_tokens: int = 10, **usage: int) -> tuple[str, dict[str, Any]]:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "usage": {"input_tokens": input_tokens, "output_tokens": 1, **usage},
            },
        },
    )


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )


def block_delta(index: int, delta: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def text_delta(index: int, text: str) -> tuple[str, dict[str, Any]]:
    return block_delta(index, {"type": "text_delta", "text": text})


def json_delta(index: int, partial: str) -> tuple[str, dict[str, Any]]:
    return block_delta(index, {"type": "input_json_delta", "partial_json": partial})


def block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(
    stop_reason: str = "end_turn", output_tokens: int = 50, **usage: int
) -> tuple[str, dict[str, Any]]:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": output_tokens, **usage},
        },
    )


MESSAGE_STOP = ("message_stop", {"type": "message_stop"})
