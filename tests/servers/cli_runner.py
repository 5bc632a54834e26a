"""Runs the `policy` console script's `main` inside the test process, as a subprocess would see it.

Most CLI tests check what a command prints and its exit code; a fresh interpreter per run
costs 0.3–0.6 s of CPU (imports and compiling), which is most of CI's time. This runner calls
`policy.cli.main` — the console script itself, with its error reporting and log handler —
with the process state a subprocess would have and puts everything back afterwards: the
environment (`env` replaces it whole, as `subprocess.run(env=...)` does), the working
directory, stdin/stdout/stderr (click's `CliRunner` isolation), the root logger's handlers (so
`main` installs its own stderr handler as in a fresh process), `threading.excepthook` and
the garbage collector (the report commands run without it).

`installed=True` runs the installed console script in a subprocess instead: each command keeps
at least one test that way, for what only a fresh process shows (the script's entry point, a
module the command forgot to import that the test process happened to have, exit at the
interpreter's end).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import logging
import os
import shutil
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner


@dataclass(frozen=True)
class CliRun:
    """What one run printed and how it ended (the fields `subprocess.CompletedProcess` has)."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run_policy(
    args: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    cwd: Path | str | None = None,
    installed: bool = False,
    debug_log: bool = False,
) -> CliRun:
    """`policy ARGS` in this process: `env` is the whole environment (None: this one), `input`
    is stdin. An exception escaping `main` (only `--debug` lets one) is printed to stderr as
    Python prints it and exits 1, as the interpreter would. `installed`: the console script in
    a subprocess. `debug_log`: the root logger writes every record at DEBUG to stderr, set up
    before `main` runs (`logging.basicConfig`), as an app embedding the command might."""
    arguments = [str(a) for a in args]
    if installed:
        assert not debug_log, "the installed script sets up its own logging"
        done = subprocess.run(
            [installed_policy(), *arguments],
            capture_output=True,
            text=True,
            env=None if env is None else dict(env),
            input=input,
            cwd=cwd,
            timeout=300,  # a guard against a hang, not a timing bound
            check=False,
        )
        return CliRun(tuple(arguments), done.returncode, done.stdout, done.stderr)
    if _event_loop_running():
        # A command runs its own event loop (asyncio.run), which a thread running one cannot:
        # the caller's loop waits for it, as it would wait for a subprocess.
        with concurrent.futures.ThreadPoolExecutor(1) as thread:
            return thread.submit(_run_main, arguments, env, input, cwd, debug_log).result()
    return _run_main(arguments, env, input, cwd, debug_log)


def _run_main(
    arguments: list[str],
    env: Mapping[str, str] | None,
    input: str | None,
    cwd: Path | str | None,
    debug_log: bool,
) -> CliRun:
    from policy.cli import main

    runner = CliRunner(charset="utf-8")
    with _process_state(env, cwd), runner.isolation(input=input) as (out, err, _):
        if debug_log:
            logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
        code = 0
        try:
            main(arguments)
        except SystemExit as ended:
            code = _exit_code(ended.code)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8")
        stderr = err.getvalue().decode("utf-8", errors="backslashreplace")
    return CliRun(tuple(arguments), code, stdout, stderr)


def _event_loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def installed_policy() -> str:
    """The `policy` console script of this environment (`pip install -e .` puts it there)."""
    beside = Path(sys.executable).parent / "policy"
    if beside.exists():
        return str(beside)
    found = shutil.which("policy")
    assert found is not None, "the `policy` command is not installed (pip install -e .)"
    return found


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


@contextlib.contextmanager
def _process_state(env: Mapping[str, str] | None, cwd: Path | str | None) -> Iterator[None]:
    environment = dict(os.environ)
    directory = os.getcwd()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    loggers = {
        name: lg.level
        for name, lg in list(logging.Logger.manager.loggerDict.items())
        if isinstance(lg, logging.Logger)
    }
    excepthook = threading.excepthook
    collecting = gc.isenabled()
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    for handler in handlers:
        root.removeHandler(handler)
    try:
        yield
    finally:
        threading.excepthook = excepthook
        gc.unfreeze()
        if collecting:
            gc.enable()
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
        for name, logger in list(logging.Logger.manager.loggerDict.items()):
            if isinstance(logger, logging.Logger) and logger.level != loggers.get(name, 0):
                logger.setLevel(loggers.get(name, logging.NOTSET))
        os.chdir(directory)
        os.environ.clear()
        os.environ.update(environment)
