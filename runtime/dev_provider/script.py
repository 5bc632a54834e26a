"""The dev provider's script: what it answers a request with, in each wire API.

The last turn of the conversation decides: a tool's result is quoted back under the tool's name;
a user message `call TOOL {JSON arguments}` calls TOOL when the request offers it; anything else
is echoed with the tools offered. Each wire API's request is read into the same `Turn`, the
answer is written back as that API's stream events.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.dev_provider.events import (
    MESSAGE_STOP,
    block_start,
    block_stop,
    chat_call,
    chat_finished,
    chat_text,
    json_delta,
    message_delta,
    message_start,
    responses_call,
    responses_completed,
    responses_item_done,
    responses_message,
    responses_text,
    text_delta,
)

STAND_IN_NOTE = "toolpolicy dev provider: a scripted stand-in, not a model"
_CALL = re.compile(r"\s*call\s+(?P<tool>\S+)\s*(?P<arguments>.*)", re.IGNORECASE | re.DOTALL)
_RESULT_SHOWN_CHARACTERS = 600


@dataclass(frozen=True)
class Turn:
    """What the script reads of a request: the last message (a user's text, or a tool's result
    with the tool's name), the tools offered, and how many calls the conversation made."""

    text: str
    result_of: str | None
    offered: tuple[str, ...]
    calls_made: int


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: str
    call_id: str


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or the text of its parts (a part's `text`, a
    tool result's nested `content`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _text_of(part.get("text", part.get("content", "")))
            for part in content
            if isinstance(part, Mapping)
        )
    return ""


def _mappings(items: Any) -> list[Mapping[str, Any]]:
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _names(tools: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """Tool names of a request's `tools`: `{"function": {"name"}}` or `{"name"}`."""
    names = (t.get("function", t).get("name") for t in tools)
    return tuple(n for n in names if isinstance(n, str))


def _chat_completions_turn(body: Mapping[str, Any]) -> Turn:
    messages = _mappings(body.get("messages"))
    calls = {
        str(call.get("id")): str(call.get("function", {}).get("name", ""))
        for message in messages
        for call in _mappings(message.get("tool_calls"))
    }
    last = messages[-1] if messages else {}
    result_of = (
        calls.get(str(last.get("tool_call_id")), "the tool") if last.get("role") == "tool" else None
    )
    offered = _names(_mappings(body.get("tools")))
    return Turn(_text_of(last.get("content")), result_of, offered, len(calls))


def _responses_turn(body: Mapping[str, Any]) -> Turn:
    items = _mappings(body.get("input"))
    calls = {
        str(i.get("call_id")): str(i.get("name", ""))
        for i in items
        if i.get("type") == "function_call"
    }
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output":
        result_of: str | None = calls.get(str(last.get("call_id")), "the tool")
        text = _text_of(last.get("output"))
    else:
        result_of, text = None, _text_of(last.get("content"))
    return Turn(text, result_of, _names(_mappings(body.get("tools"))), len(calls))


def _anthropic_turn(body: Mapping[str, Any]) -> Turn:
    messages = _mappings(body.get("messages"))
    blocks = [b for m in messages for b in _mappings(m.get("content"))]
    calls = {
        str(b.get("id")): str(b.get("name", "")) for b in blocks if b.get("type") == "tool_use"
    }
    last = messages[-1].get("content") if messages else ""
    results = [b for b in _mappings(last) if b.get("type") == "tool_result"]
    if results:
        result_of: str | None = calls.get(str(results[-1].get("tool_use_id")), "the tool")
        text = _text_of(results[-1].get("content"))
    else:
        result_of, text = None, _text_of(last)
    return Turn(text, result_of, _names(_mappings(body.get("tools"))), len(calls))


def _offered_text(offered: Sequence[str]) -> str:
    return ", ".join(offered) if offered else "none"


def answer(turn: Turn) -> str | Call:
    """The script: text to answer with, or the call to make."""
    if turn.result_of is not None:
        result = turn.text
        if len(result) > _RESULT_SHOWN_CHARACTERS:
            result = result[:_RESULT_SHOWN_CHARACTERS] + "…"
        return f"{turn.result_of} answered: {result}"
    text = turn.text.strip()
    call = _CALL.fullmatch(text)
    if call is None:
        return (
            f'You wrote: "{text}". ({STAND_IN_NOTE}.) Tools offered: '
            f'{_offered_text(turn.offered)}. Write call TOOL {{"argument": "value"}} to make it '
            "call one."
        )
    tool, written = call["tool"], call["arguments"].strip() or "{}"
    if tool not in turn.offered:
        return (
            f"{tool} is not offered in this request, so I cannot call it. "
            f"Tools offered: {_offered_text(turn.offered)}."
        )
    try:
        arguments = json.loads(written)
    except json.JSONDecodeError as error:
        return f"The arguments after call {tool} are not JSON ({error.msg}): {written}"
    if not isinstance(arguments, dict):
        return f'The arguments after call {tool} must be a JSON object, like {{"a": 1}}.'
    return Call(tool, json.dumps(arguments, ensure_ascii=False), f"call_{turn.calls_made + 1}")


def chat_completions_events(body: Mapping[str, Any]) -> list[Any]:
    """The Chat Completions stream that answers `body`, ending in `[DONE]`."""
    said = answer(_chat_completions_turn(body))
    if isinstance(said, Call):
        events = [
            chat_call(0, said.call_id, said.tool, said.arguments),
            chat_finished("tool_calls"),
        ]
    else:
        events = [*chat_text(said), chat_finished("stop")]
    return [*events, "[DONE]"]


def responses_events(body: Mapping[str, Any]) -> list[Any]:
    """The Responses stream that answers `body`."""
    said = answer(_responses_turn(body))
    if isinstance(said, Call):
        item = responses_call(said.call_id, said.tool, said.arguments)
        return [responses_item_done(0, item), responses_completed([item])]
    message = responses_message(said)
    return [*responses_text(said), responses_item_done(0, message), responses_completed([message])]


def anthropic_events(body: Mapping[str, Any]) -> list[Any]:
    """The Anthropic Messages stream that answers `body`."""
    said = answer(_anthropic_turn(body))
    if isinstance(said, Call):
        block = {"type": "tool_use", "id": said.call_id, "name": said.tool, "input": {}}
        content = [block_start(0, block), json_delta(0, said.arguments), block_stop(0)]
        stop = "tool_use"
    else:
        content = [block_start(0, {"type": "text", "text": ""}), text_delta(0, said), block_stop(0)]
        stop = "end_turn"
    return [message_start(), *content, message_delta(stop), MESSAGE_STOP]
