"""Benchmark: `policy mcp serve` against the MCP server it governs, side by side in one run.
Prints figures; asserts nothing.

    .venv/bin/python bench/mcp_gateway.py [--quick]

The same trivial tool (`add_comment` of tests/servers/mcp_server.py) is called by 1, 8 and 32
clients at once, each client calling again as soon as it has its answer:

- direct: the clients talk to the server itself,
- pass-through: the clients talk to `bench/gateway_passthrough.py`, an `mcp`-SDK server that
  passes every call to that server with no policy at all: the floor of any gateway built on the
  SDK (its server machinery towards the client, its client towards the server, one more hop),
- gateway: the clients talk to `policy mcp serve` (a subprocess, as users run it), which
  governs that server,

over streamable HTTP (one session per client; the gateway `--transport http` in front of the
server over HTTP) and over stdio (one process started by the client, the callers sharing its
one session as an IDE's tools do; the gateway over stdio in front of the server over stdio),
for an upstream listing 1 tool and one listing 1,000. Printed per row: calls/s direct, through
the pass-through and through the gateway, the gateway's ratio to each, the p50/p99 of a call
through the gateway, and the CPU time the middle process (pass-through or gateway) spent per
call (from /proc: on a loaded machine a steadier figure than calls/s). Targets (issue 31): the
gateway at >= 70% of direct at 1, 8 and 32 clients, not falling from 8 to 32 clients, and its
per-call cost independent of the upstream's tool count (1 vs 1,000 tools within 1.2x).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from dataclasses import dataclass
from math import nan
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
def _announced(argv: list[str], marker: str, word: int) -> Iterator[tuple[str, int]]:
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
            yield lines[0].split()[word], process.pid
        finally:
            process.terminate()
            process.wait(20)


@contextmanager
def _http_server(state: Path) -> Iterator[str]:
    argv = [sys.executable, str(SERVER), "http", str(state)]
    with _announced(argv, "PORT ", 1) as (port, _):
        yield f"http://127.0.0.1:{port}/mcp"


_GATEWAY = [sys.executable, "-m", "policy.cli", "mcp", "serve"]


def _gateway(org: Path) -> Any:
    """`policy mcp serve` over HTTP: its URL and process id."""
    argv = [*_GATEWAY, "--org", str(org), "--provider", "OpenAI", "--transport", "http",
            "--port", "0"]  # fmt: skip
    return _announced(argv, "serving MCP on ", 3)


_PASSTHROUGH = [sys.executable, str(ROOT / "bench" / "gateway_passthrough.py")]


def _passthrough(url: str) -> Any:
    return _announced([*_PASSTHROUGH, "http", url], "serving MCP on ", 3)


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process `pid` has spent so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children() -> set[int]:
    """This process's child processes (a stdio server the SDK client started)."""
    found: set[int] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(OSError):
            found |= {int(p) for p in (task / "children").read_text().split()}
    return found


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


@dataclass(frozen=True)
class _Callers:
    """Opens `clients` callers; `pid` is the process whose CPU time a measurement counts (None:
    the process the stdio callers start)."""

    open: Callable[[AsyncExitStack, int], Awaitable[list[Call]]]
    pid: int | None = None


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
    before = _children()
    client = await stack.enter_async_context(Client(stdio_client(params, quiet)))
    await client.list_tools()
    _started.extend(_children() - before)
    return [lambda: client.call_tool(tool, ARGUMENTS) for _ in range(clients)]


_started: list[int] = []
"""The processes the stdio callers opened last started (whose CPU time a stdio row counts)."""


@dataclass(frozen=True)
class _Measured:
    rate: float
    times: list[float]
    cpu: float
    """CPU seconds per call of the middle process."""


