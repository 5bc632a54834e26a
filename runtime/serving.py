"""Listening sockets for the commands that serve (`policy serve`, `policy mcp serve --transport
http`): bound before the server starts, so `--port 0` can print the port the system picked.
"""

from __future__ import annotations

import socket

import click

__all__ = ["listen", "url_of"]


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
