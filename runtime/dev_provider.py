"""A scripted stand-in for a model server, to try `policy chat` without an account or a network.

`python -m runtime.dev_provider` serves OpenAI's Chat Completions (streamed, as the runtime asks
for it) on 127.0.0.1. It is not a model: it answers by a tiny script, so a first chat shows a
tool call, the policy's decision on it and an approval on a fresh machine:

- a user message `call TOOL {"arg": "value"}` makes it call TOOL with those arguments (when the
  request offers TOOL; otherwise it says which tools were offered);
- after a tool result it answers with the tool's result, quoted;
- any other message is echoed back with the tools offered and how to make it call one.

The tests' loopback provider encodes its answers with the same builders (`chat_chunk`,
`chat_text`, `chat_call`, `sse_text`), so there is one writer of the wire format the tests and
the stand-in speak.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Mapping, Sequence
from typing import Any

import click

__all__ = [
    "DEFAULT_PORT",
    "chat_call",
    "chat_chunk",
    "chat_text",
    "main",
    "scripted_events",
    "sse_text",
]

DEFAULT_PORT = 8765
STAND_IN_NOTE = "toolpolicy dev provider: a scripted stand-in, not a model"
_CALL = re.compile(r"\s*call\s+(?P<tool>\S+)\s*(?P<arguments>.*)", re.IGNORECASE | re.DOTALL)
_RESULT_SHOWN_CHARACTERS = 600

# --- Chat Completions stream events -----------------------------------------------------------


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


def _finished(reason: str) -> dict[str, Any]:
    return chat_chunk(choices=[{"index": 0, "delta": {}, "finish_reason": reason}])


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


# --- The script ---------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _offered(body: Mapping[str, Any]) -> list[str]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    names = (t.get("function", {}).get("name") for t in tools if isinstance(t, Mapping))
    return [n for n in names if isinstance(n, str)]


def _offered_text(offered: Sequence[str]) -> str:
    return ", ".join(offered) if offered else "none"


def _calls_so_far(messages: Sequence[Any]) -> dict[str, str]:
    """Tool call id → tool name, of every call the conversation's assistant messages made."""
    calls: dict[str, str] = {}
    for message in messages:
        if isinstance(message, Mapping) and isinstance(message.get("tool_calls"), list):
            for call in message["tool_calls"]:
                if isinstance(call, Mapping):
                    name = call.get("function", {}).get("name", "")
                    calls[str(call.get("id", ""))] = str(name)
    return calls


def _answer(text: str) -> list[dict[str, Any]]:
    return [*chat_text(text), _finished("stop")]


def _after_tool_result(message: Mapping[str, Any], calls: Mapping[str, str]) -> list[Any]:
    tool = calls.get(str(message.get("tool_call_id", "")), "the tool")
    result = _text_of(message.get("content"))
    if len(result) > _RESULT_SHOWN_CHARACTERS:
        result = result[:_RESULT_SHOWN_CHARACTERS] + "…"
    return _answer(f"{tool} answered: {result}")


def _after_user_message(text: str, offered: Sequence[str], call_number: int) -> list[Any]:
    call = _CALL.fullmatch(text)
    if call is None:
        return _answer(
            f'You wrote: "{text}". ({STAND_IN_NOTE}.) Tools offered: {_offered_text(offered)}. '
            'Write call TOOL {"argument": "value"} to make it call one.'
        )
    tool, written = call["tool"], call["arguments"].strip() or "{}"
    if tool not in offered:
        return _answer(
            f"{tool} is not offered in this request, so I cannot call it. "
            f"Tools offered: {_offered_text(offered)}."
        )
    try:
        arguments = json.loads(written)
    except json.JSONDecodeError as error:
        return _answer(f"The arguments after call {tool} are not JSON ({error.msg}): {written}")
    if not isinstance(arguments, dict):
        return _answer(f'The arguments after call {tool} must be a JSON object, like {{"a": 1}}.')
    call_id = f"call_{call_number}"
    return [
        chat_call(0, call_id, tool, json.dumps(arguments, ensure_ascii=False)),
        _finished("tool_calls"),
    ]


def scripted_events(body: Mapping[str, Any]) -> list[Any]:
    """The stream events that answer one Chat Completions request body, by the script: the
    last message decides (a tool result is quoted, `call TOOL {...}` calls TOOL, anything else
    is echoed), then `[DONE]`."""
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    last = messages[-1] if messages and isinstance(messages[-1], Mapping) else {}
    calls = _calls_so_far(messages)
    if last.get("role") == "tool":
        events = _after_tool_result(last, calls)
    else:
        events = _after_user_message(
            _text_of(last.get("content")).strip(), _offered(body), len(calls) + 1
        )
    return [*events, "[DONE]"]


# --- The server ---------------------------------------------------------------------------------


def _app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def _error(status: int, message: str) -> Response:
        return JSONResponse(
            {"error": {"message": message, "type": "invalid_request_error"}}, status
        )

    async def completions(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            return _error(400, f"The request body is not JSON: {error}.")
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object.")
        if body.get("stream") is not True:
            return _error(400, 'The dev provider answers streamed requests only ("stream": true).')
        return Response(sse_text(scripted_events(body)), media_type="text/event-stream")

    async def elsewhere(request: Request) -> Response:
        return _error(
            404,
            f"{STAND_IN_NOTE}; it speaks Chat Completions only (POST /v1/chat/completions), "
            f"not {request.method} {request.url.path}.",
        )

    return Starlette(
        routes=[
            Route("/v1/chat/completions", completions, methods=["POST"]),
            Route("/{path:path}", elsewhere, methods=["GET", "POST", "PUT", "DELETE"]),
        ]
    )


def _listening_socket(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", port))
    except OSError as error:
        listener.close()
        raise click.ClickException(
            f"cannot listen on 127.0.0.1:{port} ({error.strerror}); "
            "pass --port with a free port (0: any free port)."
        ) from None
    return listener


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port on 127.0.0.1 (0: any free port; the banner names it).",
)
def main(port: int) -> None:
    """Serve a scripted stand-in for a model (not a model) on 127.0.0.1, speaking Chat
    Completions, so `policy chat` can be tried without an account or a network.

    A message `call TOOL {"arg": "value"}` makes it call TOOL when the request offers it; a
    tool's result is quoted back; anything else is echoed. Stop it with Ctrl+C.
    """
    import uvicorn

    listener = _listening_socket(port)
    address = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    click.echo(f"{STAND_IN_NOTE}.\nChat Completions at {address}", err=True)
    config = uvicorn.Config(_app(), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
