"""W3C trace context reaches an MCP server: the `tools/call` a traced answer makes carries the
`traceparent` of its `execute_tool` span in `_meta` (real stdio MCP server, real provider loop)."""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from policy import load_policy
from runtime import Chat, ChatMessage, ChatRuntime, Role
from runtime.chat import MemoryChatStore
from tests.e2e._kit import at_loopback, client
from tests.mcp_tools.test_mcp import write_org
from tests.servers.provider_scripts import (
    responses_call,
    responses_completed,
    responses_message,
    responses_text,
)
from tests.servers.provider_server import Reply, running_provider_server


async def test_an_mcp_call_carries_the_trace_of_its_tool_span(tmp_path: Path) -> None:
    state = tmp_path / "server-state.json"
    state.write_text("{}", encoding="utf-8")
    policy = load_policy(org=[write_org(tmp_path / "org", state)])
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    with running_provider_server() as server:
        server.queue(
            Reply(
                [
                    responses_completed(
                        [responses_call("c1", "tickets__search_tickets", '{"query":"vpn"}')]
                    )
                ]
            ),
            Reply([*responses_text("Ticket 12."), responses_completed([responses_message("T")])]),
        )
        provider = at_loopback(policy.providers[0], server)
        chat = Chat.open("c", MemoryChatStore())
        async with (
            ChatRuntime(policy, tracer_provider=tracing) as runtime,
            client(provider) as provider_client,
        ):
            async for _ in runtime.respond(
                chat,
                provider,
                [ChatMessage(Role.USER, "Any VPN tickets?")],
                selected_tool_ids=["tickets__search_tickets"],
                client=provider_client,
            ):
                pass

    (tool_span,) = [
        s for s in exporter.get_finished_spans() if s.name == "execute_tool tickets__search_tickets"
    ]
    (received,) = [json.loads(line) for line in Path(f"{state}.traces").read_text().splitlines()]
    version, trace_id, parent_id, _flags = received["traceparent"].split("-")
    assert version == "00" and received["tool"] == "search_tickets"
    assert trace_id == f"{tool_span.context.trace_id:032x}"
    assert parent_id == f"{tool_span.context.span_id:016x}", "the tool's span is the parent"
