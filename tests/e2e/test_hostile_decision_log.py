"""The audit trail against hostile input: every decision is one readable line of the log, and a
damaged log is named by file:line (issue 28, classes 2, 3 and 17)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from policy import Policy
from policy.decision_record import DecisionRecord
from runtime import Chat, ChatMessage, ChatRuntime, Role
from tests.e2e._kit import ORGANIZATION, VLLM_ID, client, organization_provider
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
    argument's name, also of a tool nobody offered: the record is written, its text escaped."""
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
    assert (second["tool_id"], second["status"]) == ("shell", "BLOCKED")
    assert second["arguments"] == {"\\ud800q": "*****"}, "a tool nobody knows: values masked"
    assert record["outcome"]["stop_reason"] == "final_answer"
