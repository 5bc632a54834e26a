"""Benchmark: how soon `policy mcp serve` answers its client's first tools/list, timed against
the start of the MCP servers it governs. Prints figures; asserts nothing.

    .venv/bin/python bench/first_listing.py [--servers 6] [--rounds 3]

Six stdio servers (tests/servers/mcp_server.py, each a Python process with the `mcp` SDK), in
one run:

- floor, one server: an SDK client starts one server and lists its tools (start + initialize +
  tools/list), the time any client of that server waits at least;
- floor, all servers: the same for every server at once, as many clients would;
- gateway: an SDK client starts `policy mcp serve` over stdio (as an IDE does) and times
  `initialize` answered, the first `tools/list` answered (with how many servers' tools it held),
  and when every server's tools were listed (first listing, or after `tools/list_changed`);
- gateway with one slow server: the same with one of the servers starting 8 s late (it serves
  once a file the bench writes 8 s after the gateway's start exists): the first `tools/list` is
  answered within `--listing-wait` (3 s) with the others' tools, and the slow one's arrive with
  `tools/list_changed`.

Each figure is the median of `--rounds` runs, in seconds of wall time from the spawn of the
process the client starts. On the shared 2-core machine absolute times vary with its load; the
gateway's figures are to be read against the floors measured in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.mcp_tools.test_mcp import HEADER  # noqa: E402  the test organization: one provider

SERVER = ROOT / "tests" / "servers" / "mcp_server.py"
SLOW_START_SECONDS = 8.0


def _lua(text: str) -> str:
    return json.dumps(text)


def _organization(folder: Path, states: Sequence[Path]) -> Path:
    entries = [
        f'CONFIG["MCP_SERVERS"][{index}] = {{ ["Id"] = "6f1c0000-0000-4000-8000-{index:012d}", '
        f'["Name"] = "s{index}", ["Transport"] = "STDIO", ["Command"] = {_lua(sys.executable)}, '
        f'["Args"] = {{ {_lua(str(SERVER))}, "stdio", {_lua(str(state))} }} }}\n'
        for index, state in enumerate(states, start=1)
    ]
    folder.mkdir(parents=True, exist_ok=True)
    text = HEADER + 'CONFIG["MCP_SERVERS"] = {}\n' + "".join(entries)
    (folder / "plugin.lua").write_text(text, encoding="utf-8")
    return folder


def _states(folder: Path, count: int, gate: Path | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    states = []
    for index in range(count):
        state = folder / f"state-{index}.json"
        slow = gate is not None and index == count - 1
        state.write_text(json.dumps({"start_gate": str(gate)} if slow else {}), encoding="utf-8")
        states.append(state)
    return states


async def _direct(state: Path) -> float:
    from mcp import Client, StdioServerParameters

    began = time.perf_counter()
    server = StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio", str(state)])
    async with Client(server, cache=None) as client:
        await client.list_tools()
        return time.perf_counter() - began


def _servers_listed(names: set[str]) -> int:
    """How many of the bench's servers (named s1, s2, ...) have tools among `names`."""
    return len({name.split("__", 1)[0] for name in names if re.match(r"s\d+__", name)})


async def _gateway(org: Path, count: int, gate: Path | None) -> dict[str, float]:
    from mcp import Client, StdioServerParameters

    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if type(message).__name__ == "ToolListChangedNotification":
            changed.set()

    serve = ["-m", "policy.cli", "mcp", "serve", "--org", str(org), "--provider", "OpenAI"]
    parameters = StdioServerParameters(command=sys.executable, args=serve, cwd=str(ROOT))
    if gate is not None:
        opener = threading.Timer(SLOW_START_SECONDS, gate.write_text, ("go",))
        opener.start()
    began = time.perf_counter()
    figures: dict[str, float] = {}
    async with Client(parameters, cache=None, mode="legacy", message_handler=on_message) as client:
        figures["initialize"] = time.perf_counter() - began
        names = {tool.name for tool in (await client.list_tools()).tools}
        figures["first list"] = time.perf_counter() - began
        figures["servers in it"] = _servers_listed(names)
        while _servers_listed(names) < count:
            await asyncio.wait_for(changed.wait(), 120)
            changed.clear()
            names = {tool.name for tool in (await client.list_tools()).tools}
        figures["all listed"] = time.perf_counter() - began
    return figures


async def _round(folder: Path, count: int) -> dict[str, float]:
    states = _states(folder / "quick", count)
    one = await _direct(states[0])
    began = time.perf_counter()
    await asyncio.gather(*(_direct(state) for state in states))
    every = time.perf_counter() - began
    gateway = await _gateway(_organization(folder / "org", states), count, None)
    gate = folder / "go"
    gate.unlink(missing_ok=True)
    slow_states = _states(folder / "slow", count, gate)
    slow = await _gateway(_organization(folder / "slow-org", slow_states), count, gate)
    return {
        "floor: one server": one,
        "floor: all servers at once": every,
        **{f"gateway: {k}": v for k, v in gateway.items()},
        **{f"one slow server: {k}": v for k, v in slow.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    rounds = []
    for number in range(options.rounds):
        with tempfile.TemporaryDirectory() as folder:
            rounds.append(asyncio.run(_round(Path(folder) / f"round-{number}", options.servers)))
    print(f"{options.servers} stdio MCP servers, median of {options.rounds} rounds")
    print(f"{'what':<40} {'value':>8}")
    for key in rounds[0]:
        value = statistics.median(r[key] for r in rounds)
        shown = f"{value:.0f}" if key.endswith("servers in it") else f"{value:.2f} s"
        print(f"{key:<40} {shown:>8}")
    print(f"(the slow server starts {SLOW_START_SECONDS:g} s after the gateway)")


if __name__ == "__main__":
    main()
