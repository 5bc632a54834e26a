"""The MCP listings a command works with: the runtime's own listing code, asked live only for
servers without a fresh cached listing.

Every `policy` command that decides or serves (explain, tools, diff, check, settings, chat,
serve, mcp serve) sees MCP tools as the runtime would: a server's cached listing in `--state-dir`
is used while it is fresh (younger than the runtime's listing TTL, `DEFAULT_LISTING_TTL_SECONDS`,
by its `listed_at`); every other server is asked through `McpSessions`, concurrently, each
bounded by its own start and `TimeoutSeconds`, and what it lists is written back to the cache. A
server that cannot be reached falls back to its cached listing, saying so; without one it is
`not listed` with the error. `offline` asks no server at all.

The policy side names this module by import path (`policy.cli_options`), as it names the lazily
attached commands, so the library itself never lists and a command without MCP servers never
imports it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from policy import McpServerConfig, McpServerListing
from policy._runtime_seam import (
    cached_listings,
    forget_unconfigured_listings,
    listed_age_seconds,
    not_listed,
)
from runtime.mcp import (
    DEFAULT_FIRST_LISTING_WAIT_SECONDS,
    DEFAULT_LISTING_TTL_SECONDS,
    McpSessions,
)

if TYPE_CHECKING:
    from policy import Policy

__all__ = ["current_mcp_listings", "list_servers", "sessions_for"]


async def current_mcp_listings(
    servers: Sequence[McpServerConfig],
    *,
    state_dir: Path | None = None,
    offline: bool = False,
    max_age_seconds: float = DEFAULT_LISTING_TTL_SECONDS,
    known: Mapping[str, McpServerListing] | None = None,
) -> dict[str, McpServerListing]:
    """Every server's listing by id: fresh from the cache, else live, else the cache (stale),
    else `not listed`. `known` are listings this command already made (by server id), used
    as they are."""
    cached = cached_listings(state_dir, servers)
    if offline:
        return cached
    now = datetime.now(UTC)
    if state_dir is not None:
        forget_unconfigured_listings(state_dir, servers, now)
    chosen: dict[str, McpServerListing] = {}
    for server in servers:
        listing = (known or {}).get(server.id) or cached[server.id]
        age = listed_age_seconds(listing, now) if listing.ok else None
        if listing.ok and (not listing.from_cache or (age is not None and age <= max_age_seconds)):
            chosen[server.id] = listing
    due = [s for s in servers if s.id not in chosen]
    if due:
        async with McpSessions(due, state_dir=state_dir) as sessions:
            live = await sessions.listings(refresh=True)
        for server in due:
            listing = live.get(server.id) or not_listed(server, "the server gave no answer")
            fallback = cached[server.id]
            if not listing.ok and fallback.ok:
                listing = replace(fallback, unreachable=listing.error)
            chosen[server.id] = listing
    return {s.id: chosen[s.id] for s in servers}


def list_servers(
    servers: Sequence[McpServerConfig],
    *,
    state_dir: Path | None = None,
    offline: bool = False,
    known: Mapping[str, McpServerListing] | None = None,
) -> dict[str, McpServerListing]:
    """`current_mcp_listings` for a caller without an event loop of its own (a command, or a
    reload on a worker thread); from inside a running loop it runs on a thread of its own."""
    listing = current_mcp_listings(servers, state_dir=state_dir, offline=offline, known=known)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(listing)
    with ThreadPoolExecutor(1, thread_name_prefix="mcp-listing") as pool:
        return pool.submit(asyncio.run, listing).result()


def sessions_for(
    policy: Policy,
    state_dir: Path | None,
    *,
    offline: bool = False,
    first_listing_wait_seconds: float = DEFAULT_FIRST_LISTING_WAIT_SECONDS,
    listing_ttl_seconds: float = DEFAULT_LISTING_TTL_SECONDS,
    entries: Sequence[tuple[McpServerConfig, McpServerListing]] = (),
) -> McpSessions | None:
    """The MCP sessions a serving command (`policy chat`, `policy mcp serve`) hands its
    `ChatRuntime`: they start from the listings the command loaded the policy with, so the tools
    it checked are the ones the runtime offers first. Listed live or fresh from the cache, a
    listing ages by the runtime's TTL and is then asked again (written to `state_dir`); a server
    that was not reached is asked again at the first request, which waits for it at most
    `first_listing_wait_seconds` (in all, however many requests ask). `entries` are the groups'
    own entries the command listed (`own_entry_listings`), started from the same way.
    `offline` keeps the cached listings for good: no server is asked for its tools, a group's own
    entry included (it stays not listed, saying why); a call still goes to its server."""
    servers = policy.configuration.mcp_servers
    if not servers:
        return None
    sessions = McpSessions(
        servers,
        state_dir=state_dir,
        listing_ttl_seconds=listing_ttl_seconds,
        first_listing_wait_seconds=first_listing_wait_seconds,
        offline=offline,
    )
    now = datetime.now(UTC)
    sessions.remember(
        {
            server_id: listing
            for server_id, listing in policy.mcp_listings.items()
            if offline or (listing.ok and not listing.unreachable and _fresh(listing, now))
        },
        [(entry, listing) for entry, listing in entries if listing.ok],
    )
    return sessions


def _fresh(listing: McpServerListing, now: datetime) -> bool:
    """Listed live, or cached within the runtime's TTL: a staler cache is never offered as if
    just listed (the server is asked first)."""
    if not listing.from_cache:
        return True
    age = listed_age_seconds(listing, now)
    return age is not None and age <= DEFAULT_LISTING_TTL_SECONDS
