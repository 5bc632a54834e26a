"""OpenTelemetry spans of real `respond` runs against the loopback provider: captured with the
SDK's in-memory exporter, and exported over OTLP/HTTP to a loopback collector."""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import StatusCode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from policy import Policy, load_policy
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool
from policy.vocabulary import ToolOutboundData
from runtime import Chat, ChatMessage, ChatRuntime, ProviderError, Role
from runtime.decision_log import CallbackSink
from runtime.execution import ToolExecutionContext, ToolExecutionResult
from runtime.tracing import tracer
from tests.e2e._kit import API_KEY, ORGANIZATION, VLLM_ID, client, organization_provider
from tests.servers.loopback import running_app
from tests.servers.otlp_server import running_otlp_server
from tests.servers.provider_scripts import chat_call, chat_text, chat_usage
from tests.servers.provider_server import ProviderServer, Reply

CANARY = "canary-user-text-7d2f"
QUESTION = ChatMessage(Role.USER, f"What is 6 * 7? {CANARY}")


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def _respond(
    policy: Policy,
    chat: Chat,
    server: ProviderServer,
    provider: TracerProvider,
    selected: tuple[str, ...] = ("calculator", "internal_notes", "semantic_search"),
    **runtime: Any,
) -> None:
    vllm = organization_provider(policy, VLLM_ID, server)
    async with (
        client(vllm) as provider_client,
        ChatRuntime(policy, tracer_provider=provider, **runtime) as assistant,
    ):
        async for _ in assistant.respond(
            chat, vllm, [QUESTION], selected_tool_ids=selected, client=provider_client
        ):
            pass


def _two_rounds(server: ProviderServer) -> None:
    server.queue(
        Reply(
            [
                chat_call(0, "call_1", "calculator", '{"expression":"6 * 7"}'),
                chat_call(1, "call_2", "calculator", '{"expression":"__import__(1)"}'),
                chat_usage(90),
            ]
        ),
        Reply([*chat_text("It is 42."), chat_usage(140)]),
    )


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


async def test_a_response_is_one_span_with_a_child_per_round_and_per_tool_call(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    _two_rounds(server)
    provider, exporter = _provider()
    kept: list[Any] = []
    await _respond(policy, chat, server, provider, decision_log=CallbackSink(kept.append))

    spans = exporter.get_finished_spans()
    named = _by_name(spans)
    (root,) = named["invoke_agent toolpolicy"]
    rounds = named[f"chat {policy.provider(VLLM_ID).model}"]  # type: ignore[union-attr]
    tools = named["execute_tool calculator"]
    assert len(spans) == 1 + 2 + 2 and len(rounds) == 2 and len(tools) == 2
    assert all(
        s.parent is not None and s.parent.span_id == root.context.span_id
        for s in spans
        if s is not root
    )
    assert len({s.context.trace_id for s in spans}) == 1

    attributes = dict(root.attributes or {})
    (record,) = kept
    assert attributes["toolpolicy.decision_id"] == record.decision_id
    assert attributes["toolpolicy.configuration.revision"] == policy.configuration.revision
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.conversation.id"] == chat.id
    assert list(attributes["toolpolicy.tools.offered"]) == ["calculator", "internal_notes"]
    assert any(r.startswith("semantic_search: ") for r in attributes["toolpolicy.tools.left_out"])
    assert attributes["gen_ai.usage.input_tokens"] == 90
    assert attributes["gen_ai.usage.output_tokens"] == 5

    first, second = sorted(rounds, key=lambda s: s.start_time or 0)
    assert first.attributes["gen_ai.operation.name"] == "chat"  # type: ignore[index]
    assert first.attributes["gen_ai.provider.name"] == "self_hosted"  # type: ignore[index]
    assert first.attributes["gen_ai.request.model"]  # type: ignore[index]
    assert first.attributes["gen_ai.usage.input_tokens"] == 90  # type: ignore[index]
    assert second.attributes["gen_ai.usage.input_tokens"] == 140  # type: ignore[index]
    assert second.attributes["gen_ai.usage.output_tokens"] == 5  # type: ignore[index]

    ok, failed = sorted(tools, key=lambda s: s.start_time or 0)
    assert ok.attributes["gen_ai.operation.name"] == "execute_tool"  # type: ignore[index]
    assert ok.attributes["gen_ai.tool.name"] == "calculator"  # type: ignore[index]
    assert ok.attributes["gen_ai.tool.call.id"] == "call_1"  # type: ignore[index]
    assert ok.attributes["toolpolicy.tool.status"] == "SUCCESS"  # type: ignore[index]
    assert ok.status.status_code is not StatusCode.ERROR
    assert failed.attributes["toolpolicy.tool.status"] == "ERROR"  # type: ignore[index]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "ERROR"  # type: ignore[index]

    dumped = json.dumps([json.loads(s.to_json()) for s in spans])
    assert API_KEY not in dumped and CANARY not in dumped
    assert "6 * 7" not in dumped and "It is 42" not in dumped, "no arguments, results, answers"


async def test_a_provider_failure_ends_the_spans_as_errors(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    server.queue(Reply(chat_text("Let me ", "check"), break_after_events=True))
    provider, exporter = _provider()
    with pytest.raises(ProviderError):
        await _respond(policy, chat, server, provider)

    named = _by_name(exporter.get_finished_spans())
    (root,) = named["invoke_agent toolpolicy"]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes["error.type"] == "ProviderUnavailable"  # type: ignore[index]
    assert all(s.end_time for spans in named.values() for s in spans), "every span ended"


async def test_spans_reach_a_loopback_collector_over_otlp_http(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    _two_rounds(server)
    with running_otlp_server() as collector:
        provider = TracerProvider()
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector.endpoint))
        )
        await _respond(policy, chat, server, provider)
        provider.shutdown()

    names = sorted(s.name for s in collector.spans)
    assert names.count("execute_tool calculator") == 2 and "invoke_agent toolpolicy" in names
    (root,) = [s for s in collector.spans if s.name == "invoke_agent toolpolicy"]
    assert root.attributes["toolpolicy.configuration.revision"] == policy.configuration.revision
    assert all(s.trace_id == root.trace_id for s in collector.spans)
    tool = next(s for s in collector.spans if s.name == "execute_tool calculator")
    assert tool.parent_span_id == root.span_id and tool.attributes["gen_ai.tool.call.id"]


