"""Decision logging: one `DecisionRecord` (policy.decision_record) per `respond`, kept by a sink.

Nothing here decides. `DecisionRecorder` watches the events `respond` yields and builds the record
from the offer decisions and call traces. Arguments are as a trace shows them (sensitive ones
masked, well-formed and bounded: `runtime.trace_text`); an error is its class and its message
with secrets and address parameters masked. Records are written off the request's path:
`ChatRuntime` puts them on a bounded queue (`QueuedSink`) drained by a background thread, and a
sink that raises is warned about once. No record is dropped: when the queue is full an answer
waits (bounded) for room for its record, and a tool call whose record finds none within the
bound, or while the sink's last write failed (`QueuedSink.admission`), is not run.
"""

from runtime.decision_log._encoder import configuration_record as configuration_record
from runtime.decision_log._encoder import line_safe as line_safe
from runtime.decision_log._queue import QueuedSink
from runtime.decision_log._recorder import DecisionRecorder
from runtime.decision_log._redaction import redacted_error_message as redacted_error_message
from runtime.decision_log._sinks import (
    CallbackSink,
    DecisionSink,
    JsonLinesSink,
    LineSink,
    OpenTelemetrySink,
)

__all__ = [
    "CallbackSink",
    "DecisionRecorder",
    "DecisionSink",
    "JsonLinesSink",
    "LineSink",
    "OpenTelemetrySink",
    "QueuedSink",
]
