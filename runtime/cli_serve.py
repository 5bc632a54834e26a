"""`policy serve`: the administrator's web page (policy/web.py), kept current by a PolicyWatcher.

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` imports none of it.
The page itself lives in `policy.web` and only reads the policy; this command owns what acts: the
listening socket, uvicorn, and the `runtime.PolicyWatcher` that reloads the configuration when a
plugin file (or the user settings file, or a fetched configuration) changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from policy._runtime_seam import (
    ConfigurationSources,
    configuration_options,
    examples,
    offline_option,
    tools_file_option,
)
from runtime.serving import listening_options


@click.command(epilog=examples("policy serve"))
@configuration_options
@tools_file_option
@listening_options(
    "TOOLPOLICY_SERVE_TOKEN", "Authorization: Bearer, or ?token= once", public_url=True
)
@offline_option
def serve(
    sources: ConfigurationSources,
    tools_files: tuple[Path, ...],
    host: str,
    port: int,
    token: str | None,
    public_url: str | None,
    offline: bool,
) -> None:
    """The administrator's read-only web page: status, effective settings, every decision,
    a what-if simulation and a diff against a candidate configuration.

    Each page has its JSON twin under /api/ (the contracts of --format json). A changed plugin
    file is in force without a restart. The address it listens on is printed to stderr first.
    """
    import uvicorn

    from policy._runtime_seam import ConfigurationPaths, ListedPeople, build_app
    from runtime.policy_watch import PolicyWatcher
    from runtime.serving import listen, url_of
    from runtime.signin.serving import serving_sign_in

    paths = ConfigurationPaths(*sources, tools_files, offline)
    listed = ListedPeople(paths)
    watcher = PolicyWatcher(listed.load, watch=paths.watched())
    settings = serving_sign_in(watcher.policy, host, token, "TOOLPOLICY_SERVE_TOKEN", web=True)
    listener = listen(host, port)
    debug = bool(click.get_current_context().find_root().params.get("debug"))
    from runtime.signin import request_caller

    app: Any = build_app(
        watcher,
        paths,
        token or None,
        debug=debug,
        signed_in=bool(settings),
        caller_of=request_caller if settings is not None else None,
        people_of=listed.of,
    )
    if settings is not None:
        from policy._runtime_seam import SignInSettings
        from runtime.signin import GatewaySignIn
        from runtime.signin.web import BrowserSignIn

        sign_in = GatewaySignIn(
            settings,
            lambda: SignInSettings.of(watcher.policy.configuration),
            public_url or url_of(listener),
        )
        app = BrowserSignIn(app, sign_in)
    click.echo(f"policy serve: {url_of(listener)} (Ctrl-C stops)", err=True)
    config = uvicorn.Config(
        app,
        log_level="warning",
        log_config=None,  # uvicorn's records go through the command's one terminal-safe handler
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    uvicorn.Server(config).run(sockets=[listener])
