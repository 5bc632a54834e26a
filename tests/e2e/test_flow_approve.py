"""`DataTools.FlowRule = "APPROVE"` through a real `respond`: a tool in conflict stays offered and
each of its calls waits for a person's approval; every call is checked again before it runs, so
a result earlier in the same response can make a later call wait."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policy import Effect
from runtime import Approval, Chat, ChatMessage, ChatRuntime, FinalAnswer, Role, StopReason
from runtime.executor import TraceStatus
from runtime.loop import ToolCallFinished
from tests.e2e._kit import VLLM_ID, client, organization_provider
from tests.e2e.test_flow_rule import _AppTool, _policy
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply


async def _respond(
    policy: Any, chat: Chat, server: ProviderServer, approvals: dict[str, Approval] | None = None
) -> list[Any]:
    vllm = organization_provider(policy, VLLM_ID, server)
    events: list[Any] = []
    async with client(vllm) as provider_client, ChatRuntime(policy) as runtime:
        async for event in runtime.respond(
            chat,
            vllm,
            [ChatMessage(Role.USER, "Go.")],
            selected_tool_ids=["read_hr", "fetch_page"],
            client=provider_client,
            approvals=approvals,
        ):
            events.append(event)
    return events


async def test_under_approve_the_second_call_waits_once_the_first_result_brings_the_conflict(
    chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    policy = _policy(tmp_path, "APPROVE", hr, page)
    server.queue(
        Reply(
            [
                chat_call(0, "call_hr", "read_hr", "{}"),
                chat_call(1, "call_page", "fetch_page", "{}"),
            ]
        )
    )

    events = await _respond(policy, chat, server)

    assert [e.trace.status for e in events if isinstance(e, ToolCallFinished)] == [
        TraceStatus.SUCCESS
    ]
    final = events[-1]
    assert isinstance(final, FinalAnswer) and final.stop_reason is StopReason.APPROVAL_REQUIRED
    (pending,) = final.pending_approvals
    assert (pending.call_id, pending.tool_id) == ("call_page", "fetch_page")
    assert 'DataTools.FlowRule "APPROVE"' in pending.reason
    assert "PRIVATE_DATA from read_hr" in pending.reason
    assert page.runs == 0 and hr.runs == 1

    server.queue(Reply(chat_text("Done.")))
    resumed = await _respond(policy, chat, server, {"call_page": Approval(True, "alice")})

    assert [e.trace.status for e in resumed if isinstance(e, ToolCallFinished)] == [
        TraceStatus.SUCCESS
    ]
    assert page.runs == 1 and hr.runs == 1, "the first call is not run again"
    assert chat.flow_holdings.effects == {Effect.PRIVATE_DATA, Effect.UNTRUSTED_CONTENT}


async def test_under_approve_a_tool_not_in_conflict_runs_at_once(
    chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    policy = _policy(tmp_path, "APPROVE", hr, page)
    server.queue(Reply([chat_call(0, "call_hr", "read_hr", "{}")]), Reply(chat_text("Done.")))

    events = await _respond(policy, chat, server)

    assert events[-1].stop_reason is StopReason.COMPLETED and hr.runs == 1
