"""The audit trail against hostile input: every decision is one readable line of the log, and a
damaged log is named by file:line (issue 28, classes 2, 3 and 17)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from policy import Policy
from policy.configuration import ProviderConfig
from policy.decision_record import DecisionRecord
from runtime import Chat, ChatMessage, ChatRuntime, Role
from runtime.decision_log import JsonLinesSink, QueuedSink
from runtime.executor import ToolInvocationTrace
from runtime.loop import FinalAnswer, ToolCallFinished
from runtime.providers import ProviderClient
from tests.e2e._kit import (
    ORGANIZATION,
    VLLM_ID,
    InternalNotesTool,
    client,
    organization_provider,
)
from tests.mcp_tools.test_mcp import policy_cli
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply

QUESTION = ChatMessage(Role.USER, "What is 17 + 4?")


def _records(log: Path) -> list[dict[str, Any]]:
    """The log's records as a line-based tool reads them: every line (split as Python's
    `splitlines` does, at U+2028 too) is one whole record."""
    text = log.read_bytes().decode("utf-8")
    records = []
    for line in text.splitlines():
        DecisionRecord.model_validate_json(line)
        records.append(json.loads(line))
    return records


async def _answer(policy: Policy, chat: Chat, server: ProviderServer, log: Path) -> None:
    """One answer of a runtime that logs to `log`, with the calculator selected."""
    provider = organization_provider(policy, VLLM_ID, server)
    async with client(provider) as provider_client, ChatRuntime(policy, decision_log=log) as rt:
        async for _ in rt.respond(
            chat, provider, [QUESTION], selected_tool_ids=["calculator"], client=provider_client
        ):
            pass


async def test_a_line_separator_in_an_argument_does_not_split_the_record(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    """A model that writes U+2028/U+2029/NEL into an argument, hoping a line-based reader
    takes the rest for a record of its own."""
    forged = '{"decision_id":"forged"}'
    arguments = json.dumps({"expression": f"1\u2028{forged}\u2029{forged}\x85{forged}"})
    server.queue(
        Reply([chat_call(0, "call_1", "calculator", arguments)]),
        Reply(chat_text("Done.")),
    )
    log = tmp_path / "decisions.jsonl"
    await _answer(policy, chat, server, log)

    (record,) = _records(log)
    (call,) = record["calls"]
    assert call["arguments"]["expression"] == f"1\u2028{forged}\u2029{forged}\x85{forged}"
    assert "\u2028" not in log.read_text(encoding="utf-8"), "written as its JSON escape"


async def test_log_summary_and_replay_name_the_line_that_is_not_utf8(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    """A log damaged on disk (a byte flipped, two writers interleaved): both commands stop at
    the damaged line, name it and what is wrong, and exit 1 without a traceback."""
    log = tmp_path / "decisions.jsonl"
    provider = organization_provider(policy, VLLM_ID, server)
    async with client(provider) as provider_client, ChatRuntime(policy, decision_log=log) as rt:
        for _ in range(3):
            server.queue(Reply(chat_text("Hi.")))
            async for _event in rt.respond(chat, provider, [QUESTION], client=provider_client):
                pass
    first, second, third = log.read_bytes().splitlines(keepends=True)
    damaged = second.replace(b'"chat_id":"e2e-chat"', b'"chat_id":"e2e-chat\xff\xfe"')
    assert damaged != second
    log.write_bytes(first + damaged + third)

    for command in (
        ("log", "summary", log),
        ("log", "summary", log, "--format", "json"),
        ("replay", log, "--org", ORGANIZATION),
    ):
        done = policy_cli(*command)
        shown = done.stderr + done.stdout
        assert done.returncode == 1, shown
        assert f"{log}:2: not a decision record" in shown, shown
        at = damaged.index(b"\xff") + 1
        assert f"byte {at} of the line, 0xff, is not UTF-8" in shown, shown
        assert "Traceback" not in shown and "unexpected" not in shown.lower(), shown

    log.write_bytes(first + second + third)
    summary = policy_cli("log", "summary", log)
    assert summary.returncode == 0, summary.stderr
    assert ["decisions", "3"] in [line.split() for line in summary.stdout.splitlines()]


async def test_a_lone_surrogate_from_the_model_is_recorded_escaped_with_every_call(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    """A model that writes `"\\ud800"` (legal JSON, no UTF-8 text) into an argument's value, an
    argument's name, also of a tool nobody offered: the call is refused before the tool runs,
    saying which argument and why, and the record is written, its text escaped."""
    server.queue(
        Reply(
            [
                chat_call(0, "call_1", "calculator", '{"expression":"1\\ud800", "\\udfffx":"y"}'),
                chat_call(1, "call_2", "shell", '{"\\ud800q":"\\ud800"}'),
            ]
        ),
        Reply(chat_text("Done.")),
    )
    log = tmp_path / "decisions.jsonl"
    await _answer(policy, chat, server, log)

    (record,) = _records(log)
    first, second = record["calls"]
    assert first["arguments"] == {"expression": "1\\ud800", "\\udfffx": "y"}
    refusal = "Argument 'expression' holds a lone surrogate (such as \\ud800), which is no Unicode"
    assert first["status"] == "ERROR"
    assert refusal in first["status_message"]
    read = [m["content"] for m in server.bodies[1]["messages"] if m["role"] == "tool"]
    assert refusal in read[0], "the model reads what to correct"
    assert (second["tool_id"], second["status"]) == ("shell", "BLOCKED")
    assert second["arguments"] == {"\\ud800q": "*****"}, "a tool nobody knows: values masked"
    assert record["outcome"]["stop_reason"] == "final_answer"


async def _notes_traces(
    rt: ChatRuntime, chat: Chat, provider: ProviderConfig, provider_client: ProviderClient
) -> list[ToolInvocationTrace]:
    """One answer with the app's internal_notes tool selected: the traces of its calls."""
    traces = []
    async for event in rt.respond(
        chat, provider, [QUESTION], selected_tool_ids=["internal_notes"], client=provider_client
    ):
        if isinstance(event, ToolCallFinished):
            traces.append(event.trace)
    return traces


