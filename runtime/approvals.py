"""A person's approval of a tool call: asked when a turn stops, given when the app resumes it.

A call whose tool the configuration names (`policy.approvals`) never runs unapproved. The loop
stops the turn before it (`FinalAnswer.stop_reason` is `APPROVAL_REQUIRED`, with the
`PendingApproval`s), and keeps the turn — what the adapter recorded, the calls not yet answered
— in the chat store as a `SuspendedTurn`, so any instance can resume it:
`ChatRuntime.respond(chat, provider, messages, approvals={call_id: Approval(...)})`.

An answer binds to the call id, the call's exact arguments (their SHA-256 over canonical JSON),
the policy revision in force when it was asked, and an expiry: with any of them changed the call
is asked about again. A denial reaches the model as a BLOCKED result.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from policy import ToolPolicyError
from runtime.adapters.base import RecordedTurns
from runtime.messages import RequestedCall, Source, SourceOrigin

if TYPE_CHECKING:
    from policy._runtime_seam import ApprovalRecord

DEFAULT_APPROVAL_SECONDS = 3600.0
"""How long an asked approval may be answered (`ChatRuntime(approval_seconds=...)`)."""
NOT_APPROVED = "The user did not approve this call."
_TURN_FORMAT = 1


@dataclass(frozen=True, slots=True)
class Approval:
    """A person's answer to a pending call.

    `by` names who answered (kept in the decision log), `note` reaches the model with a denial.
    `arguments_sha256` (from `PendingApproval.arguments_sha256`) binds the answer to the
    arguments the person saw; "" binds it to the call id alone, the arguments stored with it.
    """

    approved: bool
    by: str = ""
    note: str = ""
    arguments_sha256: str = ""


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A call that waits for a person: its id, tool, arguments as traces show them (sensitive
    ones masked), why it needs approval, and what an answer binds to."""

    call_id: str
    tool_id: str
    arguments: Mapping[str, str]
    reason: str
    arguments_sha256: str
    revision: str
    asked_at: float
    """Seconds since the epoch."""
    expires_at: float

    @property
    def arguments_text(self) -> str:
        """The arguments as one line of JSON, as a prompt shows them."""
        return json.dumps(dict(self.arguments), ensure_ascii=False)


class ApprovalError(ToolPolicyError):
    """Approvals given for a chat with no such calls waiting, or a resume that cannot be."""

    code = "approval"


