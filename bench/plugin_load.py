"""Benchmark: plugin load + merge against raw lupa running the same plugins. Prints figures.

    .venv/bin/python bench/plugin_load.py [--quick]

1. A 900-line plugin.lua (AI Studio's template size, from bench/decide.py) plus two department
   plugins: `load_configuration` (read safely, sandbox round trip, type, merge; the texts already
   compiled once, as on a reload) against the floor, raw lupa running the same three files, each
   in a fresh `LuaRuntime` (no sandbox, no types, no merge). Target: ratio <= 3.
2. Fixed cost per extra plugin: the same load with 0, 10 and 20 small plugins added; the slope
   in ms per plugin, ours and raw lupa's, side by side. Target: ours <= 0.3 ms per plugin.
3. The load of 2. with 20 small plugins, with and without the worker preparing fresh Lua states
   while it idles (the CPU moves, the wall time of a request is what it saves).

Two metrics, side by side: *wall* is the median elapsed time of alternating runs in one process;
*CPU* is processor time per run, ours counting the sandbox worker's too (from /proc, Linux), so a
busy machine's scheduling delays between the two processes do not count against either side. The
worker prepares fresh Lua states for the next request while it idles: that takes work off the
request's wall time but not off its CPU, so all the worker's CPU over the run counts as ours.
This is not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decide import small_plugin, template_sized_plugin

from policy.merge import load_configuration


def _median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _raw_lupa(files: list[Path]) -> Callable[[], None]:
    from lupa import lua54

    texts = [path.read_bytes() for path in files]

    def run() -> None:
        for text in texts:
            runtime = lua54.LuaRuntime(encoding=None)
            runtime.execute(text)

    return run


def _worker_cpu_seconds() -> float:
    """CPU time the sandbox worker has used so far (0 where /proc is missing): nanoseconds from
    schedstat where the kernel has it, else clock ticks from stat."""
    from policy import _lua_worker

    worker = _lua_worker._worker
    if worker is None:
        return 0.0
    try:
        return int(Path(f"/proc/{worker.pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_until_worker_idles() -> None:
    """The worker prepares fresh Lua states after answering; wait until it sleeps again, so that
    work is counted as ours."""
    from policy import _lua_worker

    worker = _lua_worker._worker
    deadline = time.monotonic() + 1.0
    while worker is not None and time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state != "R":
            return
        time.sleep(0.001)


def _side_by_side(root: Path, repeats: int) -> tuple[float, float, float, float]:
    """(ours wall, raw wall, ours CPU, raw CPU) in ms per run. Ours CPU is our process's CPU
    during our runs plus all the worker used over the whole alternation: what it does while idle
    (preparing fresh Lua states for the next request) is counted as ours too."""
    files = sorted(root.rglob("plugin.lua"))
    raw = _raw_lupa(files)

    def ours() -> None:
        load_configuration([root])

    ours()
    raw()
    _wait_until_worker_idles()
    ours_times, raw_times = [], []
    ours_cpu = raw_cpu = 0.0
    worker_start = _worker_cpu_seconds()
    for _ in range(repeats):  # alternating, so both see the same machine
        cpu = time.process_time()
        ours_times.append(_median_ms(ours, 1))
        ours_cpu += time.process_time() - cpu
        cpu = time.process_time()
        raw_times.append(_median_ms(raw, 1))
        raw_cpu += time.process_time() - cpu
    _wait_until_worker_idles()
    ours_cpu += _worker_cpu_seconds() - worker_start
    return (
        statistics.median(ours_times),
        statistics.median(raw_times),
        ours_cpu * 1000 / repeats,
        raw_cpu * 1000 / repeats,
    )


def bench_ratio(root: Path, repeats: int) -> None:
    template_sized_plugin(root / "org" / "base")
    small_plugin(root / "org" / "dept_a", 1, 4)
    small_plugin(root / "org" / "dept_b", 2, 4)
    lines = len((root / "org" / "base" / "plugin.lua").read_text().splitlines())
    ours, raw, ours_cpu, raw_cpu = _side_by_side(root / "org", repeats)
    print(f"1. load + merge of a {lines}-line plugin.lua + 2 department plugins (ms per run)")
    print(f"   {'':<24} {'wall':>8} {'CPU':>8}")
    print(f"   {'toolpolicy load+merge':<24} {ours:8.2f} {ours_cpu:8.2f}")
    print(f"   {'raw lupa, same files':<24} {raw:8.2f} {raw_cpu:8.2f}")
    print(
        f"   {'ratio':<24} {ours / raw:7.2f}x {ours_cpu / max(raw_cpu, 1e-6):7.2f}x   (target <= 3)"
    )


def bench_per_plugin(root: Path, repeats: int) -> None:
    folder = root / "many"
    template_sized_plugin(folder / "base")
    figures = []
    added = 0
    for count in (0, 10, 20):
        while added < count:
            small_plugin(folder / f"extra_{added:02d}_{uuid.uuid4().hex[:6]}", added + 3, 4)
            added += 1
        figures.append((count, *_side_by_side(folder, repeats)))
    (c0, o0, r0, oc0, rc0), (c2, o2, r2, oc2, rc2) = figures[0], figures[-1]
    print("2. fixed cost per extra plugin (900-line plugin + n small ones; ms per run)")
    print(f"   {'':<8} {'ours wall':>10} {'ours CPU':>10} {'raw wall':>10} {'raw CPU':>10}")
    for count, ours, raw, ours_cpu, raw_cpu in figures:
        print(f"   n = {count:>2}   {ours:10.2f} {ours_cpu:10.2f} {raw:10.2f} {raw_cpu:10.2f}")
    extra = c2 - c0
    ours_wall, ours_cpu = (o2 - o0) / extra, (oc2 - oc0) / extra
    raw_wall, raw_cpu = (r2 - r0) / extra, (rc2 - rc0) / extra
    print(
        f"   per extra plugin: ours {ours_wall:.3f} ms wall, {ours_cpu:.3f} ms CPU; raw lupa "
        f"{raw_wall:.3f} ms wall, {raw_cpu:.3f} ms CPU   (target: ours <= 0.3 ms)"
    )
    print(
        f"   per extra plugin, ours / raw lupa: {ours_wall / max(raw_wall, 1e-6):.1f}x wall, "
        f"{ours_cpu / max(raw_cpu, 1e-6):.1f}x CPU"
    )


def bench_prepared_states(root: Path, repeats: int) -> None:
    """The same load with and without the worker preparing fresh Lua states while it idles
    (switched off by its private cap, the worker restarted), in alternating blocks."""
    from policy import lua_sandbox
    from policy.lua_sandbox import stop_sandbox_worker

    folder = root / "many"
    cap = lua_sandbox._MAX_PREPARED
    samples: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
    try:
        for prepared in (False, True, False, True):
            lua_sandbox._MAX_PREPARED = cap if prepared else 0
            stop_sandbox_worker()
            for _ in range(2):
                load_configuration([folder])
            walls, cpus = samples[prepared]
            for _ in range(repeats):
                time.sleep(0.005)  # a reload comes later than at once: the worker idles first
                _wait_until_worker_idles()
                worker, cpu = _worker_cpu_seconds(), time.process_time()
                walls.append(_median_ms(lambda: load_configuration([folder]), 1))
                cpu = time.process_time() - cpu
                time.sleep(0.005)
                _wait_until_worker_idles()
                cpus.append((cpu + _worker_cpu_seconds() - worker) * 1000)
    finally:
        lua_sandbox._MAX_PREPARED = cap
        stop_sandbox_worker()
    count = len(sorted(folder.rglob("plugin.lua")))
    print(f"3. fresh Lua states prepared while the worker idles ({count} plugins; ms per run)")
    print(f"   {'':<28} {'wall':>8} {'CPU':>8}")
    for prepared, label in ((False, "made when a request comes"), (True, "prepared while idle")):
        walls, cpus = samples[prepared]
        print(f"   {label:<28} {statistics.median(walls):8.2f} {statistics.mean(cpus):8.2f}")
    (off_wall, off_cpu), (on_wall, on_cpu) = (
        (statistics.median(samples[p][0]), statistics.mean(samples[p][1])) for p in (False, True)
    )
    print(
        f"   prepared / made on request: {on_wall / off_wall:.2f}x wall, "
        f"{on_cpu / off_cpu:.2f}x CPU (the CPU moves to the idle time, it does not disappear)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    arguments = parser.parse_args()
    repeats = 7 if arguments.quick else 31
    with tempfile.TemporaryDirectory() as folder:
        bench_ratio(Path(folder), repeats)
        bench_per_plugin(Path(folder), repeats)
        bench_prepared_states(Path(folder), repeats)


if __name__ == "__main__":
    main()
