"""A sensitive argument's value, whatever its JSON type, stays out of everything an app shows or
keeps: every event (its repr and its JSON, the final answer's `request_texts` included), every
span and every decision-log line, through a real `respond` against the loopback provider. Only
the provider, which the model wrote it for, gets it back."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from policy import load_policy
from policy.definitions import ToolDefinition, ToolFunction
from policy.redaction import MASK
from policy.tools import DefinedTool
from policy.vocabulary import ToolOutboundData
from runtime import Chat, ChatMessage, ChatRuntime, FinalAnswer, Role
from runtime.decision_log import JsonLinesSink
from runtime.execution import ToolExecutionContext, ToolExecutionResult
from runtime.tools import builtin_executable_tools
from tests.e2e._kit import ORGANIZATION, VLLM_ID, client, organization_provider
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply

WORD = "canary-employee-Bob-5b1e"
NUMBER = 4111222233334444
NESTED_WORD = "canary-nested-Alice-93c0"
NESTED_NUMBER = 90817263
QUERY = "canary-salary-list-7f2a"
CANARIES = (WORD, str(NUMBER), NESTED_WORD, str(NESTED_NUMBER), QUERY)


class HrLookupTool(DefinedTool):
    """An app's tool whose `employee` argument is sensitive and which, as careless tools do,
    quotes it in its result and in its error."""

    def __init__(self) -> None:
        super().__init__(
            ToolDefinition(
                id="hr_lookup",
                implementation_key="hr_lookup",
                function=ToolFunction(name="hr_lookup", description_for_llm="Look up a person."),
                effects=("PRIVATE_DATA",),
            ),
            display_name="HR lookup",
            outbound_data=ToolOutboundData.NONE,
        )

    @property
    def sensitive_trace_argument_names(self) -> frozenset[str]:
        return frozenset({"employee"})

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        employee = arguments["employee"]
        if isinstance(employee, dict):
            raise LookupError(f"no record matches {json.dumps(employee)}")
        return ToolExecutionResult(
            text_content=f"{employee} is on leave.", json_content={"employee": employee}
        )


def _leaks(text: str) -> list[str]:
    return [canary for canary in CANARIES if canary in text]


async def test_a_sensitive_value_of_any_json_type_is_in_no_event_span_or_decision_log(
    example_tools: ModuleType,
    chat: Chat,
    server: ProviderServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    tools = [*builtin_executable_tools(), *example_tools.create_tools(), HrLookupTool()]
    policy = load_policy(org=[ORGANIZATION], tools=tools)
    assert not policy.errors, policy.errors
    calls = [
        ("hr_lookup", {"employee": WORD}),
        ("hr_lookup", {"employee": NUMBER}),
        ("hr_lookup", {"employee": {"name": NESTED_WORD, "badges": [NESTED_NUMBER]}}),
        ("search_confluence", {"query": QUERY, "limit": 3}),  # known, not offered
    ]
    server.queue(
        Reply(
            [chat_call(i, f"call_{i}", name, json.dumps(a)) for i, (name, a) in enumerate(calls)]
        ),
        Reply(chat_text("Two of them are on leave.")),
        Reply(chat_text("Nothing else.")),
    )
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    log = tmp_path / "decisions.jsonl"
    vllm = organization_provider(policy, VLLM_ID, server)
    events: list[Any] = []
    async with (
        client(vllm) as provider_client,
        ChatRuntime(policy, tracer_provider=tracing, decision_log=JsonLinesSink(log)) as runtime,
    ):
        for question in ("Who is on leave?", "Anyone else?"):
            async for event in runtime.respond(
                chat,
                vllm,
                [ChatMessage(Role.USER, question)],
                selected_tool_ids=["hr_lookup"],
                client=provider_client,
            ):
                events.append(event)

    for event in events:
        shown = json.dumps(dataclasses.asdict(event), default=str, ensure_ascii=False)
        assert _leaks(repr(event)) == [] and _leaks(shown) == [], type(event).__name__
    (final, _) = [e for e in events if isinstance(e, FinalAnswer)]
    assert final.request_texts and any(MASK in text for text in final.request_texts)

    spans = exporter.get_finished_spans()
    assert spans
    for span in spans:
        assert _leaks(span.to_json()) == [], span.name

    lines = log.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and _leaks("\n".join(lines)) == []
    statuses = [(c["tool_id"], c["status"]) for c in json.loads(lines[0])["calls"]]
    assert statuses == [
        ("hr_lookup", "SUCCESS"),
        ("hr_lookup", "SUCCESS"),
        ("hr_lookup", "ERROR"),
        ("search_confluence", "BLOCKED"),
    ]
    assert _leaks("\n".join(r.getMessage() for r in caplog.records)) == []

    sent = json.dumps(server.bodies[1]["messages"], ensure_ascii=False)
    assert _leaks(sent) == list(CANARIES), "the model reads back what it wrote"


async def test_a_sensitive_value_quoted_in_another_argument_is_masked_there_too(
    example_tools: ModuleType,
    chat: Chat,
    server: ProviderServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`employee` is sensitive, `note` is not, and the model quotes the employee in the note, as
    written and percent-encoded: the note is shown with the value masked in every event, span,
    decision-log line (content kept) and log record, and its other words stay readable."""
    from urllib.parse import quote

    caplog.set_level(logging.DEBUG)
    secret = "canary pass/hunter2-61d4"
    note = f"my password is {secret}, in a link: /reset?p={quote(secret + '&x', safe='')}"
    policy = load_policy(org=[ORGANIZATION], tools=[*builtin_executable_tools(), HrLookupTool()])
    server.queue(
        Reply(
            [chat_call(0, "call_0", "hr_lookup", json.dumps({"employee": secret, "note": note}))]
        ),
        Reply(chat_text("Done.")),
    )
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    log = tmp_path / "decisions.jsonl"
    vllm = organization_provider(policy, VLLM_ID, server)
    events: list[Any] = []
    async with (
        client(vllm) as provider_client,
        ChatRuntime(
            policy,
            tracer_provider=tracing,
            decision_log=JsonLinesSink(log),
            include_content=True,
        ) as runtime,
    ):
        async for event in runtime.respond(
            chat,
            vllm,
            [ChatMessage(Role.USER, "Reset it.")],
            selected_tool_ids=["hr_lookup"],
            client=provider_client,
        ):
            events.append(event)

    spellings = (secret, quote(secret, safe=""), "hunter2")
    shown = [repr(e) + json.dumps(dataclasses.asdict(e), default=str) for e in events]
    shown += [span.to_json() for span in exporter.get_finished_spans()]
    shown += [log.read_text(encoding="utf-8"), *(r.getMessage() for r in caplog.records)]
    assert [s for s in spellings for text in shown if s in text] == []
    (line,) = log.read_text(encoding="utf-8").splitlines()
    (call,) = json.loads(line)["calls"]
    assert call["status"] == "SUCCESS"
    assert call["arguments"]["employee"] == MASK
    assert call["arguments"]["note"].startswith(f"my password is {MASK}, in a link: /reset?p=")
    started = next(e for e in events if type(e).__name__ == "ToolCallStarted")
    assert started.arguments["note"] == call["arguments"]["note"]
