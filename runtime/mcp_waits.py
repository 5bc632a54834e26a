"""How long the MCP gateway's requests wait for upstream servers still being listed.

Its own module, importing nothing, so `policy mcp ...` can show the default of `--listing-wait`
without importing the gateway (and the `mcp` SDK behind it) for every command.
"""

from __future__ import annotations

__all__ = ["DEFAULT_FIRST_LISTING_WAIT_SECONDS"]

DEFAULT_FIRST_LISTING_WAIT_SECONDS = 3.0
"""How long a request waits for upstream servers still being listed: below the 5 s a client
such as the OpenAI Agents SDK waits for an answer by default."""
