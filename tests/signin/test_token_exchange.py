"""Identity to upstream servers: an MCP server entry with `Auth` TOKEN_EXCHANGE is called with a
token the gateway obtains for each signed-in caller at the identity provider (RFC 8693, a real
oidc-provider), which the upstream server (an `mcp`-SDK server checking tokens itself) accepts;
the caller's own token never reaches it, and a call with nobody signed in is refused."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from policy.secrets import generate_secret
from tests.mcp_tools.test_mcp import HEADER, policy_cli
from tests.mcp_tools.test_mcp_gateway import running_gateway
from tests.servers.oidc_provider import (
    GATEWAY_AUDIENCE,
    TICKETS_AUDIENCE,
    OidcProvider,
    oidc_provider,
    sign_in_lua,
)
from tests.servers.processes import announced_mcp_server
from tests.signin.test_people_gateway import _call_tool

MODERN = "2026-07-28"
SERVER_ID = "3c0e4a57-9f1b-4e0d-8a43-7d2b6a1c9e10"


def _plugin(
    folder: Path, issuer: str, url: str, secret: str, transport: str = "STREAMABLE_HTTP"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    settings = sign_in_lua(issuer, secret)
    where = (
        f'["Url"] = "{url}"' if transport == "STREAMABLE_HTTP" else '["Command"] = "tickets-mcp"'
    )
    server = (
        'CONFIG["MCP_SERVERS"] = {}\n'
        'CONFIG["MCP_SERVERS"][1] = {\n'
        f'  ["Id"] = "{SERVER_ID}", ["Name"] = "tickets", ["Transport"] = "{transport}",\n'
        f"  {where},\n"
        f'  ["Auth"] = {{ ["Type"] = "TOKEN_EXCHANGE", ["Audience"] = "{TICKETS_AUDIENCE}" }},\n'
        "}\n"
    )
    (folder / "plugin.lua").write_text(HEADER + settings + server, encoding="utf-8")
    return folder


async def _whoami_in_a_session(url: str, token: str) -> dict[str, Any]:
    """`whoami` through an `mcp` SDK client session (its own protocol version and session)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("tickets__whoami", {})
    assert not result.is_error, result
    return dict(json.loads(result.content[0].text))  # type: ignore[union-attr]


@contextmanager
def _exchanging_upstream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[OidcProvider, str, Path]]:
    """The identity provider, its tickets server (`identity_mcp_server`, its tokens seen in
    `tmp_path/seen.jsonl`) and the organization plugin whose entry for it acts for the caller."""
    secret = generate_secret()
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", secret)
    with oidc_provider(tmp_path / "idp") as idp:
        upstream = [sys.executable, "-m", "tests.servers.identity_mcp_server", idp.issuer,
                    TICKETS_AUDIENCE, str(tmp_path / "seen.jsonl")]  # fmt: skip
        with announced_mcp_server(upstream) as tickets:
            yield idp, tickets, _plugin(tmp_path / "org", idp.issuer, tickets, secret)


@contextmanager
def _exchanging_gateway(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[OidcProvider, str, list[str]]]:
    """The identity provider, and a gateway whose tickets server acts for the caller
    (`_exchanging_upstream`); the gateway's log in the list."""
    with (
        _exchanging_upstream(tmp_path, monkeypatch) as (idp, _, org),
        running_gateway("--org", org, "--provider", "OpenAI") as (url, log),
    ):
        yield idp, url, log


