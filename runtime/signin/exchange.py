"""The caller's identity carried to an upstream MCP server: OAuth 2.0 Token Exchange (RFC 8693).

For an MCP server whose `Auth` is TOKEN_EXCHANGE, the gateway asks the identity provider's token
endpoint, with its own client credentials (`DataGateway.ClientId`, the decrypted
`DataGateway.ClientSecret`), for a token for the server's `Audience` on behalf of the caller,
presenting the caller's token as `subject_token`. The caller's own token is never sent upstream.
Each person has their own upstream sessions (`ExchangedSessions`), so one person's session never
carries another's token; a call with no signed-in caller is refused. The server's tools are
listed with the gateway's own token for that audience (client credentials): a listing names no
person's data.

The gateway wraps its call handler in `runtime.signin.acting.calls_act_for_caller`, which puts
the request's signed-in token where `ExchangedSessions` finds it for the length of the call.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TYPE_CHECKING

import httpx
import httpx2

from policy import McpServerConfig, Policy
from policy._runtime_seam import SignInSettings
from runtime.signin._issuer import IssuerKeys
from runtime.signin._token_endpoint import TokenEndpointError, token_request
from runtime.signin.acting import acting_token

if TYPE_CHECKING:
    from runtime.mcp import McpSessions
    from runtime.signin.verifier import SignedInToken

logger = logging.getLogger("runtime.signin")

_TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
_EXPIRY_MARGIN_SECONDS = 30
"""A token is asked for anew this long before it expires."""
_MAX_PEOPLE = 256
"""People whose upstream sessions are kept at once (the least recently used is closed)."""


class KeptExchanges:
    """The `ExchangedSessions` a serving command made, across reloads: the one in use (kept
    while the sign-in stays the same) and any a changed sign-in replaced. They outlive every
    runtime that uses them, so the command closes them (`aclose`) when it stops serving: each
    person's upstream sessions end with the gateway, not when the process happens to exit."""

    def __init__(self) -> None:
        self._made: list[ExchangedSessions] = []

    def services(self, policy: Policy) -> list[ExchangedSessions]:
        """The services a runtime for `policy` needs: an `ExchangedSessions` when a server acts
        for the caller and the sign-in is configured, else none."""
        from policy import McpAuthType

        settings = SignInSettings.of(policy.configuration)
        acting = any(
            s.auth.type is McpAuthType.TOKEN_EXCHANGE for s in policy.configuration.mcp_servers
        )
        if settings is None or not acting:
            return []
        if not self._made or self._made[-1].exchange.settings != settings:
            self._made.append(ExchangedSessions(TokenExchange(settings)))
        return self._made[-1:]

    async def aclose(self) -> None:
        """Close every person's upstream sessions of every `ExchangedSessions` made."""
        made, self._made = self._made, []
        await asyncio.gather(*(m.aclose() for m in made))


class _NoToken(Exception):
    """The identity provider gave no token for the upstream server; the call is refused."""


