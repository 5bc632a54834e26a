"""The web page's sign-in: `policy serve` signs people in at the organization's identity provider.

A browser without a session is sent to `/signin`, which starts the OpenID Connect
authorization-code flow with PKCE (S256) as the gateway's client (`DataGateway.ClientId`, its
secret); `/signin/callback` takes the code back, redeems it at the token endpoint, checks the ID
token (signature, `iss`, `aud` = the client, `nonce`) and the access token by the same checks as
every bearer token (`CallerTokenVerifier`: `aud` = `DataGateway.Audience`), and keeps the caller
in a session cookie: a JWT signed with a key only this process holds (joserfc, HS256), HttpOnly,
SameSite=Lax (the identity provider's redirect back must carry it), Secure over https, at most
eight hours and never past the access token. The token itself is kept nowhere. An API client
presents a bearer token instead and gets 401 with the protected resource metadata's address when
it has none, as the MCP gateway answers. `/signout` drops the session.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import OctKey
from mcp.client.auth import PKCEParameters
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from policy import Caller
from runtime.signin._token_endpoint import TokenEndpointError, token_request
from runtime.signin.resource import CALLER_SCOPE_KEY, GatewaySignIn
from runtime.signin.verifier import SIGNING_ALGORITHMS

logger = logging.getLogger("runtime.signin")

_SESSION_COOKIE = "toolpolicy_session"
_FLOW_COOKIE = "toolpolicy_signin"
_SESSION_SECONDS = 8 * 3600
_FLOW_SECONDS = 600
"""How long a started sign-in may take at the identity provider."""
_METADATA_PATH = "/.well-known/oauth-protected-resource"


class BrowserSignIn:
    """`inner` (the web app) served only to signed-in people; the caller in each request's scope
    (`runtime.signin.request_caller`)."""

    def __init__(
        self, inner: ASGIApp, sign_in: GatewaySignIn, clock: Callable[[], float] = time.time
    ) -> None:
        self._inner = inner
        self._sign_in = sign_in
        self._settings = sign_in.settings
        self._base = sign_in.resource_url.rstrip("/")
        self._callback = f"{self._base}/signin/callback"
        self._secure = self._base.startswith("https://")
        self._key = OctKey.generate_key(256)
        self._clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        request = Request(scope, receive)
        path = request.url.path
        response: Response
        if path == "/signin":
            response = await self._start(request)
        elif path == "/signin/callback":
            response = await self._finish(request)
        elif path == "/signout":
            response = RedirectResponse("/signin", status_code=303)
            response.delete_cookie(_SESSION_COOKIE, path="/")
        elif path == _METADATA_PATH:
            response = JSONResponse(
                {
                    "resource": self._base,
                    "authorization_servers": [self._settings.issuer],
                    "bearer_methods_supported": ["header"],
                }
            )
        else:
            caller = self._session(request) or await self._bearer(request)
            if caller is not None:
                await self._inner({**scope, CALLER_SCOPE_KEY: caller}, receive, send)
                return
            response = self._unauthenticated(request)
        response.headers["Cache-Control"] = "no-store"
        await response(scope, receive, send)

    # --- who asks -----------------------------------------------------------------------------

    def _session(self, request: Request) -> Caller | None:
        claims = self._signed(request.cookies.get(_SESSION_COOKIE, ""), "session")
        if claims is None:
            return None
        groups = claims.get("groups")
        if not isinstance(claims.get("sub"), str) or not isinstance(groups, list):
            return None
        return Caller(claims["sub"], frozenset(str(group) for group in groups))

    async def _bearer(self, request: Request) -> Caller | None:
        header = request.headers.get("authorization", "")
        if not header.lower().startswith("bearer "):
            return None
        accepted = await self._sign_in.verifier.verify_token(header[7:].strip())
        return getattr(accepted, "caller", None)

    def _unauthenticated(self, request: Request) -> Response:
        wants_page = (
            request.method in ("GET", "HEAD")
            and not request.url.path.startswith("/api/")
            and "authorization" not in request.headers
        )
        if wants_page:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/signin?{urlencode({'next': target})}", status_code=303)
        challenge = (
            f'Bearer error="invalid_token", error_description="Authentication required", '
            f'resource_metadata="{self._base}{_METADATA_PATH}"'
        )
        return JSONResponse(
            {"error": "sign in with the organization's identity provider"},
            status_code=401,
            headers={"WWW-Authenticate": challenge},
        )

    # --- the authorization-code flow ----------------------------------------------------------

    async def _start(self, request: Request) -> Response:
        try:
            metadata = await self._sign_in.verifier.keys.metadata()
        except Exception as error:  # the provider is down: say so, keep nothing
            logger.warning("sign-in cannot start: %s", error)
            return PlainTextResponse("The identity provider cannot be reached.", status_code=503)
        endpoint = metadata.get("authorization_endpoint")
        if not isinstance(endpoint, str):
            return PlainTextResponse(
                "The identity provider names no authorization endpoint.", status_code=503
            )
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        pkce = PKCEParameters.generate()
        target = request.query_params.get("next", "/")
        if not target.startswith("/") or target.startswith("//") or "\\" in target:
            target = "/"
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self._settings.client_id,
                "redirect_uri": self._callback,
                "scope": "openid",
                "state": state,
                "nonce": nonce,
                "code_challenge": pkce.code_challenge,
                "code_challenge_method": "S256",
            }
        )
        response = RedirectResponse(f"{endpoint}?{query}", status_code=303)
        flow = {"state": state, "nonce": nonce, "verifier": pkce.code_verifier, "next": target}
        self._set(response, _FLOW_COOKIE, self._sign("flow", flow, _FLOW_SECONDS), _FLOW_SECONDS)
        return response

    async def _finish(self, request: Request) -> Response:
        flow = self._signed(request.cookies.get(_FLOW_COOKIE, ""), "flow")
        given = request.query_params.get("state", "")
        if flow is None or not secrets.compare_digest(str(flow.get("state", "")), given):
            return PlainTextResponse(
                "This sign-in was not started here or took too long; start again at /signin.",
                status_code=400,
            )
        if "code" not in request.query_params:
            error = request.query_params.get("error", "no code")[:80]
            return PlainTextResponse(f"The identity provider refused: {error}", status_code=400)
        try:
            answer = await token_request(
                self._settings,
                self._sign_in.verifier.keys,
                {
                    "grant_type": "authorization_code",
                    "code": request.query_params["code"],
                    "redirect_uri": self._callback,
                    "code_verifier": str(flow["verifier"]),
                },
            )
            caller, expires = await self._caller_of(answer, str(flow["nonce"]))
        except (TokenEndpointError, _NotSignedIn) as error:
            logger.warning("sign-in refused: %s", error)
            return PlainTextResponse(f"Sign-in failed: {error}", status_code=401)
        lifetime = max(1, min(_SESSION_SECONDS, int(expires - self._clock())))
        session = {"sub": caller.subject, "groups": sorted(caller.groups)}
        response = RedirectResponse(str(flow.get("next") or "/"), status_code=303)
        self._set(response, _SESSION_COOKIE, self._sign("session", session, lifetime), lifetime)
        response.delete_cookie(_FLOW_COOKIE, path="/")
        return response

    async def _caller_of(self, answer: dict[str, Any], nonce: str) -> tuple[Caller, float]:
        access, id_token = answer.get("access_token"), answer.get("id_token")
        if not isinstance(access, str) or not isinstance(id_token, str):
            raise _NotSignedIn("the identity provider's answer lacks an access or ID token")
        try:
            accepted = await self._sign_in.verifier.caller_token(access)
        except Exception as error:
            raise _NotSignedIn(f"the access token is refused: {error}") from None
        identity = await self._id_token_claims(id_token, nonce)
        if identity.get("sub") != accepted.subject:
            raise _NotSignedIn("the ID token and the access token name different people")
        return accepted.caller, float(accepted.expires_at or self._clock() + _SESSION_SECONDS)

    async def _id_token_claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        from joserfc import jws

        try:
            header = jws.extract_compact(id_token.encode("ascii")).protected
            key = await self._sign_in.verifier.keys.key(header.get("kid"))
            if key is None or header.get("alg") not in SIGNING_ALGORITHMS:
                raise _NotSignedIn("the ID token is not signed with a key of the issuer")
            claims = jwt.decode(id_token, key, algorithms=[header["alg"]]).claims
            jwt.JWTClaimsRegistry(
                leeway=60,
                iss={"essential": True, "value": self._settings.issuer},
                aud={"essential": True, "value": self._settings.client_id},
                nonce={"essential": True, "value": nonce},
                exp={"essential": True},
            ).validate(claims)
        except (JoseError, ValueError, UnicodeError) as error:
            raise _NotSignedIn(f"the ID token is refused ({type(error).__name__})") from None
        return claims

    # --- cookies ------------------------------------------------------------------------------

    def _sign(self, kind: str, claims: dict[str, Any], seconds: int) -> str:
        payload = {**claims, "kind": kind, "exp": int(self._clock()) + seconds}
        return jwt.encode({"alg": "HS256"}, payload, self._key, algorithms=["HS256"])

    def _signed(self, value: str, kind: str) -> dict[str, Any] | None:
        if not value:
            return None
        try:
            claims = jwt.decode(value, self._key, algorithms=["HS256"]).claims
            jwt.JWTClaimsRegistry(
                now=lambda: int(self._clock()),
                exp={"essential": True},
                kind={"essential": True, "value": kind},
            ).validate(claims)
        except (JoseError, ValueError):
            return None
        return claims

    def _set(self, response: Response, name: str, value: str, seconds: int) -> None:
        response.set_cookie(
            name,
            value,
            max_age=seconds,
            path="/",
            httponly=True,
            samesite="lax",
            secure=self._secure,
        )


class _NotSignedIn(Exception):
    """Why a sign-in did not succeed, in words safe to log and show."""
