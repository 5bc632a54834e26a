"""Benchmark: what the decision log and OpenTelemetry add to a response, and replay throughput.

    .venv/bin/python bench/decision_log.py [--conversations N] [--records N]

In one run, `ChatRuntime.respond` answers the recorded two-round exchange of
bench/loop_overhead.py from memory (no socket, so only our CPU counts) and the median process CPU
time per round is reported for:

- plain: no decision log, no tracer provider configured;
- JSONL sink: `decision_log=JsonLinesSink(tmp file)` (the queue's writer thread counts too);
- no-op tracer: `tracer_provider=NoOpTracerProvider()` (toolpolicy builds no span);
- OTel on: the SDK's `TracerProvider` with a `BatchSpanProcessor` over an exporter that drops
  the spans (span building and processing, no export I/O).

The variants take turns in slices of the run, so a busy machine slows them alike.

Overhead is each figure against plain (target: ≤ 5% for the JSONL sink and for OTel, ≈ 0 for the
no-op tracer). Then `runtime.replay` re-decides N records that each selected 100 tools under the
same policy (target ≥ 20,000 decisions/s). Needs the `[otel]` extra for the OTel figure. This is
not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from loop_overhead import (
    ROOT,
    TOOL_NAME,
    _cpu_per_round,
    _our_setup,
    _recorded_client,
)

TOOL_COUNT = 100


def measure(count: int, variants: dict[str, dict[str, Any]], passes: int = 6) -> dict[str, float]:
    """Median CPU µs per round of `respond` from memory for each variant (ChatRuntime keyword
    arguments), the variants taking turns in `passes` slices so drift hits them alike."""
    from runtime import Chat, ChatMessage, ChatRuntime, FinalAnswer, MemoryChatStore, Role

    _, provider, policy = _our_setup("http://127.0.0.1:9/v1")
    runtimes = {name: ChatRuntime(policy, **options) for name, options in variants.items()}
    question = [ChatMessage(Role.USER, "What is 6 * 7?")]
    store = MemoryChatStore()
    samples: dict[str, list[float]] = {name: [] for name in variants}

    async def run() -> None:
        client = _recorded_client(provider)
        number = 0
        try:
            for _ in range(passes):
                for name, assistant in runtimes.items():

                    async def conversation(assistant: Any = assistant) -> None:
                        nonlocal number
                        number += 1
                        chat = Chat.open(f"bench-{number}", store)
                        async for event in assistant.respond(
                            chat, provider, question, selected_tool_ids=[TOOL_NAME], client=client
                        ):
                            if isinstance(event, FinalAnswer):
                                assert event.text.startswith("word0"), event

                    samples[name] += await _cpu_per_round(conversation, count // passes)
        finally:
            await client.aclose()
            for assistant in runtimes.values():
                await assistant.aclose()

    asyncio.run(run())
    return {name: statistics.median(values) for name, values in samples.items()}


def _dropping_exporter() -> Any:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    return Dropping()


def _many_tools() -> list[Any]:
    from policy.definitions import ToolDefinition, ToolFunction
    from policy.tools import DefinedTool
    from policy.vocabulary import ToolOutboundData

    return [
        DefinedTool(
            ToolDefinition(
                id=f"tool_{n:03}",
                implementation_key=f"tool_{n:03}",
                function=ToolFunction(name=f"tool_{n:03}", description_for_llm="A bench tool."),
            ),
            outbound_data=ToolOutboundData.NONE if n % 2 else ToolOutboundData.CONFIGURED_SERVICE,
        )
        for n in range(TOOL_COUNT)
    ]


def measure_replay(records: int) -> dict[str, float]:
    """Decisions per CPU second re-deciding `records` logged requests of 100 selected tools
    each, without and with reading the JSON lines."""
    from policy import load_policy
    from policy.decision_record import DecisionRecord
    from runtime.replay import replay

    tools = _many_tools()
    policy = load_policy(org=[ROOT / "examples" / "organization"], tools=tools)
    providers = policy.providers
    ids = [t.definition.id for t in tools]
    lines = []
    for n in range(records):
        provider = providers[n % len(providers)]
        decisions = [policy.offer_decision(i, provider) for i in ids]
        lines.append(
            json.dumps(
                {
                    "decision_id": f"bench-{n}",
                    "timestamp": "2026-01-01T00:00:00Z",
                    "chat_id": f"chat-{n % 50}",
                    "component": "CHAT",
                    "provider": {
                        "id": provider.id,
                        "kind": provider.kind.value,
                        "host": provider.host,
                        "model": provider.model,
                        "confidence": "HIGH",
                    },
                    "selected_tool_ids": ids,
                    "offered": [d.tool_id for d in decisions if d.offered],
                    "left_out": [
                        {"tool_id": d.tool_id, "reason": d.reason.value}
                        for d in decisions
                        if not d.offered
                    ],
                    "outcome": {"stop_reason": "final_answer"},
                }
            )
        )
    parsed = [DecisionRecord.model_validate_json(line) for line in lines]
    started = time.process_time()
    report = replay(parsed, policy)
    elapsed = time.process_time() - started
    assert report.decisions == records and not report.has_changes
    parse_started = time.process_time()
    for line in lines:
        DecisionRecord.model_validate_json(line)
    parsing = time.process_time() - parse_started
    return {
        "records": records,
        "tools_per_record": TOOL_COUNT,
        "replay_decisions_per_s": records / elapsed,
        "replay_with_parsing_decisions_per_s": records / (elapsed + parsing),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--conversations", type=int, default=300)
    parser.add_argument("--records", type=int, default=5000)
    args = parser.parse_args()

    from opentelemetry import trace

    from runtime import JsonLinesSink

    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "decisions.jsonl"
        variants: dict[str, dict[str, Any]] = {
            "plain": {},
            "jsonl": {"decision_log": JsonLinesSink(log, max_bytes=1_000_000_000)},
            "noop_tracer": {"tracer_provider": trace.NoOpTracerProvider()},
        }
        sdk = None
        try:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            figures["otel"] = "not measured: pip install 'toolpolicy[otel]'"
        else:
            sdk = TracerProvider()
            sdk.add_span_processor(BatchSpanProcessor(_dropping_exporter()))
            variants["otel"] = {"tracer_provider": sdk}
        medians = measure(args.conversations, variants)
        figures["jsonl_records_written"] = sum(1 for _ in log.open())
        if sdk is not None:
            sdk.shutdown()
    plain = medians.pop("plain")
    figures["plain_us_per_round"] = round(plain, 1)
    for name, value in medians.items():
        figures[f"{name}_us_per_round"] = round(value, 1)
        figures[f"{name}_overhead_ratio"] = round((value - plain) / plain, 4)

    figures.update(measure_replay(args.records))
    for key, value in figures.items():
        print(f"{key:40} {value}")
    print()
    print("targets: jsonl and otel overhead <= 0.05, no-op tracer ~ 0, replay >= 20,000/s")


if __name__ == "__main__":
    main()
