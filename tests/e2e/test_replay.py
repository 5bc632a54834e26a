"""`policy replay`: real traffic recorded through `respond` against the loopback provider, then
re-decided under a changed copy of the example organization (real Lua on both sides)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from policy import Policy, load_policy
from policy.decision_record import DecisionRecord
from policy.decision_summary import read_decision_log
from policy.vocabulary import ConfidenceLevel
from runtime import Chat, ChatMessage, ChatRuntime, Role
from runtime.chat import ChatRequirementError, SqliteChatStore
from runtime.decision_log import JsonLinesSink
from runtime.replay import replay
from runtime.tools import builtin_executable_tools
from tests.e2e._kit import (
    OPENAI_ID,
    ORGANIZATION,
    ROOT,
    VLLM_ID,
    InternalNotesTool,
    client,
    organization_provider,
)
from tests.servers.cli_runner import run_policy
from tests.servers.provider_scripts import (
    chat_call,
    chat_text,
    responses_completed,
    responses_message,
    responses_text,
)
from tests.servers.provider_server import ProviderServer, Reply

QUESTION = ChatMessage(Role.USER, "What is 6 * 7?")


def _tools(example_tools: ModuleType) -> list[object]:
    return [*builtin_executable_tools(), *example_tools.create_tools(), InternalNotesTool()]


def _organization(tmp_path: Path, name: str, *edits: tuple[str, str, str]) -> Path:
    """A copy of the example organization with text replaced: (plugin folder, old, new)."""
    folder = shutil.copytree(ORGANIZATION, tmp_path / name)
    for plugin, old, new in edits:
        path = folder / plugin / "plugin.lua"
        text = path.read_text(encoding="utf-8")
        assert old in text, old
        path.write_text(text.replace(old, new), encoding="utf-8")
    return folder


DISABLE_CALCULATOR = (
    "department",
    'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {}',
    'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "calculator" }',
)

SWAPPED_KINDS = (
    ("base", '["UsedLLMProvider"] = "SELF_HOSTED"', '["UsedLLMProvider"] = "MISTRAL"'),
    (
        "base",
        '["UsedLLMProvider"] = "OPEN_AI",\n    ["Host"] = "NONE",\n    ["Hostname"] = "",',
        '["UsedLLMProvider"] = "SELF_HOSTED",\n    ["Host"] = "VLLM",\n'
        '    ["Hostname"] = "http://127.0.0.1:8000/v1",',
    ),
)
"""vLLM becomes a cloud provider (MEDIUM), OpenAI a self-hosted one."""


async def _recorded_log(
    policy: Policy, server: ProviderServer, tmp_path: Path
) -> tuple[Path, list[DecisionRecord]]:
    """Three real answers: notes then calculator (two rounds) on vLLM; calculator alone on
    OpenAI; OpenAI refused by a chat that already demands HIGH."""
    log = tmp_path / "decisions.jsonl"
    store = SqliteChatStore(tmp_path / "chats.sqlite3")
    vllm = organization_provider(policy, VLLM_ID, server)
    openai = organization_provider(policy, OPENAI_ID, server)
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply([chat_call(0, "call_2", "calculator", '{"expression":"6 * 7"}')]),
        Reply(chat_text("It is 42.")),
        Reply([*responses_text("42."), responses_completed([responses_message("42.")])]),
    )
    async with ChatRuntime(policy, decision_log=JsonLinesSink(log)) as runtime:
        for chat, provider, selection in (
            (Chat.open("notes", store), vllm, ["internal_notes", "calculator"]),
            (Chat.open("plain", store), openai, ["calculator"]),
        ):
            async with client(provider) as provider_client:
                async for _ in runtime.respond(
                    chat, provider, [QUESTION], selected_tool_ids=selection, client=provider_client
                ):
                    pass
        strict = Chat.open("strict", store)
        strict.require_provider_confidence(ConfidenceLevel.HIGH)
        with pytest.raises(ChatRequirementError):
            async for _ in runtime.respond(strict, openai, [QUESTION], selected_tool_ids=[]):
                pass
    records = read_decision_log(log)
    assert [r.outcome.stop_reason for r in records] == ["final_answer", "final_answer", "refused"]
    assert [(c.call_id, c.round) for c in records[0].calls] == [("call_1", 1), ("call_2", 2)]
    return log, records


async def test_replay_finds_exactly_the_tools_and_calls_a_disabled_tool_flips(
    example_tools: ModuleType, server: ProviderServer, tmp_path: Path
) -> None:
    policy = load_policy(org=[ORGANIZATION], tools=_tools(example_tools))
    _, records = await _recorded_log(policy, server, tmp_path)
    same = replay(records, load_policy(org=[ORGANIZATION], tools=_tools(example_tools)))
    assert same.decisions == 3 and not same.has_changes, same

    candidate = load_policy(
        org=[_organization(tmp_path, "no-calculator", DISABLE_CALCULATOR)],
        tools=_tools(example_tools),
    )
    report = replay(records, candidate)

    notes, plain, refused = (r.decision_id for r in records)
    assert [(c.decision_id, c.tool_id, c.before, c.after) for c in report.changed] == [
        (notes, "calculator", "offered", "TOOL_SWITCHED_OFF"),
        (plain, "calculator", "offered", "TOOL_SWITCHED_OFF"),
    ]
    assert all(c.after_detail for c in report.changed), "the new reason says why"
    assert [(c.decision_id, c.call_id, c.reason) for c in report.calls_now_blocked] == [
        (notes, "call_2", "TOOL_SWITCHED_OFF")
    ]
    assert report.providers_now_refused == () and report.providers_now_allowed == ()
    assert refused not in {c.decision_id for c in report.changed}


async def test_replay_finds_a_provider_the_chat_would_refuse_between_rounds_and_one_it_allows(
    example_tools: ModuleType, server: ProviderServer, tmp_path: Path
) -> None:
    policy = load_policy(org=[ORGANIZATION], tools=_tools(example_tools))
    _, records = await _recorded_log(policy, server, tmp_path)
    candidate = load_policy(
        org=[_organization(tmp_path, "swapped-kinds", *SWAPPED_KINDS)],
        tools=_tools(example_tools),
    )
    report = replay(records, candidate)

    notes, _plain, refused = (r.decision_id for r in records)
    assert [(c.decision_id, c.call_id, c.reason) for c in report.calls_now_blocked] == [
        (notes, "call_2", "PROVIDER_REFUSED")
    ], "after the notes (HIGH) a MEDIUM provider is refused before round 2"
    assert "before round 2" in report.calls_now_blocked[0].detail
    assert [(c.decision_id, c.before, c.after) for c in report.providers_now_allowed] == [
        (refused, "refused", "allowed")
    ]
    assert report.providers_now_refused == ()


async def test_policy_replay_prints_the_flips_as_json_and_fails_on_change(
    example_tools: ModuleType, server: ProviderServer, tmp_path: Path
) -> None:
    policy = load_policy(org=[ORGANIZATION], tools=_tools(example_tools))
    log, records = await _recorded_log(policy, server, tmp_path)
    candidate = _organization(tmp_path, "no-calculator", DISABLE_CALCULATOR)
    tools_file = str(ROOT / "examples" / "clock_tool.py")
    command = [sys.executable, "-m", "policy.cli", "replay", str(log), "--tools-file", tools_file]
    done = subprocess.run(
        [*command, "--org", str(candidate), "-f", "json", "--fail-on-change"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    document = json.loads(done.stdout)
    assert document["decisions"] == 3
    assert list(document) == [
        "decisions",
        "changed",
        "calls_now_blocked",
        "providers_now_refused",
        "providers_now_allowed",
        "approvals_changed",
    ], "the contract's keys first, then the providers' flips, then the approvals'"
    changed = [
        "decision_id",
        "tool_id",
        "before",
        "after",
        "before_detail",
        "after_detail",
        "subject",
    ]
    assert document["changed"] and all(list(c) == changed for c in document["changed"])
    blocked = [
        "decision_id",
        "call_id",
        "tool_id",
        "status_before",
        "reason",
        "detail",
        "subject",
    ]
    assert all(list(c) == blocked for c in document["calls_now_blocked"]), (
        "as docs/developers/audit-and-tracing.md shows"
    )
    assert {
        (c["decision_id"], c["tool_id"], c["before"], c["after"]) for c in document["changed"]
    } >= {
        (records[0].decision_id, "calculator", "offered", "TOOL_SWITCHED_OFF"),
        (records[1].decision_id, "calculator", "offered", "TOOL_SWITCHED_OFF"),
    }
    assert [(c["call_id"], c["reason"]) for c in document["calls_now_blocked"]] == [
        ("call_1", "NOT_AVAILABLE_HERE"),
        ("call_2", "TOOL_SWITCHED_OFF"),
    ], "the app's internal_notes is not among the tools the command was given"

    table = run_policy([*command[3:], "--org", str(candidate)])
    assert table.returncode == 0, table.stderr
    assert "TOOL_SWITCHED_OFF" in table.stdout and "call call_2 (calculator)" in table.stdout

    (tmp_path / "bad.jsonl").write_text('{"decision_id": 1}\n')
    bad = run_policy(["replay", str(tmp_path / "bad.jsonl"), "--org", str(candidate)])
    assert bad.returncode == 1 and "bad.jsonl:1: not a decision record" in bad.stderr
    assert "Traceback" not in bad.stderr
    no_side = run_policy(
        ["replay", str(log)],
        env={k: v for k, v in __import__("os").environ.items() if not k.startswith("TOOLPOLICY_")},
    )
    assert no_side.returncode == 2 and "--org" in no_side.stderr


async def test_replay_finds_a_chat_whose_provider_would_now_be_refused_before_the_request(
    example_tools: ModuleType, server: ProviderServer, tmp_path: Path
) -> None:
    """The notes (HIGH) tighten the chat; its next answer on vLLM starts under HIGH, which the
    candidate's vLLM (now a MEDIUM cloud provider) no longer meets."""
    policy = load_policy(org=[ORGANIZATION], tools=_tools(example_tools))
    log = tmp_path / "decisions.jsonl"
    chat = Chat.open("notes", SqliteChatStore(tmp_path / "chats.sqlite3"))
    vllm = organization_provider(policy, VLLM_ID, server)
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply(chat_text("Noted.")),
        Reply(chat_text("Still noted.")),
    )
    async with ChatRuntime(policy, decision_log=JsonLinesSink(log)) as runtime:
        for selection in (["internal_notes"], []):
            async with client(vllm) as provider_client:
                async for _ in runtime.respond(
                    chat, vllm, [QUESTION], selected_tool_ids=selection, client=provider_client
                ):
                    pass
    first, second = read_decision_log(log)
    assert second.chat_requirements.before.provider_confidence == "HIGH"

    candidate = load_policy(
        org=[_organization(tmp_path, "swapped-kinds", *SWAPPED_KINDS)],
        tools=_tools(example_tools),
    )
    report = replay([first, second], candidate)

    assert [(c.decision_id, c.before, c.after) for c in report.providers_now_refused] == [
        (second.decision_id, "allowed", "refused before the request")
    ]
    (refused,) = report.providers_now_refused
    assert refused.chat_id == "notes" and refused.provider_id == VLLM_ID
    assert "HIGH" in refused.detail, refused.detail
    assert report.changed == () and report.calls_now_blocked == ()
    assert report.providers_now_allowed == ()

    answer_only = tmp_path / "answer-only.jsonl"
    answer_only.write_text(log.read_text().splitlines()[1] + "\n")
    unchanged = run_policy(
        [
            "replay",
            str(answer_only),
            "--org",
            str(ORGANIZATION),
            "-f",
            "json",
            "--fail-on-change",
        ]
    )
    assert unchanged.returncode == 0, unchanged.stderr
    assert json.loads(unchanged.stdout) == {
        "decisions": 1,
        "changed": [],
        "calls_now_blocked": [],
        "providers_now_refused": [],
        "providers_now_allowed": [],
        "approvals_changed": [],
    }, "nothing flips under the configuration that decided: --fail-on-change passes"
