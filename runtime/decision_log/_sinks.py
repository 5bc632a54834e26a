"""Where records go: the `DecisionSink` protocol and the sinks toolpolicy ships; a sink's
failure is warned about once.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from policy import DecisionRecord
from runtime.decision_log._encoder import line_safe, record_line
from runtime.tracing import TRACER_NAME

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider

_log = logging.getLogger("runtime.decision_log")  # one logger name for the package


class DecisionSink(Protocol):
    """Where records go. `write` may raise: the recorder warns once and the request goes on."""

    def write(self, record: DecisionRecord) -> None: ...


class LineSink(DecisionSink, Protocol):
    """A sink that also takes records as JSON lines, many at once. `QueuedSink` hands such a
    sink each batch in one `write_lines` call (one write, one request, one transaction for
    all that gathered), every line the JSON of a `DecisionRecord` with its fields in the
    model's order, U+2028, U+2029 and NEL escaped (`line_safe`), ending in a newline; a sink
    without `write_lines` gets `write(record)` for each. Any sink may implement it: nothing
    else is needed to be batched."""

    def write_lines(self, lines: Sequence[bytes]) -> None: ...


def lines_writer(sink: DecisionSink) -> Callable[[Sequence[bytes]], None] | None:
    """The sink's `write_lines` when it has one (the `LineSink` protocol), else None; asked once
    per queue, so a sink of any class is batched by what it offers."""
    write_lines = getattr(sink, "write_lines", None)
    return write_lines if callable(write_lines) else None


class CallbackSink:
    """Hands each record to a function (an app's own store or queue)."""

    def __init__(self, callback: Callable[[DecisionRecord], None]) -> None:
        self._callback = callback

    def write(self, record: DecisionRecord) -> None:
        self._callback(record)


class JsonLinesSink:
    """Appends one JSON line per record; past `max_bytes` the file rolls to FILE.1 … FILE.N.

    The file stays open between records (each line is flushed at once); `close` closes it, and
    it is opened again on the next record.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, max_bytes: int = 10_000_000, backups: int = 5
    ) -> None:
        if max_bytes < 1 or backups < 0:
            raise ValueError(
                f"JsonLinesSink needs max_bytes >= 1 and backups >= 0, got max_bytes={max_bytes}, "
                f"backups={backups}."
            )
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(
                f"JsonLinesSink needs a file to append to, got the folder {str(path)!r}; name a "
                "file such as decisions.jsonl."
            )
        self._max_bytes = max_bytes
        self._backups = backups
        self._lock = threading.Lock()
        self._handle: BinaryIO | None = None
        self._size = 0

    def write(self, record: DecisionRecord) -> None:
        self.write_lines([record_line(record)])

    def write_lines(self, lines: Sequence[bytes]) -> None:
        """Append records already serialized (each a JSON object ending in a newline) in as few
        writes as the rotation allows: one, unless the file rolls over on the way. Each line is
        written `line_safe`: a record is one line for every line-based tool."""
        lines = [line_safe(line) for line in lines]
        with self._lock:
            if self._handle is None:
                self._handle = self.path.open("ab")
                self._size = self._handle.tell()
            chunk: list[bytes] = []
            pending = self._size
            for line in lines:
                if pending and pending + len(line) > self._max_bytes:
                    self._handle.write(b"".join(chunk))
                    chunk.clear()
                    self._handle.close()
                    self._handle = None
                    self._rotate()
                    self._handle = self.path.open("ab")
                    pending = 0
                chunk.append(line)
                pending += len(line)
            self._handle.write(b"".join(chunk))
            self._handle.flush()
            self._size = pending

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None

    def _rotate(self) -> None:
        if self._backups == 0:
            self.path.unlink(missing_ok=True)
            return
        for index in range(self._backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
        if self.path.exists():
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))


class OpenTelemetrySink:
    """Emits each record as an OpenTelemetry log record (event `toolpolicy.decision`), so the
    records travel the same pipeline as the traces: the body is the record as JSON data, the
    attributes carry `toolpolicy.decision_id` (also on the answer's span),
    `toolpolicy.configuration.revision` and `gen_ai.conversation.id`. `logger_provider`
    defaults to the global one; without a configured provider nothing is emitted."""

    def __init__(self, logger_provider: LoggerProvider | None = None) -> None:
        from opentelemetry._logs import get_logger

        self._logger = get_logger(TRACER_NAME, logger_provider=logger_provider)

    def write(self, record: DecisionRecord) -> None:
        from opentelemetry._logs import SeverityNumber

        self._logger.emit(
            event_name="toolpolicy.decision",
            severity_number=SeverityNumber.INFO,
            body=record.model_dump(mode="json", exclude_none=True),
            attributes={
                "toolpolicy.decision_id": record.decision_id,
                "toolpolicy.configuration.revision": record.configuration.revision,
                "gen_ai.conversation.id": record.chat_id,
            },
        )


# The sinks already warned about, by id with a weak reference that says whether the id is still
# that sink's: a freed sink's id is often the next sink's, which must be warned about too. A sink
# that takes no weak reference is held instead, so its id stays its own.
_warned: dict[int, Callable[[], object]] = {}
_warned_lock = threading.RLock()  # a weak reference's callback may run inside (a collection)


def warn_once(
    sink: DecisionSink, error: Exception, consequence: str = "the request went on"
) -> None:
    key = id(sink)
    with _warned_lock:
        held = _warned.get(key)
        if held is not None and held() is sink:
            return
        try:
            _warned[key] = weakref.ref(sink, functools.partial(_forget_warned, key))
        except TypeError:
            _warned[key] = functools.partial(_itself, sink)
    _log.warning(
        "The decision log %s could not write a record (%s); %s. Later failures of this sink "
        "are not repeated.",
        type(sink).__name__,
        type(error).__name__,
        consequence,
    )


def _forget_warned(key: int, reference: weakref.ref[DecisionSink]) -> None:
    with _warned_lock:
        if _warned.get(key) is reference:
            del _warned[key]


def _itself(value: object) -> object:
    return value
