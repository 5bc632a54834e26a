"""Decision logging: one `DecisionRecord` (policy.decision_record) per `respond`, kept by a sink.

Nothing here decides. `DecisionRecorder` watches the events `respond` yields and builds the record
from the offer decisions and call traces. Arguments are as a trace shows them (sensitive ones
masked, well-formed and bounded: `runtime.trace_text`); an error is its class and its message
with secrets and address parameters masked. Writing a record never holds up the user's request:
`ChatRuntime` puts records on a bounded queue (`QueuedSink`) drained by a background thread, and
a sink that raises is warned about once. While the queue says a record cannot be kept
(`QueuedSink.failure`: the last write failed, or it is full) the executor runs no tool call.
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import re
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal, Protocol

from pydantic_core import PydanticSerializationError, to_json

from policy.decision_record import (
    CallDemandsRecord,
    ChatRequirementsRecord,
    ConfigurationRecord,
    ContentRecord,
    DecisionRecord,
    LeftOutRecord,
    OutcomeRecord,
    PluginRecord,
    ProviderRecord,
    RequirementsChange,
    UsageRecord,
    uuid7,
)
from policy.secrets import without_user_info
from runtime.tracing import TRACER_NAME

if TYPE_CHECKING:
    from opentelemetry._logs import LoggerProvider
    from pydantic import BaseModel

    from policy.configuration import PolicyConfiguration, ProviderConfig
    from policy.decision import OfferDecision, RunnableTools
    from policy.vocabulary import (
        Component,
        ConfidenceLevel,
        DataSecurity,
        OutboundDataRestriction,
        ProviderKind,
    )
    from runtime.chat import Chat, ChatRecord
    from runtime.executor import ToolCallOutcome, ToolInvocationTrace
    from runtime.loop import FinalAnswer

__all__ = [
    "CallbackSink",
    "DecisionRecorder",
    "DecisionSink",
    "JsonLinesSink",
    "OpenTelemetrySink",
    "QueuedSink",
]

_log = logging.getLogger(__name__)


class DecisionSink(Protocol):
    """Where records go. `write` may raise: the recorder warns once and the request goes on."""

    def write(self, record: DecisionRecord) -> None: ...


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
        self.write_lines([_model_json(record) + b"\n"])

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


# JSON leaves these raw inside strings; Python's splitlines, JavaScript before ES2019 and many
# log shippers end a line at them. In UTF-8 each byte sequence is only ever that character.
_LINE_BREAKING = (
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
    (b"\xc2\x85", b"\\u0085"),
)


def line_safe(line: bytes) -> bytes:
    """A JSON line with the characters that end a line for some readers (U+2028, U+2029, NEL)
    written as their JSON escapes: the same JSON value, on one line for every tool."""
    for raw, escaped in _LINE_BREAKING:
        if raw in line:
            line = line.replace(raw, escaped)
    return line


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


_IDLE_SECONDS = 2.0
_BATCH_SECONDS = 0.05
_KEPT_DROPPED_IDS = 100


class QueuedSink:
    """Writes records to `sink` from a background thread through a bounded queue.

    `write` never waits: it appends to the queue, and when `max_pending` records are already
    waiting the record is dropped, counted (`dropped`, `dropped_ids`) and warned about once;
    `flush` and `close` say how many were dropped. The writer wakes every 50 ms (at once when
    the queue is half full) and writes what has gathered, so a response does not pay a thread
    switch per record; a `JsonLinesSink` gets the whole batch as JSON lines in one write, each
    line serialized straight from what the answer gathered (`DecisionRecorder.json_line`), any
    other sink a `DecisionRecord` at a time. A sink that raises is warned about once and writing
    goes on. The writer thread ends when idle and starts again with the next record, so a
    runtime rebuilt on every reload leaves no thread behind; records still waiting at
    interpreter exit are written then. `ChatRuntime` wraps the sink it is given in one of these.

    `failure` says, without waiting, why a record given now may not be kept: the sink's last
    write failed (until a later write succeeds) or the queue is full. The runtime runs no tool
    call while it says so (a call that cannot be recorded is not served).
    """

    def __init__(self, sink: DecisionSink, *, max_pending: int = 1000) -> None:
        if max_pending < 1:
            raise ValueError(f"QueuedSink needs max_pending >= 1, got {max_pending}.")
        self.sink = sink
        self.max_pending = max_pending
        self._queue: deque[DecisionRecord | DecisionRecorder] = deque()
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
        self.put(record)

    def put(self, record: DecisionRecord | DecisionRecorder) -> None:
        """Queue a record, or an ended `DecisionRecorder` whose record the writer thread makes
        (off the request's path)."""
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

    def _write(self, batch: list[DecisionRecord | DecisionRecorder]) -> None:
        sink = self.sink
        failed: Exception | None = None
        if isinstance(sink, JsonLinesSink):
            lines: list[bytes] = []
            for item in batch:
                try:
                    lines.append(
                        item.json_line()
                        if isinstance(item, DecisionRecorder)
                        else _model_json(item) + b"\n"
                    )
                except Exception as error:  # the writer thread goes on with the next record
                    failed = error
            try:
                sink.write_lines(lines)
            except Exception as error:
                failed = error
        else:
            for item in batch:
                try:
                    sink.write(item.record() if isinstance(item, DecisionRecorder) else item)
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
        _warn_once(self.sink, failed, "tool calls are not run until it writes a record again")


_open_queues: weakref.WeakSet[QueuedSink] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for sink in list(_open_queues):
        sink.flush(timeout=5.0)


def _left_out(decision: OfferDecision) -> LeftOutRecord:
    failed = decision.first_failure
    evidence: list[str] = []
    for item in failed.evidence if failed else ():
        where = ", ".join(
            part
            for part in (
                item.source,
                str(item.origin) if item.origin else "",
                str(item.location) if item.location else "",
            )
            if part
        )
        evidence.append(
            f"{item.key}={json.dumps(item.value, default=str)}" + (f" ({where})" if where else "")
        )
    return LeftOutRecord(
        tool_id=decision.tool_id,
        reason=decision.reason.value,
        check=failed.guards.value if failed else "",
        detail=failed.detail if failed else decision.message,
        evidence=evidence,
    )


class DecisionRecorder:
    """Gathers what one `respond` decided and the events it yielded, and hands itself over once
    the answer ended.

    The request only keeps references (the chat's requirements are frozen records, a call's
    trace and outcome frozen too) and takes the time; the decision id (a UUIDv7 of that time,
    unless the answer's span already named one), the record's parts, the left-out evidence and
    the masked error message are made where the record is written: on the `QueuedSink`'s writer
    thread, off the request's path. `json_line` serializes the record as a JSON Lines log keeps
    it, straight from what was gathered (the parts every record repeats are serialized once);
    `record` is the same record as a `DecisionRecord`, for any other sink. With a sink that is
    not a `QueuedSink` it is made and written at once.

    `include_content` adds the user's message, the answer and each result's text (off by
    default: a decision log holds no message or result text unless an environment asks for it).
    `secrets` are values masked in any error message kept (e.g. the API key of the request).

    A recorder ends once: the first of `finished`, `refused`, `failed` and `gateway_call_ended`
    makes the record, and a later end changes nothing in it and writes nothing (`respond` ends
    it twice when an error is raised after the final answer was handed over, e.g. by an app's
    loop or by the caller throwing into the response). The first end is the true outcome: the
    provider gave that answer and the app was handed it, whatever failed afterwards; the record
    may also be written already (a sink other than a `QueuedSink` writes it at once, the
    writer thread may have made it), so a later end could not replace it without the log
    depending on thread timing. The later end is named on this module's log as a warning with
    the decision id and the error's class (never its message); the answer's span, which
    carries the same decision id, records the error.
    """

    __slots__ = (
        "_at",
        "_before",
        "_calls",
        "_chat",
        "_component",
        "_confidence",
        "_configuration",
        "_content",
        "_decision_id",
        "_ended",
        "_offered",
        "_provider",
        "_round",
        "_secrets",
        "_selected",
        "_served_by",
        "_sink",
        "_started",
        "_usage",
    )

    def __init__(
        self,
        sink: DecisionSink,
        *,
        configuration: PolicyConfiguration,
        chat: Chat,
        component: Component,
        provider: ProviderConfig,
        confidence: ConfidenceLevel,
        selected_tool_ids: tuple[str, ...] | None,
        include_content: bool = False,
        user_message: str = "",
        secrets: Sequence[str] = (),
        decision_id: str = "",
        served_by: Literal["respond", "mcp_gateway"] = "respond",
    ) -> None:
        self._at = time.time_ns()
        self._sink = sink
        self._chat = chat
        self._before = chat.record
        self._configuration = configuration
        self._component = component
        self._provider = provider
        self._confidence = confidence
        self._selected = selected_tool_ids
        self._secrets = secrets
        self._decision_id = decision_id
        self._served_by = served_by
        self._offered: tuple[RunnableTools, tuple[str, ...], tuple[tuple[str, str], ...]] | None
        self._offered = None
        self._started: dict[str, tuple[float, int]] = {}
        self._round = 0
        self._calls: list[_EndedCall] = []
        self._usage: tuple[int | None, int | None] = (None, None)
        self._content: list[str] | None = [user_message, ""] if include_content else None
        self._ended: tuple[_StopReason, tuple[str, str] | None, ChatRecord] | None = None

    @property
    def decision_id(self) -> str:
        """The record's id: the one given, else a UUIDv7 of when the answer started (made on
        first use, on whichever thread asks)."""
        if not self._decision_id:
            with _decision_id_lock:
                if not self._decision_id:
                    self._decision_id = str(uuid7(self._at))
        return self._decision_id

    def offered(
        self,
        decided: RunnableTools,
        offered_ids: tuple[str, ...],
        left_out: tuple[tuple[str, str], ...],
    ) -> None:
        self._offered = (decided, offered_ids, left_out)

    def call_started(self, call_id: str, round_number: int = 0) -> None:
        from runtime.trace_text import bounded_name

        self._started[bounded_name(call_id)] = (time.perf_counter(), round_number)
        if round_number > self._round:
            self._round = round_number

    def call_finished(self, trace: ToolInvocationTrace, outcome: ToolCallOutcome | None) -> None:
        started = self._started.pop(trace.call_id, None)
        if started is None:
            elapsed, round_number = 0.0, self._round
        else:
            elapsed, round_number = (time.perf_counter() - started[0]) * 1000, started[1]
        self._calls.append(_EndedCall(trace, outcome, round_number, elapsed))

    def finished(self, final: FinalAnswer) -> None:
        if self._ended is not None:
            self._ended_again(
                self._ended[0], "interrupted" if final.interrupted else "final_answer"
            )
            return
        usage = final.usage
        self._usage = (usage.input_tokens, usage.output_tokens)
        if self._content is not None:
            self._content[1] = final.text
        self._emit("interrupted" if final.interrupted else "final_answer")

    def gateway_call_ended(self) -> None:
        """The one call an MCP client made through the gateway is recorded; the record ends."""
        self._emit("tool_call")

    def refused(self, error: BaseException) -> None:
        """The chat's requirements ruled the provider out (before the first request, or
        between rounds once a result tightened the chat)."""
        self._emit("refused", error)

    def failed(self, error: BaseException) -> None:
        self._emit("error", error)

    def _emit(self, stop_reason: _StopReason, error: BaseException | None = None) -> None:
        if self._ended is not None:
            self._ended_again(self._ended[0], stop_reason, error)
            return
        self._ended = (
            stop_reason,
            (type(error).__name__, str(error)) if error is not None else None,
            self._chat.record,
        )
        sink = self._sink
        try:
            if isinstance(sink, QueuedSink):
                sink.put(self)
            else:
                sink.write(self.record())
        except Exception as error:  # a log must never fail the user's request
            _warn_once(sink, error)

    def _ended_again(
        self, first: _StopReason, stop_reason: _StopReason, error: BaseException | None = None
    ) -> None:
        """A second end: the record keeps the `first`; the later one is only named here."""
        _log.warning(
            "Decision %s had already ended (%s) and its record was kept; it ended again (%s) "
            "and that is not recorded: one record per decision.",
            self.decision_id,
            first,
            stop_reason if error is None else f"{stop_reason}: {type(error).__name__}",
        )

    def record(self) -> DecisionRecord:
        """The ended answer's record (what `json_line` writes, as a model)."""
        return DecisionRecord.model_validate_json(self.json_line())

    def json_line(self) -> bytes:
        """The ended answer's record as one JSON Lines line: exactly
        `DecisionRecord.model_dump_json()` of `record()`, plus the newline, made without
        building the model (a record is written on every answer)."""
        if self._ended is None:
            raise RuntimeError("DecisionRecorder.json_line: the answer has not ended yet.")
        stop_reason, error, after = self._ended
        offered: tuple[str, ...] = ()
        left_out: list[LeftOutRecord] = []
        if self._offered is not None:
            decided, offered, not_runnable = self._offered
            left_out = [_left_out(d) for d in decided.decisions if not d.offered]
            left_out += [
                LeftOutRecord(tool_id=tool_id, reason="NOT_OFFERED", detail=why)
                for tool_id, why in not_runnable
            ]
        if error is None:
            outcome = _outcome_json(stop_reason)
        else:
            secrets = [s for s in self._secrets if s and len(s) >= 4]
            outcome = _model_json(
                OutcomeRecord(
                    stop_reason=stop_reason,
                    error_class=error[0],
                    error_message=redacted_error_message(error[1], secrets),
                )
            )
        content = b"null"
        if self._content is not None:
            content = _model_json(
                ContentRecord(
                    user_message=self._content[0],
                    answer=self._content[1],
                    tool_results={
                        c.trace.call_id: c.outcome.content if c.outcome else c.trace.result
                        for c in self._calls
                    },
                )
            )
        provider = self._provider
        selected = self._selected
        return b"".join(
            (
                b'{"decision_id":',
                _json(self.decision_id),
                b',"timestamp":',
                _json(_EPOCH + timedelta(microseconds=self._at // 1000)),
                b',"configuration":',
                _configuration_json(self._configuration),
                b',"chat_id":',
                _json(self._before.chat_id),
                b',"component":',
                _repeated_json(self._component.value),
                b',"provider":',
                _provider_json(
                    provider.id,
                    provider.kind,
                    provider.host,
                    provider.model,
                    self._confidence,
                    provider.hostname,
                ),
                b',"selected_tool_ids":',
                _repeated_json(selected),
                b',"offered":',
                _repeated_json(offered),
                b',"left_out":[',
                b",".join(_model_json(r) for r in left_out),
                b'],"calls":[',
                b",".join(c.json(self._content is not None) for c in self._calls),
                b'],"outcome":',
                outcome,
                b',"usage":',
                _usage_json(*self._usage),
                b',"chat_requirements":',
                _requirements_change_json(
                    _requirements_key(self._before), _requirements_key(after)
                ),
                b',"content":',
                content,
                b',"served_by":',
                _repeated_json(self._served_by),
                b"}\n",
            )
        )


_decision_id_lock = threading.Lock()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_StopReason = Literal["final_answer", "interrupted", "refused", "error", "tool_call"]


@dataclass(frozen=True, slots=True)
class _EndedCall:
    """A call as the recorder keeps it until the record is made (the trace and outcome are
    frozen, so what is made later is what happened)."""

    trace: ToolInvocationTrace
    outcome: ToolCallOutcome | None
    round: int
    elapsed_ms: float

    def json(self, with_content: bool = False) -> bytes:
        """The call as the record's `calls` hold it: exactly `CallRecord.model_dump_json()`.
        Without content, a message quoting what the tool's upstream wrote is left at its
        summary (`ToolInvocationTrace.logged_status_message`)."""
        trace, outcome = self.trace, self.outcome
        status = trace.status.value
        return b"".join(
            (
                b'{"call_id":',
                _json(trace.call_id),
                b',"tool_id":',
                _repeated_json(trace.tool_id),
                b',"status":',
                _repeated_json(status),
                b',"round":',
                _json(self.round),
                b',"arguments":',
                _json(trace.arguments),
                b',"duration_ms":',
                _json(round(self.elapsed_ms, 3)),
                b',"result_chars":',
                _json(_result_chars(trace, outcome)),
                b',"status_message":',
                _json(
                    ""
                    if status == "SUCCESS"
                    else trace.status_message
                    if with_content
                    else trace.logged_status_message
                ),
                b',"demands":',
                _demands_json(outcome) if outcome is not None else _NO_DEMANDS,
                b',"sources":',
                _json(_cited(outcome)),
                b',"injections":',
                _injections_json(outcome),
                b"}",
            )
        )


# A record is made on every answer from parts that repeat (the configuration, the provider, the
# chat's requirement levels, what a result demanded, the usage): each part is made and
# serialized once per distinct value and shared.

_last_configuration: tuple[PolicyConfiguration, bytes] | None = None


def _configuration_json(configuration: PolicyConfiguration) -> bytes:
    """`configuration_record` as JSON, kept for the configuration in force."""
    global _last_configuration
    held = _last_configuration
    if held is None or held[0] is not configuration:
        held = (configuration, configuration_record(configuration).model_dump_json().encode())
        _last_configuration = held
    return held[1]


def configuration_record(configuration: PolicyConfiguration) -> ConfigurationRecord:
    """The revision and plugins of a configuration, as records name them."""
    return ConfigurationRecord(
        revision=configuration.revision,
        plugins=[
            PluginRecord(
                id=p.id,
                name=p.name,
                origin=p.origin.value,
                priority=p.priority,
                sha256=p.sha256,
                last_known_good=p.last_known_good,
            )
            for p in configuration.plugins_in_force
        ],
    )


_RequirementsKey = tuple["ConfidenceLevel", "DataSecurity", "OutboundDataRestriction", str]


def _requirements_key(chat: ChatRecord) -> _RequirementsKey:
    return (
        chat.required_provider_confidence,
        chat.required_data_security,
        chat.outbound_restriction,
        chat.outbound_mailbox_id,
    )


@functools.lru_cache(maxsize=256)
def _requirements(
    confidence: ConfidenceLevel,
    security: DataSecurity,
    restriction: OutboundDataRestriction,
    mailbox_id: str,
) -> ChatRequirementsRecord:
    return ChatRequirementsRecord(
        provider_confidence=confidence.name,
        data_security=security.value,
        outbound_restriction=restriction.name,
        outbound_mailbox_id=mailbox_id,
    )


@functools.lru_cache(maxsize=256)
def _requirements_change_json(before: _RequirementsKey, after: _RequirementsKey) -> bytes:
    change = RequirementsChange(before=_requirements(*before), after=_requirements(*after))
    return change.model_dump_json().encode()


@functools.lru_cache(maxsize=256)
def _provider_json(
    provider_id: str,
    kind: ProviderKind,
    host: str,
    model: str,
    confidence: ConfidenceLevel,
    hostname: str,
) -> bytes:
    address = ""
    if hostname.strip():
        from runtime.web.addresses import redact_url_for_log

        address = redact_url_for_log(hostname)
    record = ProviderRecord(
        id=provider_id,
        kind=kind.value,
        host=without_user_info(host),
        model=model,
        confidence=confidence.name,
        hostname=address,
    )
    return record.model_dump_json().encode()


_ADDRESS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redacted_error_message(message: str, secrets: Sequence[str] = ()) -> str:
    """An error message fit for a log: known secrets masked in every spelling
    (`policy.redaction.SecretMask`), every address shown without user
    info, fragment or parameter values, well-formed and bounded as traces keep text
    (`runtime.trace_text.bounded_text`)."""
    from policy.redaction import SecretMask
    from runtime.trace_text import bounded_text
    from runtime.web.addresses import redact_url_for_log

    message = SecretMask.of(secrets).text(message)
    message = _ADDRESS.sub(lambda m: redact_url_for_log(m.group(0)), message)
    return bounded_text(without_user_info(" ".join(message.split())))


def _cited(outcome: ToolCallOutcome | None) -> list[str]:
    """The addresses a result cited, as logs show them (`redact_url_for_log`)."""
    if outcome is None or not outcome.sources:
        return []
    from runtime.web.addresses import redact_url_for_log

    return [redact_url_for_log(source.url) for source in outcome.sources]


_NO_DEMANDS = CallDemandsRecord().model_dump_json().encode()


def _injections_json(outcome: ToolCallOutcome | None) -> bytes:
    """What the guard removed from the result, as `InjectionRecord`s: sources, rules, counts."""
    if outcome is None or not outcome.injections:
        return b"[]"
    return _json(
        [
            {
                "source_kind": seen.source_kind,
                "source": seen.source,
                "rules": list(seen.rule_ids),
                "removed": seen.removed,
            }
            for seen in outcome.injections
        ]
    )


def _demands_json(outcome: ToolCallOutcome) -> bytes:
    return _demands_record_json(
        outcome.required_provider_confidence,
        outcome.required_data_security,
        outcome.required_outbound_data_restriction,
        outcome.outbound_data_source_id,
    )


@functools.lru_cache(maxsize=256)
def _demands_record_json(
    confidence: ConfidenceLevel,
    security: DataSecurity,
    restriction: OutboundDataRestriction | None,
    source_id: str,
) -> bytes:
    record = CallDemandsRecord(
        provider_confidence=confidence.name,
        data_security=security.value,
        outbound_restriction=restriction.name if restriction is not None else None,
        outbound_data_source_id=source_id,
    )
    return record.model_dump_json().encode()


# The sinks already warned about, by id with a weak reference that says whether the id is still
# that sink's: a freed sink's id is often the next sink's, which must be warned about too. A sink
# that takes no weak reference is held instead, so its id stays its own.
_warned: dict[int, Callable[[], object]] = {}
_warned_lock = threading.RLock()  # a weak reference's callback may run inside (a collection)


def _warn_once(
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


def _result_chars(trace: ToolInvocationTrace, outcome: ToolCallOutcome | None) -> int:
    """The size of what the call returned, never its text (a JSON result counted compact, as
    the model read it)."""
    if trace.result or trace.json_result is None:
        return len(trace.result)
    if outcome is not None and outcome.content:
        return len(outcome.content)
    return len(_COMPACT_JSON.encode(trace.json_result))


_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)


@functools.lru_cache(maxsize=1024)
def _usage_json(input_tokens: int | None, output_tokens: int | None) -> bytes:
    record = UsageRecord(input_tokens=input_tokens, output_tokens=output_tokens)
    return record.model_dump_json().encode()


@functools.lru_cache(maxsize=1024)
def _repeated_json(value: str | tuple[str, ...] | None) -> bytes:
    """A value records repeat (a component, a tool id, a status, a selection) as JSON."""
    return _json(value)


def _json(value: object) -> bytes:
    """`value` as JSON; a string in it that no UTF-8 encoder writes (a lone surrogate from a
    model's or a client's JSON) is written `well_formed`, so every decision is recorded."""
    try:
        return to_json(value)
    except PydanticSerializationError:
        from runtime.trace_text import well_formed_value

        return to_json(well_formed_value(value))


def _model_json(record: BaseModel) -> bytes:
    """`record.model_dump_json()`, with `_json`'s care for strings no encoder writes."""
    try:
        return record.model_dump_json().encode()
    except PydanticSerializationError:
        from runtime.trace_text import well_formed_value

        return to_json(well_formed_value(record.model_dump(mode="json")))


@functools.lru_cache(maxsize=8)
def _outcome_json(stop_reason: _StopReason) -> bytes:
    return OutcomeRecord(stop_reason=stop_reason).model_dump_json().encode()
