"""A real OpenID provider on 127.0.0.1 for the sign-in tests: panva's `oidc-provider` run with
node (tests/servers/oidc/provider.mjs, pinned in its package.json; `.ci/run` installs it).

It issues real signed access tokens: client credentials for the people of the tests (each a
client whose id is its `sub`, with groups), token exchange (RFC 8693) for the gateway's own
client, and, with `redirect_uris`, the authorization-code flow with PKCE for the same client
(the web page's sign-in; its login form takes any name as the person's `sub`). Keys are made here
with joserfc and handed to the provider, so a test can start a second provider with the same
keys under another issuer, or with other keys under the same issuer.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from joserfc.jwk import RSAKey

from tests.servers.processes import free_port, stop

HERE = Path(__file__).parent / "oidc"
GATEWAY_AUDIENCE = "toolpolicy-gateway"
GATEWAY_RESOURCE = "urn:toolpolicy:gateway"
TICKETS_AUDIENCE = "tickets-api"
TICKETS_RESOURCE = "urn:example:tickets"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"

PEOPLE: Mapping[str, tuple[str, ...]] = {
    "alice": ("engineering",),
    "bob": ("finance",),
}
"""Each person a confidential client of the provider: client id = `sub`, secret `<id>-secret`."""
GATEWAY_CLIENT = ("gateway", "gateway-secret")


def sign_in_lua(issuer: str, encryption_secret: str) -> str:
    """The plugin.lua lines of a gateway signing people in at `issuer` with its own client
    credentials (the secret encrypted with `encryption_secret`)."""
    from policy.secrets import encrypt

    client_secret = encrypt(GATEWAY_CLIENT[1], encryption_secret)
    return (
        f'CONFIG["SETTINGS"]["DataGateway.Issuer"] = "{issuer}"\n'
        f'CONFIG["SETTINGS"]["DataGateway.Audience"] = "{GATEWAY_AUDIENCE}"\n'
        f'CONFIG["SETTINGS"]["DataGateway.ClientId"] = "{GATEWAY_CLIENT[0]}"\n'
        f'CONFIG["SETTINGS"]["DataGateway.ClientSecret"] = "{client_secret}"\n'
    )


def signing_key(kid: str) -> dict[str, Any]:
    """A new RSA signing key as a private JWK."""
    key = RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})
    return dict(key.as_dict(private=True))


@dataclass(frozen=True)
class OidcProvider:
    issuer: str
    port: int
    keys: Sequence[dict[str, Any]]

    @property
    def token_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/token"

    def token(self, person: str, resource: str = GATEWAY_RESOURCE) -> str:
        """An access token of `person` (client credentials) for `resource`."""
        answer = httpx.post(
            self.token_endpoint,
            data={"grant_type": "client_credentials", "resource": resource, "scope": "mcp"},
            auth=(person, f"{person}-secret"),
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        return str(answer.json()["access_token"])

    def jwks_hits(self) -> int:
        """How often the provider's key set was read."""
        answer = httpx.get(f"http://127.0.0.1:{self.port}/test/jwks-hits", timeout=30)
        return int(answer.json()["hits"])


def _client(client_id: str, grants: Sequence[str], **extra: Any) -> dict[str, Any]:
    return {
        "client_id": client_id,
        "client_secret": f"{client_id}-secret",
        "grant_types": list(grants),
        "redirect_uris": [],
        "response_types": [],
        **extra,
    }


@contextmanager
def oidc_provider(
    folder: Path,
    *,
    keys: Sequence[dict[str, Any]] | None = None,
    issuer: str | None = None,
    port: int | None = None,
    redirect_uris: Sequence[str] = (),
    ttl: int = 600,
    people: Mapping[str, tuple[str, ...]] = PEOPLE,
) -> Iterator[OidcProvider]:
    """The provider running while the block runs (issuer `http://127.0.0.1:<port>` unless
    given; the keys made here unless given: the first one signs)."""
    node = shutil.which("node")
    if node is None or not (HERE / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError(
            "the sign-in tests need node and oidc-provider: run `npm ci` in tests/servers/oidc"
        )
    port = port or free_port()
    keys = list(keys or [signing_key("key-1")])
    issuer = issuer or f"http://127.0.0.1:{port}"
    clients = [_client(person, ["client_credentials"]) for person in people]
    web = (
        {"redirect_uris": list(redirect_uris), "response_types": ["code"]} if redirect_uris else {}
    )
    grants = ["client_credentials", TOKEN_EXCHANGE, *(["authorization_code"] if web else [])]
    clients.append(_client(GATEWAY_CLIENT[0], grants, **web))
    config = {
        "issuer": issuer,
        "port": port,
        "jwks": {"keys": keys},
        "clients": clients,
        "resources": {GATEWAY_RESOURCE: GATEWAY_AUDIENCE, TICKETS_RESOURCE: TICKETS_AUDIENCE},
        "defaultResource": GATEWAY_RESOURCE,
        "groups": {person: list(groups) for person, groups in people.items()},
        "ttl": ttl,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"oidc-{port}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    process = subprocess.Popen(
        [node, str(HERE / "provider.mjs"), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("PORT "), f"the OpenID provider did not start: {line!r}"
        yield OidcProvider(issuer, port, keys)
    finally:
        stop(process)