def _received(tmp_path: Path) -> list[dict[str, Any]]:
    seen = (tmp_path / "seen.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in seen.splitlines()]


def test_each_caller_reaches_the_upstream_server_as_themselves_with_an_exchanged_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _exchanging_gateway(tmp_path, monkeypatch) as (idp, url, log):
        alice, bob = idp.token("alice"), idp.token("bob")
        answers = {}
        for person, token in (("alice", alice), ("bob", bob), ("alice", alice)):
            result = _call_tool(url, token, "tickets__whoami", {})
            assert not result.get("isError"), result
            answers[person] = json.loads(result["content"][0]["text"])
        assert answers["alice"] == {
            "sub": "alice", "aud": TICKETS_AUDIENCE, "act": {"sub": "gateway"}
        }  # fmt: skip
        assert answers["bob"]["sub"] == "bob"
        assert asyncio.run(_whoami_in_a_session(url, bob))["sub"] == "bob"
    logged = "".join(log)
    received = _received(tmp_path)
    tokens = {entry["token"] for entry in received}
    assert alice not in tokens and bob not in tokens, "a caller's own token never goes upstream"
    assert all(entry["accepted"] for entry in received), received
    keys = KeySet.import_key_set({"keys": idp.keys})
    subjects = {jwt.decode(token, keys).claims["sub"] for token in tokens}
    assert subjects == {"alice", "bob", "gateway"}, (
        "the callers' tokens, and the gateway's own for listing"
    )
    for token in (alice, bob, *tokens):
        assert token not in logged


def test_a_server_acting_for_the_caller_without_the_sign_in_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = generate_secret()
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", secret)
    org = _plugin(
        tmp_path / "org",
        "https://login.example.org/corp",
        "https://tickets.example.org/mcp",
        secret,
        transport="STDIO",
    )
    text = (org / "plugin.lua").read_text(encoding="utf-8")
    text = "\n".join(line for line in text.splitlines() if "DataGateway.ClientSecret" not in line)
    (org / "plugin.lua").write_text(text + "\n", encoding="utf-8")
    checked = policy_cli("check", "--org", org)
    assert checked.returncode == 1
    output = checked.stdout + checked.stderr
    assert "token-exchange-not-possible" in output
    assert "needs Transport STREAMABLE_HTTP" in output
    assert "set DataGateway.ClientSecret" in output


def test_a_call_to_a_server_acting_for_the_caller_with_nobody_signed_in_is_refused(
    tmp_path: Path,
) -> None:
    from policy import McpAuth, McpAuthType, McpServerConfig, McpTransport
    from policy.mcp import mcp_tools
    from policy.sign_in import SignInSettings
    from runtime.execution import ToolServices
    from runtime.mcp import McpExecutableTool, McpServerError, McpSessions
    from runtime.signin.exchange import ExchangedSessions, TokenExchange
    from tests.mcp_tools.test_mcp import _context, calls_received

    state = tmp_path / "state.json"
    state.write_text(json.dumps({"base_tools": ["add_comment"]}), encoding="utf-8")
    with announced_mcp_server(
        [sys.executable, "-m", "tests.servers.mcp_server", "http", str(state)]
    ) as url:
        server = McpServerConfig(
            id=SERVER_ID,
            name="tickets",
            transport=McpTransport.STREAMABLE_HTTP,
            url=url,
            auth=McpAuth(McpAuthType.TOKEN_EXCHANGE, TICKETS_AUDIENCE),
        )
        exchanged = ExchangedSessions(
            TokenExchange(SignInSettings("http://127.0.0.1:9", GATEWAY_AUDIENCE))
        )

        async def calls() -> list[str]:
            async with McpSessions([server]) as sessions:
                listings = await sessions.listings()
                (tool,) = mcp_tools([server], listings, McpExecutableTool)
                refusals = []
                for services in ([sessions], [sessions, exchanged]):
                    context = _context(tool, sessions)
                    context = replace(context, services=ToolServices(tool_services=services))
                    with pytest.raises(McpServerError) as refused:
                        await tool.execute({"ticket_id": "1", "text": "x"}, context)
                    refusals.append(str(refused.value))
                return refusals

        without_sign_in, nobody = asyncio.run(calls())
    assert "only through a gateway with the organization's sign-in" in without_sign_in
    assert "this call has none; it is refused" in nobody
    assert calls_received(state) == [], "nothing reached the server"


def test_an_upstream_server_quoting_the_exchanged_token_shows_it_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token the gateway exchanged for the caller is that session's secret: a server that
    quotes it back (debug output, an error) reaches the model, the decision log and the
    gateway's log with it masked, like a STATIC entry's header values."""
    from policy.redaction import MASK

    with _exchanging_gateway(tmp_path, monkeypatch) as (idp, url, log):
        result = _call_tool(url, idp.token("alice"), "tickets__whoami", {"echo": True})
    logged = "".join(log)
    assert not result.get("isError"), result
    shown = json.dumps(result)
    exchanged = {e["token"] for e in _received(tmp_path) if e["sub"] == "alice"}
    assert exchanged, "the gateway exchanged a token for alice"
    for token in exchanged:
        assert token not in shown and token not in logged
    assert f"Bearer {MASK}" in shown, shown


def test_a_token_endpoint_over_plain_http_to_another_host_is_never_sent_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An issuer whose OpenID metadata names an http:// token endpoint on another host (a
    provider behind a proxy that reports its own scheme wrongly): the gateway refuses to ask
    it, so neither its client secret nor a caller's token crosses the network unencrypted."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from policy.secrets import encrypt
    from policy.sign_in import SignInSettings
    from runtime.signin._issuer import IssuerKeys
    from runtime.signin._token_endpoint import TokenEndpointError, token_request
    from tests.servers.loopback import running_app

    secret = generate_secret()
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", secret)
    asked: list[str] = []

    async def metadata(request: Request) -> JSONResponse:
        issuer = str(request.base_url).rstrip("/")
        return JSONResponse(
            {"issuer": issuer, "jwks_uri": f"{issuer}/jwks", "token_endpoint": tokens}
        )

    async def token(request: Request) -> JSONResponse:
        asked.append(request.url.path)
        return JSONResponse({"access_token": "t", "expires_in": 60})

    app = Starlette(
        routes=[
            Route("/.well-known/openid-configuration", metadata),
            Route("/token", token, methods=["POST"]),
        ]
    )
    with running_app(app) as running:
        issuer = running.url()
        settings = SignInSettings(
            issuer, GATEWAY_AUDIENCE, client_id="gateway", client_secret=encrypt("s3", secret)
        )

        async def ask(endpoint: str) -> str:
            nonlocal tokens
            tokens = endpoint
            form = {"grant_type": "client_credentials", "audience": TICKETS_AUDIENCE}
            try:
                answer = await token_request(settings, IssuerKeys(issuer), form)
            except TokenEndpointError as error:
                return str(error)
            return str(answer["access_token"])

        tokens = ""
        on_loopback = asyncio.run(ask(f"{issuer}/token"))
        elsewhere = asyncio.run(ask("http://login.example.org/token"))
    assert on_loopback == "t" and asked == ["/token"]
    assert "names a token endpoint that is not https (http://login.example.org/token)" in (
        elsewhere
    )


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="reads Linux's /proc")
async def test_each_persons_upstream_sessions_end_when_the_gateway_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`policy mcp serve` keeps each signed-in person's own session to a TOKEN_EXCHANGE server
    across reloads; what it made is closed when it stops serving (`KeptExchanges.aclose`, the
    serve command's last step), so no person's connection to the upstream server stays open."""
    from policy import Caller, load_policy
    from runtime.signin import acting
    from runtime.signin.exchange import KeptExchanges
    from runtime.signin.verifier import SignedInToken
    from tests.mcp_tools.test_mcp import _connections_to

    with _exchanging_upstream(tmp_path, monkeypatch) as (idp, url, org):
        port = int(url.removeprefix("http://127.0.0.1:").split("/")[0])
        policy = load_policy(org=[org])
        (server,) = policy.configuration.mcp_servers
        kept = KeptExchanges()
        (exchanged,) = kept.services(policy)
        assert kept.services(policy) == [exchanged], "kept while the sign-in is the same"
        for person in ("alice", "bob"):
            signed_in = SignedInToken(
                token=idp.token(person),
                client_id="",
                scopes=[],
                caller=Caller(person, frozenset()),
            )
            acting_for = acting._caller_token.set(signed_in)
            try:
                sessions = await exchanged.sessions_for(server)
                answer = await sessions.call_tool(server, "whoami", {})
            finally:
                acting._caller_token.reset(acting_for)
            assert json.loads(answer.content[0].text)["sub"] == person  # type: ignore[union-attr]
        assert _connections_to(port) >= 2, "each person over a session of their own"
        await kept.aclose()
        assert _connections_to(port) == 0, "every person's session ended with the gateway"
