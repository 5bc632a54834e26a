"""Builders for the events each wire API streams, so tests read like the provider's answer."""

from __future__ import annotations

from typing import Any

from runtime.dev_provider import chat_call as chat_call
from runtime.dev_provider import chat_chunk as chat_chunk
from runtime.dev_provider import chat_text as chat_text

# --- Chat Completions: the dev provider's builders, the one writer of these events ------------


def chat_usage(prompt_tokens: int, completion_tokens: int = 5) -> dict[str, Any]:
    return chat_chunk(
        usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    )


# --- Responses --------------------------------------------------------------------------------


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


# --- Anthropic Messages -----------------------------------------------------------------------


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
    stop_reason: str = "end_turn", output_tokens: int = 50
) -> tuple[str, dict[str, Any]]:
    return (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": output_tokens, "input_tokens": 99999},
        },
    )


MESSAGE_STOP = ("message_stop", {"type": "message_stop"})


def anthropic_text_message(text: str, input_tokens: int = 10) -> list[Any]:
    return [
        message_start(input_tokens),
        block_start(0, {"type": "text", "text": ""}),
        text_delta(0, text),
        block_stop(0),
        message_delta(),
        MESSAGE_STOP,
    ]