async def test_no_tool_runs_while_the_decision_log_cannot_keep_its_record(
    policy: Policy,
    chat: Chat,
    server: ProviderServer,
    notes_tool: InternalNotesTool,
    tmp_path: Path,
) -> None:
    """The log's folder is gone (an unmounted volume, a full disk): the first write fails after
    its call ran; from then on calls are refused until a record is written again."""
    log = tmp_path / "gone" / "decisions.jsonl"
    provider = organization_provider(policy, VLLM_ID, server)
    statuses: list[tuple[str, str]] = []
    async with client(provider) as provider_client, ChatRuntime(policy, decision_log=log) as rt:

        async def answer() -> None:
            server.queue(
                Reply([chat_call(0, "call_1", "internal_notes", "{}")]), Reply(chat_text("Ok."))
            )
            for trace in await _notes_traces(rt, chat, provider, provider_client):
                statuses.append((trace.status.value, trace.status_message))
            await rt.flush_decision_log()

        await answer()  # runs: nobody knew yet that the log cannot be written
        await answer()
        assert len(notes_tool.given) == 1, "the second call was not run"
        (log.parent).mkdir()
        await answer()  # still refused; its record is the first written again
        await answer()

    assert [status for status, _ in statuses] == ["SUCCESS", "BLOCKED", "BLOCKED", "SUCCESS"]
    assert "the decision log cannot keep its record (JsonLinesSink" in statuses[1][1]
    assert len(notes_tool.given) == 2
    refused, served = _records(log)
    assert [c["status"] for c in refused["calls"]] == ["BLOCKED"]
    assert [c["status"] for c in served["calls"]] == ["SUCCESS"]


