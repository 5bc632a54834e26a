"""A call whose tool needs a person's approval never runs before it is approved: the turn stops
with the pending call, is kept in the chat store, and is resumed — from another `ChatRuntime`
on the same store — with the answer. An answer binds to the call's arguments, the policy
revision and an expiry; a denial reaches the model as a BLOCKED result."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import runtime.approvals
from policy import Policy, load_policy
from policy.decision_record import decision_log_schema
from runtime import (
    Approval,
    ApprovalError,
    Chat,
    ChatRuntime,
    FinalAnswer,
    StopReason,
    ToolCallFinished,
    ToolCallStarted,
    TraceStatus,
)
from runtime.chat import ChatStore, MemoryChatStore, SqliteChatStore
from runtime.decision_log import JsonLinesSink
from runtime.tools import builtin_executable_tools
from tests.e2e._kit import (
    ORGANIZATION,
    ROOT,
    VLLM_ID,
    client,
    load_example_tools,
    organization_provider,
)
from tests.e2e.test_end_to_end import QUESTION
from tests.servers.cli_runner import run_policy
from tests.servers.config_server import plugin_text
from tests.servers.postgres import running_postgres, server_binaries
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply, running_provider_server

EXPRESSION = json.dumps({"expression": "6*7"})
APPROVALS = 'CONFIG["SETTINGS"]["DataTools.RequireApprovalToolIds"] = { "calc*" }'
PLUGIN_ID = "3a0c4b8e-9d1f-4e2a-8b7c-5d6e7f8091a2"


def _policy(tmp_path: Path, settings: str = APPROVALS) -> Policy:
    folder = tmp_path / f"org-{abs(hash(settings))}" / "approvals"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.lua").write_text(plugin_text(PLUGIN_ID, settings, name="Approvals"))
    tools = [*builtin_executable_tools(), *load_example_tools().create_tools()]
    loaded = load_policy(org=[ORGANIZATION, folder.parent], tools=tools)
    assert not loaded.errors, loaded.errors
    return loaded


@pytest.fixture(scope="module")
def server() -> Iterator[ProviderServer]:
    with running_provider_server() as running:
        yield running


@pytest.fixture(autouse=True)
def _empty(server: ProviderServer) -> None:
    server.replies.clear()
    server.requests.clear()


async def _respond(
    policy: Policy,
    chat: Chat,
    server: ProviderServer,
    approvals: dict[str, Approval] | None = None,
    **options: Any,
) -> list[Any]:
    provider = organization_provider(policy, VLLM_ID, server)
    events: list[Any] = []
    async with client(provider) as provider_client, ChatRuntime(policy, **options) as assistant:
        async for event in assistant.respond(
            chat,
            provider,
            [QUESTION],
            selected_tool_ids=["calculator"],
            client=provider_client,
            approvals=approvals,
        ):
            events.append(event)
    return events


def _final(events: list[Any]) -> FinalAnswer:
    assert isinstance(events[-1], FinalAnswer)
    return events[-1]


async def _asked(policy: Policy, chat: Chat, server: ProviderServer) -> FinalAnswer:
    server.queue(Reply([chat_call(0, "call_1", "calculator", EXPRESSION)]))
    events = await _respond(policy, chat, server)
    assert not [e for e in events if isinstance(e, ToolCallStarted | ToolCallFinished)], (
        "nothing runs before it is approved"
    )
    final = _final(events)
    assert final.stop_reason is StopReason.APPROVAL_REQUIRED
    return final


def _store_kinds(tmp_path: Path) -> dict[str, ChatStore]:
    return {"memory": MemoryChatStore(), "sqlite": SqliteChatStore(tmp_path / "chats.sqlite3")}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_an_approved_call_runs_when_another_runtime_resumes_the_turn(
    tmp_path: Path, server: ProviderServer, kind: str
) -> None:
    policy = _policy(tmp_path)
    store = _store_kinds(tmp_path)[kind]
    final = await _asked(policy, Chat.open("c1", store), server)
    (pending,) = final.pending_approvals
    assert (pending.call_id, pending.tool_id, dict(pending.arguments)) == (
        "call_1",
        "calculator",
        {"expression": "6*7"},
    )
    assert "DataTools.RequireApprovalToolIds" in pending.reason and "calc*" in pending.reason
    assert pending.revision == policy.configuration.revision

    server.queue(Reply(chat_text("It is 42.")))
    events = await _respond(
        policy, Chat.open("c1", store), server, {"call_1": Approval(True, by="alice")}
    )
    [finished] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.trace.status is TraceStatus.SUCCESS
    assert finished.outcome is not None and '"result":42' in finished.outcome.content
    assert _final(events).text == "It is 42."
    messages = server.bodies[-1]["messages"]
    assert messages[-2]["tool_calls"][0]["id"] == "call_1", "the same turn goes on"
    assert messages[-1] == {
        "role": "tool",
        "content": finished.outcome.content,
        "tool_call_id": "call_1",
    }

    with pytest.raises(ApprovalError, match="No call waits for approval in chat 'c1'"):
        await _respond(policy, Chat.open("c1", store), server, {"call_1": Approval(True)})


async def test_a_denial_reaches_the_model_as_a_blocked_result_with_the_note(
    tmp_path: Path, server: ProviderServer
) -> None:
    policy = _policy(tmp_path)
    store = MemoryChatStore()
    await _asked(policy, Chat.open("c2", store), server)
    server.queue(Reply(chat_text("Understood.")))
    events = await _respond(
        policy, Chat.open("c2", store), server, {"call_1": Approval(False, "bob", "not today")}
    )
    [finished] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert finished.trace.status is TraceStatus.BLOCKED and not finished.trace.was_executed
    expected = "The user did not approve this call. Note from the user: not today"
    assert server.bodies[-1]["messages"][-1]["content"] == expected


async def test_an_answer_for_other_arguments_is_not_taken_and_the_call_is_asked_again(
    tmp_path: Path, server: ProviderServer
) -> None:
    policy = _policy(tmp_path)
    store = MemoryChatStore()
    await _asked(policy, Chat.open("c3", store), server)
    other = Approval(True, "alice", arguments_sha256="0" * 64)
    events = await _respond(policy, Chat.open("c3", store), server, {"call_1": other})
    assert not [e for e in events if isinstance(e, ToolCallFinished)]
    (again,) = _final(events).pending_approvals
    assert "asked again: its arguments are not the ones" in again.reason
    assert len(server.requests) == 1, "a resumed turn asks the provider nothing before the call"

    server.queue(Reply(chat_text("42.")))
    bound = Approval(True, "alice", arguments_sha256=again.arguments_sha256)
    events = await _respond(policy, Chat.open("c3", store), server, {"call_1": bound})
    assert [e.trace.status for e in events if isinstance(e, ToolCallFinished)] == [
        TraceStatus.SUCCESS
    ]


async def test_an_expired_answer_is_asked_again(
    tmp_path: Path, server: ProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = _policy(tmp_path)
    store = MemoryChatStore()
    final = await _asked(policy, Chat.open("c4", store), server)
    expired = final.pending_approvals[0].expires_at + 1
    monkeypatch.setattr(runtime.approvals, "now", lambda: expired)
    events = await _respond(policy, Chat.open("c4", store), server, {"call_1": Approval(True)})
    assert not [e for e in events if isinstance(e, ToolCallFinished)]
    (again,) = _final(events).pending_approvals
    assert "asked again: the answer came after the approval expired" in again.reason


async def test_an_answer_given_under_another_policy_revision_is_asked_again(
    tmp_path: Path, server: ProviderServer
) -> None:
    before = _policy(tmp_path)
    after = _policy(tmp_path, APPROVALS + '\nCONFIG["SETTINGS"]["DataTools.EnableTools"] = true')
    assert before.configuration.revision != after.configuration.revision
    store = MemoryChatStore()
    await _asked(before, Chat.open("c5", store), server)
    events = await _respond(after, Chat.open("c5", store), server, {"call_1": Approval(True)})
    assert not [e for e in events if isinstance(e, ToolCallFinished)]
    (again,) = _final(events).pending_approvals
    assert "asked again: the policy changed since it was asked" in again.reason
    assert again.revision == after.configuration.revision


async def test_answers_for_calls_that_do_not_wait_are_refused_and_the_turn_stays(
    tmp_path: Path, server: ProviderServer
) -> None:
    policy = _policy(tmp_path)
    store = MemoryChatStore()
    await _asked(policy, Chat.open("c6", store), server)
    with pytest.raises(ApprovalError, match=r"No call call_9 waits .* waiting are: call_1"):
        await _respond(policy, Chat.open("c6", store), server, {"call_9": Approval(True)})
    server.queue(Reply(chat_text("42.")))
    events = await _respond(policy, Chat.open("c6", store), server, {"call_1": Approval(True)})
    assert [e.trace.status for e in events if isinstance(e, ToolCallFinished)] == [
        TraceStatus.SUCCESS
    ]


async def test_without_a_rule_calls_run_at_once(tmp_path: Path, server: ProviderServer) -> None:
    policy = _policy(tmp_path, settings="")
    server.queue(Reply([chat_call(0, "call_1", "calculator", EXPRESSION)]), Reply(chat_text("42.")))
    events = await _respond(policy, Chat.open("c7", MemoryChatStore()), server)
    assert _final(events).stop_reason is StopReason.COMPLETED
    assert [e.trace.status for e in events if isinstance(e, ToolCallFinished)] == [
        TraceStatus.SUCCESS
    ]


@pytest.mark.skipif(
    server_binaries() is None and not os.environ.get("CI"),
    reason="PostgreSQL's server binaries are not installed here (apt-get install postgresql); "
    "CI installs them and always runs these tests",
)
async def test_pending_approvals_are_resumed_by_a_second_runtime_on_the_same_postgresql_store(
    tmp_path: Path, server: ProviderServer
) -> None:
    from runtime.chat_postgres import PostgresChatStore

    policy = _policy(tmp_path)
    with running_postgres() as dsn:
        first, second = PostgresChatStore(dsn), PostgresChatStore(dsn)
        try:
            await _asked(policy, Chat.open("pg-chat", first), server)
            server.queue(Reply(chat_text("It is 42.")))
            events = await _respond(
                policy, Chat.open("pg-chat", second), server, {"call_1": Approval(True, "alice")}
            )
            [finished] = [e for e in events if isinstance(e, ToolCallFinished)]
            assert finished.trace.status is TraceStatus.SUCCESS
            with pytest.raises(ApprovalError):
                await _respond(
                    policy, Chat.open("pg-chat", first), server, {"call_1": Approval(True)}
                )
        finally:
            first.close()
            second.close()


async def test_the_decision_log_records_each_approval_asked_and_answered_and_log_tools_read_it(
    tmp_path: Path, server: ProviderServer
) -> None:
    policy = _policy(tmp_path)
    store = MemoryChatStore()
    log = tmp_path / "decisions.jsonl"
    server.queue(Reply([chat_call(0, "call_1", "calculator", EXPRESSION)]))
    await _respond(policy, Chat.open("c8", store), server, decision_log=JsonLinesSink(log))
    server.queue(Reply(chat_text("42.")))
    await _respond(
        policy,
        Chat.open("c8", store),
        server,
        {"call_1": Approval(True, "alice", "fine by me")},
        decision_log=JsonLinesSink(log),
    )
    asked, answered = [json.loads(line) for line in log.read_text().splitlines()]
    for record in (asked, answered):
        jsonschema.validate(record, decision_log_schema())
    assert asked["outcome"]["stop_reason"] == "approval_required" and asked["calls"] == []
    [question] = asked["approvals"]
    assert (question["event"], question["call_id"], question["tool_id"]) == (
        "asked",
        "call_1",
        "calculator",
    )
    assert question["arguments"] == {"expression": "6*7"} and "calc*" in question["reason"]
    [answer] = answered["approvals"]
    assert (answer["event"], answer["by"], answer["call_id"]) == ("approved", "alice", "call_1")
    assert answer["at"] >= question["at"]
    assert "fine by me" not in log.read_text(), "the person's note is never logged"
    assert [c["status"] for c in answered["calls"]] == ["SUCCESS"]

    summary = run_policy(["log", "summary", str(log), "--format", "json"], cwd=ROOT)
    assert summary.returncode == 0, summary.stderr
    assert "approval asked" in summary.stdout and "calculator by alice" in summary.stdout

    without = tmp_path / "without"
    without.mkdir()
    (without / "plugin.lua").write_text(plugin_text(PLUGIN_ID, "", name="Approvals"))
    replayed = run_policy(
        ["replay", str(log), "--org", str(ORGANIZATION), "--org", str(without), "-f", "json"],
        cwd=ROOT,
    )
    assert replayed.returncode == 0, replayed.stderr
    [change] = json.loads(replayed.stdout)["approvals_changed"]
    assert (change["call_id"], change["before"], change["after"]) == (
        "call_1",
        "asked for approval",
        "would run without approval",
    )
