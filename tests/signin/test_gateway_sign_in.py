"""`policy mcp serve --transport http` as an OAuth 2.1 resource server: the organization's
identity provider (a real oidc-provider on 127.0.0.1) signs people in, the gateway serves only
them, tells a client without a token where to sign in, and never writes a token to its log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from tests.mcp_tools.test_mcp import policy_cli, write_org
from tests.mcp_tools.test_mcp_gateway import running_gateway, state
from tests.servers.oidc_provider import GATEWAY_AUDIENCE, TICKETS_RESOURCE, oidc_provider

__all__ = ["state"]

MODERN = "2026-07-28"


def _sign_in_settings(issuer: str, audience: str = GATEWAY_AUDIENCE) -> str:
    return (
        f'CONFIG["SETTINGS"]["DataGateway.Issuer"] = "{issuer}"\n'
        f'CONFIG["SETTINGS"]["DataGateway.Audience"] = "{audience}"\n'
        'CONFIG["SETTINGS"]["DataGateway.GroupsClaim"] = "groups"\n'
    )


def _list_tools(url: str, token: str | None) -> httpx.Response:
    meta = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/list",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    return httpx.post(url, json=body, headers=headers, timeout=30)


def _tool_names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, (response.status_code, response.text)
    for line in response.text.splitlines():
        if line.startswith("data:"):
            response_json: dict[str, Any] = json.loads(line.removeprefix("data:"))
            return [tool["name"] for tool in response_json["result"]["tools"]]
    return [tool["name"] for tool in response.json()["result"]["tools"]]


def test_only_signed_in_people_are_served_and_told_where_to_sign_in(
    tmp_path: Path, state: Path
) -> None:
    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(tmp_path / "org", state, settings=_sign_in_settings(idp.issuer))
        with running_gateway("--org", org, "--provider", "OpenAI") as (url, log):
            refused = _list_tools(url, None)
            assert refused.status_code == 401
            challenge = refused.headers["www-authenticate"]
            assert challenge.startswith("Bearer ")
            origin = url.removesuffix("/mcp")
            metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
            assert f'resource_metadata="{metadata_url}"' in challenge
            metadata = httpx.get(metadata_url, timeout=30).json()
            assert metadata["resource"] == url
            assert metadata["authorization_servers"] == [idp.issuer]

            alice = idp.token("alice")
            assert "tickets__search_tickets" in _tool_names(_list_tools(url, alice))

            elsewhere = idp.token("alice", resource=TICKETS_RESOURCE)
            wrong = _list_tools(url, elsewhere)
            assert wrong.status_code == 401
            assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
            assert _list_tools(url, alice[:-4] + "AAAA").status_code == 401
        logged = "".join(log)
        for token in (alice, elsewhere):
            assert token not in logged
            assert token.split(".")[2] not in logged


def test_a_shared_token_and_the_sign_in_together_are_refused(tmp_path: Path, state: Path) -> None:
    org = write_org(
        tmp_path / "org", state, settings=_sign_in_settings("https://login.example.org/corp")
    )
    run = policy_cli(
        "mcp", "serve", "--org", org, "--provider", "OpenAI", "--transport", "http",
        "--port", "0", "--token", "s3cret",
    )  # fmt: skip
    assert run.returncode == 2
    assert "DataGateway.Issuer" in run.stderr and "--token" in run.stderr
    assert "s3cret" not in run.stderr


@pytest.mark.parametrize(
    ("setting", "value", "wanted"),
    [
        ("DataGateway.Issuer", "login.example.org", "https:// issuer address"),
        ("DataGateway.Issuer", "http://login.example.org", "http:// only on a loopback"),
        ("DataGateway.Issuer", "https://login.example.org/?realm=corp", "no query"),
        ("DataGateway.Audience", " ", "non-blank audience"),
        ("DataGateway.ClientSecret", "plain-text-secret", "ENC:v1:"),
    ],
)
def test_a_sign_in_mistake_is_an_error_and_nothing_is_served(
    tmp_path: Path, state: Path, setting: str, value: str, wanted: str
) -> None:
    settings = _sign_in_settings("https://login.example.org/corp") + (
        f'CONFIG["SETTINGS"]["{setting}"] = "{value}"\n'
    )
    org = write_org(tmp_path / "org", state, settings=settings)
    checked = policy_cli("check", "--org", org)
    assert checked.returncode == 1
    assert f'CONFIG["SETTINGS"]["{setting}"] must be' in checked.stdout + checked.stderr
    assert wanted in checked.stdout + checked.stderr
    assert "plugin.lua:" in checked.stdout + checked.stderr
    served = policy_cli(
        "mcp", "serve", "--org", org, "--provider", "OpenAI", "--transport", "http", "--port", "0"
    )
    assert served.returncode == 1
    assert "nothing is served" in served.stderr and setting in served.stderr
    assert "plain-text-secret" not in served.stderr + checked.stdout + checked.stderr


def test_a_misspelled_sign_in_key_is_an_error(tmp_path: Path, state: Path) -> None:
    settings = 'CONFIG["SETTINGS"]["DataGateway.Isuer"] = "https://login.example.org/corp"\n'
    org = write_org(tmp_path / "org", state, settings=settings)
    checked = policy_cli("check", "--org", org)
    assert checked.returncode == 1
    assert 'did you mean "DataGateway.Issuer"' in checked.stdout + checked.stderr
