"""Benchmark: `policy mcp serve` against the MCP server it governs, side by side in one run.
Prints figures; asserts nothing.

    .venv/bin/python bench/mcp_gateway.py [--quick]

The same trivial tool (`add_comment` of tests/servers/mcp_server.py) is called by 1, 8 and 32
clients at once, each client calling again as soon as it has its answer:

- direct: the clients talk to the server itself,
- gateway: the clients talk to `policy mcp serve` (a subprocess, as users run it), which
  governs that server,

over streamable HTTP (one session per client; the gateway `--transport http` in front of the
server over HTTP) and over stdio (one process started by the client, the callers sharing its
one session as an IDE's tools do; the gateway over stdio in front of the server over stdio),
for an upstream listing 1 tool and one listing 1,000. Printed per row: calls/s direct and through
the gateway, the ratio, and the p50/p99 of a call through the gateway. Targets (issue 31): the
gateway at >= 70% of direct at 1, 8 and 32 clients, not falling from 8 to 32 clients, and its
per-call cost independent of the upstream's tool count (1 vs 1,000 tools within 1.2x).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.mcp_tools.test_mcp import HEADER  # noqa: E402  the test organization: one provider

SERVER = ROOT / "tests" / "servers" / "mcp_server.py"
SERVER_ID = "6f1c0000-0000-4000-8000-000000000001"
ARGUMENTS = {"ticket_id": "1", "text": "x"}
ORG = (
    HEADER
    + """CONFIG["MCP_SERVERS"] = {}
CONFIG["MCP_SERVERS"][1] = { ["Id"] = "%s", ["Name"] = "tickets", %s }
"""
)


def _lua(text: str) -> str:
    return json.dumps(text)


@contextmanager
def _announced(argv: list[str], marker: str, word: int) -> Iterator[str]:
    """A subprocess that announces where it listens on a line starting with `marker`. What it
    writes goes to a file, not a pipe this process reads: reading the gateway's call log here
    would take the clients' time."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=output, text=True, cwd=ROOT)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                output.seek(0)
                lines = [line for line in output if line.startswith(marker)]
                if lines:
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"{argv} did not start")
            yield lines[0].split()[word]
        finally:
            process.terminate()
            process.wait(20)


@contextmanager
def _http_server(state: Path) -> Iterator[str]:
    argv = [sys.executable, str(SERVER), "http", str(state)]
    with _announced(argv, "PORT ", 1) as port:
        yield f"http://127.0.0.1:{port}/mcp"


_GATEWAY = [sys.executable, "-m", "policy.cli", "mcp", "serve"]


def _gateway(org: Path) -> Any:
    argv = [*_GATEWAY, "--org", str(org), "--provider", "OpenAI", "--transport", "http",
            "--port", "0"]  # fmt: skip
    return _announced(argv, "serving MCP on ", 3)


Call = Callable[[], Awaitable[Any]]


async def _run(callers: list[Call], calls_each: int) -> tuple[float, list[float]]:
    """Every caller calls `calls_each` times, all at once: calls/s and each call's seconds."""
    times: list[float] = []

    async def loop(call: Call) -> None:
        for _ in range(calls_each):
            start = time.perf_counter()
            result = await call()
            times.append(time.perf_counter() - start)
            if getattr(result, "is_error", False):
                raise RuntimeError(f"a call failed: {result}")

    start = time.perf_counter()
    await asyncio.gather(*(loop(c) for c in callers))
    return len(times) / (time.perf_counter() - start), times


async def _http_callers(stack: AsyncExitStack, clients: int, *, url: str, tool: str) -> list[Call]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    callers: list[Call] = []
    for _ in range(clients):
        client = await stack.enter_async_context(Client(streamable_http_client(url)))
        await client.list_tools()

        def call(client: Any = client) -> Awaitable[Any]:
            return client.call_tool(tool, ARGUMENTS)

        callers.append(call)
    return callers


