"""Decision records from real `respond` runs against the loopback provider (real Lua policy)."""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any
from uuid import RFC_4122, UUID

import jsonschema
import pytest

from policy import Policy, load_policy
from policy.configuration import ProviderConfig
from policy.decision_record import DecisionRecord, decision_log_schema, uuid7
from policy.decision_summary import parse_since
from policy.definitions import ToolDefinition, ToolFunction
from policy.provider_facts import ProviderFacts
from policy.tools import DefinedTool
from policy.vocabulary import Component, ConfidenceLevel, ToolOutboundData
from runtime import Chat, ChatMessage, ChatRuntime, ProviderError, Role, SequentialToolCallingLoop
from runtime.adapters.base import ToolCallingAdapter
from runtime.chat import ChatRequirementError
from runtime.decision_log import (
    CallbackSink,
    DecisionRecorder,
    DecisionSink,
    JsonLinesSink,
    QueuedSink,
    redacted_error_message,
)
from runtime.execution import ToolExecutionContext, ToolExecutionResult
from runtime.loop import FinalAnswer, LoopContext, LoopEvent
from runtime.messages import Source
from runtime.providers import create_client
from tests.e2e._kit import (
    API_KEY,
    FAST_RETRIES,
    OPENAI_ID,
    ORGANIZATION,
    ROOT,
    VLLM_ID,
    client,
    organization_provider,
)
from tests.servers.cli_runner import run_policy
from tests.servers.provider_scripts import chat_call, chat_text, chat_usage
from tests.servers.provider_server import ProviderServer, Reply

CANARY = "canary-user-text-5c1e"
QUESTION = ChatMessage(Role.USER, f"What is (17 + 4) * 3? {CANARY}")


async def _respond(
    policy: Policy,
    chat: Chat,
    provider: ProviderConfig,
    sink: Any,
    selected: tuple[str, ...] = ("calculator", "current_time"),
) -> None:
    async with client(provider) as provider_client, ChatRuntime(policy, decision_log=sink) as rt:
        async for _ in rt.respond(
            chat, provider, [QUESTION], selected_tool_ids=selected, client=provider_client
        ):
            pass


@functools.cache
def _schema_validator() -> Any:
    """The published JSON Schema's validator, its schema checked against the meta-schema once
    (`jsonschema.validate` would check it again for every record)."""
    schema = decision_log_schema()
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return validator(schema)


def _validate(record: object) -> None:
    _schema_validator().validate(record)


