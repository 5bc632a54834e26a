"""Call limits across instances: two `policy mcp serve` processes on one PostgreSQL database
(`$TOOLPOLICY_CHAT_DB`) count one person's calls together, so the limit holds whichever gateway a
call reaches; the refused call is BLOCKED in the decision log."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.mcp_tools.test_mcp import state, write_org
from tests.mcp_tools.test_mcp_gateway import GATEWAY_ID, _fingerprint, _gateway, running_gateway
from tests.servers.postgres import running_postgres, server_binaries

__all__ = ["state"]

LIMIT = (
    'CONFIG["SETTINGS"]["DataGateway.CallLimits"] = { ["tickets__search_tickets"] = "3/hour" }\n'
)


@pytest.mark.skipif(
    server_binaries() is None and not os.environ.get("CI"),
    reason="PostgreSQL's server binaries are not installed here (apt-get install postgresql); "
    "CI installs them and always runs these tests",
)
async def test_two_gateways_on_one_postgresql_count_one_persons_calls_together(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtime.mcp import McpSessions

    draft = write_org(tmp_path / "draft", state)
    pin = _fingerprint(draft, tmp_path / "state", "search_tickets")
    org = write_org(
        tmp_path / "org",
        state,
        extra=f'  ["Pins"] = {{ ["search_tickets"] = "{pin}" }},\n',
        settings=LIMIT,
    )
    logs = [tmp_path / "first.jsonl", tmp_path / "second.jsonl"]
    with running_postgres() as dsn:
        monkeypatch.setenv("TOOLPOLICY_CHAT_DB", dsn)
        with (
            running_gateway("--org", org, "--provider", "OpenAI", "--decision-log", logs[0]) as (
                first,
                _,
            ),
            running_gateway("--org", org, "--provider", "OpenAI", "--decision-log", logs[1]) as (
                second,
                _,
            ),
        ):
            async with (
                McpSessions([_gateway(first)]) as one,
                McpSessions([_gateway(second)]) as two,
            ):
                answers = []
                for client in (one, two, one, two):
                    answers.append(
                        await client.call_tool(
                            GATEWAY_ID, "tickets__search_tickets", {"query": "printer"}
                        )
                    )
    assert [a.is_error for a in answers] == [False, False, False, True], [
        a.content[0].text
        for a in answers  # type: ignore[union-attr]
    ]
    refused = answers[-1].content[0].text  # type: ignore[union-attr]
    assert "limit of 3 calls per hour" in refused and "The next call is possible in" in refused
    records = [json.loads(line) for log in logs for line in log.read_text().splitlines()]
    statuses = sorted(c["status"] for r in records for c in r.get("calls", ()))
    assert statuses == ["BLOCKED", "SUCCESS", "SUCCESS", "SUCCESS"]
