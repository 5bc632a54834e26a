"""`policy serve`: the administrator's web page (policy/web.py), kept current by a PolicyWatcher.

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` imports none of it.
The page itself lives in `policy.web` and only reads the policy; this command owns what acts: the
listening socket, uvicorn, and the `runtime.PolicyWatcher` that reloads the configuration when a
plugin file (or the user settings file, or a fetched configuration) changes.
"""

from __future__ import annotations

import socket
from pathlib import Path

import click

from policy.cli import configuration_options


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port (port 0: one the system picks); connections wait in its
    backlog until uvicorn has started."""
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


def _url(listener: socket.socket) -> str:
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


@click.command()
@configuration_options
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="The port to listen on; 0 picks a free one (the address is printed).",
)
@click.option(
    "--token",
    envvar="TOOLPOLICY_SERVE_TOKEN",
    help="Every request must present it (Authorization: Bearer, or ?token= once). Required "
    "for a host other than loopback. [env: TOOLPOLICY_SERVE_TOKEN]",
)
def serve(
    org: tuple[Path, ...],
    local: tuple[Path, ...],
    user_settings: Path | None,
    state_dir: Path | None,
    host: str,
    port: int,
    token: str | None,
) -> None:
    """The administrator's read-only web page: status, effective settings, every decision,
    a what-if simulation and a diff against a candidate configuration.

    Each page has its JSON twin under /api/ (the contracts of --format json). A changed plugin
    file is in force without a restart. The address it listens on is printed to stderr first.
    """
    from policy.web import ConfigurationPaths, is_loopback_host

    if not is_loopback_host(host) and not token:
        raise click.BadParameter(
            f"'{host}' is reachable from other machines; set --token (or "
            "TOOLPOLICY_SERVE_TOKEN), or listen on 127.0.0.1",
            param_hint="--host",
        )
    import uvicorn

    from policy.web import build_app
    from runtime.policy_watch import PolicyWatcher

    paths = ConfigurationPaths(org, local, user_settings, state_dir)
    watcher = PolicyWatcher(paths.load, watch=paths.watched())
    listener = _listen(host, port)
    app = build_app(watcher, paths, token or None)
    click.echo(f"policy serve: {_url(listener)} (Ctrl-C stops)", err=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[listener])
