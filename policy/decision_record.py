"""Decision records as data: what one `respond` decided, as kept in a decision log.

A record is a view of the offer decisions (`policy.decision`) and call traces of one response:
what was selected, offered, left out and why, each call's status, and how it ended. It holds no
secret, no tool result text and no user message text. `policy replay` re-decides from these
records; the runtime's `DecisionRecorder` builds them.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "MAX_CONTENT_CHARACTERS",
    "CallDemandsRecord",
    "CallRecord",
    "ChatRequirementsRecord",
    "ConfigurationRecord",
    "ContentRecord",
    "DecisionRecord",
    "InjectionRecord",
    "LeftOutRecord",
    "OutcomeRecord",
    "PluginRecord",
    "ProviderRecord",
    "RequirementsChange",
    "UsageRecord",
    "decision_log_schema",
    "uuid7",
]


def uuid7(nanoseconds: int | None = None) -> UUID:
    """A time-ordered UUID (RFC 9562 version 7): records sort by when they were decided.
    `nanoseconds` is that time (`time.time_ns()`), now when not given."""
    millis = (time.time_ns() if nanoseconds is None else nanoseconds) // 1_000_000
    value = (millis & ((1 << 48) - 1)) << 80 | int.from_bytes(_random_bytes(10))
    value = (value & ~(0xF << 76)) | (0x7 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    return UUID(int=value)


# The random part of ids comes from the operating system's source a pool at a time: reading it
# lets other threads take the interpreter, and a decision log's writer thread making an id per
# record would hand the interpreter back and forth with the answers on every record.
_POOL_BYTES = 4096
_pool = b""
_pool_at = 0
_pool_lock = threading.Lock()


def _random_bytes(count: int) -> bytes:
    global _pool, _pool_at
    with _pool_lock:
        if _pool_at + count > len(_pool):
            _pool, _pool_at = os.urandom(_POOL_BYTES), 0
        taken = _pool[_pool_at : _pool_at + count]
        _pool_at += count
    return taken


def _forget_pool() -> None:
    """A forked child must not make the ids its parent makes next, nor wait on a lock that a
    thread of the parent held at the fork (that thread does not exist in the child)."""
    global _pool, _pool_at, _pool_lock
    _pool, _pool_at, _pool_lock = b"", 0, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PluginRecord(_Model):
    """A plugin in force when the request was decided."""

    id: str
    name: str
    origin: Literal["organization", "local"]
    priority: int
    sha256: str
    last_known_good: bool = False


class ConfigurationRecord(_Model):
    """The configuration that decided: its revision (SHA-256 over the effective plugins) and the
    plugins that made it up, in merge order."""

    revision: str = ""
    plugins: list[PluginRecord] = Field(default_factory=list)


class ChatRequirementsRecord(_Model):
    """What the chat demanded of a provider (names of the policy's levels)."""

    provider_confidence: str = "NONE"
    data_security: str = "NOT_SPECIFIED"
    outbound_restriction: str = "UNRESTRICTED"
    outbound_mailbox_id: str = ""


class RequirementsChange(_Model):
    """The chat's requirements when the request started and when it ended."""

    before: ChatRequirementsRecord = Field(default_factory=ChatRequirementsRecord)
    after: ChatRequirementsRecord = Field(default_factory=ChatRequirementsRecord)


class CallDemandsRecord(_Model):
    """What a call's result demanded of the chat (only a SUCCESS demands anything)."""

    provider_confidence: str = "NONE"
    data_security: str = "NOT_SPECIFIED"
    outbound_restriction: str | None = None
    outbound_data_source_id: str = ""


class ProviderRecord(_Model):
    """The provider the request went to, with its confidence under the organization's scheme."""

    id: str
    kind: str
    host: str
    """The self-hosting software (AI Studio's `Host`: VLLM, OLLAMA, …), empty for a cloud API."""
    model: str
    confidence: str
    hostname: str = ""
    """The configured address of a self-hosted provider, as logs show addresses (no user info,
    parameter values masked); empty when the entry names none."""


class LeftOutRecord(_Model):
    """A selected tool that was not offered: the reason, the failed check, and what it looked at."""

    tool_id: str
    reason: str
    check: str = ""
    """The failed check's own name (`FLOW_RULE`, `NOT_MEANT_HERE`): unlike the reason, it tells
    apart two checks that guard one reason."""
    detail: str = ""
    evidence: list[str] = Field(default_factory=list)
    """'key=value (source, plugin file:line)' for each thing the failed check looked at."""


class InjectionRecord(_Model):
    """The prompt-injection guard removed passages from a call's result before the model read
    it: from which source, by which rules, how many. Never the removed text."""

    source_kind: str
    """`web_content` (a fetched page) or `tool_content` (anything else a tool brought in)."""
    source: str
    """A page's address as logs show it (user info and parameter values masked), or the tool's
    id."""
    rules: list[str] = Field(default_factory=list)
    removed: int = 0


class CallRecord(_Model):
    """One tool call as it ended: status, masked arguments, how long, how much it returned."""

    call_id: str
    tool_id: str
    status: Literal["SUCCESS", "ERROR", "BLOCKED", "NONE"]
    round: int = 0
    """The 1-based round whose model reply asked for the call (0: not known)."""
    arguments: dict[str, str]
    duration_ms: float
    result_chars: int
    status_message: str = ""
    demands: CallDemandsRecord = Field(default_factory=CallDemandsRecord)
    sources: list[str] = Field(default_factory=list)
    """Addresses of the sources the result cited as logs show them (no user info or fragment,
    parameter values masked: a signed link's query is a credential), never their text."""
    injections: list[InjectionRecord] = Field(default_factory=list)
    """What the prompt-injection guard removed from the result (the chat then holds
    INJECTION_SEEN)."""


class OutcomeRecord(_Model):
    """How the response ended: a final answer, an interrupted round, the chat refusing the
    provider before any request, or an error (its class and its message with secrets masked).
    A call an MCP client made through the gateway ends as `tool_call` (no model answered)."""

    stop_reason: Literal[
        "final_answer", "interrupted", "refused", "error", "tool_call", "approval_required"
    ]
    """`approval_required`: the turn stopped before a call that waits for a person's approval
    (the record's `approvals` name it)."""
    error_class: str = ""
    error_message: str = ""


class ApprovalRecord(_Model):
    """A call that needed a person's approval: `asked` (the turn stopped before it), answered
    (`approved` / `denied`, by whom), or an answer `not_taken` (its call changed, the policy
    changed or it expired: the call is asked again). Never the person's note."""

    call_id: str
    tool_id: str
    event: Literal["asked", "approved", "denied", "not_taken"]
    at: datetime
    """When it was asked, or when the answer was taken."""
    by: str = ""
    reason: str = ""
    """Why approval is needed (asked), or why the answer was not taken."""
    arguments: dict[str, str] = Field(default_factory=dict)
    """As traces show them (sensitive ones masked); only on `asked`."""


MAX_CONTENT_CHARACTERS = 65_536
"""The most characters a record keeps of one content text (the user's message, the answer, one
tool result): a 50 MB result is not a 50 MB line."""

_CUT = (
    f"at most {MAX_CONTENT_CHARACTERS} characters: a longer text is cut there and ends with "
    "`… [N more characters]`, N the characters left out"
)


class ContentRecord(_Model):
    """Message and result text, kept only when the log was opened with `include_content`; each
    text bounded, as its field says."""

    user_message: str = Field(default="", description=f"The user's message, {_CUT}.")
    answer: str = Field(default="", description=f"The answer, {_CUT}.")
    tool_results: dict[str, str] = Field(
        default_factory=dict,
        description=f"Call id → the result text the model read, each {_CUT}.",
    )


class UsageRecord(_Model):
    input_tokens: int | None = None
    output_tokens: int | None = None


class DecisionRecord(_Model):
    """Everything one `respond` decided, as kept in a decision log (one JSON object a line).

    A call through the MCP gateway (`policy mcp serve`) is one record too: what the gateway
    offered that client and the one call, `served_by` "mcp_gateway".
    """

    decision_id: str
    timestamp: datetime
    configuration: ConfigurationRecord = Field(default_factory=ConfigurationRecord)
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
    chat_requirements: RequirementsChange = Field(default_factory=RequirementsChange)
    content: ContentRecord | None = None
    """Only with `include_content`; None otherwise."""
    served_by: Literal["respond", "mcp_gateway"] = "respond"
    """What decided: an answer of `respond`, or a call of an MCP client through the gateway."""
    approvals: list[ApprovalRecord] = Field(default_factory=list)
    """Approvals asked and answered in this response, in order."""
    subject: str = ""
    """Who asked: the signed-in person as `DataGateway.RecordSubject` says — `sha256:<hex>` of
    their `sub` (the default), or the `sub` itself; "" without a sign-in (the shared token, an
    app that names no caller)."""
    groups: list[str] = Field(default_factory=list)
    """The signed-in person's groups (sorted), which chose their configurations."""


def decision_log_schema() -> dict[str, object]:
    """The JSON Schema every decision-log line validates against."""
    return DecisionRecord.model_json_schema()
