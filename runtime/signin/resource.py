"""What a serving command wires in to act as a resource server, and the caller of a request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from policy import Caller
from policy._runtime_seam import SignInSettings
from runtime.signin.verifier import CallerTokenVerifier, SignedInToken

if TYPE_CHECKING:
    from mcp.server.auth.settings import AuthSettings

CALLER_SCOPE_KEY = "toolpolicy.caller"
"""Where a request's ASGI scope carries its `Caller` when no `mcp` SDK middleware put a
user there (the web page's session cookie)."""


class GatewaySignIn:
    """The sign-in a server started with: `settings` is the one in force at start, `current`
    returns the one in force now, `resource_url` is the address clients reach the server at (its
    resource identifier in the protected resource metadata)."""

    def __init__(
        self,
        settings: SignInSettings,
        current: Callable[[], SignInSettings | None],
        resource_url: str,
        verifier: CallerTokenVerifier | None = None,
    ) -> None:
        self.settings = settings
        self.resource_url = resource_url
        self.verifier = verifier or CallerTokenVerifier(settings, current)

    def auth_settings(self) -> AuthSettings:
        """The SDK's resource-server settings: the issuer clients sign in with and this
        resource's address. The audience is checked by the verifier (`aud`), not by the SDK's
        resource-indicator comparison, since identity providers write a client id there."""
        from mcp.server.auth.settings import AuthSettings

        return AuthSettings(
            issuer_url=self.settings.issuer,  # type: ignore[arg-type]
            resource_server_url=self.resource_url,  # type: ignore[arg-type]
            validate_token_resource=False,
        )


def request_caller(request: Any) -> Caller | None:
    """The signed-in caller of a request (a Starlette request, or its ASGI scope), or None when
    the server has no sign-in."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    scope: Mapping[str, Any] = getattr(request, "scope", request)
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser) and isinstance(user.access_token, SignedInToken):
        return user.access_token.caller
    caller = scope.get(CALLER_SCOPE_KEY)
    return caller if isinstance(caller, Caller) else None
