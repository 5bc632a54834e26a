"""Who asked, seen everywhere: every decision record carries the signed-in person (a hash of
their `sub` unless `DataGateway.RecordSubject` says SUBJECT) and their groups; `policy log summary
--by subject` counts per person; `policy replay` re-decides each person's records with their
groups' configurations; `policy explain --as --groups` shows which configurations applied and
why. Real Lua, the example tools, the loopback provider, `policy` as a user runs it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from policy import Caller, Policy, load_policy
from policy.decision_record import DecisionRecord
from runtime import Chat, ChatRuntime
from runtime.chat import MemoryChatStore
from runtime.decision_log import JsonLinesSink
from runtime.replay import replay
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
from tests.e2e.test_people_runtime import (
    ALICE,
    BOB,
    ENGINEERING_ID,
    people_organization,
    write_plugin,
)
from tests.servers.cli_runner import run_policy
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply

EXPRESSION = json.dumps({"expression": "6*7"})
TOOLS_FILE = str(ROOT / "examples" / "clock_tool.py")


def _policy(org: Path, *extra: Path) -> Policy:
    tools = [*builtin_executable_tools(), *load_example_tools().create_tools()]
    loaded = load_policy(org=[ORGANIZATION, org, *extra], tools=tools)
    assert not loaded.errors, loaded.errors
    return loaded


async def _ask(runtime: ChatRuntime, caller: Caller | None, server: ProviderServer) -> None:
    """One answer in which the model calls the calculator once."""
    server.queue(Reply([chat_call(0, "call_1", "calculator", EXPRESSION)]), Reply(chat_text("42.")))
    person = runtime if caller is None else runtime.for_caller(caller)
    provider = organization_provider(person.policy, VLLM_ID, server)
    chat = Chat.open("c", MemoryChatStore(), caller=caller)
    async with client(provider) as provider_client:
        async for _ in person.respond(
            chat, provider, [QUESTION], selected_tool_ids=["calculator"], client=provider_client
        ):
            pass


async def _log(policy: Policy, server: ProviderServer, path: Path) -> list[DecisionRecord]:
    async with ChatRuntime(policy, decision_log=JsonLinesSink(path)) as runtime:
        for caller in (ALICE, BOB, ALICE, None):
            await _ask(runtime, caller, server)
    lines = path.read_text(encoding="utf-8").splitlines()
    return [DecisionRecord.model_validate_json(line) for line in lines]


async def test_records_name_the_person_by_a_hash_and_their_groups(
    tmp_path: Path, server: ProviderServer
) -> None:
    records = await _log(_policy(people_organization(tmp_path)), server, tmp_path / "d.jsonl")
    alice = "sha256:" + hashlib.sha256(ALICE.subject.encode()).hexdigest()
    assert [(r.subject, r.groups) for r in records] == [
        (alice, ["engineering", "staff"]),
        ("sha256:" + hashlib.sha256(BOB.subject.encode()).hexdigest(), ["finance"]),
        (alice, ["engineering", "staff"]),
        ("", []),
    ]
    text = (tmp_path / "d.jsonl").read_text(encoding="utf-8")
    assert ALICE.subject not in text and BOB.subject not in text, "only the hash is kept"

    summary = run_policy(["log", "summary", str(tmp_path / "d.jsonl"), "--by", "subject"])
    assert summary.returncode == 0, summary.stderr
    rows = run_policy(
        ["log", "summary", str(tmp_path / "d.jsonl"), "--by", "subject", "-f", "json"]
    )
    counted = {
        (row["subject"], row["what"], row["value"]): row["count"] for row in json.loads(rows.stdout)
    }
    assert counted[alice, "decisions", ""] == 2
    assert counted[alice, "call SUCCESS", "calculator"] == 2
    assert counted["(no sign-in)", "decisions", ""] == 1
    assert summary.stdout.index(alice) < summary.stdout.index("(no sign-in)"), "most active first"


async def test_records_name_the_sub_itself_when_the_organization_says_so(
    tmp_path: Path, server: ProviderServer
) -> None:
    named = tmp_path / "named"
    write_plugin(
        named / "subject",
        "9a6c0b2d-1e75-4f80-8b3c-2d1e0f9a8b76",
        'CONFIG["SETTINGS"]["DataGateway.RecordSubject"] = "SUBJECT"\n',
        "Subjects",
    )
    records = await _log(
        _policy(people_organization(tmp_path), named), server, tmp_path / "d.jsonl"
    )
    assert [r.subject for r in records] == [ALICE.subject, BOB.subject, ALICE.subject, ""]


async def test_replay_decides_each_persons_records_with_their_groups_configurations(
    tmp_path: Path, server: ProviderServer
) -> None:
    log = tmp_path / "d.jsonl"
    records = await _log(_policy(people_organization(tmp_path)), server, log)
    candidate_org = tmp_path / "candidate"
    people_organization(candidate_org)
    engineering = candidate_org / "people" / "engineering" / "plugin.lua"
    engineering.write_text(
        engineering.read_text(encoding="utf-8").replace('"current_time"', '"calculator"'),
        encoding="utf-8",
    )
    candidate = _policy(candidate_org / "people")
    report = replay(records, candidate)
    flipped = {(c.decision_id, c.tool_id, c.after) for c in report.changed}
    alices = [r.decision_id for r in records if r.groups == ["engineering", "staff"]]
    assert flipped == {(d, "calculator", "TOOL_SWITCHED_OFF") for d in alices}, (
        "only the engineering member's requests flip (one without a person is a person in no group)"
    )
    assert {c.subject for c in report.calls_now_blocked} == {records[0].subject}

    replayed = run_policy(
        ["replay", str(log), "--org", str(ORGANIZATION), "--org", str(candidate_org / "people"),
         "--tools-file", TOOLS_FILE, "-f", "json"]
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    document: dict[str, Any] = json.loads(replayed.stdout)
    assert {c["subject"] for c in document["changed"]} == {records[0].subject}


def test_explain_as_a_person_shows_which_configurations_applied_and_why(tmp_path: Path) -> None:
    org = people_organization(tmp_path)
    args = ["explain", "calculator", "--org", str(ORGANIZATION), "--org", str(org)]
    args += ["--tools-file", TOOLS_FILE, "--provider", VLLM_ID]
    as_bob = run_policy([*args, "--as", BOB.subject, "--groups", "finance,staff"])
    assert as_bob.returncode == 0, as_bob.stderr
    assert f"Decided as {BOB.subject} (groups: finance, staff)" in as_bob.stdout
    assert "applies   Finance" in as_bob.stdout and 'group "finance"' in as_bob.stdout
    assert "left out  Engineering" in as_bob.stdout and 'only for "engineering"' in as_bob.stdout
    assert "no configuration of their own for staff" in as_bob.stdout
    assert "NOT OFFERED: TOOL_SWITCHED_OFF" in as_bob.stdout, "finance switches it off"

    as_alice = run_policy([*args, "--as", ALICE.subject, "--groups", "engineering", "-f", "json"])
    document = json.loads(as_alice.stdout)
    assert document["caller"] == {"subject": ALICE.subject, "groups": ["engineering"]}
    applied = {c["id"]: c for c in document["configurations"]}
    assert applied[ENGINEERING_ID]["applies"] and "plugin.lua:" in applied[ENGINEERING_ID]["why"]
    assert document["offered"] is True

    blank = run_policy([*args, "--as", " "])
    assert blank.returncode == 2 and "--as" in blank.stderr
