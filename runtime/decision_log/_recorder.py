"""`DecisionRecorder`: what one `respond` decided, gathered from its events and made into the
record once the answer ended.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from policy import DecisionRecord
from policy._runtime_seam import (
    MAX_CONTENT_CHARACTERS,
    ApprovalRecord,
    ContentRecord,
    LeftOutRecord,
    OutcomeRecord,
    uuid7,
)
from runtime.decision_log._encoder import (
    CALL_RECORD,
    DECISION_RECORD,
    NO_DEMANDS,
    StopReason,
    configuration_json,
    demands_json,
    injections_json,
    json_value,
    line_safe,
    model_json,
    outcome_json,
    provider_json,
    repeated_json,
    requirements_change_json,
    requirements_key,
    usage_json,
)
from runtime.decision_log._queue import QueuedSink
from runtime.decision_log._redaction import _cited, redacted_error_message
from runtime.decision_log._sinks import DecisionSink, warn_once

if TYPE_CHECKING:
    from policy import (
        Caller,
        Component,
        OfferDecision,
        PolicyConfiguration,
        ProviderConfig,
    )
    from policy._runtime_seam import ProviderFacts, RunnableTools
    from runtime.chat import Chat, ChatRecord
    from runtime.executor import ToolCallOutcome, ToolInvocationTrace
    from runtime.loop import FinalAnswer

_log = logging.getLogger("runtime.decision_log")  # one logger name for the package


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
        check=failed.title if failed else "",
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
    default: a decision log holds no message or result text unless an environment asks for it),
    each cut at `MAX_CONTENT_CHARACTERS` (policy/decision_record.py) with how much was left out.
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
        "_approvals",
        "_at",
        "_before",
        "_caller",
        "_calls",
        "_chat",
        "_component",
        "_configuration",
        "_content",
        "_decision_id",
        "_ended",
        "_offered",
        "_provider",
        "_provider_facts",
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
        provider_facts: ProviderFacts,
        selected_tool_ids: tuple[str, ...] | None,
        include_content: bool = False,
        user_message: str = "",
        secrets: Sequence[str] = (),
        decision_id: str = "",
        served_by: Literal["respond", "mcp_gateway"] = "respond",
        caller: Caller | None = None,
    ) -> None:
        self._at = time.time_ns()
        self._caller = caller
        self._sink = sink
        self._chat = chat
        self._before = chat.record
        self._configuration = configuration
        self._component = component
        self._provider = provider
        self._provider_facts = provider_facts
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
        self._ended: tuple[StopReason, tuple[str, str] | None, ChatRecord] | None = None
        self._approvals: tuple[ApprovalRecord, ...] = ()

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

    def approvals(self, records: Sequence[ApprovalRecord]) -> None:
        """The approvals asked and answered in this response (before it ends)."""
        self._approvals = tuple(records)

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
        if final.interrupted:
            self._emit("interrupted")
        elif final.pending_approvals:
            self._emit("approval_required")
        else:
            self._emit("final_answer")

    def gateway_call_ended(self) -> None:
        """The one call an MCP client made through the gateway is recorded; the record ends."""
        self._emit("tool_call")

    def refused(self, error: BaseException) -> None:
        """The chat's requirements ruled the provider out (before the first request, or
        between rounds once a result tightened the chat)."""
        self._emit("refused", error)

    def failed(self, error: BaseException) -> None:
        self._emit("error", error)

    def _emit(self, stop_reason: StopReason, error: BaseException | None = None) -> None:
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
            warn_once(sink, error)

    def _ended_again(
        self, first: StopReason, stop_reason: StopReason, error: BaseException | None = None
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

    def _subject_json(self) -> bytes:
        """The caller as `DataGateway.RecordSubject` says to name them ("" without one)."""
        if self._caller is None:
            return b'""'
        from policy._runtime_seam import recorded_subject

        return json_value(recorded_subject(self._configuration, self._caller))

    def json_line(self) -> bytes:
        """The ended answer's record as one JSON Lines line: the JSON `DecisionRecord` writes for
        `record()` (field by field in the model's order, `ModelObject`), `line_safe`, plus the
        newline, made without building the model (a record is written on every answer)."""
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
            outcome = outcome_json(stop_reason)
        else:
            secrets = [s for s in self._secrets if s and len(s) >= 4]
            outcome = model_json(
                OutcomeRecord(
                    stop_reason=stop_reason,
                    error_class=error[0],
                    error_message=redacted_error_message(error[1], secrets),
                )
            )
        content = b"null"
        if self._content is not None:
            content = model_json(
                ContentRecord(
                    user_message=_kept(self._content[0]),
                    answer=_kept(self._content[1]),
                    tool_results={
                        c.trace.call_id: _kept(c.outcome.content if c.outcome else c.trace.result)
                        for c in self._calls
                    },
                )
            )
        provider = self._provider
        selected = self._selected
        line = DECISION_RECORD.write(
            decision_id=json_value(self.decision_id),
            timestamp=json_value(_EPOCH + timedelta(microseconds=self._at // 1000)),
            configuration=configuration_json(self._configuration),
            chat_id=json_value(self._before.chat_id),
            component=repeated_json(self._component.value),
            provider=provider_json(
                provider.id,
                provider.kind,
                provider.host,
                provider.model,
                self._provider_facts.confidence,
                provider.hostname,
            ),
            selected_tool_ids=repeated_json(selected),
            offered=repeated_json(offered),
            left_out=b"[" + b",".join(model_json(r) for r in left_out) + b"]",
            calls=b"[" + b",".join(c.json(self._content is not None) for c in self._calls) + b"]",
            outcome=outcome,
            usage=usage_json(*self._usage),
            chat_requirements=requirements_change_json(
                requirements_key(self._before), requirements_key(after)
            ),
            content=content,
            served_by=repeated_json(self._served_by),
            approvals=b"[" + b",".join(model_json(r) for r in self._approvals) + b"]",
            subject=self._subject_json(),
            groups=repeated_json(tuple(sorted(self._caller.groups)) if self._caller else ()),
        )
        return line_safe(line) + b"\n"


_decision_id_lock = threading.Lock()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _EndedCall:
    """A call as the recorder keeps it until the record is made (the trace and outcome are
    frozen, so what is made later is what happened)."""

    trace: ToolInvocationTrace
    outcome: ToolCallOutcome | None
    round: int
    elapsed_ms: float

    def json(self, with_content: bool = False) -> bytes:
        """The call as the record's `calls` hold it: the JSON `CallRecord` writes. Without
        content, a message quoting what the tool's upstream wrote is left at its summary
        (`ToolInvocationTrace.logged_status_message`)."""
        trace, outcome = self.trace, self.outcome
        status = trace.status.value
        return CALL_RECORD.write(
            call_id=json_value(trace.call_id),
            tool_id=repeated_json(trace.tool_id),
            status=repeated_json(status),
            round=json_value(self.round),
            arguments=json_value(trace.arguments),
            duration_ms=json_value(round(self.elapsed_ms, 3)),
            result_chars=json_value(_result_chars(trace, outcome)),
            status_message=json_value(
                ""
                if status == "SUCCESS"
                else trace.status_message
                if with_content
                else trace.logged_status_message
            ),
            demands=demands_json(outcome) if outcome is not None else NO_DEMANDS,
            sources=json_value(_cited(outcome)),
            injections=injections_json(outcome),
        )


def _kept(text: str) -> str:
    """A text the record keeps with content: bounded, saying how much was left out."""
    from runtime.trace_text import bounded_text

    return bounded_text(text, MAX_CONTENT_CHARACTERS)


def _result_chars(trace: ToolInvocationTrace, outcome: ToolCallOutcome | None) -> int:
    """The size of what the call returned, never its text (a JSON result counted compact, as
    the model read it)."""
    if trace.result or trace.json_result is None:
        return len(trace.result)
    if outcome is not None and outcome.content:
        return len(outcome.content)
    return len(_COMPACT_JSON.encode(trace.json_result))


_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