async def _stdio_callers(
    stack: AsyncExitStack, clients: int, *, argv: list[str], tool: str
) -> list[Call]:
    """`clients` callers sharing one session to the program `argv` started over stdio."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    quiet = stack.enter_context(open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 the call log
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(ROOT))
    client = await stack.enter_async_context(Client(stdio_client(params, quiet)))
    await client.list_tools()
    return [lambda: client.call_tool(tool, ARGUMENTS) for _ in range(clients)]


Callers = Callable[[AsyncExitStack, int], Awaitable[list[Call]]]


async def _measure(make: Callers, clients: int, total: int) -> tuple[float, list[float]]:
    async with AsyncExitStack() as stack:
        callers = await make(stack, clients)
        await _run(callers, 3)  # warm
        return await _run(callers, max(3, total // clients))


def _row(
    upstream: str, tools: int, clients: int, direct: float, gateway: float, times: list[float]
) -> str:
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{upstream:<6} {tools:>5} {clients:>7} {direct:>11.0f} {gateway:>11.0f} "
        f"{gateway / direct:>6.2f} {statistics.median(times) * 1e3:>8.1f} {p99 * 1e3:>8.1f}"
    )


async def _compare(
    direct: Callers, gateway: Callers, clients: int, total: int
) -> tuple[float, float, list[float]]:
    """Direct and gateway, alternated twice: mean calls/s of each, the gateway's call times."""
    direct_rates, gateway_rates, times = [], [], []
    for _ in range(2):
        direct_rates.append((await _measure(direct, clients, total))[0])
        rate, spent = await _measure(gateway, clients, total)
        gateway_rates.append(rate)
        times.extend(spent)
    return statistics.mean(direct_rates), statistics.mean(gateway_rates), times


def _org(folder: Path, entry: str) -> Path:
    folder.mkdir()
    (folder / "plugin.lua").write_text(ORG % (SERVER_ID, entry), encoding="utf-8")
    return folder


async def main(quick: bool) -> None:
    total = 120 if quick else 600
    print("gateway vs direct, calls/s (each figure the mean of two alternated runs)")
    print("upstr. tools clients  direct c/s gateway c/s  ratio  p50 ms   p99 ms  (gateway)")
    per_call: dict[tuple[str, int], float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for tools in (1, 1000):
            state = Path(folder) / f"state-{tools}.json"
            state.write_text(
                json.dumps({"base_tools": ["add_comment"], "extra_tools": tools - 1}),
                encoding="utf-8",
            )
            for upstream in ("http", "stdio"):
                with ExitStack() as servers:
                    direct: Callers
                    gateway: Callers
                    if upstream == "http":
                        url = servers.enter_context(_http_server(state))
                        entry = f'["Transport"] = "STREAMABLE_HTTP", ["Url"] = {_lua(url)}'
                        org = _org(Path(folder) / f"org-http-{tools}", entry)
                        served = servers.enter_context(_gateway(org))
                        direct = functools.partial(_http_callers, url=url, tool="add_comment")
                        gateway = functools.partial(
                            _http_callers, url=served, tool="tickets__add_comment"
                        )
                    else:
                        argv = [sys.executable, str(SERVER), "stdio", str(state)]
                        args = ", ".join(_lua(a) for a in argv[1:])
                        entry = (
                            f'["Transport"] = "STDIO", ["Command"] = {_lua(argv[0])}, '
                            f'["Args"] = {{ {args} }}'
                        )
                        org = _org(Path(folder) / f"org-stdio-{tools}", entry)
                        direct = functools.partial(_stdio_callers, argv=argv, tool="add_comment")
                        gateway = functools.partial(
                            _stdio_callers,
                            argv=[*_GATEWAY, "--org", str(org), "--provider", "OpenAI"],
                            tool="tickets__add_comment",
                        )
                    for clients in (1, 8, 32):
                        d, g, times = await _compare(direct, gateway, clients, total)
                        print(_row(upstream, tools, clients, d, g, times), flush=True)
                        if clients == 1:
                            per_call[(upstream, tools)] = 1 / g - 1 / d
    for upstream in ("http", "stdio"):
        one, many = per_call[(upstream, 1)], per_call[(upstream, 1000)]
        print(
            f"{upstream}: the gateway's own time per call (1 client): 1 tool {one * 1e3:.2f} ms, "
            f"1,000 tools {many * 1e3:.2f} ms ({many / one:.2f}x)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
