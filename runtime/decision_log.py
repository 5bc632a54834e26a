"""Decision logging: one `DecisionRecord` (policy.decision_record) per `respond`, kept by a sink.

Nothing here decides. `DecisionRecorder` watches the events `respond` yields and builds the record
from the offer decisions and call traces. Arguments are as a trace shows them (sensitive ones
masked), an error is its class name only. Writing a record never fails the user's request: a sink that raises is warned
about once and the answer goes on.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from policy.decision_record import (
    CallRecord,
    DecisionRecord,
    LeftOutRecord,
    OutcomeRecord,
    ProviderRecord,
    UsageRecord,
    uuid7,
)

if TYPE_CHECKING:
    from policy.configuration import ProviderConfig
    from policy.decision import OfferDecision, RunnableTools
    from policy.vocabulary import Component, ConfidenceLevel
    from runtime.executor import ToolInvocationTrace
    from runtime.loop import FinalAnswer
    from runtime.messages import Usage

__all__ = ["CallbackSink", "DecisionRecorder", "DecisionSink", "JsonLinesSink"]

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
    """Appends one JSON line per record; past `max_bytes` the file rolls to FILE.1 … FILE.N."""

    def __init__(
        self, path: str | os.PathLike[str], *, max_bytes: int = 10_000_000, backups: int = 5
    ) -> None:
        if max_bytes < 1 or backups < 0:
            raise ValueError(
                f"JsonLinesSink needs max_bytes >= 1 and backups >= 0, got max_bytes={max_bytes}, "
                f"backups={backups}."
            )
        self.path = Path(path)
        self._max_bytes = max_bytes
        self._backups = backups
        self._lock = threading.Lock()

    def write(self, record: DecisionRecord) -> None:
        line = (record.model_dump_json() + "\n").encode()
        with self._lock:
            size = self.path.stat().st_size if self.path.exists() else 0
            if size and size + len(line) > self._max_bytes:
                self._rotate()
            with self.path.open("ab") as handle:
                handle.write(line)

    def _rotate(self) -> None:
        if self._backups == 0:
            self.path.unlink()
            return
        for index in range(self._backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))


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
    """Builds the record of one `respond` from what it decided and the events it yielded."""

    def __init__(
        self,
        sink: DecisionSink,
        *,
        chat_id: str,
        component: Component,
        provider: ProviderConfig,
        confidence: ConfidenceLevel,
        selected_tool_ids: tuple[str, ...] | None,
    ) -> None:
        self._sink = sink
        self._started: dict[str, float] = {}
        self._fields: dict[str, object] = {
            "decision_id": str(uuid7()),
            "timestamp": datetime.now(UTC),
            "chat_id": chat_id,
            "component": component.value,
            "provider": ProviderRecord(
                id=provider.id,
                kind=provider.kind.value,
                host=provider.host,
                model=provider.model,
                confidence=confidence.name,
            ),
            "selected_tool_ids": list(selected_tool_ids) if selected_tool_ids is not None else None,
        }
        self._calls: list[CallRecord] = []
        self._usage = UsageRecord()

    @property
    def decision_id(self) -> str:
        return str(self._fields["decision_id"])

    def offered(
        self,
        decided: RunnableTools,
        offered_ids: tuple[str, ...],
        left_out: tuple[tuple[str, str], ...],
    ) -> None:
        self._fields["offered"] = list(offered_ids)
        records = [_left_out(d) for d in decided.decisions if not d.offered]
        records += [
            LeftOutRecord(tool_id=tool_id, reason="NOT_OFFERED", detail=why)
            for tool_id, why in left_out
        ]
        self._fields["left_out"] = records

    def call_started(self, call_id: str) -> None:
        self._started[call_id] = time.perf_counter()

    def call_finished(self, trace: ToolInvocationTrace) -> None:
        started = self._started.pop(trace.call_id, None)
        elapsed = (time.perf_counter() - started) * 1000 if started is not None else 0.0
        self._calls.append(
            CallRecord(
                call_id=trace.call_id,
                tool_id=trace.tool_id,
                status=trace.status.value,
                arguments=dict(trace.arguments),
                duration_ms=round(elapsed, 3),
                result_chars=_result_chars(trace),
                status_message=trace.status_message if trace.status.value != "SUCCESS" else "",
            )
        )

    def finished(self, final: FinalAnswer) -> None:
        self._usage = _usage(final.usage)
        self._emit(
            OutcomeRecord(stop_reason="interrupted" if final.interrupted else "final_answer")
        )

    def failed(self, error: BaseException) -> None:
        self._emit(OutcomeRecord(stop_reason="error", error_class=type(error).__name__))

    def _emit(self, outcome: OutcomeRecord) -> None:
        record = DecisionRecord.model_validate(
            {**self._fields, "calls": self._calls, "outcome": outcome, "usage": self._usage}
        )
        try:
            self._sink.write(record)
        except Exception as error:  # a log must never fail the user's request
            _warn_once(self._sink, error)


_warned: set[int] = set()


def _warn_once(sink: DecisionSink, error: Exception) -> None:
    if id(sink) in _warned:
        return
    _warned.add(id(sink))
    _log.warning(
        "The decision log %s could not write a record (%s); the request went on, later failures "
        "of this sink are not repeated.",
        type(sink).__name__,
        type(error).__name__,
    )


def _result_chars(trace: ToolInvocationTrace) -> int:
    """The size of what the call returned, never its text (a JSON result counted compact)."""
    if trace.result or trace.json_result is None:
        return len(trace.result)
    return len(
        json.dumps(trace.json_result, separators=(",", ":"), ensure_ascii=False, default=str)
    )


def _usage(usage: Usage) -> UsageRecord:
    return UsageRecord(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
