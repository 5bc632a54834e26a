"""Benchmark: the HTTP part of one provider round, by httpx transport. Prints figures.

    .venv/bin/python bench/transport.py [--rounds 400]

A loopback server in its own process (so its CPU time is not counted) answers every POST with
the same recorded Chat Completions SSE stream (40 answer pieces, keep-alive). Each contender
POSTs the same 2 KiB JSON request and reads the stream to its end, one client kept for all
rounds, and reports the median CPU time and wall time per round, and how many send calls one
round makes (`strace -f`, when installed):

- httpx, default transport (httpcore 1.x over anyio): what `ProviderClient` uses. It writes
  the request head and the body in two sends;
- httpx, `AsyncHTTPTransport(socket_options=...)` with TCP_NODELAY off: the one transport
  setting that touches how writes reach the wire (Nagle may then merge the two sends);
- httpx with the `httpx-aiohttp` transport (`AiohttpTransport`, aiohttp underneath, httpx's
  API kept): the maintained alternative;
- raw asyncio streams, one write per request and a minimal reader: the floor.

The contenders run in bench/.peers/transport (made here on first use with `pip install httpx
httpx-aiohttp`; never project dependencies). When that fails, this says so and measures the
others with this interpreter. This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from _peers import peer_python, run_peer_script  # noqa: E402

PEERS_DIR = ROOT / "bench" / ".peers" / "transport"
PEER_PACKAGES = ("httpx==0.29.0", "httpx-aiohttp")
WARMUP = 30
PIECES = 40


def _request_body() -> bytes:
    messages = [
        {"role": "system", "content": "You are a helpful assistant. " * 20},
        {"role": "user", "content": "What is 6 * 7? Use the calculator. " * 10},
    ]
    tool = {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluates an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
    body = {"model": "bench", "stream": True, "messages": messages, "tools": [tool] * 4}
    return json.dumps(body).encode()


def _sse_body() -> bytes:
    events = []
    for index in range(PIECES):
        chunk = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": f"piece {index} "}}],
        }
        events.append(f"data: {json.dumps(chunk)}\n\n")
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


# --- the server (its own process) ----------------------------------------------------------------


def serve() -> None:
    """Answer POSTs on 127.0.0.1 until stdin closes; print the port first."""
    body = _sse_body()
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
    )

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_head = await reader.readuntil(b"\r\n\r\n")
                match = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", request_head)
                if match:
                    await reader.readexactly(int(match.group(1)))
                writer.write(head + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def run() -> None:
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        server.close()

    asyncio.run(run())


# --- the contenders ------------------------------------------------------------------------------


def _httpx_client(kind: str) -> Any:
    import httpx

    if kind == "httpx-default":
        return httpx.AsyncClient()
    if kind == "httpx-nagle":
        options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)]
        return httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(socket_options=options))
    from httpx_aiohttp import AiohttpTransport

    return httpx.AsyncClient(transport=AiohttpTransport())


async def _httpx_rounds(kind: str, url: str, rounds: int) -> list[tuple[float, float]]:
    body = _request_body()
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    samples: list[tuple[float, float]] = []
    async with _httpx_client(kind) as client:
        for index in range(rounds + WARMUP):
            cpu, wall = time.process_time(), time.perf_counter()
            async with client.stream("POST", url, content=body, headers=headers) as response:
                async for _line in response.aiter_lines():
                    pass
            if index >= WARMUP:
                samples.append((time.process_time() - cpu, time.perf_counter() - wall))
    return samples


async def _raw_rounds(url: str, rounds: int) -> list[tuple[float, float]]:
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    body = _request_body()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        b"content-type: application/json\r\naccept: text/event-stream\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    samples: list[tuple[float, float]] = []
    for index in range(rounds + WARMUP):
        cpu, wall = time.process_time(), time.perf_counter()
        writer.write(request)
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
        for _line in (await reader.readexactly(length)).split(b"\n"):
            pass
        if index >= WARMUP:
            samples.append((time.process_time() - cpu, time.perf_counter() - wall))
    writer.close()
    return samples


CONTENDERS: dict[str, str] = {
    "httpx-default": "httpx, default transport (httpcore)",
    "httpx-nagle": "httpx, AsyncHTTPTransport, TCP_NODELAY off",
    "httpx-aiohttp": "httpx + httpx-aiohttp transport",
    "raw": "raw asyncio streams (floor)",
}


def run_contender(kind: str, url: str, rounds: int) -> dict[str, float]:
    runner: Callable[[], Awaitable[list[tuple[float, float]]]] = (
        (lambda: _raw_rounds(url, rounds))
        if kind == "raw"
        else (lambda: _httpx_rounds(kind, url, rounds))
    )
    samples = asyncio.run(runner())
    return {
        "cpu_us": statistics.median(s[0] for s in samples) * 1e6,
        "wall_us": statistics.median(s[1] for s in samples) * 1e6,
    }


# --- the report ----------------------------------------------------------------------------------


def _peers_python() -> tuple[Path | None, str]:
    return peer_python(PEERS_DIR, PEER_PACKAGES, "import httpx_aiohttp")


def _measure(python: Path, kind: str, url: str, rounds: int) -> dict[str, float] | str:
    arguments = [__file__, "--contender", kind, "--url", url, "--rounds", str(rounds)]
    return run_peer_script(python, arguments, timeout=600)


def _sends_per_round(python: Path, kind: str, url: str, rounds: int) -> str:
    """send-family system calls per round: strace's count over 2N rounds minus that over N."""
    if shutil.which("strace") is None:
        return "-"
    counts = []
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "strace.txt"
        command = [str(python), __file__, "--contender", kind, "--url", url, "--warmup", "0"]
        for count in (rounds, 2 * rounds):
            subprocess.run(
                [
                    *("strace", "-f", "-qq", "-c", "-e", "trace=sendto,sendmsg,write,writev"),
                    *("-o", str(out), *command, "--rounds", str(count)),
                ],
                capture_output=True,
                timeout=600,
            )
            counts.append(
                sum(
                    int(parts[3])
                    for parts in (line.split() for line in out.read_text().splitlines())
                    if len(parts) >= 5 and parts[-1] in ("sendto", "sendmsg", "write", "writev")
                )
            )
    return f"{(counts[1] - counts[0]) / rounds:.2f}"


