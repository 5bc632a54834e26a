"""Runs the `policy` command in a fresh interpreter and reports what it started and imported.

An audit hook (`sys.addaudithook`) records every attempt to start a program (subprocess, exec,
spawn, system) and every fork, with the modules on the stack that asked (and, for a fork, the
modules imported by then, which the forked process starts with); at the end the probe lists the
modules the command imported. Used by the cold-start tests and `bench/cold_start.py`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_FORKS = ("os.fork", "os.forkpty")
_WATCHED = ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", *_FORKS)
SANDBOX_WORKER = "policy._lua_worker"
"""The module whose fork is the Lua sandbox's worker (one per command that loads plugins)."""

_PROBE = f"""\
import sys

started = []

def watch(event, args):
    if event in {_WATCHED!r}:
        frame, callers = sys._getframe(1), []
        while frame is not None:
            callers.append(frame.f_globals.get("__name__", ""))
            frame = frame.f_back
        loaded = sorted(sys.modules) if event in {_FORKS!r} else []
        started.append({{"event": event, "callers": callers, "loaded": loaded}})

sys.addaudithook(watch)
from policy.cli import cli
try:
    cli.main(args=sys.argv[2:], prog_name="policy", standalone_mode=False)
except SystemExit:
    pass
modules = sorted(sys.modules)
import json

with open(sys.argv[1], "w", encoding="utf-8") as out:
    out.write(json.dumps({{"started": started, "modules": modules}}))
"""


@dataclass(frozen=True)
class ProbeReport:
    """What one run of the command started and imported."""

    started: tuple[tuple[str, tuple[str, ...]], ...]
    """(audit event, calling modules innermost first) per program start or fork."""
    modules: frozenset[str]
    loaded_at_forks: tuple[frozenset[str], ...]
    """The modules imported when each fork happened (the forked process starts with them)."""
    stderr: str
    stdout: str = ""

    @property
    def programs_started(self) -> list[str]:
        return [event for event, _ in self.started if event not in _FORKS]

    @property
    def sandbox_forks(self) -> int:
        return sum(1 for event, callers in self.started if self._sandbox_fork(event, callers))

    @property
    def loaded_at_sandbox_fork(self) -> frozenset[str]:
        """The modules imported when the Lua sandbox's worker was forked (empty: no such fork)."""
        forks = [(event, callers) for event, callers in self.started if event in _FORKS]
        return next(
            (
                loaded
                for (event, callers), loaded in zip(forks, self.loaded_at_forks, strict=True)
                if self._sandbox_fork(event, callers)
            ),
            frozenset(),
        )

    @property
    def other_forks(self) -> list[tuple[str, ...]]:
        return [
            callers
            for event, callers in self.started
            if event in _FORKS and not self._sandbox_fork(event, callers)
        ]

    @staticmethod
    def _sandbox_fork(event: str, callers: tuple[str, ...]) -> bool:
        return event in _FORKS and SANDBOX_WORKER in callers


def probe_cli(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> ProbeReport:
    """Run `policy ARGS` under the audit hook and read its report."""
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, str(report), *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=cwd,
            env=dict(env) if env is not None else None,
        )
        found = json.loads(report.read_text(encoding="utf-8"))
    return ProbeReport(
        started=tuple((e["event"], tuple(e["callers"])) for e in found["started"]),
        modules=frozenset(found["modules"]),
        loaded_at_forks=tuple(
            frozenset(e["loaded"]) for e in found["started"] if e["event"] in _FORKS
        ),
        stderr=done.stderr,
        stdout=done.stdout,
    )
