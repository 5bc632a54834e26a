"""Benchmark: CPU time per tool-calling round spent in our code, next to LiteLLM and pydantic-ai.

    .venv/bin/python bench/loop_overhead.py [--conversations N] [--no-peers]

A loopback server (its own process, so its CPU time is not counted) answers instantly with a
recorded two-round exchange in Chat Completions SSE of a reasoning model: round 1 streams its
reasoning (`reasoning_content`, 20 pieces) and calls a tool, round 2 reasons again and streams a
40-piece answer; the reasoning goes back with the assistant turn. Each contender runs the same conversations against it, one tool, one client
kept for all conversations, and reports the median process CPU time per round:

- ours, translation only: request build + stream parse + recording over the recorded payloads,
  no I/O (what the adapter itself costs);
- ours, `ChatRuntime.respond` without I/O: the same payloads from memory, plus the registry,
  the loop, the executor and the tool (everything of ours per user message);
- ours, end to end: `ChatRuntime.respond` over httpx to the server (the ratios use this one);
- floor, httpx + httpx-sse: the same two requests POSTed with httpx, the events decoded by
  httpx-sse and each payload parsed with `json.loads` (what any client must do at least);
- floor, raw asyncio: the same over asyncio streams, one write per request, events split by hand;
- LiteLLM: `litellm.acompletion(stream=True)` twice per conversation, chunks assembled with
  `stream_chunk_builder` (translation only: the tool call is answered by hand);
- pydantic-ai: an `Agent` with one tool, streamed (`event_stream_handler`).

The peers live in their own virtual environment, bench/.peers/ (made here on first use with
`pip install litellm pydantic-ai`; never project dependencies). When that fails, this says so and
still prints our figures. Targets: ≥ 5× less CPU per round than LiteLLM, ≥ 2× less than
pydantic-ai, ours ≤ 1.05× the httpx + httpx-sse floor, `import runtime` ≤ 150 ms. This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _peers import peer_python, run_peer_script  # noqa: E402

PEERS_DIR = ROOT / "bench" / ".peers"
PEER_PACKAGES = ("litellm", "pydantic-ai")
MODEL = "bench-model"
TOOL_NAME = "calculator"
TOOL_ARGUMENTS = '{"expression": "6 * 7"}'
ANSWER_PIECES = 40
REASONING_PIECES = 20
WARMUP = 20
_TOOL_RESULT = re.compile(rb'"role"\s*:\s*"tool"')


# --- the recorded exchange ----------------------------------------------------------------------


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_760_000_000,
        "model": MODEL,
        **top,
    }
    chunk["choices"] = (
        [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    )
    return chunk


def recorded_rounds() -> tuple[list[str], list[str]]:
    """The data payloads of the two rounds: a tool call, then a streamed answer."""
    usage = {"prompt_tokens": 120, "completion_tokens": 20, "total_tokens": 140}
    fragments = [TOOL_ARGUMENTS[:8], TOOL_ARGUMENTS[8:16], TOOL_ARGUMENTS[16:]]
    reasoning = [_chunk({"reasoning_content": f"thought{i} "}) for i in range(REASONING_PIECES)]
    first = [
        _chunk({"role": "assistant", "content": None}),
        *reasoning,
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_bench_1",
                        "type": "function",
                        "function": {"name": TOOL_NAME, "arguments": ""},
                    }
                ]
            }
        ),
        *(
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in fragments
        ),
        _chunk({}, "tool_calls"),
        _chunk(None, usage=usage),
    ]
    second = [
        _chunk({"role": "assistant", "content": ""}),
        *reasoning,
        *(_chunk({"content": f"word{i} "}) for i in range(ANSWER_PIECES)),
        _chunk({}, "stop"),
        _chunk(None, usage=usage),
    ]
    return [json.dumps(c) for c in first] + ["[DONE]"], [json.dumps(c) for c in second] + ["[DONE]"]


def _sse(payloads: list[str]) -> bytes:
    return "".join(f"data: {p}\n\n" for p in payloads).encode()


# --- the loopback server (runs in its own process) ----------------------------------------------


def serve() -> None:
    """Answer every POST at once: round 2 when the request carries a tool result, else round 1."""
    import uvicorn

    first, second = (_sse(r) for r in recorded_rounds())

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        payload = second if _TOOL_RESULT.search(body) else first
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # every connection accepted from it sends at once (no wait for a delayed ACK), as a
    # provider's server does; asyncio sets it on each connection too, this says so here
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    listener.bind(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="critical", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[listener])


class _Server:
    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        port = int(self._process.stdout.readline())
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=10)


# --- measuring ----------------------------------------------------------------------------------


async def _cpu_per_round(conversation: Callable[[], Awaitable[None]], count: int) -> list[float]:
    """Process CPU µs per round (a conversation has two rounds), after a warm-up."""
    for _ in range(WARMUP):
        await conversation()
    samples: list[float] = []
    for _ in range(count):
        started = time.process_time()
        await conversation()
        samples.append((time.process_time() - started) * 1e6 / 2)
    return samples


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": statistics.median(ordered),
        "p90_us": ordered[int(len(ordered) * 0.9) - 1] if ordered else 0.0,
    }


# --- ours ---------------------------------------------------------------------------------------


def _bench_tool() -> Any:
    from policy.definitions import ToolDefinition, ToolFunction
    from policy.tools import DefinedTool
    from policy.vocabulary import ToolOutboundData
    from runtime.execution import ToolExecutionResult
    from runtime.schema import ParameterSchemaBuilder

    class Calculator(DefinedTool):
        sensitive_trace_argument_names = frozenset[str]()
        returns_untrusted_external_content = False

        async def execute(self, arguments: Any, context: Any) -> ToolExecutionResult:
            return ToolExecutionResult(json_content={"result": 42})

    parameters = ParameterSchemaBuilder().required_string("expression", "Arithmetic.").build()
    return Calculator(
        ToolDefinition(
            id=TOOL_NAME,
            implementation_key=TOOL_NAME,
            function=ToolFunction(
                name=TOOL_NAME, description_for_llm="Evaluate arithmetic.", parameters=parameters
            ),
        ),
        outbound_data=ToolOutboundData.NONE,
    )


def _our_setup(base_url: str) -> tuple[Any, Any, Any]:
    """The policy (example organization + the bench tool), its vLLM entry aimed at the server."""
    import dataclasses

    from policy import load_policy
    from runtime import ChatRuntime

    policy = load_policy(org=[ROOT / "examples" / "organization"], tools=[_bench_tool()])
    provider = policy.provider("Example Corp vLLM")
    assert provider is not None
    return ChatRuntime(policy), dataclasses.replace(provider, hostname=base_url), policy


def _recorded_client(provider: Any) -> Any:
    """A client whose `stream` hands back the recorded payloads from memory (no socket)."""
    from runtime.providers import ProviderClient, host_profile_for

    first, second = recorded_rounds()

    class RecordedClient(ProviderClient):
        async def stream(self, body: Any) -> Any:
            for data in second if _TOOL_RESULT.search(body) else first:
                yield data

    return RecordedClient(host_profile_for(provider))


def measure_translation(count: int) -> dict[str, float]:
    """Request build + stream parse + recording over the recorded payloads, no I/O."""
    from runtime.adapters.chat_completions import ChatCompletionsAdapter
    from runtime.messages import ChatMessage, Conversation, Role, RoundCompleted

    _, provider, _ = _our_setup("http://127.0.0.1:9/v1")
    client = _recorded_client(provider)
    definition = _bench_tool().definition
    question = [ChatMessage(Role.USER, "What is 6 * 7?")]

    async def conversation() -> None:
        adapter = ChatCompletionsAdapter(
            client, Conversation("You are helpful.", question, [definition]), MODEL
        )
        for _ in range(2):
            async for event in adapter.execute_round(None, True):
                if isinstance(event, RoundCompleted) and event.round.calls:
                    adapter.record_assistant_turn()
                    adapter.record_tool_result(event.round.calls[0].call_id, '{"result":42}')

    return _summary(asyncio.run(_cpu_per_round(conversation, count)))


def measure_ours(count: int, base_url: str | None = None) -> dict[str, float]:
    """`ChatRuntime.respond` per conversation; over httpx to `base_url`, else from memory."""
    from runtime import Chat, ChatMessage, FinalAnswer, MemoryChatStore, Role
    from runtime.providers import create_client

    assistant, provider, _ = _our_setup(base_url or "http://127.0.0.1:9/v1")
    question = [ChatMessage(Role.USER, "What is 6 * 7?")]
    store = MemoryChatStore()

    async def run() -> list[float]:
        client = create_client(provider) if base_url else _recorded_client(provider)
        number = 0

        async def conversation() -> None:
            nonlocal number
            number += 1
            chat = Chat.open(f"bench-{number}", store)
            async for event in assistant.respond(
                chat, provider, question, selected_tool_ids=[TOOL_NAME], client=client
            ):
                if isinstance(event, FinalAnswer):
                    assert event.text.startswith("word0"), event

        try:
            return await _cpu_per_round(conversation, count)
        finally:
            await client.aclose()

    return _summary(asyncio.run(run()))


# --- floors: the same two rounds over the same server, nothing but HTTP, SSE and JSON -------------


def _floor_bodies() -> tuple[bytes, bytes]:
    """Round 1's request and round 2's (the tool result appended), as a client must send them."""
    question: list[dict[str, Any]] = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What is 6 * 7?"},
    ]
    call = {"id": "call_bench_1", "type": "function"}
    call["function"] = {"name": TOOL_NAME, "arguments": TOOL_ARGUMENTS}
    follow_up = [
        *question,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_bench_1", "content": '{"result":42}'},
    ]
    request = {"model": MODEL, "stream": True, "tools": [_TOOL_SCHEMA]}
    return (
        json.dumps({**request, "messages": question}).encode(),
        json.dumps({**request, "messages": follow_up}).encode(),
    )


def measure_httpx_sse_floor(base_url: str, count: int) -> dict[str, float]:
    """httpx POSTs each round, httpx-sse decodes the events, `json.loads` parses each payload."""
    import httpx
    from httpx_sse import aconnect_sse

    bodies = _floor_bodies()
    headers = {"content-type": "application/json", "authorization": "Bearer bench"}
    url = f"{base_url}/chat/completions"

    async def run() -> list[float]:
        async with httpx.AsyncClient() as client:

            async def conversation() -> None:
                for body in bodies:
                    async with aconnect_sse(
                        client, "POST", url, content=body, headers=headers
                    ) as source:
                        async for event in source.aiter_sse():
                            if event.data != "[DONE]":
                                json.loads(event.data)

            return await _cpu_per_round(conversation, count)

    return _summary(asyncio.run(run()))


def measure_raw_floor(base_url: str, count: int) -> dict[str, float]:
    """asyncio streams: one write per request, the body read by its length, split into events
    by hand and each payload parsed with `json.loads` (one kept-alive connection)."""
    host_port = base_url.split("//", 1)[1].split("/", 1)[0]
    port = int(host_port.rsplit(":", 1)[1])
    requests = [
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: "
        + host_port.encode()
        + b"\r\ncontent-type: application/json\r\nauthorization: Bearer bench\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
        for body in _floor_bodies()
    ]
    length_header = re.compile(rb"(?i)\r\ncontent-length:\s*(\d+)")

    async def run() -> list[float]:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def conversation() -> None:
            for request in requests:
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                found = length_header.search(head)
                assert found is not None
                for event in (await reader.readexactly(int(found.group(1)))).split(b"\n\n"):
                    if event.startswith(b"data: ") and event != b"data: [DONE]":
                        json.loads(event[6:])

        try:
            return await _cpu_per_round(conversation, count)
        finally:
            writer.close()

    return _summary(asyncio.run(run()))


def measure_import_ms(runs: int = 5) -> float:
    code = "import time; t = time.perf_counter(); import runtime; print(time.perf_counter() - t)"
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times) * 1000


# --- peers (run inside bench/.peers with that venv's Python) ------------------------------------

_TOOL_SCHEMA = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Evaluate arithmetic.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "Arithmetic."}},
            "required": ["expression"],
            "additionalProperties": False,
        },
    },
}


def peer_litellm(base_url: str, count: int) -> dict[str, float]:
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    question = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What is 6 * 7?"},
    ]

    async def stream(messages: list[dict[str, Any]]) -> Any:
        response = await litellm.acompletion(
            model=f"openai/{MODEL}",
            api_base=base_url,
            api_key="bench",
            messages=messages,
            tools=[_TOOL_SCHEMA],
            stream=True,
        )
        chunks = [chunk async for chunk in response]
        return litellm.stream_chunk_builder(chunks, messages=messages)

    async def conversation() -> None:
        built = await stream(question)
        message = built.choices[0].message
        call = message.tool_calls[0]
        follow_up = [
            *question,
            {
                "role": "assistant",
                "content": message.content,
                "reasoning_content": getattr(message, "reasoning_content", None),
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.function.name,
                            "arguments": call.function.arguments,
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call.id, "content": '{"result":42}'},
        ]
        final = await stream(follow_up)
        assert final.choices[0].message.content.startswith("word0")

    return _summary(asyncio.run(_cpu_per_round(conversation, count)))


def peer_pydantic_ai(base_url: str, count: int) -> dict[str, float]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="bench"))
    agent = Agent(model, instructions="You are helpful.")

    @agent.tool_plain(name=TOOL_NAME)
    def calculator(expression: str) -> dict[str, int]:
        """Evaluate arithmetic."""
        return {"result": 42}

    async def drain(_context: Any, events: Any) -> None:
        async for _ in events:
            pass

    async def conversation() -> None:
        result = await agent.run("What is 6 * 7?", event_stream_handler=drain)
        assert str(result.output).startswith("word0")

    return _summary(asyncio.run(_cpu_per_round(conversation, count)))


_PEERS: dict[str, Callable[[str, int], dict[str, float]]] = {
    "litellm": peer_litellm,
    "pydantic-ai": peer_pydantic_ai,
}


def _peers_python() -> tuple[Path | None, str]:
    """bench/.peers' Python, made and filled on first use; (None, why) when that fails."""
    return peer_python(PEERS_DIR, PEER_PACKAGES, "import litellm, pydantic_ai", _peer_env())