class TokenExchange:
    """Tokens for upstream servers from the issuer's token endpoint, kept until shortly before
    they expire: per (person, their token, audience) for a caller, per audience for the
    gateway's own."""

    def __init__(
        self,
        settings: SignInSettings,
        keys: IssuerKeys | None = None,
        *,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._keys = keys or IssuerKeys(settings.issuer)
        self._client = client
        self._clock = clock
        self._kept: dict[tuple[str, ...], tuple[str, float]] = {}
        self._asking: dict[tuple[str, ...], asyncio.Future[tuple[str, float]]] = {}

    async def for_caller(self, caller_token: SignedInToken, audience: str) -> str:
        """A token for `audience` acting for the caller whose token this is (RFC 8693)."""
        digest = hashlib.sha256(caller_token.token.encode()).hexdigest()
        key = ("caller", caller_token.caller.subject, digest, audience)
        return await self._kept_or_asked(
            key,
            {
                "grant_type": _TOKEN_EXCHANGE_GRANT,
                "subject_token": caller_token.token,
                "subject_token_type": ACCESS_TOKEN_TYPE,
                "requested_token_type": ACCESS_TOKEN_TYPE,
                "audience": audience,
            },
        )

    async def own(self, audience: str) -> str:
        """The gateway's own token for `audience` (client credentials), for listing tools."""
        return await self._kept_or_asked(
            ("own", audience), {"grant_type": "client_credentials", "audience": audience}
        )

    async def _kept_or_asked(self, key: tuple[str, ...], form: dict[str, str]) -> str:
        kept = self._kept.get(key)
        if kept is not None and kept[1] - _EXPIRY_MARGIN_SECONDS > self._clock():
            return kept[0]
        asking = self._asking.get(key)
        if asking is None:
            asking = asyncio.ensure_future(self._ask(form))
            self._asking[key] = asking
            asking.add_done_callback(lambda _: self._asking.pop(key, None))
        token, expires = await asyncio.shield(asking)
        if len(self._kept) > 4 * _MAX_PEOPLE:
            now = self._clock()
            self._kept = {k: v for k, v in self._kept.items() if v[1] > now}
        self._kept[key] = (token, expires)
        return token

    async def _ask(self, form: dict[str, str]) -> tuple[str, float]:
        try:
            body = await token_request(self.settings, self._keys, form, self._client)
        except TokenEndpointError as error:
            raise _NoToken(str(error)) from None
        token, lifetime = body.get("access_token"), body.get("expires_in", 60)
        if not isinstance(token, str) or not token:
            raise _NoToken("the identity provider's answer holds no access_token")
        seconds = float(lifetime) if isinstance(lifetime, int | float) else 60.0
        return token, self._clock() + seconds


class _BearerFrom(httpx2.Auth):
    """Every request to the upstream server carries the token `token()` gives now; the last few
    sent are the session's secrets (`runtime.mcp.SendsSecrets`): a server quoting one back
    shows it masked to the model, the decision log and the gateway's log."""

    KEPT = 2
    """Tokens kept as secrets: the one in use and the one before it, which a slow answer may
    still quote (each token's mask is compiled once, ~70 ms for a 1.2 KB token, so no more)."""

    def __init__(self, token: Callable[[], Awaitable[str]]) -> None:
        self._token = token
        self.secrets_sent: tuple[str, ...] = ()

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._token()
        if token not in self.secrets_sent:
            self.secrets_sent = (*self.secrets_sent, token)[-self.KEPT :]
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


class ExchangedSessions:
    """Each person's own upstream sessions to the TOKEN_EXCHANGE servers, found by the MCP
    tools among the runtime's services (`ToolServices.of(ExchangedSessions)`)."""

    def __init__(self, exchange: TokenExchange) -> None:
        self.exchange = exchange
        self._sessions: OrderedDict[tuple[str, str], McpSessions] = OrderedDict()
        self._latest: dict[str, SignedInToken] = {}

    def listing_auth(self, server: McpServerConfig) -> httpx2.Auth | None:
        """The shared sessions' authentication: the gateway's own token for a TOKEN_EXCHANGE
        server's audience (its listing), nothing for any other server."""
        from policy import McpAuthType

        if server.auth.type is not McpAuthType.TOKEN_EXCHANGE:
            return None
        audience = server.auth.audience
        return _BearerFrom(lambda: self.exchange.own(audience))

    async def sessions_for(self, server: McpServerConfig) -> McpSessions:
        """The calling person's session to `server` (made on first use), with a token for it in
        hand; refused without a signed-in caller or when the provider gives no token."""
        from runtime.mcp import McpServerError, McpSessions

        token = acting_token()
        if token is None:
            raise McpServerError(
                f"MCP server {server.name} acts for the signed-in person (Auth TOKEN_EXCHANGE), "
                "and this call has none; it is refused"
            )
        subject = token.caller.subject
        self._latest[subject] = token
        try:
            await self.exchange.for_caller(token, server.auth.audience)
        except _NoToken as error:
            raise McpServerError(
                f"MCP server {server.name}: no token for the signed-in person: {error}"
            ) from None
        key = (subject, server.id)
        sessions = self._sessions.get(key)
        if sessions is not None and sessions.servers != (server,):
            await sessions.aclose()
            sessions = None
        if sessions is None:
            sessions = McpSessions([server], upstream_auth=self._person_auth(subject))
            self._sessions[key] = sessions
            while len(self._sessions) > _MAX_PEOPLE:
                (gone, _), dropped = self._sessions.popitem(last=False)
                if not any(person == gone for person, _ in self._sessions):
                    self._latest.pop(gone, None)
                await dropped.aclose()
        self._sessions.move_to_end(key)
        return sessions

    def _person_auth(self, subject: str) -> Callable[[McpServerConfig], httpx2.Auth | None]:
        def auth(server: McpServerConfig) -> httpx2.Auth:
            audience = server.auth.audience
            return _BearerFrom(lambda: self.exchange.for_caller(self._latest[subject], audience))

        return auth

    async def aclose(self) -> None:
        sessions, self._sessions = self._sessions, OrderedDict()
        await asyncio.gather(*(s.aclose() for s in sessions.values()))
