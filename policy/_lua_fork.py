"""Run one job in a forked child that the parent kills at a wall-clock cap.

Only a separate process can stop C code that never returns (a pathological `string.find`
pattern runs inside one C call, out of reach of Lua's instruction hooks). A fork costs well under
a millisecond, where starting a fresh interpreter costs tens. Children that finished are reaped
lazily, so the caller does not wait for the kernel to tear the child down.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import math
import os
import resource
import select
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

_HEADER = struct.Struct("!Q")
_READ_SIZE = 1 << 20
_unreaped: set[int] = set()


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    """What came back: the payload, or why there is none (timed out or the child died)."""

    payload: bytes | None
    timed_out: bool = False
    death: str = ""


def fork_available() -> bool:
    return hasattr(os, "fork")


def run_in_child(job: Callable[[], bytes], wall_seconds: float) -> ChildOutcome:
    """Run `job` in a forked child; its return value comes back as the payload."""
    _reap_finished()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        _child_main(job, read_fd, write_fd, wall_seconds)
    os.close(write_fd)
    finished = False
    try:
        payload, timed_out = _read_payload(read_fd, time.monotonic() + wall_seconds)
        if payload is not None:
            finished = True
            _reap_later(pid)
            return ChildOutcome(payload)
        if timed_out:
            return ChildOutcome(None, timed_out=True)
        finished = True
        return ChildOutcome(None, death=_death_of(pid))
    finally:
        os.close(read_fd)
        if not finished:
            _kill(pid)


def _child_main(job: Callable[[], bytes], read_fd: int, write_fd: int, wall_seconds: float) -> None:
    status = 0
    try:
        os.close(read_fd)
        gc.disable()
        _limit_cpu(wall_seconds)
        payload = job()
        _write_all(write_fd, _HEADER.pack(len(payload)) + payload)
        os.close(write_fd)
    except BaseException:
        status = 70
    finally:
        os._exit(status)


def _limit_cpu(wall_seconds: float) -> None:
    """A backstop should the parent die: the kernel stops a child that keeps spinning."""
    seconds = math.ceil(wall_seconds) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        seconds = min(seconds, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, hard))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_payload(fd: int, deadline: float) -> tuple[bytes | None, bool]:
    """Returns (payload, timed_out); payload is None when the child ended without sending one."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    buffer = bytearray()
    expected: int | None = None
    while expected is None or len(buffer) < expected:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, True
        if not poller.poll(max(1, math.ceil(remaining * 1000))):
            continue
        chunk = os.read(fd, _READ_SIZE)
        if not chunk:
            return None, False
        buffer += chunk
        if expected is None and len(buffer) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(buffer)
            expected = _HEADER.size + length
    return bytes(buffer[_HEADER.size : expected]), False


def _death_of(pid: int) -> str:
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _reap_later(pid: int) -> None:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return
    if not done:
        _unreaped.add(pid)


def _reap_finished() -> None:
    for pid in list(_unreaped):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _unreaped.discard(pid)


@atexit.register
def _reap_all() -> None:
    for pid in list(_unreaped):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    _unreaped.clear()