def _peer_env() -> dict[str, str]:
    """No network beyond the loopback server: LiteLLM must not fetch its price list."""
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False"}


def run_peer(python: Path, name: str, base_url: str, count: int) -> dict[str, float] | str:
    arguments = [__file__, "--peer", name, "--url", base_url, "--conversations", str(count)]
    figures = run_peer_script(python, arguments, env=_peer_env())
    return f"{name} {figures}" if isinstance(figures, str) else figures


# --- report -------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--no-peers", action="store_true", help="Only our figures.")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--peer", choices=sorted(_PEERS), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.peer:
        print(json.dumps(_PEERS[args.peer](args.url, args.conversations)))
        return

    count = args.conversations
    print(f"CPU per round, median over {count} two-round conversations (after {WARMUP} warm-up)\n")
    import_ms = measure_import_ms()
    translation = measure_translation(count * 5)
    in_memory = measure_ours(count * 5)
    server = _Server()
    try:
        ours = measure_ours(count, server.base_url)
        httpx_floor = measure_httpx_sse_floor(server.base_url, count)
        raw_floor = measure_raw_floor(server.base_url, count)
        peers: dict[str, dict[str, float] | str] = {}
        if not args.no_peers:
            python, why = _peers_python()
            for name in _PEERS:
                peers[name] = run_peer(python, name, server.base_url, count) if python else why
    finally:
        server.stop()

    rows = [
        ("ours: translation only (no I/O)", translation),
        ("ours: ChatRuntime.respond (no I/O)", in_memory),
        ("ours: ChatRuntime.respond end to end", ours),
        ("floor: httpx + httpx-sse + json.loads", httpx_floor),
        ("floor: raw asyncio streams + json.loads", raw_floor),
    ]
    print(f"{'contender':<40} {'median µs':>10} {'p90 µs':>10} {'ours ×less':>11}")
    for label, figures in rows:
        print(f"{label:<40} {figures['median_us']:>10.0f} {figures['p90_us']:>10.0f} {'':>11}")
    targets = {"litellm": 5.0, "pydantic-ai": 2.0}
    for name, figures in peers.items():
        if isinstance(figures, str):
            print(f"{name:<40} not measured: {figures}")
            continue
        ratio = figures["median_us"] / ours["median_us"]
        verdict = "meets" if ratio >= targets[name] else "misses"
        print(
            f"{name:<40} {figures['median_us']:>10.0f} {figures['p90_us']:>10.0f} "
            f"{ratio:>10.1f}×  ({verdict} the ≥ {targets[name]:g}× target)"
        )
    over_httpx = ours["median_us"] / httpx_floor["median_us"]
    verdict = "meets" if over_httpx <= 1.05 else "misses"
    print(
        f"\nours end to end / (httpx + SSE decode): {over_httpx:.2f}× "
        f"({verdict} the ≤ 1.05× goal); ours end to end / raw asyncio: "
        f"{ours['median_us'] / raw_floor['median_us']:.2f}×; "
        f"(httpx + SSE decode) / raw asyncio: "
        f"{httpx_floor['median_us'] / raw_floor['median_us']:.2f}×"
    )
    verdict = "meets" if import_ms <= 150 else "misses"
    print(f"\nimport runtime: {import_ms:.1f} ms ({verdict} the ≤ 150 ms target)")


if __name__ == "__main__":
    main()