class _StalledFileSink(JsonLinesSink):
    """A real file sink behind a store that has stalled (a remote log not answering): each batch
    waits for `gate` before it is written; `entered` says the writer thread holds one."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def write_lines(self, lines: Sequence[bytes]) -> None:
        self.entered.set()
        if not self.gate.wait(60):
            raise TimeoutError("the test never opened the gate")
        super().write_lines(lines)


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(30_000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("the runtime never reached the state the test waits for")


async def test_answers_wait_for_room_in_the_log_and_no_record_is_dropped(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    """More answers than the queue holds while the sink is stalled: the answers past the bound
    wait for room (back-pressure) instead of dropping their records; every one is written."""
    log = tmp_path / "decisions.jsonl"
    sink = _StalledFileSink(log)
    queued = QueuedSink(sink, max_pending=2, max_wait=60)
    provider = organization_provider(policy, VLLM_ID, server)
    answered: list[str] = []
    async with client(provider) as provider_client, ChatRuntime(policy, decision_log=queued) as rt:

        async def answer() -> None:
            async for event in rt.respond(chat, provider, [QUESTION], client=provider_client):
                if isinstance(event, FinalAnswer):
                    answered.append(event.text)

        server.queue(*(Reply(chat_text("Hi.")) for _ in range(8)))
        answers = [asyncio.create_task(answer()) for _ in range(8)]
        await _until(lambda: len(server.requests) == 8 and sink.entered.is_set())
        await _until(lambda: len(queued._queue) == 2)
        # at most one batch on the stalled writer (never more than the queue held) and a full
        # queue: the other answers have not been handed their final answer yet
        assert len(answered) <= 4 and not all(task.done() for task in answers)
        sink.gate.set()
        await asyncio.gather(*answers)
        assert await rt.flush_decision_log()

    records = _records(log)
    assert len(answered) == 8 and len(records) == 8, "every answer's record is in the log"
    assert len({record["decision_id"] for record in records}) == 8


async def test_a_call_whose_record_finds_no_room_within_the_bound_is_not_run(
    policy: Policy,
    chat: Chat,
    server: ProviderServer,
    notes_tool: InternalNotesTool,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The sink stays stalled past the bound: the call is refused with the reason, the answer's
    own record is kept past the bound (never dropped), and calls run again once it drains."""
    log = tmp_path / "decisions.jsonl"
    sink = _StalledFileSink(log)
    queued = QueuedSink(sink, max_pending=1, max_wait=0.2)
    provider = organization_provider(policy, VLLM_ID, server)
    traces: list[ToolInvocationTrace] = []
    caplog.set_level(logging.WARNING, "runtime")
    async with client(provider) as provider_client, ChatRuntime(policy, decision_log=queued) as rt:

        async def answer(*replies: Reply) -> None:
            server.queue(*replies)
            traces.extend(await _notes_traces(rt, chat, provider, provider_client))

        await answer(Reply(chat_text("Hi.")))  # the writer takes this record and stalls
        await _until(sink.entered.is_set)
        await answer(Reply(chat_text("Hi.")))  # the queue is full now
        assert queued.failure == "its queue is full (1 records waiting)"
        call = Reply([chat_call(0, "call_1", "internal_notes", "{}")])
        await answer(call, Reply(chat_text("Ok.")))
        assert notes_tool.given == [], "not run: its record found no room within the bound"
        sink.gate.set()
        assert await rt.flush_decision_log()
        await answer(call, Reply(chat_text("Ok.")))

    refused, served = traces
    assert (refused.status.value, served.status.value) == ("BLOCKED", "SUCCESS")
    assert refused.status_message == (
        "Not run: the decision log cannot keep its record (its queue stayed full (1 records "
        "waiting for _StalledFileSink, at most 1) for 0.2 s)."
    )
    assert len(notes_tool.given) == 1
    records = _records(log)
    assert len(records) == 4, "the refused call's answer is recorded too: nothing dropped"
    assert [c["status"] for c in records[2]["calls"]] == ["BLOCKED"]
    past = [r.getMessage() for r in caplog.records if "past its bound" in r.getMessage()]
    assert len(past) == 1, past