def main() -> None:
    global WARMUP
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--contender", choices=sorted(CONTENDERS), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=WARMUP, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    WARMUP = arguments.warmup
    if arguments.serve:
        serve()
        return
    if arguments.contender:
        print(json.dumps(run_contender(arguments.contender, arguments.url, arguments.rounds)))
        return
    peers, why = _peers_python()
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1/chat/completions"
        print(
            f"one provider round over loopback HTTP/1.1, median of {arguments.rounds} rounds "
            f"(after {WARMUP} warm-up), one kept-alive connection:\n"
        )
        print(f"  {'contender':<44} {'CPU µs':>8} {'wall µs':>9} {'sends':>6}  vs default")
        default: dict[str, float] | None = None
        for kind, label in CONTENDERS.items():
            python = peers or Path(sys.executable)
            if kind == "httpx-aiohttp" and peers is None:
                print(f"  {label:<44} not measured: {why}")
                continue
            figures = _measure(python, kind, url, arguments.rounds)
            if isinstance(figures, str):
                print(f"  {label:<44} {figures}")
                continue
            default = default or figures
            sends = _sends_per_round(python, kind, url, min(arguments.rounds, 100))
            print(
                f"  {label:<44} {figures['cpu_us']:8.0f} {figures['wall_us']:9.0f} {sends:>6}  "
                f"CPU {figures['cpu_us'] / default['cpu_us']:.2f}x, "
                f"wall {figures['wall_us'] / default['wall_us']:.2f}x"
            )
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=15)


if __name__ == "__main__":
    main()