def _lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a decision log, each checked against the published JSON Schema and found
    to be exactly the JSON of its `DecisionRecord` (fields, their order, how values are written)."""
    text = path.read_text()
    assert text.endswith("\n"), "every line ends with a newline"
    lines = []
    for line in text.splitlines():
        assert DecisionRecord.model_validate_json(line).model_dump_json() == line
        lines.append(json.loads(line))
        _validate(lines[-1])
    return lines


def _validated(kept: list[DecisionRecord]) -> CallbackSink:
    """A sink keeping each record after checking its JSON against the published JSON Schema."""

    def keep(record: DecisionRecord) -> None:
        _validate(record.model_dump(mode="json"))
        kept.append(record)

    return CallbackSink(keep)


async def test_a_response_with_calls_is_one_record_that_validates_and_holds_no_secret(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    server.queue(
        Reply(
            [
                chat_call(0, "call_1", "calculator", '{"expression":"(17 + 4) * 3"}'),
                chat_call(1, "call_2", "calculator", '{"expression":"__import__(\'os\')"}'),
                chat_usage(90),
            ]
        ),
        Reply([*chat_text("It is 63."), chat_usage(140)]),
    )
    log = tmp_path / "decisions.jsonl"
    await _respond(policy, chat, organization_provider(policy, VLLM_ID, server), JsonLinesSink(log))

    (record,) = _lines(log)
    _validate(record)
    assert record["chat_id"] == "e2e-chat" and record["component"] == "CHAT"
    assert record["decision_id"][14] == "7", "a UUIDv7"
    assert record["provider"]["id"] == VLLM_ID and record["provider"]["model"]
    assert record["selected_tool_ids"] == ["calculator", "current_time"]
    assert record["offered"] == ["calculator", "current_time"]
    assert [(c["call_id"], c["tool_id"], c["status"]) for c in record["calls"]] == [
        ("call_1", "calculator", "SUCCESS"),
        ("call_2", "calculator", "ERROR"),
    ]
    assert record["calls"][0]["arguments"] == {"expression": "(17 + 4) * 3"}
    assert record["calls"][0]["duration_ms"] >= 0
    read = [m["content"] for m in server.bodies[1]["messages"] if m["role"] == "tool"]
    assert [c["result_chars"] for c in record["calls"]] == [len(text) for text in read], (
        "the size of each result as the model read it"
    )
    assert record["outcome"] == {
        "stop_reason": "final_answer",
        "error_class": "",
        "error_message": "",
    }
    assert record["usage"]["input_tokens"] == 90
    text = log.read_text()
    assert API_KEY not in text and CANARY not in text
    assert ":63" not in text and "It is" not in text, "no result or answer text"


async def test_a_tool_the_policy_refuses_is_left_out_with_the_failed_check_and_its_plugin_line(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(Reply(chat_text("Hi.")))
    kept: list[DecisionRecord] = []
    openai = organization_provider(policy, OPENAI_ID, server)
    await _respond(policy, chat, openai, _validated(kept), ("web_search", "calculator"))

    (record,) = kept
    assert record.offered == ["calculator"]
    (left,) = [r for r in record.left_out if r.tool_id == "web_search"]
    assert left.reason == "PROVIDER_CONFIDENCE_TOO_LOW" and left.detail
    assert left.check == "PROVIDER_CONFIDENCE_TOO_LOW"
    assert any(".lua:" in e for e in left.evidence), left.evidence


async def test_each_json_line_is_exactly_its_records_json_with_every_part_filled(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    """The JSON Lines log writes each line straight from what the answer gathered: left-out
    tools with evidence, a failed call, the content kept, an error outcome all come out as the
    published `DecisionRecord` writes them (`_lines` compares each line to its model's JSON)."""
    server.queue(
        Reply([chat_call(0, "call_1", "calculator", '{"expression":"__import__(\'os\')"}')]),
        Reply(chat_text("It failed.")),
        Reply(chat_text("Let me ", "check"), break_after_events=True),
    )
    log = tmp_path / "decisions.jsonl"
    openai = organization_provider(policy, OPENAI_ID, server)
    async with (
        create_client(
            openai, API_KEY, wire_api="chat_completions", retry=FAST_RETRIES
        ) as provider_client,
        ChatRuntime(policy, decision_log=log, include_content=True) as rt,
    ):
        for expected_error in (False, True):
            try:
                async for _ in rt.respond(
                    chat,
                    openai,
                    [QUESTION],
                    selected_tool_ids=["web_search", "calculator"],
                    client=provider_client,
                    api_key=API_KEY,
                ):
                    pass
            except ProviderError:
                assert expected_error
            else:
                assert not expected_error

    answered, failed = _lines(log)
    (left,) = [r for r in answered["left_out"] if r["tool_id"] == "web_search"]
    assert any(".lua:" in e for e in left["evidence"]), left
    assert [c["status"] for c in answered["calls"]] == ["ERROR"]
    assert answered["content"]["answer"] == "It failed."
    assert failed["outcome"]["stop_reason"] == "error" and failed["outcome"]["error_class"]
    assert API_KEY not in log.read_text()


async def test_a_provider_failure_is_recorded_as_an_error_class_and_still_raised(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(Reply(chat_text("Let me ", "check"), break_after_events=True))
    kept: list[DecisionRecord] = []
    with pytest.raises(ProviderError):
        await _respond(
            policy, chat, organization_provider(policy, VLLM_ID, server), _validated(kept)
        )

    (record,) = kept
    assert record.outcome.stop_reason == "error"
    assert record.outcome.error_class == "ProviderUnavailable"


class _AnswerCheckFailed(Exception):
    pass


class _CheckedLoop:
    """An app's loop: the default loop, then a check of the final answer that fails after the
    answer was given (so `respond` records the answer, then the error)."""

    def __init__(self) -> None:
        self._inner = SequentialToolCallingLoop()

    async def run(
        self, adapter: ToolCallingAdapter, context: LoopContext
    ) -> AsyncIterator[LoopEvent]:
        async for event in self._inner.run(adapter, context):
            yield event
            if isinstance(event, FinalAnswer):
                raise _AnswerCheckFailed(f"the answer check rejected {event.text!r}")


async def test_an_error_after_the_final_answer_leaves_one_record_with_the_answer(
    policy: Policy,
    chat: Chat,
    server: ProviderServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The recorder ends on the final answer and again on the error raised after it: the log
    keeps one line for the decision, the first end (the answer the provider gave and the app
    was handed), and the later error is named with the decision id on the runtime's log."""
    server.queue(Reply([*chat_text("It is 63."), chat_usage(140)]))
    log = tmp_path / "decisions.jsonl"
    provider = organization_provider(policy, VLLM_ID, server)
    answers: list[str] = []
    with caplog.at_level(logging.WARNING, "runtime.decision_log"):
        async with (
            client(provider) as provider_client,
            ChatRuntime(policy, decision_log=log, loop=_CheckedLoop()) as rt,
        ):
            with pytest.raises(_AnswerCheckFailed):
                async for event in rt.respond(chat, provider, [QUESTION], client=provider_client):
                    if isinstance(event, FinalAnswer):
                        answers.append(event.text)

    assert answers == ["It is 63."]
    (record,) = _lines(log)
    assert record["outcome"] == {
        "stop_reason": "final_answer",
        "error_class": "",
        "error_message": "",
    }
    assert record["usage"]["input_tokens"] == 140
    warnings = [r.getMessage() for r in caplog.records if r.name == "runtime.decision_log"]
    assert len(warnings) == 1, warnings
    assert record["decision_id"] in warnings[0] and "_AnswerCheckFailed" in warnings[0]
    assert "rejected" not in warnings[0], "the error's message is not repeated"


async def test_a_sink_that_raises_warns_once_and_the_answer_goes_on(
    policy: Policy, chat: Chat, server: ProviderServer, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(record: DecisionRecord) -> None:
        raise OSError(f"disk full {API_KEY}")

    sink = CallbackSink(broken)
    provider = organization_provider(policy, VLLM_ID, server)
    with caplog.at_level(logging.WARNING, "runtime.decision_log"):
        for _ in range(2):
            server.queue(Reply(chat_text("Hi.")))
            await _respond(policy, chat, provider, sink)

    warnings = [r.getMessage() for r in caplog.records if r.name == "runtime.decision_log"]
    assert len(warnings) == 1 and "OSError" in warnings[0] and API_KEY not in warnings[0]


def test_every_failing_sink_is_warned_about_once_even_where_a_freed_one_lived(
    policy: Policy, chat: Chat, caplog: pytest.LogCaptureFixture
) -> None:
    """An app that rebuilds its sink (a reload) gets a warning for each new sink that fails:
    a freed sink's memory, and so its id, is often the next one's."""
    provider = policy.provider(VLLM_ID)

    def broken(record: DecisionRecord) -> None:
        raise OSError("disk full")

    class Unreferenceable:
        """A sink that takes no weak reference (slots without __weakref__)."""

        __slots__ = ()

        def write(self, record: DecisionRecord) -> None:
            raise OSError("disk full")

    def answer_into(sink: DecisionSink) -> None:
        DecisionRecorder(
            sink,
            configuration=policy.configuration,
            chat=chat,
            component=Component.CHAT,
            provider=provider,
            provider_facts=ProviderFacts.of(policy.registry, provider),
            selected_tool_ids=None,
        ).failed(RuntimeError("provider down"))

    with caplog.at_level(logging.WARNING, "runtime.decision_log"):
        for number in range(30):
            sink: DecisionSink = CallbackSink(broken) if number % 2 else Unreferenceable()
            answer_into(sink)
            answer_into(sink)
            del sink
            gc.collect()

    warnings = [r for r in caplog.records if r.name == "runtime.decision_log"]
    assert len(warnings) == 30, "one warning per failing sink, none for its second failure"


def test_the_jsonl_file_rolls_over_past_its_size_and_keeps_the_set_number_of_backups(
    tmp_path: Path,
) -> None:
    record = _record(0)
    size = len(record.model_dump_json()) + 1
    log = tmp_path / "d.jsonl"
    sink = JsonLinesSink(log, max_bytes=size * 2, backups=2)
    for _ in range(7):
        sink.write(record)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl", "d.jsonl.1", "d.jsonl.2"]
    assert [len(_lines(p)) for p in (log, tmp_path / "d.jsonl.1", tmp_path / "d.jsonl.2")] == [
        1,
        2,
        2,
    ]
    written = [p.read_text() for p in (log, tmp_path / "d.jsonl.1", tmp_path / "d.jsonl.2")]
    for path in tmp_path.iterdir():
        path.unlink()
    batched = JsonLinesSink(log, max_bytes=size * 2, backups=2)
    batched.write_lines([record.model_dump_json().encode() + b"\n"] * 7)
    assert [p.read_text() for p in (log, tmp_path / "d.jsonl.1", tmp_path / "d.jsonl.2")] == (
        written
    ), "a batch in one call rolls over where records one at a time do"
    with pytest.raises(ValueError, match="max_bytes >= 1"):
        JsonLinesSink(log, max_bytes=0)


def test_records_still_queued_when_the_interpreter_exits_are_written(tmp_path: Path) -> None:
    log = tmp_path / "d.jsonl"
    script = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from runtime.decision_log import JsonLinesSink, QueuedSink
from tests.e2e.test_decision_log import _record
queued = QueuedSink(JsonLinesSink({str(log)!r}))
for number in range(500):
    queued.write(_record(number))
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert [line["decision_id"] for line in _lines(log)] == [f"id-{n}" for n in range(500)]


def test_policy_chat_appends_a_record_per_answer_that_matches_the_published_schema(
    server: ProviderServer, tmp_path: Path
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "calculator", '{"expression":"6 * 7"}')]),
        Reply(chat_text("It is 42.")),
    )
    log = tmp_path / "decisions.jsonl"
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLPOLICY_") and "API_KEY" not in k
    }
    environment["TOOLPOLICY_API_KEY"] = API_KEY
    done = run_policy(
        [
            "chat",
            f"What is 6 * 7? {CANARY}",
            "--org",
            str(ORGANIZATION),
            "--provider",
            "Example Corp vLLM",
            "--base-url",
            server.base_url,
            "--tools-file",
            str(ROOT / "examples" / "clock_tool.py"),
            "--tool",
            "calculator",
            "--chat-db",
            str(tmp_path / "chats.sqlite3"),
            "--decision-log",
            str(log),
        ],
        env=environment,
    )
    assert done.returncode == 0, done.stderr
    schema = run_policy(["schema", "--decision-log"])
    assert schema.returncode == 0, schema.stderr
    (record,) = _lines(log)
    jsonschema.validate(record, json.loads(schema.stdout))
    assert [(c["tool_id"], c["status"]) for c in record["calls"]] == [("calculator", "SUCCESS")]
    text = log.read_text()
    assert API_KEY not in text and CANARY not in text


