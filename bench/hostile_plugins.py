"""Benchmark: how long `policy check` takes to refuse hostile plugins. Prints figures.

    .venv/bin/python bench/hostile_plugins.py [--quick]

1. The floor and a real plugin: `python -c pass` and `policy check` of a real 900-line plugin
   (AI Studio's template size, from bench/decide.py), measured first, and that plugin's load
   alone in this process (the worker warm).
2. Each bomb (pattern, gsub, constructor, memory, loops hidden in pcall / coroutine / metamethod /
   message handler, a huge text, a shared table handed back 200,000 times, a FIFO) as the only
   organization plugin: wall time of a fresh `policy check` process (median) and of the load alone
   in this process, the cap that refused it, and whether the command stays within the 2 s target
   (the load average is printed: on a busy machine start-up alone takes longer), also above
   the real plugin's check.
3. Growth after the sandbox: `policy check` on n and 10·n unknown `DataTools.*` keys (one per
   line, and set in a loop, so that every finding shares one line) and on two plugins of n and
   10·n `DisabledToolIds` entries; the ratio of their times above the same shape with no entries
   (linear work gives about 10).

This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decide import _GLOBALS, template_sized_plugin

TARGET_SECONDS = 2.0

BOMBS: dict[str, str] = {
    "pattern": 'X = string.find(string.rep("a", 40), string.rep("a*", 40) .. "b")',
    "gsub": 'X = string.gsub(string.rep("a", 40), string.rep("a*", 40) .. "b", "")',
    "constructor": "local t = {}\nfor i = 1, 1 << 26 do t[i] = { i, i, i } end\nX = t",
    "memory (rep)": 'X = string.rep("x", 1 << 30)',
    "memory (concat)": 'local s = "0123456789abcdef"\nfor i = 1, 40 do s = s .. s end\nX = s',
    "memory (table.concat)": (
        'local t = {}\nfor i = 1, 1 << 24 do t[i] = "0123456789abcdef" end\nX = table.concat(t)'
    ),
    "loop": "while true do end",
    "loop in pcall": "while true do pcall(function() while true do end end) end",
    "loop in coroutine": "coroutine.resume(coroutine.create(function() while true do end end))",
    "loop in metamethod": (
        "local t = setmetatable({}, { __index = function() while true do end end })\nX = t.y"
    ),
    "loop in handler": "xpcall(function() error('x') end, function() while true do end end)",
    "huge text": "T = {" + "1," * 1_500_000 + "}",
    "shared table x200,000": (
        "local row = {}\nfor i = 1, 1000 do row[i] = i end\nT = {}\nfor i = 1, 201 do T[i] = row end"
    ),
}


def _policy() -> str:
    beside = Path(sys.executable).parent / "policy"
    return str(beside) if beside.exists() else "policy"


def _plugin(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = _GLOBALS.format(id=uuid.uuid4(), name=f"Hostile {name}", priority=0) + body + "\n"
    (folder / "plugin.lua").write_text(text, encoding="utf-8")
    return folder


def _median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _check(folder: Path) -> Callable[[], subprocess.CompletedProcess[str]]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    argv = [_policy(), "check", "--org", str(folder)]
    return lambda: subprocess.run(
        argv, capture_output=True, text=True, check=False, env=environment, timeout=300
    )


def _cap(output: str) -> str:
    for marker, name in (
        ("wall-clock cap", "wall clock"),
        ("instruction budget", "instructions"),
        ("more memory than the cap", "memory"),
        ("value too many", "values handed back"),
        ("not a regular file", "not a regular file"),
        ("over the cap of", "file size"),
    ):
        if marker in output:
            return name
    return "NOT REFUSED" if "ok:" in output else "other: " + output.strip().splitlines()[0][:60]


def bench_bombs(root: Path, repeats: int, real: float) -> None:
    from policy.merge import load_configuration

    load = os.getloadavg()[0]
    print(
        f"2. policy check on one hostile plugin (median of {repeats}; target <= 2 s each; "
        f"load average {load:.1f} on {os.cpu_count()} cores)"
    )
    print(
        f"   {'plugin':<24} {'check s':>8} {'- real s':>8} {'load s':>7}  {'refused by':<20} "
        "verdict"
    )
    folders = {
        name: _plugin(root / "bombs" / str(i), name, body)
        for i, (name, body) in enumerate(BOMBS.items())
    }
    fifo = root / "bombs" / "fifo"
    fifo.mkdir(parents=True)
    os.mkfifo(fifo / "plugin.lua")
    folders["FIFO named plugin.lua"] = fifo
    worst = 0.0
    for name, folder in folders.items():
        run = _check(folder)
        cap = _cap(run().stdout)
        seconds = _median_seconds(run, repeats)
        alone = _median_seconds(lambda folder=folder: load_configuration([folder]), repeats)
        worst = max(worst, seconds)
        verdict = "ok" if seconds <= TARGET_SECONDS and cap != "NOT REFUSED" else "OVER"
        print(
            f"   {name:<24} {seconds:>8.2f} {seconds - real:>8.2f} {alone:>7.2f}  {cap:<20} "
            f"{verdict}"
        )
    print(
        f"   worst {worst:.2f} s = {worst / TARGET_SECONDS:.2f} x the 2 s target "
        "(check s: the whole command; - real s: above checking the real plugin of section 2; "
        "load s: the load alone, in this process)"
    )


def bench_real(root: Path, repeats: int) -> float:
    template_sized_plugin(root / "real" / "base")
    run = _check(root / "real")
    assert "ok:" in run().stdout
    real = _median_seconds(run, repeats)
    floor = _median_seconds(
        lambda: subprocess.run([sys.executable, "-c", "pass"], check=False), repeats
    )
    from policy.merge import load_configuration

    load_configuration([root / "real"])  # the worker started and the text compiled once
    alone = _median_seconds(lambda: load_configuration([root / "real"]), max(repeats, 5))
    print("1. the floor and a real plugin")
    print(f"   python -c pass                      {floor:8.3f} s")
    print(f"   policy check, 900-line plugin       {real:8.3f} s  ({real / floor:.1f}x the floor)")
    print(f"   its load alone, in this process     {alone * 1000:8.1f} ms (warm worker)")
    return real


def bench_growth(root: Path, repeats: int, small: int) -> None:
    print(
        f"3. growth after the sandbox (policy check; n = {small:,} and 10n; each minus the same "
        "shape with no entries)"
    )

    def keys(folder: Path, count: int) -> Path:
        lines = [f'CONFIG["SETTINGS"]["DataTools.Unknown{i:06d}"] = "x"' for i in range(count)]
        return _plugin(folder / "keys", "keys", "\n".join(lines)).parent

    def looped_keys(folder: Path, count: int) -> Path:
        loop = (
            f"for i = 1, {count} do "
            'CONFIG["SETTINGS"]["DataTools.Unknown" .. string.format("%06d", i)] = "x" end'
        )
        return _plugin(folder / "loop", "loop", loop).parent

    def disabled(folder: Path, count: int) -> Path:
        for part in ("a", "b"):
            ids = ", ".join(f'"tool_{part}_{i:06d}"' for i in range(count))
            _plugin(
                folder / part,
                part,
                f'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {{ {ids} }}',
            )
        return folder

    shapes = (
        ("unknown DataTools keys", keys),
        ("the same, set in a loop", looped_keys),
        ("2 x DisabledToolIds", disabled),
    )
    for label, shape in shapes:
        times = []
        for count in (0, small, 10 * small):
            folder = shape(root / label.replace(" ", "_") / str(count), count)
            times.append(_median_seconds(_check(folder), repeats))
        growth = (times[2] - times[0]) / max(times[1] - times[0], 1e-3)
        print(
            f"   {label:<24} none {times[0]:5.2f} s   n {times[1]:6.2f} s   10n {times[2]:6.2f} s"
            f"   work 10n/n = {growth:5.1f} (linear ~10, quadratic ~100)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run each, smaller n")
    arguments = parser.parse_args()
    repeats = 1 if arguments.quick else 3
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        real = bench_real(root, repeats)
        bench_bombs(root, repeats, real)
        bench_growth(root, repeats, 1000 if arguments.quick else 2500)


if __name__ == "__main__":
    main()
