"""The dev provider's HTTP face: one route per wire API on 127.0.0.1, and its command line."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Mapping
from typing import Any

import click

from runtime.dev_provider.events import sse_text
from runtime.dev_provider.script import (
    STAND_IN_NOTE,
    anthropic_events,
    chat_completions_events,
    responses_events,
)

DEFAULT_PORT = 8765
_ROUTES: dict[str, Callable[[Mapping[str, Any]], list[Any]]] = {
    "/v1/chat/completions": chat_completions_events,
    "/v1/responses": responses_events,
    "/v1/messages": anthropic_events,
}


def app() -> Any:
    """The Starlette app: each wire API's route answers a streamed request by the script."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def _error(status: int, message: str) -> Response:
        return JSONResponse(
            {"error": {"message": message, "type": "invalid_request_error"}}, status
        )

    def _answering(events_of: Callable[[Mapping[str, Any]], list[Any]]) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                body = json.loads(await request.body())
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                return _error(400, f"The request body is not JSON: {error}.")
            if not isinstance(body, dict):
                return _error(400, "The request body must be a JSON object.")
            if body.get("stream") is not True:
                return _error(
                    400, 'The dev provider answers streamed requests only ("stream": true).'
                )
            return Response(sse_text(events_of(body)), media_type="text/event-stream")

        return endpoint

    async def elsewhere(request: Request) -> Response:
        return _error(
            404,
            f"{STAND_IN_NOTE}; it answers POST {', '.join(_ROUTES)}, "
            f"not {request.method} {request.url.path}.",
        )

    routes = [
        Route(path, _answering(events_of), methods=["POST"]) for path, events_of in _ROUTES.items()
    ]
    routes.append(Route("/{path:path}", elsewhere, methods=["GET", "POST", "PUT", "DELETE"]))
    return Starlette(routes=routes)


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
    """Serve a scripted stand-in for a model (not a model) on 127.0.0.1 — OpenAI Chat
    Completions and Responses, Anthropic Messages — so `policy chat` can be tried without an
    account or a network.

    A message `call TOOL {"arg": "value"}` makes it call TOOL when the request offers it; a
    tool's result is quoted back; anything else is echoed. Stop it with Ctrl+C.
    """
    import uvicorn

    listener = _listening_socket(port)
    address = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    click.echo(f"{STAND_IN_NOTE}.\nChat Completions, Responses and Messages at {address}", err=True)
    config = uvicorn.Config(app(), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[listener])
