"""Sign-in for the serving commands: OAuth 2.1 resource server of the MCP authorization spec.

`policy mcp serve --transport http` (and `policy serve`) accept the access tokens of the identity
provider `DataGateway.Issuer` names, for `DataGateway.Audience`: a request without a valid token
is answered 401 with `WWW-Authenticate: Bearer ... resource_metadata="..."`, which points the
client at `/.well-known/oauth-protected-resource/...` (RFC 9728), where it finds the issuer to
sign in with. A valid token becomes the request's `Caller` (`request_caller`), which the gateway
and the web page read: the seam through which per-person policy reaches the request.

- `_issuer.IssuerKeys` — the issuer's metadata and signing keys, fetched and kept;
- `verifier.CallerTokenVerifier` — the token checks (joserfc), the `mcp` SDK's `TokenVerifier`;
- `resource.GatewaySignIn` — what a serving command wires in (the SDK's `AuthSettings`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy._runtime_seam import lazy_attributes

if TYPE_CHECKING:
    from runtime.signin._errors import SignInUnavailable
    from runtime.signin.resource import GatewaySignIn, request_caller
    from runtime.signin.verifier import CallerTokenVerifier, SignedInToken

__all__ = [
    "CallerTokenVerifier",
    "GatewaySignIn",
    "SignInUnavailable",
    "SignedInToken",
    "request_caller",
]

_LAZY = {
    "CallerTokenVerifier": "runtime.signin.verifier",
    "GatewaySignIn": "runtime.signin.resource",
    "SignInUnavailable": "runtime.signin._errors",
    "SignedInToken": "runtime.signin.verifier",
    "request_caller": "runtime.signin.resource",
}

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
