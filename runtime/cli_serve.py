"""`policy serve`: the administrator's web page (policy/web.py), kept current by a PolicyWatcher.

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` imports none of it.
The page itself lives in `policy.web` and only reads the policy; this command owns what acts: the
listening socket, uvicorn, and the `runtime.PolicyWatcher` that reloads the configuration when a
plugin file (or the user settings file, or a fetched configuration) changes.
"""

from __future__ import annotations

from pathlib import Path

import click

from policy.cli import configuration_options, require_token_beyond_loopback


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
    require_token_beyond_loopback(host, token, "TOOLPOLICY_SERVE_TOKEN")
    import uvicorn

    from policy.web import ConfigurationPaths, build_app
    from runtime.policy_watch import PolicyWatcher
    from runtime.serving import listen, url_of

    paths = ConfigurationPaths(org, local, user_settings, state_dir)
    watcher = PolicyWatcher(paths.load, watch=paths.watched())
    listener = listen(host, port)
    app = build_app(watcher, paths, token or None)
    click.echo(f"policy serve: {url_of(listener)} (Ctrl-C stops)", err=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[listener])
