"""An ERI data source that signs in with the operating-system user name and a shared password
(OS_USERNAME_SHARED_PASSWORD) is the person's own only where the process runs as that person.

`policy mcp serve --transport http` runs as its service account for everyone it answers, so it
never searches such a source: a signed-in person (a real oidc-provider on 127.0.0.1) is not
offered it and cannot search it, and the loopback ERI server — which would accept the service
account's name — is never asked. A local runtime (a desktop app, `policy chat`) still is: its OS
user is the person."""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from pathlib import Path

import pytest

from policy.secrets import ENV_SECRET, encrypt, generate_secret
from tests.mcp_tools.test_mcp import write_org
from tests.mcp_tools.test_mcp_gateway import running_gateway, state
from tests.servers.eri_server import EriDocument, EriServer, EriState, running_eri_server
from tests.servers.oidc_provider import oidc_provider
from tests.signin.test_gateway_sign_in import _list_tools, _sign_in_settings, _tool_names
from tests.signin.test_people_gateway import _call_tool

__all__ = ["os_user_eri", "os_user_source", "state"]

PASSWORD = "eri-shared-password-7d1e"
SOURCE_ID = "5d2c8e1a-3b4f-4c6d-9e8f-7a6b5c4d3e2f"


@pytest.fixture
def os_user_eri() -> Iterator[EriServer]:
    state = EriState(
        username=getpass.getuser(),  # the account the gateway process runs as
        password=PASSWORD,
        documents=[EriDocument("Salaries 2026", "The printer budget and every salary.")],
    )
    with running_eri_server(state) as server:
        yield server


def os_user_source(eri: EriServer, secret: str) -> str:
    return f"""
CONFIG["DATA_SOURCES"] = {{}}
CONFIG["DATA_SOURCES"][1] = {{
    ["Id"] = "{SOURCE_ID}", ["Name"] = "Personnel files", ["Type"] = "ERI_V1",
    ["Hostname"] = "{eri.hostname}", ["Port"] = {eri.port},
    ["AuthMethod"] = "USERNAME_PASSWORD", ["UsernamePasswordMode"] = "OS_USERNAME_SHARED_PASSWORD",
    ["Password"] = "{encrypt(PASSWORD, secret)}",
    ["SecurityPolicy"] = "ALLOW_ANY", ["SelectedRetrievalId"] = "hybrid", ["MaxMatches"] = 5,
}}
"""


def test_a_signed_in_person_never_searches_as_the_gateways_os_user(
    tmp_path: Path, state: Path, os_user_eri: EriServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    eri = os_user_eri
    monkeypatch.setenv(ENV_SECRET, secret := generate_secret())
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "chats.sqlite3"))
    with oidc_provider(tmp_path / "idp") as idp:
        org = write_org(
            tmp_path / "org",
            state,
            settings=_sign_in_settings(idp.issuer) + os_user_source(eri, secret),
        )
        with running_gateway("--org", org, "--provider", "OpenAI") as (url, log):
            alice = idp.token("alice")
            tools = _tool_names(_list_tools(url, alice))
            assert "tickets__search_tickets" in tools, "the gateway serves Alice"
            assert "semantic_search" not in tools
            called = _call_tool(
                url,
                alice,
                "semantic_search",
                {"query": "salary", "data_source_ids": [SOURCE_ID]},
            )
            assert called.get("isError"), called
            assert "Salaries" not in str(called)
            said = "".join(log)
    assert not [r for r in eri.state.requests if r["path"] == "/auth"], (
        "the ERI server never heard the gateway's OS user name"
    )
    assert "/retrieval" not in eri.state.paths()
    assert "is not searched for the people this runtime answers" in said
    assert "OS_USERNAME_SHARED_PASSWORD" in said and PASSWORD not in said


def test_a_gateway_shared_by_a_token_never_searches_as_its_os_user(
    tmp_path: Path, state: Path, os_user_eri: EriServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_SECRET, secret := generate_secret())
    org = write_org(tmp_path / "org", state, settings=os_user_source(os_user_eri, secret))
    token = "shared-gateway-token-5b2e9c"
    with running_gateway("--org", org, "--provider", "OpenAI", "--token", token) as (url, _):
        tools = _tool_names(_list_tools(url, token))
    assert "tickets__search_tickets" in tools and "semantic_search" not in tools
    assert os_user_eri.state.requests == [], "whoever holds the token is not the OS user"
