"""A model may call a tool the request did not offer, or one nobody registered: the call is
refused, and what it shows (the started event, the BLOCKED trace, the decision log) masks its
arguments by the definition of the tool so named; for an unknown tool every argument is masked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from policy import Policy
from policy.decision_record import decision_log_schema
from policy.redaction import MASK
from runtime import ChatRuntime, FinalAnswer, ToolCallFinished, ToolCallStarted, TraceStatus
from runtime.chat import Chat
from runtime.decision_log import JsonLinesSink
from tests.e2e._kit import VLLM_ID, client, organization_provider
from tests.e2e.test_end_to_end import QUESTION
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply

QUERY = "salary list of Bob"


async def _events(
    policy: Policy, chat: Chat, server: ProviderServer, name: str, arguments: str, log: Path
) -> list[Any]:
    server.queue(Reply([chat_call(0, "call_1", name, arguments)]), Reply(chat_text("Sorry.")))
    provider = organization_provider(policy, VLLM_ID, server)
    events: list[Any] = []
    async with (
        client(provider) as provider_client,
        ChatRuntime(policy, decision_log=JsonLinesSink(log)) as runtime,
    ):
        async for event in runtime.respond(
            chat, provider, [QUESTION], selected_tool_ids=["calculator"], client=provider_client
        ):
            events.append(event)
    return events


def _shown_text(events: list[Any]) -> str:
    """Every event as an app would show or keep it; the final answer's `request_texts` are the
    conversation as sent to the provider (the model's own turns), not a trace."""
    return repr([e if not isinstance(e, FinalAnswer) else e.text for e in events])


def _shown(events: list[Any]) -> tuple[dict[str, str], dict[str, str], ToolCallFinished]:
    [started] = [e for e in events if isinstance(e, ToolCallStarted)]
    [finished] = [e for e in events if isinstance(e, ToolCallFinished)]
    return started.arguments, dict(finished.trace.arguments), finished


async def test_a_tool_not_offered_is_refused_with_its_sensitive_arguments_masked(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    assert policy.registry.tool_named("search_confluence") is not None
    log = tmp_path / "decisions.jsonl"
    arguments = json.dumps({"query": QUERY, "limit": 3})
    events = await _events(policy, chat, server, "search_confluence", arguments, log)
    started, traced, finished = _shown(events)
    assert started == traced == {"query": MASK, "limit": "3"}
    assert finished.trace.status is TraceStatus.BLOCKED and not finished.trace.was_executed
    assert QUERY not in _shown_text(events) and QUERY not in log.read_text()
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    jsonschema.validate(record, decision_log_schema())
    assert [(c["tool_id"], c["status"], c["arguments"]) for c in record["calls"]] == [
        ("search_confluence", "BLOCKED", {"query": MASK, "limit": "3"})
    ]
    assert record["calls"][0]["result_chars"] > 0 and record["calls"][0]["sources"] == []
    assert QUERY in server.bodies[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"], (
        "the model keeps what it wrote"
    )


async def test_every_argument_of_an_unknown_tool_is_masked(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    log = tmp_path / "decisions.jsonl"
    arguments = json.dumps({"token": "tok-secret-42", "nested": {"password": "pw-secret-42"}})
    events = await _events(policy, chat, server, "export_all_mail", arguments, log)
    started, traced, finished = _shown(events)
    assert started == traced == {"token": MASK, "nested": MASK}
    assert finished.trace.status is TraceStatus.BLOCKED
    for secret in ("tok-secret-42", "pw-secret-42"):
        assert secret not in _shown_text(events) and secret not in log.read_text()
