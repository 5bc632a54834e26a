"""The provider key never shows in an error, a log line or an event, in any spelling, wherever the
host put it: the body of an HTTP error, a response header, an error event mid-stream, the text of
a retried failure."""

from __future__ import annotations

import json
import logging

import pytest

from runtime.adapters.chat_completions import ChatCompletionsAdapter
from runtime.providers import (
    OPENAI_CHAT_COMPLETIONS,
    ProviderAuthError,
    ProviderError,
    ProviderProtocolError,
    ProviderUnavailable,
)
from tests.security._spellings import leaked_spellings, spellings_of
from tests.servers.provider_server import ProviderServer, Reply
from tests.servers.provider_testkit import client_for, conversation, run_round

KEY = "sk-proj-Ab/9+x=Z_~q.7!Qw"
SPELLINGS = spellings_of(KEY)


async def _fail(server: ProviderServer) -> tuple[ProviderError, list[object]]:
    client = client_for(OPENAI_CHAT_COMPLETIONS, server.base_url, api_key=KEY)
    events: list[object] = []
    try:
        with pytest.raises(ProviderError) as caught:
            async for event in ChatCompletionsAdapter(client, conversation(), "m").execute_round(
                None, True
            ):
                events.append(event)
    finally:
        await client.aclose()
    return caught.value, events


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
async def test_a_key_in_a_response_header_never_shows(
    server: ProviderServer, spelling: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    header = f"text/html; key={SPELLINGS[spelling]}"
    server.queue(Reply(body="<html>nope</html>", content_type=header))
    error, events = await _fail(server)
    assert isinstance(error, ProviderProtocolError)
    assert "instead of a server-sent event stream" in str(error)
    shown = f"{error} {error.args!r} {events!r} {_logged(caplog)}"
    assert leaked_spellings(KEY, shown) == [], shown


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
async def test_a_key_in_an_error_body_never_shows(server: ProviderServer, spelling: str) -> None:
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {SPELLINGS[spelling]}"}})
    server.queue(Reply(status=401, body=body))
    error, _ = await _fail(server)
    assert isinstance(error, ProviderAuthError) and "Incorrect API key provided" in str(error)
    assert leaked_spellings(KEY, str(error)) == []


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
async def test_a_key_in_an_error_event_mid_stream_never_shows(
    server: ProviderServer, spelling: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    error_event = {"error": {"message": f"key {SPELLINGS[spelling]} was revoked"}}
    server.queue(Reply([{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}, error_event]))
    error, events = await _fail(server)
    assert isinstance(error, ProviderUnavailable) and "was revoked" in str(error)
    assert leaked_spellings(KEY, f"{error} {events!r} {_logged(caplog)}") == []


async def test_a_retried_failure_logs_no_key(
    server: ProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echoed = " ".join(SPELLINGS.values())
    body = json.dumps({"error": {"message": f"overloaded for {echoed}"[:250]}})
    server.queue(*[Reply(status=503, body=body)] * 3)
    error, _ = await _fail(server)
    assert isinstance(error, ProviderUnavailable) and len(server.requests) == 3
    assert "Retrying" in _logged(caplog)
    assert leaked_spellings(KEY, f"{error} {_logged(caplog)}") == []


async def test_a_base_url_with_user_info_never_shows_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = client_for(OPENAI_CHAT_COMPLETIONS, "http://admin:PaSsWoRd@127.0.0.1:9/v1")
    try:
        with pytest.raises(ProviderUnavailable) as caught:
            await run_round(ChatCompletionsAdapter(client, conversation(), "m"))
    finally:
        await client.aclose()
    shown = f"{caught.value} {client!r} {_logged(caplog)}"
    assert "PaSsWoRd" not in shown and "admin" not in shown
