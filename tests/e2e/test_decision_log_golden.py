"""Decision-log lines, byte for byte: a fixed scenario through real `respond` runs against the
loopback provider (real Lua policy), written by `JsonLinesSink` (the batched line path) and by a
`CallbackSink` (the model path), then read by `policy log summary` and `policy replay`. Only
what differs from run to run (decision ids, times, durations, the loopback port) is normalized.

The golden files in tests/e2e/golden/ were written before the decision log was split into a
package and changed since only on purpose (a lone surrogate in an argument is now refused before
the tool runs); set TOOLPOLICY_WRITE_GOLDEN=1 to write them again after an intended change.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from policy import Policy
from policy.decision_record import CallRecord, DecisionRecord
from policy.vocabulary import ConfidenceLevel
from runtime import Chat, ChatMessage, ChatRuntime, ProviderError, Role
from runtime.chat import ChatRequirementError, MemoryChatStore
from runtime.decision_log import CallbackSink, DecisionSink, JsonLinesSink, line_safe
from runtime.decision_log._encoder import ModelObject
from tests.e2e._kit import API_KEY, OPENAI_ID, ROOT, VLLM_ID, client, organization_provider
from tests.servers.cli_runner import run_policy
from tests.servers.provider_scripts import chat_call, chat_text, chat_usage
from tests.servers.provider_server import ProviderServer, Reply

GOLDEN = Path(__file__).parent / "golden"
WRITE = os.environ.get("TOOLPOLICY_WRITE_GOLDEN") == "1"
SELECTED = ("calculator", "current_time", "web_search", "internal_notes")
_VARYING = (
    (re.compile(rb'"decision_id": ?"[^"]*"'), b'"decision_id":"<id>"'),
    (re.compile(rb'"timestamp":"[^"]*"'), b'"timestamp":"<time>"'),
    (re.compile(rb'"duration_ms":[-+.0-9eE]+'), b'"duration_ms":0'),
    (re.compile(rb"127\.0\.0\.1:\d+"), b"127.0.0.1:<port>"),
)


def _normalized(data: bytes) -> bytes:
    for pattern, replacement in _VARYING:
        data = pattern.sub(replacement, data)
    return data


def _compare(name: str, actual: bytes) -> None:
    golden = GOLDEN / name
    if WRITE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_bytes(actual)
    assert actual == golden.read_bytes(), f"{name} differs from its golden output"


async def _scenario(policy: Policy, server: ProviderServer, sink: DecisionSink) -> None:
    """Four answers in one chat: calls (one failing, one with a lone surrogate and line
    separators in its argument), a provider failure holding the API key in its request, a
    tool whose result tightens the chat, and a provider the tightened chat refuses."""
    chat = Chat.open("golden-chat", MemoryChatStore())
    vllm = organization_provider(policy, VLLM_ID, server)
    openai = organization_provider(policy, OPENAI_ID, server)
    server.queue(
        Reply(
            [
                chat_call(0, "call_1", "calculator", '{"expression":"(17 + 4) * 3"}'),
                chat_call(
                    1, "call_2", "calculator", '{"expression":"\\ud800 \u2028\u2029\x85 1+"}'
                ),
                chat_usage(90),
            ]
        ),
        Reply([*chat_text("It is 63.\u2028Done"), chat_usage(140)]),
        Reply(chat_text("Let me ", "check"), break_after_events=True),
        Reply([chat_call(0, "call_3", "internal_notes", "{}"), chat_usage(30)]),
        Reply([*chat_text("Noted."), chat_usage(40)]),
    )
    question = ChatMessage(Role.USER, "What is (17 + 4) * 3?\u2028Thanks")
    async with ChatRuntime(policy, decision_log=sink, include_content=True) as runtime:
        for provider, expected in (
            (vllm, None),
            (vllm, ProviderError),
            (vllm, None),
            (openai, ChatRequirementError),
        ):
            async with client(provider) as provider_client:
                try:
                    async for _ in runtime.respond(
                        chat,
                        provider,
                        [question],
                        selected_tool_ids=SELECTED,
                        client=provider_client,
                        api_key=API_KEY,
                    ):
                        pass
                except (ProviderError, ChatRequirementError) as error:
                    assert expected is not None and isinstance(error, expected), error
                else:
                    assert expected is None
    assert chat.record.required_provider_confidence is ConfidenceLevel.HIGH


@pytest.fixture
async def golden_log(policy: Policy, server: ProviderServer, tmp_path: Path) -> Path:
    log = tmp_path / "decisions.jsonl"
    await _scenario(policy, server, JsonLinesSink(log))
    return log


async def test_the_lines_a_json_lines_log_keeps_are_unchanged(golden_log: Path) -> None:
    data = golden_log.read_bytes()
    assert API_KEY.encode() not in data
    _compare("decision_log.jsonl", _normalized(data))


async def test_a_record_handed_to_any_sink_is_the_same_record(
    policy: Policy, server: ProviderServer
) -> None:
    kept: list[DecisionRecord] = []
    await _scenario(policy, server, CallbackSink(kept.append))
    lines = b"".join(line_safe(r.model_dump_json().encode()) + b"\n" for r in kept)
    _compare("decision_log.jsonl", _normalized(lines))


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("log_summary.txt", ["log", "summary"]),
        ("log_summary.json", ["log", "summary", "-f", "json"]),
        (
            "replay.json",
            [
                "replay",
                "--org",
                str(ROOT / "examples" / "organization"),
                "--tools-file",
                str(ROOT / "examples" / "clock_tool.py"),
                "-f",
                "json",
            ],
        ),
    ],
)
async def test_what_the_commands_read_from_the_log_is_unchanged(
    golden_log: Path, name: str, command: list[str]
) -> None:
    done = run_policy(
        [*command, str(golden_log)],
        env={k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")},
    )
    assert done.returncode == 0, done.stderr
    output = done.stdout.encode().replace(str(golden_log).encode(), b"<log>")
    _compare(name, _normalized(output))


class _BatchingStore:
    """An app's own sink that takes records in batches: it only has to offer `write_lines`."""

    def __init__(self) -> None:
        self.batches: list[list[bytes]] = []
        self.records: list[DecisionRecord] = []

    def write(self, record: DecisionRecord) -> None:
        self.records.append(record)

    def write_lines(self, lines: Sequence[bytes]) -> None:
        self.batches.append(list(lines))


async def test_any_sink_with_write_lines_gets_the_records_as_the_json_lines_log_does(
    policy: Policy, server: ProviderServer
) -> None:
    store = _BatchingStore()
    await _scenario(policy, server, store)
    assert not store.records, "a sink offering write_lines is batched, whatever its class"
    lines = [line for batch in store.batches for line in batch]
    assert len(lines) == 4 and all(line.endswith(b"\n") for line in lines)
    _compare("decision_log.jsonl", _normalized(b"".join(lines)))


def test_the_record_json_has_the_models_fields_and_refuses_a_part_the_model_lacks() -> None:
    calls = ModelObject(CallRecord)
    parts = {name: b"0" for name in CallRecord.model_fields}
    assert json.loads(calls.write(**parts)) == dict.fromkeys(CallRecord.model_fields, 0)
    with pytest.raises(ValueError, match=r"fields not given \['sources'\]"):
        calls.write(**{k: v for k, v in parts.items() if k != "sources"})
    with pytest.raises(ValueError, match=r"not in the model \['extra'\]"):
        calls.write(**{k: v for k, v in parts.items() if k != "sources"}, extra=b"1")
