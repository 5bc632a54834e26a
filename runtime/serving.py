"""Listening sockets for the commands that serve (`policy serve`, `policy mcp serve --transport
http`): bound before the server starts, so `--port 0` can print the port the system picked.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["listen", "listening_options", "url_of"]

F = TypeVar("F", bound=Callable[..., Any])


def listening_options(
    token_variable: str, presented: str, scope: str = "", *, public_url: bool = False
) -> Callable[[F], F]:
    """`--host` (127.0.0.1), `--port` (8765; 0 picks one), `--token` (also from
    `token_variable`; `presented` says how a request shows it), as every serving command takes
    them, and with `public_url` the `--public-url` of a command with a sign-in. `scope` starts
    each help text (e.g. "For --transport http: ")."""

    def decorate(function: F) -> F:
        if public_url:
            function = _public_url_option(scope)(function)
        function = click.option(
            "--token",
            envvar=token_variable,
            help=_sentence(
                f"{scope}every request must present it ({presented}). Required for a host "
                f"other than loopback. [env: {token_variable}]"
            ),
        )(function)
        function = click.option(
            "--port",
            default=8765,
            show_default=True,
            type=click.IntRange(0, 65535),
            help=_sentence(
                f"{scope}the port to listen on; 0 picks a free one (the address is printed "
                "on stderr)."
            ),
        )(function)
        return click.option(
            "--host",
            default="127.0.0.1",
            show_default=True,
            help=_sentence(f"{scope}the address to listen on."),
        )(function)

    return decorate


def _public_url_option(scope: str) -> Callable[[F], F]:
    return click.option(
        "--public-url",
        help=_sentence(
            f"{scope}the address clients reach this server at, when a proxy stands in front "
            "(the resource the sign-in names in its protected resource metadata); default: "
            "the listening address."
        ),
    )


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: one the system picks); connections wait in its
    backlog until the server has started. A host or port that cannot be used is a click error
    naming it."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )[0]
        listener = socket.socket(family, kind, protocol)
    except OSError as error:
        raise click.BadParameter(
            f"cannot listen on '{host}': {error.strerror or error}", param_hint="--host"
        ) from None
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(2048)
    except OSError as error:
        listener.close()
        raise click.ClickException(
            f"cannot listen on {host} port {port}: {error.strerror or error} "
            "(choose another --port, or --port 0 for a free one)"
        ) from None
    return listener


def url_of(listener: socket.socket, path: str = "/") -> str:
    """The http address a listening socket answers on (an IPv6 host in brackets)."""
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"
