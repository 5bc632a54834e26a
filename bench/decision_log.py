"""Benchmark: what the decision log and OpenTelemetry add to a response, and replay throughput.

    .venv/bin/python bench/decision_log.py [--conversations N] [--records N] [--instructions]
        [--rates 20000,40000,80000] [--seconds S] [--sustained-only]

In one run, `ChatRuntime.respond` answers the recorded two-round exchange of
bench/loop_overhead.py from memory (no socket, so only our CPU counts) and the median process CPU
time per round is reported for:

- plain: no decision log, no tracer provider configured;
- JSONL sink: `decision_log=JsonLinesSink(tmp file)` (the queue's writer thread counts too);
- no-op tracer: `tracer_provider=NoOpTracerProvider()` (toolpolicy builds no span);
- OTel on: the SDK's `TracerProvider` with a `BatchSpanProcessor` over an exporter that drops
  the spans (span building and processing, no export I/O);
- plain control: plain again, as its own runtime: how far two identical variants land apart in
  the same run (the resolution of every other ratio);
- SDK spans: plain, plus the same SDK making the spans of one answer directly after each answer
  (no toolpolicy code), so the OTel figure splits into what the SDK costs anyone and what is
  ours (`otel_ours_beyond_sdk_spans_ratio`); the SDK floor is the same spans in a tight loop.

The variants take turns in 30 slices of the run (in a rotating order), so a busy machine slows
them alike; a slice's figure is the process CPU it took per round, from its first answer until
its decision log is written and its spans are processed (the writer thread and the span
processor count, not only the answers' own median), and a variant's overhead is the median over
the slices of its ratio to plain in the same slice (target: ≤ 5% for the JSONL sink and for
OTel, ≈ 0 for the no-op tracer). Then `runtime.replay` re-decides N records that each selected
100 tools under the same policy (target ≥ 20,000 decisions/s). With `--instructions` (and
valgrind installed) the plain, JSONL, OTel and SDK-spans variants are also counted in
instructions per round under callgrind, every thread included (user space only: the kernel's
share, such as writing the file, is not counted): steady where the CPU-time ratios move with the
machine's load. Needs the `[otel]` extra for the OTel figure.

Last, the audit trail under load (`--sustained-only` runs only this): the ended record of one
real answer is offered to `QueuedSink(JsonLinesSink(file))` with its defaults (1000 records,
`max_wait` 5 s) at 20k, 40k and 80k records/s (`--rates`) for `--seconds` each, as `respond`
hands records over (`await room()`, then `put`): records/s sustained (from the first offer until
the last line is on disk), records written (all offered: nothing is dropped), how many found the
queue full (each was dropped before back-pressure) or reached the bound, and the wait
back-pressure added per record (median / p99 / max, mean) and per record that found the queue
full. This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
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
    WARMUP,
    _cpu_per_round,
    _our_setup,
    _recorded_client,
)

TOOL_COUNT = 100


def measure(
    count: int, variants: dict[str, dict[str, Any]], passes: int = 30
) -> tuple[dict[str, float], dict[str, float]]:
    """Median CPU µs per round of `respond` from memory for each variant (ChatRuntime keyword
    arguments, plus `after_answer` and `slice_end` callables), and each variant's overhead
    against the first one: the median over `passes` slices of the ratio within a slice of the
    process CPU per round the whole slice took, ending with its decision log written and its
    spans processed (so the background threads' work counts, in the slice that caused it).
    The variants take turns in a rotating order, so drift hits them alike."""
    from runtime import Chat, ChatMessage, ChatRuntime, FinalAnswer, MemoryChatStore, Role

    _, provider, policy = _our_setup("http://127.0.0.1:9/v1")
    runtimes = {
        name: ChatRuntime(
            policy,
            **{k: v for k, v in options.items() if k not in ("after_answer", "slice_end")},
        )
        for name, options in variants.items()
    }
    after_answer = {name: options.get("after_answer") for name, options in variants.items()}
    slice_end = {name: options.get("slice_end") for name, options in variants.items()}
    per_slice = max(count // passes, 5)
    question = [ChatMessage(Role.USER, "What is 6 * 7?")]
    store = MemoryChatStore()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    per_pass: dict[str, list[float]] = {name: [] for name in variants}

    async def run() -> None:
        client = _recorded_client(provider)
        number = 0
        names = list(runtimes)
        try:
            for turn in range(passes):
                for name in names[turn % len(names) :] + names[: turn % len(names)]:
                    assistant = runtimes[name]

                    async def conversation(
                        assistant: Any = assistant, after: Any = after_answer[name]
                    ) -> None:
                        nonlocal number
                        number += 1
                        chat = Chat.open(f"bench-{number}", store)
                        async for event in assistant.respond(
                            chat, provider, question, selected_tool_ids=[TOOL_NAME], client=client
                        ):
                            if isinstance(event, FinalAnswer):
                                assert event.text.startswith("word0"), event
                        if after is not None:
                            after()

                    started = time.process_time()
                    taken = await _cpu_per_round(conversation, per_slice)
                    # what the slice left to background threads is done and counts in it
                    await assistant.flush_decision_log()
                    if slice_end[name] is not None:
                        slice_end[name]()
                    spent = time.process_time() - started
                    samples[name] += taken
                    per_pass[name].append(spent * 1e6 / (2 * (per_slice + WARMUP)))
        finally:
            await client.aclose()
            for assistant in runtimes.values():
                await assistant.aclose()

    asyncio.run(run())
    first = next(iter(variants))
    overhead = {
        name: statistics.median(
            value / base - 1 for value, base in zip(values, per_pass[first], strict=True)
        )
        for name, values in per_pass.items()
        if name != first
    }
    return {name: statistics.median(values) for name, values in samples.items()}, overhead


def answer_spans(tracer: Any) -> None:
    """The spans one two-round answer makes (the response, two rounds, one tool call, nested,
    with as many attributes as ours), made directly through the SDK: what any instrumentation
    pays with the SDK on, ours or not."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    root = tracer.start_span("invoke_agent toolpolicy", attributes=_ROOT_ATTRIBUTES)
    parent = trace.set_span_in_context(root)
    root.set_attribute("toolpolicy.tools.offered", ["calculator"])
    root.set_attribute("toolpolicy.tools.left_out", [])
    for round_number in (1, 2):
        span = tracer.start_span(
            "chat model",
            context=parent,
            kind=trace.SpanKind.CLIENT,
            attributes={"r.a": "x", "r.b": "y", "r.c": "z", "r.d": round_number},
        )
        if round_number == 1:
            tool = tracer.start_span(
                "execute_tool calculator",
                context=parent,
                attributes={"t.a": "x", "t.b": "y", "t.c": "z", "t.d": "w", "t.e": 1},
            )
            token = otel_context.attach(trace.set_span_in_context(tool, parent))
            otel_context.detach(token)
            tool.set_attribute("t.f", "calculator")
            tool.set_attribute("t.g", "SUCCESS")
            tool.end()
        for name in ("u.a", "u.b", "u.c"):
            span.set_attribute(name, 1)
        span.end()
    root.set_attribute("u.a", 1)
    root.set_attribute("u.b", 1)
    root.end()


_ROOT_ATTRIBUTES = {f"a.{n}": "value" for n in range(9)}


def measure_sdk_floor(sdk: Any, count: int) -> float:
    """Median CPU µs per round of `answer_spans` alone, in a tight loop."""
    tracer = sdk.get_tracer("bench-floor")
    samples: list[float] = []
    for number in range(count + 20):
        started = time.process_time()
        answer_spans(tracer)
        if number >= 20:
            samples.append((time.process_time() - started) * 1e6 / 2)
    return statistics.median(samples)


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


def _variants(log: Path) -> tuple[dict[str, dict[str, Any]], Any]:
    """The variants measured (ChatRuntime keyword arguments plus `after_answer` and `slice_end`)
    and the SDK's tracer provider (None without the `[otel]` extra)."""
    from opentelemetry import trace

    from runtime import JsonLinesSink

    variants: dict[str, dict[str, Any]] = {
        "plain": {},
        "jsonl": {"decision_log": JsonLinesSink(log, max_bytes=1_000_000_000)},
        "noop_tracer": {"tracer_provider": trace.NoOpTracerProvider()},
        "plain_control": {},
    }
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        return variants, None
    sdk = TracerProvider()
    sdk.add_span_processor(BatchSpanProcessor(_dropping_exporter()))
    variants["otel"] = {"tracer_provider": sdk, "slice_end": sdk.force_flush}
    floor_tracer = sdk.get_tracer("bench-floor")
    variants["sdk_spans"] = {
        "after_answer": lambda: answer_spans(floor_tracer),
        "slice_end": sdk.force_flush,
    }
    return variants, sdk


_COUNTED = ("plain", "jsonl", "otel", "sdk_spans")
_FEW, _MANY = 10, 110


def _instructions(name: str, answers: int, scratch: Path) -> int:
    """Instructions a process answering `answers` times with one variant executes, every thread
    (the log's writer, the span processor) included."""
    from cold_start import _instructions as counted

    script = str(Path(__file__).resolve())
    command = [sys.executable, script, "--only", name, "--conversations", str(answers)]
    count = counted(command, dict(os.environ), scratch)
    if not count:
        raise RuntimeError(f"callgrind counted nothing for {' '.join(command)}")
    return count


def count_instructions() -> dict[str, float]:
    """Instructions per round of each variant under callgrind: the difference between a process
    answering 110 times and one answering 10 times (each after the same warm-up), so start-up
    and loading cancel out. Independent of the machine's load, where the CPU-time ratios are
    not; under callgrind an answer takes far longer, so the log's writer, waking every 50 ms,
    writes smaller batches than it does at full speed (its per-batch work weighs more)."""
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        per_round = {
            name: (
                _instructions(name, _MANY, Path(folder)) - _instructions(name, _FEW, Path(folder))
            )
            / (2 * (_MANY - _FEW))
            for name in _COUNTED
        }
    plain = per_round["plain"]
    figures["plain_instructions_per_round"] = round(plain)
    for name in _COUNTED[1:]:
        figures[f"{name}_instructions_overhead_ratio"] = round(per_round[name] / plain - 1, 4)
    figures["otel_ours_beyond_sdk_spans_instructions_ratio"] = round(
        (per_round["otel"] - per_round["sdk_spans"]) / plain, 4
    )
    return figures


def _one_ended_answer() -> Any:
    """The ended `DecisionRecorder` of one real two-round answer (a tool call and its result),
    as `respond` hands it to the queue: what the writer thread turns into a line."""
    from runtime import Chat, ChatMessage, ChatRuntime, MemoryChatStore, Role
    from runtime.decision_log import JsonLinesSink, QueuedSink

    class Captured(QueuedSink):
        ended: Any = None

        def put(self, record: Any) -> None:
            self.ended = record

    _, provider, policy = _our_setup("http://127.0.0.1:9/v1")
    captured = Captured(JsonLinesSink(os.devnull))

    async def answer() -> None:
        client = _recorded_client(provider)
        async with ChatRuntime(policy, decision_log=captured) as assistant:
            chat = Chat.open("bench-sustained", MemoryChatStore())
            question = [ChatMessage(Role.USER, "What is 6 * 7?")]
            async for _ in assistant.respond(
                chat, provider, question, selected_tool_ids=[TOOL_NAME], client=client
            ):
                pass
        await client.aclose()

    asyncio.run(answer())
    assert captured.ended is not None
    return captured.ended


async def _offer(
    queued: Any, ended: Any, rate: int, count: int, waits: list[float], full_waits: list[float]
) -> int:
    """Offer `count` records at `rate` per second as `respond` hands them over (`await room()`,
    then `put`), keeping each one's wait (and apart, the waits of those that found the queue
    full); how many found no room within the bound."""
    refused = 0
    started = time.perf_counter()
    offered = 0
    while offered < count:
        due = min(count, int((time.perf_counter() - started) * rate) + 1)
        while offered < due:
            before = time.perf_counter()
            full = queued.failure is not None
            if not await queued.room():
                refused += 1
            waits.append(time.perf_counter() - before)
            if full:
                full_waits.append(waits[-1])
            queued.put(ended)
            offered += 1
        await asyncio.sleep(0)
    return refused


def measure_sustained(rates: list[int], seconds: float) -> dict[str, Any]:
    """Offer ended answers to `QueuedSink(JsonLinesSink(file))` (its defaults: 1000 records,
    `max_wait` 5 s) at each rate for `seconds`, the way `respond` does (`await room()`, then
    `put`), and report the records/s written from the first offer until the last line is on
    disk, how many were written (all of them: nothing is dropped), how many found the queue full
    and waited (each of those was dropped before back-pressure), and the wait it added per record
    (median, p99, max, mean) and per record that found the queue full (median, max)."""
    from runtime.decision_log import JsonLinesSink, QueuedSink

    ended = _one_ended_answer()
    figures: dict[str, Any] = {}
    for rate in rates:
        count = int(rate * seconds)
        with tempfile.TemporaryDirectory() as folder:
            log = Path(folder) / "decisions.jsonl"
            queued = QueuedSink(JsonLinesSink(log, max_bytes=1 << 40))
            waits: list[float] = []
            full_waits: list[float] = []

            started = time.perf_counter()
            refused = asyncio.run(_offer(queued, ended, rate, count, waits, full_waits))
            offered_in = time.perf_counter() - started
            queued.close(timeout=600)
            elapsed = time.perf_counter() - started
            written = sum(1 for _ in log.open("rb"))
        waits.sort()
        key = f"at_{rate // 1000}k_per_s"
        figures[f"{key}_offered"] = count
        figures[f"{key}_written"] = written
        figures[f"{key}_sustained_records_per_s"] = round(written / elapsed)
        figures[f"{key}_accepted_records_per_s"] = round(count / offered_in)
        figures[f"{key}_found_the_queue_full"] = len(full_waits)
        figures[f"{key}_bound_reached"] = refused
        figures[f"{key}_wait_ms_median_p99_max"] = (
            f"{1e3 * waits[len(waits) // 2]:.3f} / {1e3 * waits[int(len(waits) * 0.99)]:.3f}"
            f" / {1e3 * waits[-1]:.1f}"
        )
        figures[f"{key}_wait_ms_mean"] = round(1e3 * sum(waits) / len(waits), 3)
        if full_waits:
            full_waits.sort()
            figures[f"{key}_wait_ms_when_full_median_max"] = (
                f"{1e3 * full_waits[len(full_waits) // 2]:.1f} / {1e3 * full_waits[-1]:.1f}"
            )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--conversations", type=int, default=1500)
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each variant's instructions per round under valgrind's callgrind "
        "(slow; user space only)",
    )
    parser.add_argument("--only", choices=_COUNTED, help=argparse.SUPPRESS)
    parser.add_argument(
        "--rates",
        default="20000,40000,80000",
        help="offered records/s for the sustained-rate figures (comma-separated)",
    )
    parser.add_argument("--seconds", type=float, default=2.0, help="offering time per rate")
    parser.add_argument(
        "--sustained-only", action="store_true", help="only the sustained-rate figures"
    )
    args = parser.parse_args()

    figures: dict[str, Any] = {}
    rates = [int(rate) for rate in args.rates.split(",")]
    if args.sustained_only:
        for key, value in measure_sustained(rates, args.seconds).items():
            print(f"{key:48} {value}")
        return
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "decisions.jsonl"
        variants, sdk = _variants(log)
        if args.only:  # one variant's answers, for callgrind to count
            measure(args.conversations, {args.only: variants[args.only]}, passes=1)
            return
        if sdk is None:
            figures["otel"] = "not measured: pip install 'toolpolicy[otel]'"
        medians, overhead = measure(args.conversations, variants)
        figures["jsonl_records_written"] = sum(1 for _ in log.open())
        if sdk is not None:
            floor = measure_sdk_floor(sdk, args.conversations)
            sdk.shutdown()
    plain = medians.pop("plain")
    figures["plain_us_per_round"] = round(plain, 1)
    for name, value in medians.items():
        figures[f"{name}_us_per_round"] = round(value, 1)
        figures[f"{name}_overhead_ratio"] = round(overhead[name], 4)

    if sdk is not None:
        figures["otel_sdk_floor_us_per_round"] = round(floor, 1)
        figures["otel_sdk_floor_ratio"] = round(floor / plain, 4)
        figures["otel_ours_beyond_sdk_spans_ratio"] = round(
            overhead["otel"] - overhead["sdk_spans"], 4
        )

    figures.update(measure_replay(args.records))
    figures.update(measure_sustained(rates, args.seconds))
    if args.instructions:
        if shutil.which("valgrind") is None or sdk is None:
            figures["instructions"] = "not counted: needs valgrind and the [otel] extra"
        else:
            figures.update(count_instructions())
    for key, value in figures.items():
        print(f"{key:48} {value}")
    print()
    print(
        "targets: jsonl and otel overhead <= 0.05, no-op tracer ~ 0, replay >= 20,000/s, "
        "every offered record written at every rate"
    )


if __name__ == "__main__":
    main()
