"""`QueuedSink`: records written off the request's path through a bounded queue that pushes back
instead of dropping, and the fail-closed rule (`admission`) the executor asks before a tool call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from policy import DecisionRecord
from runtime.decision_log._encoder import record_line
from runtime.decision_log._sinks import DecisionSink, lines_writer, warn_once

_log = logging.getLogger("runtime.decision_log")  # one logger name for the package


_IDLE_SECONDS = 2.0
_BATCH_SECONDS = 0.05


class _PendingRecord(Protocol):
    """A record on the queue, made on the writer thread: as a model for a sink's `write`, or as
    its JSON line for a `LineSink` (`DecisionRecorder` is one)."""

    @property
    def decision_id(self) -> str: ...

    def record(self) -> DecisionRecord: ...

    def json_line(self) -> bytes: ...


@dataclass(frozen=True, slots=True)
class _MadeRecord:
    """A record given whole (`QueuedSink.write`)."""

    made: DecisionRecord

    @property
    def decision_id(self) -> str:
        return self.made.decision_id

    def record(self) -> DecisionRecord:
        return self.made

    def json_line(self) -> bytes:
        return record_line(self.made)


class QueuedSink:
    """Writes records to `sink` from a background thread through a bounded queue, and never
    drops one.

    The writer wakes every 50 ms (at once when the queue is half full) and writes what has
    gathered, so a response does not pay a thread switch per record; a sink with `write_lines`
    (`LineSink`, e.g. `JsonLinesSink`) gets the whole batch as JSON lines in one call, each line
    serialized straight from what the answer gathered (`DecisionRecorder.json_line`), any other
    sink a `DecisionRecord` at a time. A sink that raises is warned about once and writing goes
    on. The writer thread ends when idle and starts again with the next record, so a runtime
    rebuilt on every reload leaves no thread behind; records still waiting at interpreter exit
    are written then. `ChatRuntime` wraps the sink it is given in one of these.

    Back-pressure instead of drops: when `max_pending` records are waiting, whoever brings the
    next one waits for room, at most `max_wait` seconds — `respond` before its answer's record
    (`room`), the executor before a tool call (`admission`), a caller of `write` on its thread.
    When the bound is reached a tool call is refused (a call that cannot be recorded is not
    served), and a record that has already happened (an answer given) is kept past the bound,
    never dropped, and said once per time the queue overflows.

    `failure` says, without waiting, why a record given now may not be kept: the sink's last
    write failed (until a later write succeeds) or the queue is full.
    """

    def __init__(
        self, sink: DecisionSink, *, max_pending: int = 1000, max_wait: float = 5.0
    ) -> None:
        if max_pending < 1:
            raise ValueError(f"QueuedSink needs max_pending >= 1, got {max_pending}.")
        if not max_wait > 0:
            raise ValueError(f"QueuedSink needs max_wait > 0 (seconds), got {max_wait}.")
        self.sink = sink
        self.max_pending = max_pending
        self.max_wait = max_wait
        self._queue: deque[_PendingRecord] = deque()
        self._write_lines = lines_writer(sink)
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._accepted = 0
        self._written = 0
        self._over_bound = False
        self._failure: str | None = None
        _open_queues.add(self)

    @property
    def failure(self) -> str | None:
        """Why a record given now may not be kept, or None: the sink's last write failed (until a
        write succeeds again), or `max_pending` records are already waiting."""
        failure = self._failure
        if failure is None and len(self._queue) >= self.max_pending:
            failure = f"its queue is full ({self.max_pending} records waiting)"
        return failure

    async def room(self) -> bool:
        """Wait, without holding up the event loop, until the queue has room for a record (True)
        or `max_wait` seconds passed (False)."""
        if len(self._queue) < self.max_pending:
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait
        while True:
            with self._lock:
                if len(self._queue) < self.max_pending:
                    return True
                freed: asyncio.Future[None] = loop.create_future()
                self._waiters.append((loop, freed))
                self._wake.set()
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            try:
                await asyncio.wait_for(freed, remaining)
            except TimeoutError:
                return len(self._queue) < self.max_pending

    async def admission(self) -> str | None:
        """Why a tool call may not run because its record could not be kept, or None: the sink's
        last write failed (at once), or the queue had no room within `max_wait` seconds."""
        failure = self._failure
        if failure is not None:
            return failure
        if await self.room():
            return None
        return (
            f"its queue stayed full ({len(self._queue)} records waiting for "
            f"{type(self.sink).__name__}, at most {self.max_pending}) for {self.max_wait:g} s"
        )

    def write(self, record: DecisionRecord) -> None:
        """Queue a record; when the queue is full, wait on this thread (at most `max_wait`
        seconds) for room, then keep it all the same."""
        with self._lock:
            self._room.wait_for(lambda: len(self._queue) < self.max_pending, self.max_wait)
        self.put(_MadeRecord(record))

    def put(self, record: _PendingRecord) -> None:
        """Queue a record still to be made (an ended `DecisionRecorder`, whose record the writer
        thread makes off the request's path) without waiting: the caller waited for room first
        (`room`); past the bound it is kept all the same, never dropped."""
        with self._lock:
            self._queue.append(record)
            self._accepted += 1
            pending = len(self._queue)
            if pending * 2 >= self.max_pending:
                self._wake.set()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._drain, name="toolpolicy-decision-log", daemon=True
                )
                self._thread.start()
            first_over = pending > self.max_pending and not self._over_bound
            if first_over:
                self._over_bound = True
        if first_over:
            _log.warning(
                "The decision log queue is past its bound (%d records waiting for %s, at most "
                "%d): record %s is kept all the same; tool calls wait for room and are not run "
                "when none comes within %g s.",
                pending,
                type(self.sink).__name__,
                self.max_pending,
                record.decision_id,
                self.max_wait,
            )

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued record is written (True), or `timeout` seconds passed."""
        deadline = time.monotonic() + timeout
        while self._written < self._accepted:
            self._wake.set()
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        return True

    def close(self, timeout: float = 10.0) -> bool:
        """Flush; the sink's own `close` (if it has one) is called after."""
        done = self.flush(timeout)
        closer = getattr(self.sink, "close", None)
        if callable(closer):
            closer()
        _open_queues.discard(self)
        return done

    def _drain(self) -> None:
        idle_since = time.monotonic()
        while True:
            self._wake.wait(_BATCH_SECONDS)
            self._wake.clear()
            with self._lock:
                batch = list(self._queue)
                self._queue.clear()
                if batch:
                    self._make_room()
                elif time.monotonic() - idle_since > _IDLE_SECONDS:
                    self._thread = None
                    return
            if batch:
                idle_since = time.monotonic()
                try:
                    self._write(batch)
                finally:
                    self._written += len(batch)

    def _make_room(self) -> None:
        """Wake whoever waits for room (the lock is held: the queue was just emptied)."""
        self._over_bound = False
        self._room.notify_all()
        for loop, freed in self._waiters:
            with contextlib.suppress(RuntimeError):  # a closed event loop: nobody waits there
                loop.call_soon_threadsafe(_release, freed)
        self._waiters.clear()

    def _write(self, batch: list[_PendingRecord]) -> None:
        failed: Exception | None = None
        if self._write_lines is not None:
            lines: list[bytes] = []
            for item in batch:
                try:
                    lines.append(item.json_line())
                except Exception as error:  # the writer thread goes on with the next record
                    failed = error
            try:
                self._write_lines(lines)
            except Exception as error:
                failed = error
        else:
            for item in batch:
                try:
                    self.sink.write(item.record())
                except Exception as error:
                    failed = error
        self._settle(failed)

    def _settle(self, failed: Exception | None) -> None:
        """Keep how the last write went: a failure refuses tool calls until a write succeeds."""
        was = self._failure
        if failed is None:
            self._failure = None
            if was is not None:
                _log.info(
                    "The decision log %s writes records again; tool calls run again.",
                    type(self.sink).__name__,
                )
            return
        self._failure = (
            f"{type(self.sink).__name__} could not write a record ({type(failed).__name__})"
        )
        warn_once(self.sink, failed, "tool calls are not run until it writes a record again")


def _release(freed: asyncio.Future[None]) -> None:
    if not freed.done():
        freed.set_result(None)


_open_queues: weakref.WeakSet[QueuedSink] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for sink in list(_open_queues):
        sink.flush(timeout=5.0)
