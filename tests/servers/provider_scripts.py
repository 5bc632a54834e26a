"""Builders for the events each wire API streams, so tests read like the provider's answer."""

from __future__ import annotations

from typing import Any

from runtime.dev_provider.events import MESSAGE_STOP as MESSAGE_STOP
from runtime.dev_provider.events import block_delta as block_delta
from runtime.dev_provider.events import block_start as block_start
from runtime.dev_provider.events import block_stop as block_stop
from runtime.dev_provider.events import chat_call as chat_call
from runtime.dev_provider.events import chat_chunk as chat_chunk
from runtime.dev_provider.events import chat_text as chat_text
from runtime.dev_provider.events import json_delta as json_delta
from runtime.dev_provider.events import message_delta as _message_delta
from runtime.dev_provider.events import message_start as message_start
from runtime.dev_provider.events import responses_call as responses_call
from runtime.dev_provider.events import responses_completed as responses_completed
from runtime.dev_provider.events import responses_item_done as responses_item_done
from runtime.dev_provider.events import responses_message as responses_message
from runtime.dev_provider.events import responses_text as responses_text
from runtime.dev_provider.events import text_delta as text_delta

# The events' builders are the dev provider's (runtime/dev_provider/events.py), the one writer.


def chat_usage(prompt_tokens: int, completion_tokens: int = 5) -> dict[str, Any]:
    return chat_chunk(
        usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    )


def message_delta(
    stop_reason: str = "end_turn", output_tokens: int = 50
) -> tuple[str, dict[str, Any]]:
    """With an `input_tokens` the adapter must not count (message_start's are the request's)."""
    return _message_delta(stop_reason, output_tokens, input_tokens=99999)


def anthropic_text_message(text: str, input_tokens: int = 10) -> list[Any]:
    return [
        message_start(input_tokens),
        block_start(0, {"type": "text", "text": ""}),
        text_delta(0, text),
        block_stop(0),
        message_delta(),
        MESSAGE_STOP,
    ]
