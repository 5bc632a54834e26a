"""`QueuedSink`: records written off the request's path through a bounded queue, and the
fail-closed rule (`failure`) the executor asks before it runs a tool call.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from policy.decision_record import DecisionRecord
from runtime.decision_log._encoder import record_line
from runtime.decision_log._sinks import DecisionSink, lines_writer, warn_once

_log = logging.getLogger("runtime.decision_log")  # one logger name for the package


_IDLE_SECONDS = 2.0
_BATCH_SECONDS = 0.05
_KEPT_DROPPED_IDS = 100


class PendingRecord(Protocol):
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
    """Writes records to `sink` from a background thread through a bounded queue.

    `write` never waits: it appends to the queue, and when `max_pending` records are already
    waiting the record is dropped, counted (`dropped`, `dropped_ids`) and warned about once;
    `flush` and `close` say how many were dropped. The writer wakes every 50 ms (at once when
    the queue is half full) and writes what has gathered, so a response does not pay a thread
    switch per record; a sink with `write_lines` (`LineSink`, e.g. `JsonLinesSink`) gets the
    whole batch as JSON lines in one call, each line serialized straight from what the answer
    gathered (`DecisionRecorder.json_line`), any other sink a `DecisionRecord` at a time. A sink
    that raises is warned about once and writing goes on. The writer thread ends when idle and
    starts again with the next record, so a runtime rebuilt on every reload leaves no thread
    behind; records still waiting at interpreter exit are written then. `ChatRuntime` wraps the
    sink it is given in one of these.

    `failure` says, without waiting, why a record given now may not be kept: the sink's last
    write failed (until a later write succeeds) or the queue is full. The runtime runs no tool
    call while it says so (a call that cannot be recorded is not served).
    """

    def __init__(self, sink: DecisionSink, *, max_pending: int = 1000) -> None:
        if max_pending < 1:
            raise ValueError(f"QueuedSink needs max_pending >= 1, got {max_pending}.")
        self.sink = sink
        self.max_pending = max_pending
        self._queue: deque[PendingRecord] = deque()
        self._write_lines = lines_writer(sink)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._accepted = 0
        self._written = 0
        self._dropped = 0
        self._dropped_ids: list[str] = []
        self._reported_drops = 0
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

    @property
    def dropped(self) -> int:
        """How many records were dropped because the queue was full."""
        return self._dropped

    @property
    def dropped_ids(self) -> tuple[str, ...]:
        """The decision ids of the first 100 dropped records."""
        return tuple(self._dropped_ids)

    def write(self, record: DecisionRecord) -> None:
        self.put(_MadeRecord(record))

    def put(self, record: PendingRecord) -> None:
        """Queue a record still to be made: an ended `DecisionRecorder`, whose record the writer
        thread makes (off the request's path)."""
        with self._lock:
            if len(self._queue) >= self.max_pending:
                self._dropped += 1
                if len(self._dropped_ids) < _KEPT_DROPPED_IDS:
                    self._dropped_ids.append(record.decision_id)
                first = self._dropped == 1
            else:
                first = False
                self._queue.append(record)
                self._accepted += 1
                if len(self._queue) * 2 >= self.max_pending:
                    self._wake.set()
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._drain, name="toolpolicy-decision-log", daemon=True
                    )
                    self._thread.start()
                return
        if first:
            _log.warning(
                "The decision log queue is full (%d records waiting for %s): record %s was "
                "dropped; the request went on. Further drops are counted and reported on "
                "flush/close.",
                self.max_pending,
                type(self.sink).__name__,
                record.decision_id,
            )

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued record is written (True), or `timeout` seconds passed."""
        deadline = time.monotonic() + timeout
        while self._written < self._accepted:
            self._wake.set()
            if time.monotonic() > deadline:
                return False
            time.sleep(0.002)
        self._report_drops()
        return True

    def close(self, timeout: float = 10.0) -> bool:
        """Flush; the sink's own `close` (if it has one) is called after."""
        done = self.flush(timeout)
        closer = getattr(self.sink, "close", None)
        if callable(closer):
            closer()
        _open_queues.discard(self)
        return done

    def _report_drops(self) -> None:
        with self._lock:
            new = self._dropped - self._reported_drops
            self._reported_drops = self._dropped
        if new:
            _log.warning(
                "The decision log dropped %d record(s) because its queue was full (%d in all); "
                "first dropped decision ids: %s.",
                new,
                self._dropped,
                ", ".join(self._dropped_ids[:10]),
            )

    def _drain(self) -> None:
        idle_since = time.monotonic()
        while True:
            self._wake.wait(_BATCH_SECONDS)
            self._wake.clear()
            with self._lock:
                batch = list(self._queue)
                self._queue.clear()
                if not batch and time.monotonic() - idle_since > _IDLE_SECONDS:
                    self._thread = None
                    return
            if batch:
                idle_since = time.monotonic()
                try:
                    self._write(batch)
                finally:
                    self._written += len(batch)

    def _write(self, batch: list[PendingRecord]) -> None:
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


_open_queues: weakref.WeakSet[QueuedSink] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for sink in list(_open_queues):
        sink.flush(timeout=5.0)
