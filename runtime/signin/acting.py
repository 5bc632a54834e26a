"""Which signed-in caller a call acts for: set around one MCP call by the gateway, read by
the token exchange (runtime.signin.exchange). Light to import: the gateway imports it always."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.signin.verifier import SignedInToken

_caller_token: ContextVar[SignedInToken | None] = ContextVar("toolpolicy_acting_for", default=None)


@contextlib.contextmanager
def _acting_for(request: Any) -> Iterator[None]:
    """For the block, calls act for the signed-in caller of `request` (None: nobody)."""
    scope = getattr(request, "scope", None) or {}
    token = getattr(scope.get("user"), "access_token", None)
    if token is not None:
        from runtime.signin.verifier import SignedInToken

        token = token if isinstance(token, SignedInToken) else None
    reset = _caller_token.set(token)
    try:
        yield
    finally:
        _caller_token.reset(reset)


def calls_act_for_caller(
    handler: Callable[[Any, Any], Awaitable[Any]],
) -> Callable[[Any, Any], Awaitable[Any]]:
    """`handler(ctx, params)` (an MCP server's tools/call handler) run `_acting_for` the request
    the SDK hands it as `ctx.request`."""

    async def acting(ctx: Any, params: Any) -> Any:
        with _acting_for(getattr(ctx, "request", None)):
            return await handler(ctx, params)

    return acting


def acting_token() -> SignedInToken | None:
    """The signed-in token the current call acts for, or None."""
    return _caller_token.get()