async def _measure(callers: _Callers, clients: int, total: int) -> _Measured:
    """calls/s, each call's seconds, and the CPU seconds per call of `callers.pid` (or, over
    stdio, of the process the callers started)."""
    async with AsyncExitStack() as stack:
        _started.clear()
        opened = await callers.open(stack, clients)
        pid = callers.pid if callers.pid is not None else (_started[0] if _started else None)
        await _run(opened, 3)  # warm
        spent = _cpu_seconds(pid) if pid is not None else 0.0
        rate, times = await _run(opened, max(3, total // clients))
        cpu = (_cpu_seconds(pid) - spent) / len(times) if pid is not None else float("nan")
        return _Measured(rate, times, cpu)


class _Row:
    """One row: the mean of the alternated runs of each side."""

    def __init__(self, runs: dict[str, list[_Measured]]) -> None:
        self.rate = {side: statistics.mean(m.rate for m in ms) for side, ms in runs.items()}
        self.cpu = {side: statistics.mean(m.cpu for m in ms) for side, ms in runs.items()}
        self.times = [t for m in runs["gateway"] for t in m.times]

    def line(self, upstream: str, tools: int, clients: int) -> str:
        direct, floor, gateway = self.rate["direct"], self.rate["pass"], self.rate["gateway"]
        ordered = sorted(self.times)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (
            f"{upstream:<6} {tools:>5} {clients:>7} {direct:>8.0f} {floor:>8.0f} {gateway:>8.0f} "
            f"{gateway / direct:>6.2f} {gateway / floor:>6.2f} "
            f"{statistics.median(self.times) * 1e3:>7.1f} {p99 * 1e3:>7.1f} "
            f"{self.cpu['pass'] * 1e3:>7.2f} {self.cpu['gateway'] * 1e3:>7.2f}"
        )


async def _compare(sides: dict[str, _Callers], clients: int, total: int) -> _Row:
    """Direct, pass-through and gateway, alternated twice."""
    runs: dict[str, list[_Measured]] = {side: [] for side in sides}
    for _ in range(2):
        for side, callers in sides.items():
            try:
                runs[side].append(await _measure(callers, clients, total))
            except Exception as error:  # the SDK nests a client's failure in task groups
                failures = "; ".join(f"{type(e).__name__}: {e}" for e in _leaves(error))
                raise RuntimeError(f"{side} with {clients} clients failed: {failures}") from None
    return _Row(runs)


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _org(folder: Path, entry: str) -> Path:
    folder.mkdir()
    (folder / "plugin.lua").write_text(ORG % (SERVER_ID, entry), encoding="utf-8")
    return folder


async def main(
    quick: bool,
    upstreams: tuple[str, ...] = ("http", "stdio"),
    tool_counts: tuple[int, ...] = (1, 1000),
    client_counts: tuple[int, ...] = (1, 8, 32),
) -> None:
    total = 120 if quick else 600
    print("gateway vs direct and vs the SDK pass-through floor (each figure the mean of two")
    print("alternated runs; CPU: ms the middle process spent per call)")
    print(
        "upstr. tools clients   direct     pass  gateway  g/dir g/pass  p50 ms  p99 ms "
        "CPUpass  CPUgw"
    )
    per_call: dict[tuple[str, int], float] = {}
    cpu: dict[str, list[float]] = {"pass": [], "gateway": []}
    by_tools: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for tools in tool_counts:
            state = Path(folder) / f"state-{tools}.json"
            state.write_text(
                json.dumps({"base_tools": ["add_comment"], "extra_tools": tools - 1}),
                encoding="utf-8",
            )
            for upstream in upstreams:
                with ExitStack() as servers:
                    sides: dict[str, _Callers]
                    if upstream == "http":
                        url = servers.enter_context(_http_server(state))
                        entry = f'["Transport"] = "STREAMABLE_HTTP", ["Url"] = {_lua(url)}'
                        org = _org(Path(folder) / f"org-http-{tools}", entry)
                        served, gateway_pid = servers.enter_context(_gateway(org))
                        passed, pass_pid = servers.enter_context(_passthrough(url))
                        sides = {
                            "direct": _Callers(
                                functools.partial(_http_callers, url=url, tool="add_comment")
                            ),
                            "pass": _Callers(
                                functools.partial(_http_callers, url=passed, tool="add_comment"),
                                pass_pid,
                            ),
                            "gateway": _Callers(
                                functools.partial(
                                    _http_callers, url=served, tool="tickets__add_comment"
                                ),
                                gateway_pid,
                            ),
                        }
                    else:
                        argv = [sys.executable, str(SERVER), "stdio", str(state)]
                        args = ", ".join(_lua(a) for a in argv[1:])
                        entry = (
                            f'["Transport"] = "STDIO", ["Command"] = {_lua(argv[0])}, '
                            f'["Args"] = {{ {args} }}'
                        )
                        org = _org(Path(folder) / f"org-stdio-{tools}", entry)
                        sides = {
                            "direct": _Callers(
                                functools.partial(_stdio_callers, argv=argv, tool="add_comment")
                            ),
                            "pass": _Callers(
                                functools.partial(
                                    _stdio_callers,
                                    argv=[*_PASSTHROUGH, "stdio", "--", *argv],
                                    tool="add_comment",
                                )
                            ),
                            "gateway": _Callers(
                                functools.partial(
                                    _stdio_callers,
                                    argv=[*_GATEWAY, "--org", str(org), "--provider", "OpenAI"],
                                    tool="tickets__add_comment",
                                )
                            ),
                        }
                    for clients in client_counts:
                        row = await _compare(sides, clients, total)
                        print(row.line(upstream, tools, clients), flush=True)
                        for side in cpu:
                            cpu[side].append(row.cpu[side])
                        if clients == 1:
                            per_call[(upstream, tools)] = (
                                1 / row.rate["gateway"] - 1 / row.rate["direct"]
                            )
                        by_tools.setdefault((upstream, tools), []).append(row.cpu["gateway"])
    for upstream in upstreams:
        if (upstream, 1) not in by_tools or (upstream, 1000) not in by_tools:
            continue
        one, many = per_call.get((upstream, 1), nan), per_call.get((upstream, 1000), nan)
        print(
            f"{upstream}: the gateway's own time per call (1 client): 1 tool {one * 1e3:.2f} ms, "
            f"1,000 tools {many * 1e3:.2f} ms ({many / one:.2f}x)"
        )
        few = statistics.median(by_tools[(upstream, 1)])
        lots = statistics.median(by_tools[(upstream, 1000)])
        print(
            f"{upstream}: the gateway's CPU per call (median of 1, 8, 32 clients): 1 tool "
            f"{few * 1e3:.2f} ms, 1,000 tools {lots * 1e3:.2f} ms ({lots / few:.2f}x)"
        )
    spent = statistics.median(cpu["gateway"]) / statistics.median(cpu["pass"])
    print(
        f"CPU per call, median of the rows: pass-through {statistics.median(cpu['pass']) * 1e3:.2f}"
        f" ms, gateway {statistics.median(cpu['gateway']) * 1e3:.2f} ms ({spent:.2f}x the floor)"
    )


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(","))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--upstream", default="http,stdio", help="upstream transports, e.g. http (default both)"
    )
    parser.add_argument("--tools", default="1,1000", help="upstream tool counts (default 1,1000)")
    parser.add_argument("--clients", default="1,8,32", help="client counts (default 1,8,32)")
    arguments = parser.parse_args()
    asyncio.run(
        main(
            arguments.quick,
            tuple(arguments.upstream.split(",")),
            _numbers(arguments.tools),
            _numbers(arguments.clients),
        )
    )
