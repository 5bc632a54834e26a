"""Decision records as data: what one `respond` decided, as kept in a decision log.

A record is a view of the offer decisions (`policy.decision`) and call traces of one response:
what was selected, offered, left out and why, each call's status, and how it ended. It holds no
secret, no tool result text and no user message text. `policy replay` re-decides from these
records; the runtime's `DecisionRecorder` builds them.
"""

from __future__ import annotations

import secrets
import time
from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CallRecord",
    "DecisionRecord",
    "LeftOutRecord",
    "OutcomeRecord",
    "ProviderRecord",
    "UsageRecord",
    "decision_log_schema",
    "uuid7",
]


def uuid7() -> UUID:
    """A time-ordered UUID (RFC 9562 version 7): records sort by when they were decided."""
    millis = time.time_ns() // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80 | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    return UUID(int=value)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ProviderRecord(_Model):
    """The provider the request went to, with its confidence under the organization's scheme."""

    id: str
    kind: str
    host: str
    model: str
    confidence: str


class LeftOutRecord(_Model):
    """A selected tool that was not offered: the reason, the failed check, and what it looked at."""

    tool_id: str
    reason: str
    check: str = ""
    detail: str = ""
    evidence: list[str] = Field(default_factory=list)
    """'key=value (source, plugin file:line)' for each thing the failed check looked at."""


class CallRecord(_Model):
    """One tool call as it ended: status, masked arguments, how long, how much it returned."""

    call_id: str
    tool_id: str
    status: Literal["SUCCESS", "ERROR", "BLOCKED", "NONE"]
    arguments: dict[str, str]
    duration_ms: float
    result_chars: int
    status_message: str = ""


class OutcomeRecord(_Model):
    """How the response ended: a final answer, an interrupted round, or an error (class only)."""

    stop_reason: Literal["final_answer", "interrupted", "error"]
    error_class: str = ""


class UsageRecord(_Model):
    input_tokens: int | None = None
    output_tokens: int | None = None


class DecisionRecord(_Model):
    """Everything one `respond` decided, as kept in a decision log (one JSON object a line)."""

    decision_id: str
    timestamp: datetime
    chat_id: str
    component: str
    provider: ProviderRecord
    selected_tool_ids: list[str] | None
    """None when the component's default selection applied."""
    offered: list[str] = Field(default_factory=list)
    left_out: list[LeftOutRecord] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)
    outcome: OutcomeRecord
    usage: UsageRecord = Field(default_factory=UsageRecord)


def decision_log_schema() -> dict[str, object]:
    """The JSON Schema every decision-log line validates against."""
    return DecisionRecord.model_json_schema()
