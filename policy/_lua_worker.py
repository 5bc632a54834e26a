"""A forked worker process that runs sandbox jobs and is killed when one overruns its wall clock.

Only a separate process can stop C code that never returns (a pathological `string.find`
pattern runs inside one C call, out of reach of Lua's instruction hooks). Forking per job costs
several milliseconds in a process that has loaded a web stack, so one worker is forked on first
use and reused: every job still gets a fresh Lua state there, and a job that overruns its wall
clock takes the worker down with it (the next job forks a new one). One request carries every
job of a configuration (one round trip); the worker answers each job with its own reply as soon
as it is done, and each reply has its own wall clock. The worker ends when the parent closes its
end of the pipe, at exit at the latest.
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
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import field

from policy._dataclass import dataclass

_HEADER = struct.Struct("!Q")
_READ_SIZE = 1 << 20
_Handler = Callable[[bytes], Iterator[bytes]]
"""Turns one request into one reply per job it holds, each yielded when that job is done."""


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """The reply, or why there is none (the wall clock ran out, or the worker died)."""

    reply: bytes | None
    timed_out: bool = False
    death: str = ""


@dataclass(slots=True)
class _Worker:
    """The running worker: its process id, both pipe ends and the handler it was forked with."""

    pid: int
    to_worker: int
    from_worker: int
    handler: _Handler
    pending: bytearray = field(default_factory=bytearray)
    """Bytes read past the last reply: the next replies of the same request."""


_lock = threading.Lock()
_worker: _Worker | None = None


def run_jobs(
    handler: _Handler, request: bytes, count: int, wall_seconds: float
) -> list[JobOutcome]:
    """Have the worker compute the `count` replies of `handler(request)`, each within
    `wall_seconds` of the one before. The list ends early at the first job that overran or whose
    worker died (that job's outcome says so); the caller sends the jobs after it again."""
    global _worker
    frame = _HEADER.pack(math.ceil(wall_seconds)) + request
    outcomes: list[JobOutcome] = []
    with _lock:
        worker = _ready_worker(handler)
        timed_out = False
        try:
            try:
                _write_frame(worker.to_worker, frame)
            except OSError:
                # The worker died between jobs (e.g. the OOM killer): that is not this job's fault.
                _kill(worker)
                _worker = None
                worker = _ready_worker(handler)
                _write_frame(worker.to_worker, frame)
            while len(outcomes) < count:
                reply, timed_out = _read_frame(
                    worker.from_worker, time.monotonic() + wall_seconds, worker.pending
                )
                if reply is None:
                    break
                outcomes.append(JobOutcome(reply))
        except OSError:
            timed_out = False
        except BaseException:
            # Interrupted mid-job: its late reply must never be read as the next job's.
            _kill(worker)
            _worker = None
            raise
        if len(outcomes) == count:
            return outcomes
        _worker = None
        if timed_out:
            _kill(worker)
            outcomes.append(JobOutcome(None, timed_out=True))
        else:
            outcomes.append(JobOutcome(None, death=_kill(worker)))
        return outcomes


def _ready_worker(handler: _Handler) -> _Worker:
    global _worker
    worker = _worker
    if worker is not None and worker.handler is handler and not _has_exited(worker):
        return worker
    _worker = None
    if worker is not None:
        _stop(worker)
    _worker = _start(handler)
    return _worker


def shutdown() -> None:
    """End the worker (tests and embedding apps that want no child process left)."""
    global _worker
    with _lock:
        if _worker is not None:
            _stop(_worker)
            _worker = None


def _start(handler: _Handler) -> _Worker:
    request_read, request_write = os.pipe()
    reply_read, reply_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        _close_all_but(request_read, reply_write)
        _serve(handler, request_read, reply_write)
    os.close(request_read)
    os.close(reply_write)
    return _Worker(pid, request_write, reply_read, handler)


def _close_all_but(first: int, second: int) -> None:
    """The worker keeps only its pipes and stdio: no inherited socket or file stays open in it."""
    low, high = sorted((first, second))
    os.closerange(3, low)
    os.closerange(low + 1, high)
    os.closerange(high + 1, os.sysconf("SC_OPEN_MAX"))


def _serve(handler: _Handler, requests: int, replies: int) -> None:
    status = 0
    pending = bytearray()
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        # The inherited objects never become garbage here; freezing them keeps the collector from
        # touching (and so copying) every page shared with the parent.
        gc.freeze()
        while True:
            try:
                frame, _ = _read_frame(requests, None, pending)
            except OSError:
                break
            if frame is None:
                break
            (wall_seconds,) = _HEADER.unpack_from(frame)
            _limit_cpu(wall_seconds)
            for reply in handler(frame[_HEADER.size :]):
                _write_frame(replies, reply)
                _limit_cpu(wall_seconds)
    except BaseException:
        status = 70
    finally:
        os._exit(status)


def _limit_cpu(wall_seconds: int) -> None:
    """A backstop should the parent die mid-job: the kernel stops a worker that keeps spinning."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    seconds = math.ceil(usage.ru_utime + usage.ru_stime) + wall_seconds + 2
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        seconds = min(seconds, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, hard))


def _write_frame(fd: int, payload: bytes) -> None:
    view = memoryview(_HEADER.pack(len(payload)) + payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _read_frame(fd: int, deadline: float | None, pending: bytearray) -> tuple[bytes | None, bool]:
    """Returns (frame, timed_out); frame is None when the other side closed the pipe. Reads as
    much as the pipe holds (one wake-up often brings several replies) and keeps what lies past
    this frame in `pending` for the next call."""
    poller: select.poll | None = None
    while True:
        if len(pending) >= _HEADER.size:
            (length,) = _HEADER.unpack_from(pending)
            end = _HEADER.size + length
            if len(pending) >= end:
                frame = bytes(pending[_HEADER.size : end])
                del pending[:end]
                return frame, False
        if poller is None:
            poller = select.poll()
            poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        if deadline is None:
            timeout_ms = None
        else:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, True
            timeout_ms = max(1, math.ceil(remaining * 1000))
        if not poller.poll(timeout_ms):
            continue
        chunk = os.read(fd, _READ_SIZE)
        if not chunk:
            return None, False
        pending += chunk


def _has_exited(worker: _Worker) -> bool:
    """Reaps a worker that died between jobs, so the next job does not write into a corpse."""
    try:
        pid, _ = os.waitpid(worker.pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return pid != 0


def _kill(worker: _Worker) -> str:
    """Kill and reap the worker; describes how it ended."""
    for fd in (worker.to_worker, worker.from_worker):
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(worker.pid, 0)
    except ChildProcessError:
        return "already reaped"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGKILL:
            return "killed"
        try:
            return f"killed by {signal.Signals(number).name}"
        except ValueError:
            return f"killed by signal {number}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _stop(worker: _Worker) -> None:
    """Let the worker finish on its own (it reads end-of-file), then reap it."""
    for fd in (worker.to_worker, worker.from_worker):
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(worker.pid, 0)


def _forget_in_child() -> None:
    """A process forked from ours must neither talk to nor keep alive our worker."""
    global _worker, _lock
    _lock = threading.Lock()
    if _worker is not None:
        for fd in (_worker.to_worker, _worker.from_worker):
            with contextlib.suppress(OSError):
                os.close(fd)
        _worker = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(shutdown)
