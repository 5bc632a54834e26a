"""Call limits per person and tool (`DataGateway.CallLimits`): a call over its limit is refused
before it runs (BLOCKED), telling the model when the next one is possible; each person has
their own count; a malformed limit lets no call run. Real Lua, the example calculator, the
loopback provider, counts in a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from policy import Caller, Policy, load_policy
from runtime import Chat, ChatRuntime, ToolCallFinished, TraceStatus
from runtime.chat import MemoryChatStore, SqliteChatStore
from runtime.decision_log import JsonLinesSink
from runtime.tools import builtin_executable_tools
from tests.e2e._kit import ORGANIZATION, VLLM_ID, client, load_example_tools, organization_provider
from tests.e2e.test_end_to_end import QUESTION
from tests.servers.config_server import plugin_text
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply

LIMITS_ID = "7e4a8f0b-9c53-4d6e-8f1a-0b9c8d7e6f54"
EXPRESSION = json.dumps({"expression": "6*7"})
ALICE = Caller("alice@example.org")
BOB = Caller("bob@example.org")


def limits_policy(tmp_path: Path, limits: str) -> Policy:
    folder = tmp_path / "limits" / "limits"
    folder.mkdir(parents=True)
    body = f'CONFIG["SETTINGS"]["DataGateway.CallLimits"] = {limits}\n'
    (folder / "plugin.lua").write_text(plugin_text(LIMITS_ID, body, name="Limits"))
    tools = [*builtin_executable_tools(), *load_example_tools().create_tools()]
    return load_policy(org=[ORGANIZATION, folder.parent], tools=tools)


async def calls(runtime: ChatRuntime, chat: Chat, server: ProviderServer, count: int) -> list[Any]:
    """One turn in which the model calls the calculator `count` times, one call per round."""
    server.queue(
        *(Reply([chat_call(0, f"call_{n}", "calculator", EXPRESSION)]) for n in range(count)),
        Reply(chat_text("Done.")),
    )
    provider = organization_provider(runtime.policy, VLLM_ID, server)
    finished = []
    async with client(provider) as provider_client:
        async for event in runtime.respond(
            chat, provider, [QUESTION], selected_tool_ids=["calculator"], client=provider_client
        ):
            if isinstance(event, ToolCallFinished):
                finished.append(event.trace)
    return finished


async def test_a_call_over_the_persons_limit_is_refused_saying_when_the_next_is_possible(
    tmp_path: Path, server: ProviderServer
) -> None:
    policy = limits_policy(tmp_path, '{ ["calculator"] = "2/hour", ["*"] = "600/hour" }')
    assert not policy.errors, policy.errors
    counts = SqliteChatStore(tmp_path / "counts.sqlite3")
    log = tmp_path / "decisions.jsonl"
    async with ChatRuntime(policy, call_counts=counts, decision_log=JsonLinesSink(log)) as runtime:
        alice = runtime.for_caller(ALICE)
        traces = await calls(alice, Chat.open("c", MemoryChatStore(), caller=ALICE), server, 3)
        assert [t.status for t in traces] == [
            TraceStatus.SUCCESS,
            TraceStatus.SUCCESS,
            TraceStatus.BLOCKED,
        ]
        refused = traces[2].status_message
        assert "limit of 2 calls per hour" in refused and "The next call is possible in" in refused
        assert 'DataGateway.CallLimits["calculator"]' in refused and "limits/plugin.lua:" in refused
        sent_back = json.loads(server.requests[-1].body)["messages"][-1]["content"]
        assert "The next call is possible in" in sent_back, "the model reads when to call again"

        bob = runtime.for_caller(BOB)
        traces = await calls(bob, Chat.open("c", MemoryChatStore(), caller=BOB), server, 1)
        assert [t.status for t in traces] == [TraceStatus.SUCCESS], "Bob has his own count"

    again = ChatRuntime(policy, call_counts=SqliteChatStore(tmp_path / "counts.sqlite3"))
    async with again:
        alice = again.for_caller(ALICE)
        traces = await calls(alice, Chat.open("c", MemoryChatStore(), caller=ALICE), server, 1)
        assert [t.status for t in traces] == [TraceStatus.BLOCKED], "the count outlives a restart"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    statuses = [c["status"] for r in records for c in r.get("calls", ())]
    assert statuses.count("BLOCKED") == 1 and statuses.count("SUCCESS") == 3


async def test_a_malformed_limit_is_an_error_and_lets_no_call_run(
    tmp_path: Path, server: ProviderServer
) -> None:
    policy = limits_policy(tmp_path, '{ ["calculator"] = "five an hour" }')
    (error,) = policy.errors
    assert "DataGateway.CallLimits" in error.message and '"five an hour"' in error.message
    assert 'like "5/hour"' in error.message and "read as 0 calls" in error.message
    assert error.location is not None and error.location.file.endswith("limits/plugin.lua")
    assert error.location.line > 0
    async with ChatRuntime(policy, call_counts=MemoryChatStore()) as runtime:
        traces = await calls(runtime, Chat.open("c", MemoryChatStore()), server, 1)
    assert [t.status for t in traces] == [TraceStatus.BLOCKED]
    assert "no call of it is allowed" in traces[0].status_message


def test_policy_check_names_a_limit_for_a_tool_that_does_not_exist(tmp_path: Path) -> None:
    from policy.lint import check_findings

    policy = limits_policy(tmp_path, '{ ["calculater"] = "5/hour" }')
    (finding,) = [f for f in check_findings(policy) if f.code == "unknown-tool-id"]
    assert "calculater" in finding.message and '"calculator"' in finding.message
    assert finding.severity.value == "error"
