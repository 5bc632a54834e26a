"""Hostile clients of `policy mcp serve --transport http`, written as raw HTTP requests over
127.0.0.1: a client that invents or changes its `Mcp-Session-Id`, or opens a new session, never
loosens what an earlier result demanded of the gateway's chat."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_types import CLIENT_CAPABILITIES_META_KEY, PROTOCOL_VERSION_META_KEY

from tests.mcp_tools.test_mcp import calls_received, write_org
from tests.mcp_tools.test_mcp_gateway import CONFIDENTIAL_TOOLS, running_gateway, state

__all__ = ["state"]

MODERN = "2026-07-28"
"""The stateless protocol version: every request stands alone, no handshake, no session."""
HANDSHAKE = "2025-06-18"
"""A protocol version with an initialize handshake and server-issued session ids."""
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a request, sent as JSON or as one server-sent event."""
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    for line in response.text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line.removeprefix("data:"))
            if "result" in message or "error" in message:
                return dict(message)
    raise AssertionError(f"no answer in {response.text!r}")


def _stateless_request(
    url: str, method: str, params: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    """A request as a 2026-07-28 client sends it, with the attacker's extra `headers`."""
    meta = {PROTOCOL_VERSION_META_KEY: MODERN, CLIENT_CAPABILITIES_META_KEY: {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    sent = {**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if "name" in params:
        sent["Mcp-Name"] = params["name"]
    return httpx.post(url, json=body, headers={**sent, **headers}, timeout=30)


def _stateless_call(
    url: str, name: str, arguments: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    answer = _answer(_stateless_request(url, "tools/call", params, headers))
    return dict(answer["result"])


def _new_session_call(url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """tools/call in a session opened for it (initialize, initialized, the call)."""
    headers = {**ACCEPT, "MCP-Protocol-Version": HANDSHAKE}
    with httpx.Client(headers=headers, timeout=30) as client:
        opened = client.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": HANDSHAKE,
                    "capabilities": {},
                    "clientInfo": {"name": "fresh", "version": "1"},
                },
            },
        )
        _answer(opened)
        client.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(url, json=initialized).status_code == 202
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return dict(_answer(client.post(url, json=call))["result"])


def _text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


def test_no_session_id_and_no_new_session_resets_what_a_result_demanded(
    tmp_path: Path, state: Path
) -> None:
    org = write_org(tmp_path / "org", state)
    tools = tmp_path / "confidential.py"
    tools.write_text(CONFIDENTIAL_TOOLS, encoding="utf-8")
    with running_gateway("--org", org, "--provider", "OpenAI", "--tools-file", tools) as (url, _):
        mine = {"Mcp-Session-Id": "attacker"}
        before = _stateless_call(url, "tickets__search_tickets", {"q": "a"}, mine)
        assert not before["isError"], _text(before)
        notes = _stateless_call(url, "confidential_notes", {}, mine)
        assert not notes["isError"], "the result demands a HIGH provider from now on"
        for headers in (
            mine,
            {"Mcp-Session-Id": uuid.uuid4().hex},  # a fresh id of the attacker's choosing
            {"Mcp-Session-Id": "another-client"},  # somebody else's id
            {},
        ):
            after = _stateless_call(url, "tickets__search_tickets", {"q": "b"}, headers)
            assert after["isError"], headers
            assert "HIGH" in _text(after), _text(after)
        reopened = _new_session_call(url, "tickets__search_tickets", {"q": "c"})
        assert reopened["isError"], "a new session is no new chat"
        assert "HIGH" in _text(reopened)
    assert [c["arguments"] for c in calls_received(state)] == [{"q": "a"}]


@pytest.mark.parametrize("host", ["LOCALHOST", "127.0.0.2"])
def test_a_gateway_on_any_loopback_spelling_answers_no_rebound_name(
    tmp_path: Path, state: Path, host: str
) -> None:
    """No token is needed on loopback, so a page whose DNS name rebinds to this machine must be
    refused by the name it addressed (and by its Origin), whichever way loopback was written."""
    org = write_org(tmp_path / "org", state)
    with running_gateway("--org", org, "--provider", "OpenAI", "--host", host) as (url, _):
        port = httpx.URL(url).port
        listed = _answer(_stateless_request(url, "tools/list", {}, {}))
        assert "tickets__search_tickets" in {t["name"] for t in listed["result"]["tools"]}
        call = {"name": "tickets__search_tickets", "arguments": {"q": "x"}}
        rebound = {"Host": f"attacker.example:{port}"}
        for headers, status in (
            (rebound, 421),
            ({**rebound, "Origin": f"http://attacker.example:{port}"}, 421),
            ({"Origin": f"http://attacker.example:{port}"}, 403),
            ({"Origin": "null"}, 403),
        ):
            for method, params in (("tools/list", {}), ("tools/call", call)):
                refused = _stateless_request(url, method, params, headers)
                assert refused.status_code == status, (headers, method, refused.text)
    assert calls_received(state) == [], "no refused request reached the server"
