"""Call limits per person and tool, enforced: `DataGateway.CallLimits` counted in a chat store.

The policy says what a tool's limit is (`policy.quotas`); this counts each person's calls in a
`CallCountStore` — the PostgreSQL chat store when instances share one, else SQLite — before a
call runs. A call over the limit is refused (BLOCKED) with when the next one is possible, which
the model can act on. A count that cannot be taken refuses the call: a limit never lapses
because its store is down.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policy._runtime_seam import CallLimit, CallLimits
    from runtime.chat import CallCountStore

__all__ = ["CallQuota"]

_log = logging.getLogger(__name__)


class CallQuota:
    """One person's call limits: `refusal(tool_id)` counts a call that may run (None) or says
    why it may not. `person` is how the store names them (a hash of the `sub`; "" for the
    shared token's one user)."""

    __slots__ = ("_counts", "_limits", "_person")

    def __init__(self, limits: CallLimits, counts: CallCountStore, person: str) -> None:
        self._limits = limits
        self._counts = counts
        self._person = person

    async def refusal(self, tool_id: str) -> str | None:
        limit = self._limits.limit_for(tool_id)
        if limit is None:
            return None
        now = time.time()
        try:
            wait = await asyncio.to_thread(
                self._counts.take_call, self._person, tool_id, limit.calls, limit.seconds, now
            )
        except Exception as error:
            _log.error("The calls of %s cannot be counted: %s", tool_id, error)
            return (
                f"Tool '{tool_id}' was not run: its call limit ({limit.text}) cannot be checked "
                "now (the call counter is not reachable). Try again later."
            )
        return None if wait is None else _over_limit(tool_id, limit, wait, now)


def _over_limit(tool_id: str, limit: CallLimit, wait: float, now: float) -> str:
    if limit.calls == 0:
        return (
            f"Tool '{tool_id}' was not run: no call of it is allowed ({limit.where}). Do not "
            "call it again; tell the user to ask the administrator."
        )
    seconds = max(1, round(wait))
    at = datetime.fromtimestamp(now + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"Tool '{tool_id}' was not run: the limit of {limit.calls} call"
        f"{'s' if limit.calls != 1 else ''} per {limit.window} for this person is reached "
        f"({limit.where}). The next call is possible in {_duration(seconds)} (at {at}); do not "
        "call it before then."
    )


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} seconds"
    if seconds < 7200:
        return f"{round(seconds / 60)} minutes"
    return f"{round(seconds / 3600)} hours"