def arguments_sha256(call: RequestedCall) -> str:
    """The digest an answer binds to: the call's arguments as canonical JSON (the raw text when
    it is not JSON)."""
    try:
        canonical = json.dumps(
            json.loads(call.arguments_json or "{}"),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
    except ValueError:
        canonical = call.arguments_json
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def answer_problem(
    pending: PendingApproval, approval: Approval, call: RequestedCall, revision: str, now: float
) -> str | None:
    """Why an answer no longer holds for the call about to run (so it is asked again), or None."""
    digest = arguments_sha256(call)
    if digest != pending.arguments_sha256 or (
        approval.arguments_sha256 and approval.arguments_sha256 != digest
    ):
        return "its arguments are not the ones the answer was given for"
    if revision != pending.revision:
        return "the policy changed since it was asked"
    if now > pending.expires_at:
        return "the answer came after the approval expired"
    return None


def now() -> float:
    return time.time()


@dataclass(frozen=True, slots=True)
class SuspendedTurn:
    """A turn stopped for approval, as the chat store keeps it."""

    pending: tuple[PendingApproval, ...]
    calls: tuple[RequestedCall, ...]
    """The round's calls not yet answered, the first waiting one first."""
    turns: RecordedTurns
    conversation_sha256: str
    """Of the messages the turn answers: a resume must pass the same ones."""
    calls_made: int = 0
    rounds: int = 0
    result_characters: int = 0
    sources: tuple[Source, ...] = ()

    def to_json(self) -> str:
        data = asdict(self)
        data["format"] = _TURN_FORMAT
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> SuspendedTurn:
        """A stored turn; one this version cannot read is an `ApprovalError` (nothing runs)."""
        try:
            data: dict[str, Any] = json.loads(text)
            if data.pop("format", None) != _TURN_FORMAT:
                raise ValueError("an unknown format")
            return cls(
                pending=tuple(_pending(p) for p in data["pending"]),
                calls=tuple(RequestedCall(**c) for c in data["calls"]),
                turns=RecordedTurns(
                    tuple(map(str, data["turns"]["wire_json"])),
                    tuple(map(str, data["turns"]["texts"])),
                ),
                conversation_sha256=str(data["conversation_sha256"]),
                calls_made=int(data["calls_made"]),
                rounds=int(data["rounds"]),
                result_characters=int(data["result_characters"]),
                sources=tuple(
                    Source(str(s["title"]), str(s["url"]), SourceOrigin(s["origin"]))
                    for s in data["sources"]
                ),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ApprovalError(
                f"The calls waiting for approval in this chat cannot be read ({error}); nothing "
                "was run. Send the message again to start a new turn."
            ) from None


def _pending(data: Mapping[str, Any]) -> PendingApproval:
    return PendingApproval(
        call_id=str(data["call_id"]),
        tool_id=str(data["tool_id"]),
        arguments={str(k): str(v) for k, v in data["arguments"].items()},
        reason=str(data["reason"]),
        arguments_sha256=str(data["arguments_sha256"]),
        revision=str(data["revision"]),
        asked_at=float(data["asked_at"]),
        expires_at=float(data["expires_at"]),
    )


def conversation_sha256(texts: Sequence[str]) -> str:
    """The digest of a conversation's messages (role and text each)."""
    digest = hashlib.sha256()
    for text in texts:
        encoded = text.encode("utf-8", "surrogatepass")
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return digest.hexdigest()


def unknown_answers(turn: SuspendedTurn, approvals: Mapping[str, Approval]) -> list[str]:
    """Call ids answered that do not wait in this turn."""
    waiting = {p.call_id for p in turn.pending}
    return sorted(set(approvals) - waiting)


def checked_approvals(approvals: object) -> dict[str, Approval]:
    """`respond(approvals=...)` as given: call id → `Approval`; anything else a clear error."""
    if not isinstance(approvals, Mapping):
        raise ValueError(
            "respond() takes approvals as a mapping of call id to Approval(approved, by, note), "
            f"got {type(approvals).__name__}."
        )
    checked: dict[str, Approval] = {}
    for call_id, approval in approvals.items():
        if not isinstance(call_id, str) or not isinstance(approval, Approval):
            raise ValueError(
                "respond() takes approvals as {call_id: Approval(approved, by, note)}; the entry "
                f"{call_id!r} holds {type(approval).__name__}."
            )
        checked[call_id] = approval
    return checked


@dataclass(slots=True)
class ApprovalGate:
    """One response's approvals: which calls need one (the configuration's rules), the answers
    the app gave for a resumed turn, and the calls asked about again (with why)."""

    reasons: Callable[[str], str | None]
    """Tool id → why its calls need approval (`ApprovalRules.reason`), None: they do not."""
    revision: str
    seconds: float = DEFAULT_APPROVAL_SECONDS
    can_wait: bool = True
    """False when the chat's store or the adapter cannot keep a stopped turn: such calls are
    refused instead of waiting."""
    answers: dict[str, Approval] = field(default_factory=dict)
    waiting: dict[str, PendingApproval] = field(default_factory=dict)
    asked_again: dict[str, str] = field(default_factory=dict)
    used: list[tuple[PendingApproval, Approval, float]] = field(default_factory=list)
    """The answers taken (with when), in the order their calls came (the decision log
    records them)."""

    def answer(self, call: RequestedCall) -> Approval | None:
        """The answer that holds for this call now (taken once), or None: ask for one."""
        pending = self.waiting.get(call.call_id)
        approval = self.answers.pop(call.call_id, None)
        if pending is None or approval is None:
            return None
        taken = now()
        problem = answer_problem(pending, approval, call, self.revision, taken)
        if problem is not None:
            self.asked_again[call.call_id] = problem
            return None
        self.used.append((pending, approval, taken))
        return approval

    def records(self, asked: Sequence[PendingApproval]) -> list[ApprovalRecord]:
        """What the decision log keeps of this response's approvals: answers taken or not,
        then the calls asked about."""
        from datetime import UTC, datetime

        from policy._runtime_seam import ApprovalRecord

        def at(seconds: float) -> datetime:
            return datetime.fromtimestamp(seconds, UTC)

        records = [
            ApprovalRecord(
                call_id=pending.call_id,
                tool_id=pending.tool_id,
                event="approved" if approval.approved else "denied",
                at=at(taken),
                by=approval.by,
            )
            for pending, approval, taken in self.used
        ]
        records += [
            ApprovalRecord(
                call_id=call_id,
                tool_id=self.waiting[call_id].tool_id if call_id in self.waiting else "",
                event="not_taken",
                at=at(now()),
                reason=why,
            )
            for call_id, why in self.asked_again.items()
        ]
        records += [
            ApprovalRecord(
                call_id=p.call_id,
                tool_id=p.tool_id,
                event="asked",
                at=at(p.asked_at),
                reason=p.reason,
                arguments=dict(p.arguments),
            )
            for p in asked
        ]
        return records

    def pending(
        self, call: RequestedCall, tool_id: str, reason: str, arguments: Mapping[str, str]
    ) -> PendingApproval:
        """The question to ask about a call now."""
        asked = now()
        again = self.asked_again.get(call.call_id)
        return PendingApproval(
            call_id=call.call_id,
            tool_id=tool_id,
            arguments=dict(arguments),
            reason=reason if again is None else f"{reason}; asked again: {again}",
            arguments_sha256=arguments_sha256(call),
            revision=self.revision,
            asked_at=asked,
            expires_at=asked + self.seconds,
        )


def denial_text(approval: Approval) -> str:
    """What the model reads for a denied call."""
    note = approval.note.strip()
    return f"{NOT_APPROVED} Note from the user: {note}" if note else NOT_APPROVED
