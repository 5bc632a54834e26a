"""Locked `ENC:v1:` keys, from plugin data to a tool call: never printed, traced, logged or returned.

The chain as an app runs it: resolution decrypts the locked Tavily and Staan keys, the executor
hands them to web_search, the search service fails, and the failure travels to the model, the
trace and the log. The keys must appear in none of them, nor in any printed settings object.
"""

from __future__ import annotations

import json
import logging
import socket

import pytest

from policy import secrets
from policy.builtin import BUILTIN_DEFINITIONS, WEB_SEARCH
from policy.configuration import ManagedSetting, PolicyConfiguration, UserSettings
from policy.provenance import Origin, SourceLocation
from policy.resolve import resolve_tool_settings
from runtime.execution import ToolServices
from runtime.executor import ToolExecutor, TraceStatus
from runtime.tools.web_search import SearchEndpoints, create_tool
from tests.security._chat import executor_call

TAVILY_KEY = "tvly-live-Zx81kQ"
STAAN_KEY = "staan-9c1d2e3f"
ORG = Origin("org", "Organization", SourceLocation("org/plugin.lua", 3))


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_locked_keys_never_leave_resolution_and_execution(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret = secrets.generate_secret()
    monkeypatch.setenv(secrets.ENV_SECRET, secret)
    locked = {
        "web_search.tavily.apiKey": secrets.encrypt(TAVILY_KEY, secret),
        "web_search.staan.apiKey": secrets.encrypt(STAAN_KEY, secret),
        "web_search.searxng.baseUrl": f"http://127.0.0.1:{_closed_port()}",
    }
    configuration = PolicyConfiguration(
        settings={
            "DataTools.LockedToolSettings": ManagedSetting(
                "DataTools.LockedToolSettings", locked, True, ORG
            )
        }
    )
    caplog.set_level(logging.DEBUG)
    resolved = resolve_tool_settings(
        BUILTIN_DEFINITIONS[WEB_SEARCH], configuration, UserSettings(), lambda t, f: None
    )
    values = resolved.values_for_tool()
    assert values["tavily.apiKey"] == TAVILY_KEY and values["staan.apiKey"] == STAAN_KEY

    nowhere = SearchEndpoints(  # loopback only: the keys must not travel to the real services
        tavily=f"http://127.0.0.1:{_closed_port()}/search",
        staan=f"http://127.0.0.1:{_closed_port()}/v2/search/web",
    )
    executor = ToolExecutor(
        settings_for=lambda _tool_id: values, services=ToolServices(search_endpoints=nowhere)
    )
    outcome = await executor_call(executor, create_tool(), {"query": "x"})
    assert outcome.trace.status is TraceStatus.ERROR
    shown = "\n".join(
        [
            repr(resolved),
            str(resolved.fields),
            *(str(field.evidence()) for field in resolved.fields.values()),
            outcome.content,
            outcome.trace.status_message,
            outcome.trace.result,
            json.dumps(outcome.trace.json_result),
            *(record.getMessage() for record in caplog.records),
        ]
    )
    assert TAVILY_KEY not in shown and STAAN_KEY not in shown
    assert outcome.content.startswith(
        "Tool execution failed: None of the configured search services could be asked."
    )
    for service in ("SearXNG", "Staan", "Tavily"):
        assert f"{service} could not be asked" in outcome.content
