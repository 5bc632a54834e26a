"""The gateway's memory of its clients: many signed-in people come and go over HTTP, the policy
is replaced, and the gateway keeps neither the replaced policy (through the views of people who
never came back) nor every person it ever saw. A person let go loses nothing: what a result
demanded of their chat still holds when they return."""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from policy import Caller
from runtime.mcp_gateway import McpGateway
from runtime.session import ChatRuntime
from runtime.signin.resource import CALLER_SCOPE_KEY
from tests.e2e._kit import VLLM_ID
from tests.e2e.test_flow_rule import _AppTool, _policy
from tests.servers.loopback import running_app

KEPT = 3


def _signed_in_by_header(app: Any) -> Any:
    """`app` with each request's person named by its `X-Person` header, where the gateway's
    sign-in (`runtime.signin`) puts the person its token names."""

    async def signed_in(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            person = dict(scope.get("headers") or ()).get(b"x-person")
            if person is not None:
                scope = {**scope, CALLER_SCOPE_KEY: Caller(person.decode())}
        await app(scope, receive, send)

    return signed_in


@asynccontextmanager
async def _person(url: str, name: str) -> AsyncIterator[Any]:
    """An SDK client of the gateway at `url`, signed in as `name`."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"X-Person": name})
    try:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client
    finally:
        await http.aclose()


async def _offered(url: str, name: str) -> set[str]:
    async with _person(url, name) as client:
        return {t.name for t in (await client.list_tools()).tools}


def _tools() -> tuple[_AppTool, _AppTool]:
    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    return hr, page


async def test_people_who_never_return_keep_no_replaced_policy_and_no_memory(
    tmp_path: Path,
) -> None:
    first = ChatRuntime(_policy(tmp_path / "first", "BLOCK", *_tools()))
    in_force = [first]
    gateway = McpGateway(lambda: in_force[0], VLLM_ID, kept_clients=KEPT)
    replaced = weakref.ref(first.policy.registry)
    with running_app(_signed_in_by_header(gateway.http_app("127.0.0.1")), lifespan=True) as app:
        url = app.url("/mcp")
        async with _person(url, "ann") as ann:
            held = await ann.call_tool("read_hr", {})
            assert not held.is_error, held
            assert "fetch_page" not in {t.name for t in (await ann.list_tools()).tools}
        for number in range(3 * KEPT):
            assert "fetch_page" in await _offered(url, f"person-{number}")
        assert len(gateway._clients) == KEPT, "only the most recently seen people are kept"

        in_force[0] = ChatRuntime(_policy(tmp_path / "second", "BLOCK", *_tools()))
        await first.aclose()
        del first
        assert "fetch_page" in await _offered(url, "someone-new")
        gc.collect()
        assert replaced() is None, "people who never came back still hold the replaced policy"

        assert "fetch_page" not in await _offered(url, "ann"), (
            "Ann, let go meanwhile, returns to her chat: what her result brought still holds"
        )
        assert "fetch_page" in await _offered(url, "person-0"), "a fresh view, the same offer"
        assert len(gateway._clients) == KEPT
    await in_force[0].aclose()


def test_kept_clients_below_one_is_refused(tmp_path: Path) -> None:
    runtime = ChatRuntime(_policy(tmp_path, "BLOCK", *_tools()))
    with pytest.raises(ValueError, match="kept_clients must be >= 1, got 0"):
        McpGateway(runtime, VLLM_ID, kept_clients=0)


async def test_a_person_waiting_for_an_approval_is_not_let_go(tmp_path: Path) -> None:
    """While Ann's call waits for her approval (asked over her session's back-channel), more
    people than are kept come by: her client stays, so what her approved call brought holds in
    the chat she returns to."""
    import httpx2
    import mcp_types as types
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from policy import load_policy
    from tests.e2e._kit import ORGANIZATION
    from tests.policy.test_plugins import write_plugin

    settings = (
        'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"\n'
        'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "read_hr" }\n'
    )
    rules = write_plugin(tmp_path / "rules", settings, PRIORITY="200")
    policy = load_policy(org=[ORGANIZATION, rules.parent], tools=_tools())
    assert not policy.errors, policy.errors
    runtime = ChatRuntime(policy)
    gateway = McpGateway(runtime, VLLM_ID, kept_clients=KEPT)
    with running_app(_signed_in_by_header(gateway.http_app("127.0.0.1")), lifespan=True) as app:
        url = app.url("/mcp")

        async def others_come_by_then_approve(context: Any, params: Any) -> types.ElicitResult:
            for number in range(3 * KEPT):
                assert "fetch_page" in await _offered(url, f"person-{number}")
            return types.ElicitResult(action="accept", content={"approve": True})

        http = httpx2.AsyncClient(headers={"X-Person": "ann"})
        try:
            async with Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                elicitation_callback=others_come_by_then_approve,
            ) as ann:
                held = await ann.call_tool("read_hr", {})
                assert not held.is_error, held
        finally:
            await http.aclose()
        for number in range(3 * KEPT):
            await _offered(url, f"later-{number}")
        assert "fetch_page" not in await _offered(url, "ann"), (
            "what Ann's approved call brought holds in the chat she returns to"
        )
    await runtime.aclose()
