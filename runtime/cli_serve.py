"""`policy serve`: the administrator's web page (policy/web.py), kept current by a PolicyWatcher.

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` imports none of it.
The page itself lives in `policy.web` and only reads the policy; this command owns what acts: the
listening socket, uvicorn, the `runtime.PolicyWatcher` that reloads the configuration when a
plugin file (or the user settings file, or a fetched configuration) changes, and the MCP listings
of the runtime in force, kept current as the gateway keeps its own (`ServedPolicy`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from policy._runtime_seam import (
    ConfigurationSources,
    configuration_options,
    examples,
    offline_option,
    tools_file_option,
)
from runtime.mcp import DEFAULT_LISTING_TTL_SECONDS
from runtime.serving import listening_options

if TYPE_CHECKING:
    from policy import McpServerConfig, McpServerListing, Policy
    from policy._runtime_seam import ConfigurationPaths, PeoplePolicies
    from runtime.policy_watch import PolicyWatcher, ReloadResult
    from runtime.session import ChatRuntime

_log = logging.getLogger(__name__)

_LISTING_POLL_SECONDS = 1.0
"""How often the page's runtime is asked whether a listing is due or changed: a lookup while
none is (the listing itself waits for the TTL or the server's list_changed)."""


class ServedPolicy:
    """What `policy serve`'s page reads (its `PolicySource`): the policy in force of a
    `PolicyWatcher` over `paths`, with each configured MCP server and each group's own entry
    listed as the runtime in force lists them. A load lists them as `policy explain --as` does
    (off the event loop, never per request); the runtime in force starts from those listings
    and, while `run` runs, lists each again after `listing_ttl_seconds` or the server's
    list_changed, in the background as the gateway does, so the page follows a listing that
    changes later. The people of the policy in force come from that one runtime
    (`people_of`): nothing kept per load, and a refused reload keeps them as they are."""

    def __init__(
        self,
        paths: ConfigurationPaths,
        *,
        listing_ttl_seconds: float = DEFAULT_LISTING_TTL_SECONDS,
        poll_seconds: float = _LISTING_POLL_SECONDS,
    ) -> None:
        from runtime.policy_watch import PolicyWatcher

        self._paths = paths
        self._ttl = listing_ttl_seconds
        self._poll = poll_seconds
        self._loaded: tuple[Policy, tuple[tuple[McpServerConfig, McpServerListing], ...]] | None
        self._loaded = None
        self.watcher: PolicyWatcher = PolicyWatcher(
            self._load, build=self._build, watch=paths.watched()
        )

    def _load(self) -> Policy:
        from policy._runtime_seam import PeoplePolicies, own_entry_listings

        policy = self._paths.load()
        entries = own_entry_listings(PeoplePolicies(policy), offline=self._paths.offline)
        self._loaded = (policy, entries)
        return policy

    def _build(self, policy: Policy) -> ChatRuntime:
        from runtime.mcp_listing import sessions_for
        from runtime.session import ChatRuntime

        loaded = self._loaded
        entries = loaded[1] if loaded is not None and loaded[0] is policy else ()
        self._loaded = None
        mcp = sessions_for(
            policy,
            None,  # the listings of the load are in the state directory; these stay in memory
            offline=self._paths.offline,
            listing_ttl_seconds=self._ttl,
            entries=entries,
        )
        return ChatRuntime(policy, mcp=mcp, os_user_is_person=False)

    def people_of(self, policy: Policy) -> PeoplePolicies | None:
        """The people of `policy` as the runtime in force decides for them, or None for a
        policy no longer in force."""
        runtime = self.watcher.runtime
        return runtime.people_policies() if runtime.whole_policy is policy else None

    @property
    def policy(self) -> Policy:
        return self.watcher.policy

    @property
    def revision(self) -> str:
        return self.watcher.revision

    @property
    def last_change(self) -> ReloadResult | None:
        return self.watcher.last_change

    async def reload(self) -> ReloadResult:
        return await self.watcher.reload()

    async def aclose(self) -> None:
        await self.watcher.aclose()

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """The watcher's reloads, and the listings of the runtime in force kept current, until
        `stop` is set (`--offline`: nothing is listed)."""
        stop = stop or asyncio.Event()
        listing = None if self._paths.offline else asyncio.create_task(self._keep_listed(stop))
        try:
            await self.watcher.run(stop)
        finally:
            if listing is not None:
                listing.cancel()
                await asyncio.gather(listing, return_exceptions=True)

    async def _keep_listed(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.watcher.runtime.refresh_mcp_tools()
            except Exception:  # the page keeps the listings it has
                _log.exception("policy serve could not bring its MCP listings up to date")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._poll)


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

    from policy._runtime_seam import ConfigurationPaths, build_app
    from runtime.serving import listen, url_of
    from runtime.signin.serving import serving_sign_in

    paths = ConfigurationPaths(*sources, tools_files, offline)
    served = ServedPolicy(paths)
    watcher = served.watcher
    settings = serving_sign_in(watcher.policy, host, token, "TOOLPOLICY_SERVE_TOKEN", web=True)
    listener = listen(host, port)
    debug = bool(click.get_current_context().find_root().params.get("debug"))
    from runtime.signin import request_caller

    app: Any = build_app(
        served,
        paths,
        token or None,
        debug=debug,
        signed_in=bool(settings),
        caller_of=request_caller if settings is not None else None,
        people_of=served.people_of,
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