async def test_a_response_the_sampler_drops_is_answered_and_recorded_without_spans(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    _two_rounds(server)
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    kept: list[Any] = []
    await _respond(policy, chat, server, provider, decision_log=CallbackSink(kept.append))

    assert exporter.get_finished_spans() == ()
    (record,) = kept
    assert [c.status for c in record.calls] == ["SUCCESS", "ERROR"]
    assert record.usage.input_tokens == 90 and record.outcome.stop_reason == "final_answer"


def test_without_a_configured_tracer_provider_nothing_is_traced() -> None:
    from opentelemetry import trace

    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert tracer() is None
    assert tracer(trace.NoOpTracerProvider()) is None
    assert tracer(TracerProvider()) is not None


async def test_records_go_out_as_opentelemetry_log_records_next_to_the_spans(
    policy: Policy, chat: Chat, server: ProviderServer
) -> None:
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    from runtime import OpenTelemetrySink

    _two_rounds(server)
    logs = InMemoryLogRecordExporter()
    logging_provider = LoggerProvider()
    logging_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    provider, exporter = _provider()
    sink = OpenTelemetrySink(logging_provider)
    await _respond(policy, chat, server, provider, decision_log=sink)

    (emitted,) = logs.get_finished_logs()
    log = emitted.log_record
    (root,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent toolpolicy"]
    assert log.event_name == "toolpolicy.decision"
    decision_id = root.attributes["toolpolicy.decision_id"]  # type: ignore[index]
    assert log.attributes["toolpolicy.decision_id"] == decision_id  # type: ignore[index]
    body = log.body
    assert isinstance(body, dict) and body["decision_id"] == decision_id
    assert [c["status"] for c in body["calls"]] == ["SUCCESS", "ERROR"]
    text = json.dumps(body)
    assert API_KEY not in text and CANARY not in text and "It is 42" not in text


class _TicketLookupTool(DefinedTool):
    """An app's HTTP tool instrumented the OpenTelemetry way: it injects the current context
    into its request headers (what an httpx instrumentation does)."""

    def __init__(self, url: str) -> None:
        super().__init__(
            ToolDefinition(
                id="ticket_lookup",
                implementation_key="ticket_lookup",
                function=ToolFunction(name="ticket_lookup", description_for_llm="Find a ticket."),
                effects=("PRIVATE_DATA",),
            ),
            display_name="Ticket lookup",
            outbound_data=ToolOutboundData.NONE,
        )
        self.url = url

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        from opentelemetry.propagate import inject

        headers: dict[str, str] = {}
        inject(headers)
        async with httpx.AsyncClient() as http:
            answer = await http.get(self.url, headers=headers)
        return ToolExecutionResult(text_content=answer.text)


async def test_an_http_tool_sends_the_traceparent_of_its_tool_span(
    example_tools: ModuleType, chat: Chat, server: ProviderServer
) -> None:
    received: list[str] = []

    async def ticket(request: Request) -> PlainTextResponse:
        received.append(request.headers.get("traceparent", ""))
        return PlainTextResponse("Ticket 12: VPN drops.")

    with running_app(Starlette(routes=[Route("/ticket", ticket)])) as tickets:
        tool = _TicketLookupTool(tickets.url("/ticket"))
        policy = load_policy(org=[ORGANIZATION], tools=[*example_tools.create_tools(), tool])
        server.queue(
            Reply([chat_call(0, "call_1", "ticket_lookup", "{}")]),
            Reply(chat_text("Ticket 12.")),
        )
        provider, exporter = _provider()
        await _respond(policy, chat, server, provider, ("ticket_lookup",))

    (tool_span,) = [
        s for s in exporter.get_finished_spans() if s.name == "execute_tool ticket_lookup"
    ]
    (traceparent,) = received
    version, trace_id, parent_id, _flags = traceparent.split("-")
    assert version == "00" and trace_id == f"{tool_span.context.trace_id:032x}"
    assert parent_id == f"{tool_span.context.span_id:016x}", "the tool's span is the parent"
