"""Access tokens checked with joserfc: signature by the issuer's key, `iss`, `aud`, `exp`, `nbf`
and `iat` with a bounded clock skew, a `sub`, and the groups claim; a valid token becomes the
caller (`policy.identity.Caller`) the request carries.

`CallerTokenVerifier` is the `mcp` SDK's `TokenVerifier`, so the SDK's bearer middleware runs it
for the gateway; the web page's sign-in asks the same object. Refusals are logged with their
reason and never with the token.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from joserfc import jws, jwt
from joserfc.errors import JoseError
from mcp.server.auth.provider import AccessToken
from pydantic import ConfigDict

from policy import Caller
from policy._runtime_seam import SignInSettings
from runtime.signin._errors import SignInUnavailable
from runtime.signin._issuer import IssuerKeys

logger = logging.getLogger("runtime.signin")

SIGNING_ALGORITHMS = (
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
)  # fmt: skip
"""Asymmetric algorithms only: a token signed with a shared secret (HS256) or none is refused."""
_DEFAULT_LEEWAY_SECONDS = 60
_MAX_LEEWAY_SECONDS = 300
_MAX_TOKEN_BYTES = 16 * 1024
_MAX_KEPT_TOKENS = 4096


class SignedInToken(AccessToken):
    """An access token the sign-in accepted, with the caller it names."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    caller: Caller


class CallerTokenVerifier:
    """Checks bearer tokens against the sign-in settings the server started with.

    `settings` returns the sign-in in force now (the policy may reload): while it equals the one
    the server started with, tokens are checked; once a reload changes it, every token is refused
    until the server is restarted, since the protected-resource metadata the clients read still
    names the old issuer.
    """

    def __init__(
        self,
        started: SignInSettings,
        settings: Callable[[], SignInSettings | None],
        *,
        keys: IssuerKeys | None = None,
        leeway_seconds: int = _DEFAULT_LEEWAY_SECONDS,
        now: Callable[[], int] | None = None,
    ) -> None:
        if not 0 <= leeway_seconds <= _MAX_LEEWAY_SECONDS:
            raise ValueError(
                f"leeway_seconds must be within 0..{_MAX_LEEWAY_SECONDS}, got {leeway_seconds!r}"
            )
        self.started = started
        self._settings = settings
        self.keys = keys or IssuerKeys(started.issuer)
        self._leeway = leeway_seconds
        self._now = now or (lambda: int(time.time()))
        self._changed_warned = False
        self._no_groups_warned = False
        self._accepted: dict[str, SignedInToken] = {}
        """Tokens accepted so far, by their text: a client presents the same token on every
        request, and its signature and claims cannot change; only its expiry is checked again."""

    async def verify_token(self, token: str) -> AccessToken | None:
        """The accepted token with its caller, or None (the request is answered 401)."""
        try:
            return await self.caller_token(token)
        except _Refused as refusal:
            logger.info("sign-in refused a token: %s", refusal)
        except SignInUnavailable as error:
            logger.warning("sign-in cannot check tokens now: %s", error)
        return None

    async def caller_token(self, token: str) -> SignedInToken:
        """The accepted token, or `_Refused` / `SignInUnavailable` saying why not."""
        settings = self._settings()
        if settings != self.started:
            if not self._changed_warned:
                self._changed_warned = True
                logger.warning(
                    "the DataGateway sign-in settings changed since this server started; every "
                    "token is refused until it is restarted"
                )
            raise _Refused("the sign-in settings changed; restart the server")
        if len(token) > _MAX_TOKEN_BYTES:
            raise _Refused(f"longer than {_MAX_TOKEN_BYTES} bytes")
        kept = self._accepted.get(token)
        if kept is not None:
            if kept.expires_at is not None and kept.expires_at + self._leeway <= self._now():
                del self._accepted[token]
                raise _Refused("expired")
            return kept
        accepted = await self._checked(token, settings)
        if len(self._accepted) >= _MAX_KEPT_TOKENS:
            del self._accepted[next(iter(self._accepted))]
        self._accepted[token] = accepted
        return accepted

    async def _checked(self, token: str, settings: SignInSettings) -> SignedInToken:
        try:
            header = jws.extract_compact(token.encode("ascii")).protected
        except (JoseError, ValueError, UnicodeError):
            raise _Refused("not a signed JWT") from None
        algorithm = header.get("alg")
        if algorithm not in SIGNING_ALGORITHMS:
            raise _Refused(f"signed with {str(algorithm)[:20]!r}, not an asymmetric algorithm")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise _Refused("its key id is not a string")
        key = await self.keys.key(kid)
        if key is None:
            raise _Refused(f"signed with a key the issuer does not publish (kid {str(kid)[:60]!r})")
        try:
            claims = jwt.decode(token, key, algorithms=[algorithm]).claims
            jwt.JWTClaimsRegistry(
                now=self._now,
                leeway=self._leeway,
                iss={"essential": True, "value": settings.issuer},
                aud={"essential": True, "value": settings.audience},
                exp={"essential": True},
                sub={"essential": True},
            ).validate(claims)
        except JoseError as error:
            raise _Refused(_reason(error)) from None
        subject = claims["sub"]
        if not isinstance(subject, str) or not subject:
            raise _Refused("its sub is not a non-empty string")
        groups = _groups(claims, settings.groups_claim)
        if groups is None:
            groups = frozenset()
            if not self._no_groups_warned:
                self._no_groups_warned = True
                logger.warning(
                    "a token carries no %r claim: its person is decided as one in no group "
                    "(check DataGateway.GroupsClaim if the identity provider names groups "
                    "another way; said once)",
                    settings.groups_claim,
                )
        scope = claims.get("scope")
        expires = claims.get("exp")
        return SignedInToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or ""),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=int(expires) if isinstance(expires, int | float) else None,
            subject=subject,
            claims={"iss": settings.issuer},
            caller=Caller(subject, groups),
        )


class _Refused(Exception):
    """Why a token was refused, in words safe to log (never the token)."""


def _reason(error: JoseError) -> str:
    words = {
        "expired_token": "expired",
        "invalid_claim": "a claim is wrong",
        "missing_claim": "a required claim is missing",
        "bad_signature": "its signature does not verify",
    }
    reason = words.get(error.error, error.error)
    detail = getattr(error, "description", "") or ""
    return f"{reason} ({detail[:120]})" if detail else reason


def _groups(claims: dict[str, Any], path: str) -> frozenset[str] | None:
    """The groups the claim at `path` lists; None when the token has no such claim (identity
    providers leave it out for a person in no group, and a misspelled `GroupsClaim` looks the
    same, so the verifier says so once). A claim of another shape is refused: read as no
    groups it could leave out a group whose plugin restricts the caller."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, str):
        return frozenset({value})
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return frozenset(value)
    raise _Refused(f"its {path!r} claim is not a list of group names")
