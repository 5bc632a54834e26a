"""An MCP server (the official `mcp` SDK) that only serves the identity provider's tokens for its
own audience, as a tickets API behind the gateway's token exchange would.

    python -m tests.servers.identity_mcp_server ISSUER AUDIENCE SEEN_FILE   (prints "PORT <n>")

Its token check is its own (joserfc against the issuer's published keys: signature, `iss`,
`aud`, `exp`), independent of toolpolicy's. Its one tool, `whoami`, answers who the token names
(`sub`, and `act` when a client acts for someone); asked with `{"echo": true}` it also quotes the
token it was presented, as a careless server's debug output or error would. Every bearer token it receives is appended to
SEEN_FILE as one JSON line (`{"token": ..., "sub": ..., "accepted": ...}`), so a test sees which
tokens reached it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from tests.servers.mcp_server import serve_http


class _Verifier:
    def __init__(self, issuer: str, audience: str, seen: Path) -> None:
        self.issuer, self.audience, self.seen = issuer, audience, seen
        metadata = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=30).json()
        self.keys = KeySet.import_key_set(httpx.get(metadata["jwks_uri"], timeout=30).json())

    async def verify_token(self, token: str) -> AccessToken | None:
        claims: dict[str, Any] = {}
        try:
            claims = jwt.decode(token, self.keys).claims
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.issuer},
                aud={"essential": True, "value": self.audience},
                exp={"essential": True},
            ).validate(claims)
            accepted = True
        except (JoseError, ValueError):
            accepted = False
        with self.seen.open("a", encoding="utf-8") as seen:
            seen.write(json.dumps({"token": token, "sub": claims.get("sub"), "accepted": accepted}))
            seen.write("\n")
        if not accepted:
            return None
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=[],
            subject=claims["sub"],
            claims=claims,
        )


def build(issuer: str, audience: str, seen: Path) -> tuple[Server[Any], _Verifier]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tool = types.Tool(
            name="whoami",
            description="Says whom the presented token names.",
            input_schema={"type": "object", "properties": {"echo": {"type": "boolean"}}},
            annotations=types.ToolAnnotations(read_only_hint=True),
        )
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        token = get_access_token()
        if token is None:  # the SDK's RequireAuthMiddleware answers 401 before this
            token = ctx.request.user.access_token if ctx.request is not None else None  # type: ignore[union-attr]
        claims = token.claims or {} if token is not None else {}
        answer = {"sub": claims.get("sub"), "aud": claims.get("aud"), "act": claims.get("act")}
        if (params.arguments or {}).get("echo") and token is not None:
            answer["presented"] = f"Bearer {token.token}"
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(answer))])

    server = Server("tickets", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)
    return server, _Verifier(issuer, audience, seen)


if __name__ == "__main__":
    issuer, audience, seen_file = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    server, verifier = build(issuer, audience, seen_file)
    auth = AuthSettings(
        issuer_url=issuer,  # type: ignore[arg-type]
        resource_server_url="http://127.0.0.1/mcp",  # type: ignore[arg-type]
        validate_token_resource=False,
    )
    serve_http(server, auth=auth, token_verifier=verifier)