def test_policy_log_summary_counts_a_recorded_log_and_names_a_bad_line(tmp_path: Path) -> None:
    record = {
        "decision_id": "0",
        "timestamp": "2026-01-01T00:00:00Z",
        "chat_id": "c",
        "component": "CHAT",
        "provider": {
            "id": "vllm",
            "kind": "SELF_HOSTED",
            "host": "",
            "model": "m",
            "confidence": "HIGH",
        },
        "selected_tool_ids": None,
        "left_out": [{"tool_id": "web_search", "reason": "TOOL_DISABLED"}],
        "calls": [
            {
                "call_id": "1",
                "tool_id": "calculator",
                "status": "BLOCKED",
                "arguments": {},
                "duration_ms": 1.0,
                "result_chars": 0,
            },
        ],
        "outcome": {"stop_reason": "final_answer"},
    }
    log = tmp_path / "d.jsonl"
    log.write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n")
    command = [sys.executable, "-m", "policy.cli", "log", "summary", str(log)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["decisions", "2"] in rows
    assert ["provider", "vllm", "2"] in rows
    assert ["left", "out", "web_search:", "TOOL_DISABLED", "2"] in rows
    assert ["call", "BLOCKED", "calculator", "2"] in rows

    log.write_text(json.dumps(record) + '\n{"decision_id": 1}\n')
    bad = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 1 and f"{log}:2: not a decision record" in bad.stderr
    assert "Traceback" not in bad.stderr


async def test_a_record_names_the_configuration_revision_the_plugins_and_what_each_call_demanded(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply(chat_text("Noted.")),
    )
    log = tmp_path / "decisions.jsonl"
    vllm = organization_provider(policy, VLLM_ID, server)
    await _respond(policy, chat, vllm, JsonLinesSink(log), ("internal_notes",))

    (record,) = _lines(log)
    _validate(record)
    configuration = record["configuration"]
    assert configuration["revision"] == policy.configuration.revision
    assert len(configuration["revision"]) == 64
    plugins = configuration["plugins"]
    assert [p["id"] for p in plugins] == [p.plugin_id for p in policy.configuration.plugins]
    digests = set()
    for folder in (f.parent for f in ORGANIZATION.rglob("plugin.lua")):
        digest = hashlib.sha256()
        for lua in sorted(folder.glob("*.lua")):
            digest.update(lua.name.encode() + b"\0" + lua.read_bytes() + b"\0")
        digests.add(digest.hexdigest())
    assert plugins and {p["sha256"] for p in plugins} == digests, "a digest of its Lua files"
    assert all(p["origin"] == "organization" and not p["last_known_good"] for p in plugins)
    assert all(p["name"] and isinstance(p["priority"], int) for p in plugins)
    (call,) = record["calls"]
    assert call["demands"]["provider_confidence"] == "HIGH"
    requirements = record["chat_requirements"]
    assert requirements["before"]["provider_confidence"] == "NONE"
    assert requirements["after"]["provider_confidence"] == "HIGH"
    assert record["content"] is None
    assert "Q3 plan" not in log.read_text() and "Noted." not in log.read_text()


async def test_a_provider_the_chat_refuses_is_recorded_as_refused_with_its_message(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    chat.require_provider_confidence(ConfidenceLevel.HIGH)
    kept: list[DecisionRecord] = []
    openai = organization_provider(policy, OPENAI_ID, server)
    with pytest.raises(ChatRequirementError):
        await _respond(policy, chat, openai, _validated(kept), ("internal_notes",))

    (record,) = kept
    assert record.outcome.stop_reason == "refused"
    assert record.outcome.error_class == "ChatRequirementError"
    assert "HIGH or higher" in record.outcome.error_message
    assert record.offered == [] and record.calls == []
    assert record.chat_requirements.before.provider_confidence == "HIGH"
    assert not server.requests, "no request was sent"


async def test_include_content_keeps_the_message_the_answer_and_each_result(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply(chat_text("Noted.")),
    )
    kept: list[DecisionRecord] = []
    vllm = organization_provider(policy, VLLM_ID, server)
    async with (
        client(vllm) as provider_client,
        ChatRuntime(policy, decision_log=_validated(kept), include_content=True) as rt,
    ):
        async for _ in rt.respond(
            chat, vllm, [QUESTION], selected_tool_ids=["internal_notes"], client=provider_client
        ):
            pass

    (record,) = kept
    assert record.content is not None
    assert CANARY in record.content.user_message
    assert record.content.answer == "Noted."
    assert "Q3 plan" in record.content.tool_results["call_1"]
    assert API_KEY not in record.model_dump_json()


async def test_include_content_keeps_each_text_bounded_with_how_much_was_left_out(
    example_tools: ModuleType, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    """A 2 MB tool result, a long message and a long answer make a record of bounded size: each
    kept text is cut at `MAX_CONTENT_CHARACTERS`, saying how many characters were left out; the
    model still read the whole result."""
    from policy.decision_record import MAX_CONTENT_CHARACTERS
    from tests.e2e._kit import InternalNotesTool

    result = "Q3 plan: " + "n" * 2_000_000

    class LongNotes(InternalNotesTool):
        async def execute(
            self, arguments: Mapping[str, Any], context: ToolExecutionContext
        ) -> ToolExecutionResult:
            return ToolExecutionResult(text_content=result)

    policy = load_policy(org=[ORGANIZATION], tools=[*example_tools.create_tools(), LongNotes()])
    question = ChatMessage(Role.USER, CANARY + " " + "q" * 300_000)
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply(chat_text("A" * 100_000)),
    )
    log = tmp_path / "decisions.jsonl"
    vllm = organization_provider(policy, VLLM_ID, server)
    async with (
        client(vllm) as provider_client,
        ChatRuntime(policy, decision_log=JsonLinesSink(log), include_content=True) as rt,
    ):
        async for _ in rt.respond(
            chat, vllm, [question], selected_tool_ids=["internal_notes"], client=provider_client
        ):
            pass

    assert result in server.requests[-1].body.decode(), "the model read the whole result"
    assert log.stat().st_size < 4 * MAX_CONTENT_CHARACTERS, "one bounded line"
    ((record),) = _lines(log)
    content = record["content"]
    cut = MAX_CONTENT_CHARACTERS
    assert content["tool_results"]["call_1"] == (
        f"{result[:cut]}… [{len(result) - cut} more characters]"
    )
    assert (
        content["user_message"]
        == f"{question.content[:cut]}… [{300_000 + len(CANARY) + 1 - cut} more characters]"
    )
    assert content["answer"] == f"{'A' * cut}… [{100_000 - cut} more characters]"
    assert record["calls"][0]["result_chars"] == len(result), "the size is the whole result's"
    described = json.dumps(decision_log_schema()["$defs"]["ContentRecord"], ensure_ascii=False)
    assert f"at most {cut} characters" in described and "more characters]" in described


def test_an_error_message_is_kept_with_secrets_user_info_and_parameter_values_masked() -> None:
    message = (
        f"boom {API_KEY} at https://admin:pa55@api.example.org/v1?key=s3cr3t&x=1 "
        "and sftp://bob:hunter2@files.example.org/x"
    )
    kept = redacted_error_message(message, (API_KEY,))
    for secret in (API_KEY, "pa55", "s3cr3t", "hunter2", "admin", "bob"):
        assert secret not in kept, kept
    assert "api.example.org/v1?key=*****" in kept and kept.startswith("boom *****")
    assert redacted_error_message("x" * 5000) == "x" * 512 + "… [4488 more characters]"
    assert redacted_error_message("lone \ud800") == "lone \\ud800", "written as its escape"


def _record(number: int) -> DecisionRecord:
    return DecisionRecord.model_validate(
        {
            "decision_id": f"id-{number}",
            "timestamp": "2026-01-01T00:00:00Z",
            "chat_id": "c",
            "component": "CHAT",
            "provider": {
                "id": "p",
                "kind": "OPEN_AI",
                "host": "",
                "model": "m",
                "confidence": "LOW",
            },
            "selected_tool_ids": None,
            "outcome": {"stop_reason": "final_answer"},
        }
    )


def test_a_full_queue_makes_write_wait_for_room_and_keeps_every_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A stalled sink: `write` waits on its thread for room (the writer's back-pressure), and
    past the bound keeps the record all the same, saying so once: nothing is dropped."""
    release = threading.Event()
    taken = threading.Event()
    written: list[str] = []

    def slow(record: DecisionRecord) -> None:
        taken.set()
        release.wait(30)
        written.append(record.decision_id)

    waiting = QueuedSink(CallbackSink(slow), max_pending=2, max_wait=60)
    waiting.write(_record(0))
    assert taken.wait(10)  # the writer holds record 0
    waiting.write(_record(1))
    waiting.write(_record(2))
    late = threading.Thread(target=waiting.write, args=(_record(3),))
    late.start()
    late.join(timeout=0.2)
    assert late.is_alive(), "a third record waits for room while two are waiting"
    release.set()
    late.join(timeout=30)
    assert waiting.close(timeout=10)
    assert written == ["id-0", "id-1", "id-2", "id-3"]

    release.clear()
    taken.clear()
    written.clear()
    bounded = QueuedSink(CallbackSink(slow), max_pending=1, max_wait=0.01)
    with caplog.at_level(logging.WARNING, "runtime.decision_log"):
        bounded.write(_record(0))
        assert taken.wait(10)
        for number in range(1, 5):
            bounded.write(_record(number))  # no room within the bound: kept past it
        assert bounded.failure == "its queue is full (1 records waiting)"
        release.set()
        assert bounded.close(timeout=10)

    assert written == ["id-0", "id-1", "id-2", "id-3", "id-4"]
    messages = [r.getMessage() for r in caplog.records if r.name == "runtime.decision_log"]
    assert [m for m in messages if "past its bound" in m] == [
        "The decision log queue is past its bound (2 records waiting for CallbackSink, at most "
        "1): record id-2 is kept all the same; tool calls wait for room and are not run when "
        "none comes within 0.01 s."
    ]
    with pytest.raises(ValueError, match="max_pending >= 1"):
        QueuedSink(CallbackSink(slow), max_pending=0)
    with pytest.raises(ValueError, match=r"max_wait > 0 \(seconds\), got 0"):
        QueuedSink(CallbackSink(slow), max_wait=0)


def test_policy_log_summary_counts_per_revision_over_rotated_files_and_since_a_time(
    tmp_path: Path,
) -> None:
    def line(revision: str, when: str, status: str, message: str = "") -> str:
        record = _record(0).model_dump(mode="json")
        record["configuration"] = {"revision": revision, "plugins": []}
        record["timestamp"] = when
        record["calls"] = [
            {
                "call_id": "1",
                "tool_id": "read_web_page",
                "status": status,
                "arguments": {},
                "duration_ms": 1.0,
                "result_chars": 0,
                "status_message": message,
            }
        ]
        return json.dumps(record) + "\n"

    old, new = "a" * 64, "b" * 64
    log = tmp_path / "d.jsonl"
    (tmp_path / "d.jsonl.1").write_text(
        line(old, "2026-01-01T08:00:00Z", "BLOCKED", "address not given")
        + line(old, "2026-01-01T09:00:00Z", "SUCCESS")
    )
    log.write_text(
        line(new, "2026-01-02T08:00:00+01:00", "BLOCKED", "address not given")
        + line(new, "2026-01-02T10:00:00Z", "BLOCKED", "mailbox read")
    )
    command = ["log", "summary", str(log), f"{log}.1"]
    every = run_policy([*command, "-f", "json"])
    assert every.returncode == 0, every.stderr
    rows = {(r["what"], r["value"]): r["count"] for r in json.loads(every.stdout)}
    assert rows["decisions", ""] == 4
    assert rows["revision", "a" * 12] == 2 and rows["revision", "b" * 12] == 2
    assert rows["top blocked", "read_web_page: address not given"] == 2
    assert rows["top blocked", "read_web_page: mailbox read"] == 1

    since = run_policy([*command, "--since", "2026-01-02T07:30:00Z", "-f", "json"])
    assert since.returncode == 0, since.stderr
    rows = {(r["what"], r["value"]): r["count"] for r in json.loads(since.stdout)}
    assert rows["decisions", ""] == 1, "08:00+01:00 is 07:00 UTC, before the start"
    assert ("revision", "a" * 12) not in rows

    bad = run_policy([*command, "--since", "yesterday"])
    assert bad.returncode == 1 and "--since 'yesterday'" in bad.stderr and "24h" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_since_reads_a_duration_back_from_now() -> None:
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    assert parse_since("24h", now) == datetime(2026, 2, 28, 12, 0, tzinfo=UTC)
    assert parse_since("30m", now) == datetime(2026, 3, 1, 11, 30, tzinfo=UTC)
    assert parse_since("2026-02-01", now) == datetime(2026, 2, 1, tzinfo=UTC)


async def test_a_provider_entry_that_cannot_become_a_client_is_still_recorded(
    policy: Policy, chat: Chat, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtime.providers.errors import ProviderConfigurationError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    openai = policy.provider(OPENAI_ID)
    assert openai is not None and openai.api_key is None
    kept: list[DecisionRecord] = []
    async with ChatRuntime(policy, decision_log=_validated(kept)) as runtime:
        with pytest.raises(ProviderConfigurationError):
            async for _ in runtime.respond(chat, openai, [QUESTION], selected_tool_ids=[]):
                pass

    (record,) = kept
    assert record.outcome.stop_reason == "error"
    assert record.outcome.error_class == "ProviderConfigurationError"
    assert record.outcome.error_message


class _CitingTool(DefinedTool):
    """An app's search tool whose result cites an address with user info and a signed query."""

    def __init__(self) -> None:
        super().__init__(
            ToolDefinition(
                id="wiki_search",
                implementation_key="wiki_search",
                function=ToolFunction(name="wiki_search", description_for_llm="Search the wiki."),
                effects=("PRIVATE_DATA",),
            ),
            display_name="Wiki search",
            outbound_data=ToolOutboundData.NONE,
        )

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        return ToolExecutionResult(
            text_content="The VPN page says: reconnect.",
            sources=(Source("VPN", CITED),),
        )


CITED = "https://bob:hunter2@wiki.example.org/vpn?sig=s1gn3d-7f&page=2#top"


async def test_a_record_keeps_the_addresses_cited_and_the_providers_never_their_secrets(
    example_tools: ModuleType, chat: Chat, server: ProviderServer
) -> None:
    policy = load_policy(org=[ORGANIZATION], tools=[*example_tools.create_tools(), _CitingTool()])
    server.queue(
        Reply([chat_call(0, "call_1", "wiki_search", "{}"), chat_usage(90, 7)]),
        Reply([*chat_text("Reconnect."), chat_usage(120, 3)]),
    )
    kept: list[DecisionRecord] = []
    vllm = organization_provider(policy, VLLM_ID, server)
    entry = replace(vllm, hostname="http://ops:s3cr3t-pw@vllm.internal:8000/v1?api-key=k3y-42")
    async with (
        client(vllm) as provider_client,
        ChatRuntime(policy, decision_log=_validated(kept)) as runtime,
    ):
        async for _ in runtime.respond(
            chat, entry, [QUESTION], selected_tool_ids=["wiki_search"], client=provider_client
        ):
            pass

    (record,) = kept
    (call,) = record.calls
    assert (call.tool_id, call.status) == ("wiki_search", "SUCCESS")
    assert call.sources == ["https://wiki.example.org/vpn?sig=*****&page=*****"]
    assert call.result_chars == len("The VPN page says: reconnect.")
    text = record.model_dump_json()
    for secret in ("bob", "hunter2", "s1gn3d-7f", "reconnect", "ops", "s3cr3t-pw", "k3y-42"):
        assert secret not in text, secret
    configured = policy.provider(VLLM_ID)
    assert configured is not None
    assert record.provider.model_dump() == {
        "id": VLLM_ID,
        "kind": configured.kind.value,
        "host": configured.host,
        "model": configured.model,
        "confidence": policy.registry.provider_confidence(configured).name,
        "hostname": "http://vllm.internal:8000/v1?api-key=*****",
    }
    assert record.usage.model_dump() == {"input_tokens": 90, "output_tokens": 7}, "first round"


def test_decision_ids_are_uuid7_in_the_order_they_were_made() -> None:
    before = time.time_ns() // 1_000_000
    made = []
    for _ in range(3):
        made.append(uuid7())
        time.sleep(0.002)
    after = time.time_ns() // 1_000_000
    assert all(u.version == 7 and u.variant == RFC_4122 for u in made)
    assert all(before <= u.int >> 80 <= after for u in made), "the first 48 bits are Unix ms"
    assert sorted(made) == made and sorted(str(u) for u in made) == [str(u) for u in made]
    assert len({uuid7() for _ in range(1000)}) == 1000


def test_a_forked_process_makes_other_decision_ids_than_its_parent() -> None:
    uuid7()  # the parent has random bits in hand for its next ids
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(write, str(uuid7()).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        childs = pipe.read()
    parents = str(uuid7())
    assert childs and childs[-12:] != parents[-12:], "the random part differs"


def test_a_process_forked_while_another_thread_draws_an_id_can_make_ids() -> None:
    from policy import decision_record

    lock = decision_record._pool_lock
    lock.acquire()  # as a thread of the parent drawing random bits at the moment of the fork
    try:
        read, write = os.pipe()
        child = os.fork()
        if child == 0:  # pragma: no cover - the child reports through the pipe
            signal.alarm(10)  # a child stuck on the parent's lock is killed, not waited for
            os.write(write, str(uuid7()).encode())
            os._exit(0)
    finally:
        lock.release()
    os.close(write)
    _, status = os.waitpid(child, 0)
    with os.fdopen(read) as pipe:
        made = pipe.read()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the child hung on the lock"
    assert UUID(made).version == 7


async def test_a_file_path_is_a_json_lines_log_and_anything_else_must_be_a_sink(
    policy: Policy, chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    server.queue(Reply(chat_text("Hi.")))
    log = tmp_path / "decisions.jsonl"
    await _respond(policy, chat, organization_provider(policy, VLLM_ID, server), str(log))
    (record,) = _lines(log)
    assert record["outcome"]["stop_reason"] == "final_answer"

    with pytest.raises(TypeError, match=r"a file path or a sink with write\(record\), got int"):
        ChatRuntime(policy, decision_log=7)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=r"got the folder .*; name a file such as decisions\.jsonl"
    ):
        ChatRuntime(policy, decision_log=tmp_path)
