"""`policy replay`: logged traffic re-decided under a candidate configuration.

Each decision record says what a request asked for (chat, component, provider, selection, the
chat's requirements when it started) and what the configuration in force then decided. Replay asks
the candidate policy the same questions, with the same registry checks `respond` asks, and
reports what would flip: tools newly offered or left out (both reasons), calls that would now be
blocked, and requests whose provider the chat would now refuse. Tool resolution (what a passing
tool offers in one request) is not replayed: it depends on the request's data, not on the policy,
so a tool that passed the checks and offered nothing counts as passing on both sides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import Enum
from typing import TYPE_CHECKING, TypeVar

from policy import Component, ConfidenceLevel, DataSecurity, ProviderKind
from policy._runtime_seam import (
    ApprovalRules,
    OutboundDataRestriction,
    ProviderFacts,
    tighten_data_security,
)
from runtime.chat import provider_refusal

if TYPE_CHECKING:
    from policy import DecisionRecord, OfferDecision, Policy, ProviderConfig
    from policy._runtime_seam import CallRecord, PeoplePolicies

__all__ = ["ApprovalChange", "BlockedCall", "ProviderChange", "ReplayReport", "ToolFlip", "replay"]

OFFERED = "offered"
_NOT_SELECTED = "not selected"
_STRICTEST_RESTRICTION = OutboundDataRestriction.ONLY_CONFIGURED_SERVICES
_PASSED_CHECKS = "NOT_OFFERED"
"""A left-out reason of the record: passed every check, then offered nothing in that request."""


@dataclass(frozen=True, slots=True)
class ToolFlip:
    """A tool whose offer decision differs: `before` / `after` are "offered", "not selected" or
    the reason that kept it out, each with the failed check's detail."""

    decision_id: str
    tool_id: str
    before: str
    after: str
    before_detail: str = ""
    after_detail: str = ""
    subject: str = ""
    """Who asked, as the record names them ("" without a sign-in)."""


@dataclass(frozen=True, slots=True)
class BlockedCall:
    """A logged call that would not run under the candidate, and why."""

    decision_id: str
    call_id: str
    tool_id: str
    status_before: str
    reason: str
    detail: str
    subject: str = ""
    """Who asked, as the record names them ("" without a sign-in)."""


@dataclass(frozen=True, slots=True)
class ProviderChange:
    """A request whose provider the chat would now refuse (or now allow); `detail` is the
    refusal the user would read."""

    decision_id: str
    chat_id: str
    provider_id: str
    before: str
    after: str
    detail: str = ""
    subject: str = ""
    """Who asked, as the record names them ("" without a sign-in)."""


@dataclass(frozen=True, slots=True)
class ApprovalChange:
    """A logged call whose need for a person's approval differs under the candidate: one that
    ran unapproved would now wait, or one that was asked about would now run at once."""

    decision_id: str
    call_id: str
    tool_id: str
    before: str
    after: str
    reason: str = ""
    """Why the candidate asks for approval (empty when it no longer does)."""
    subject: str = ""
    """Who asked, as the record names them ("" without a sign-in)."""


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """Everything that would flip over a log, in log order."""

    decisions: int
    changed: tuple[ToolFlip, ...]
    calls_now_blocked: tuple[BlockedCall, ...]
    providers_now_refused: tuple[ProviderChange, ...]
    providers_now_allowed: tuple[ProviderChange, ...]
    approvals_changed: tuple[ApprovalChange, ...] = ()

    @property
    def has_changes(self) -> bool:
        return bool(
            self.changed
            or self.calls_now_blocked
            or self.providers_now_refused
            or self.providers_now_allowed
            or self.approvals_changed
        )

    def document(self) -> dict[str, object]:
        """The `--format json` contract."""
        return {
            "decisions": self.decisions,
            "changed": [asdict(c) for c in self.changed],
            "calls_now_blocked": [asdict(c) for c in self.calls_now_blocked],
            "providers_now_refused": [asdict(c) for c in self.providers_now_refused],
            "providers_now_allowed": [asdict(c) for c in self.providers_now_allowed],
            "approvals_changed": [asdict(c) for c in self.approvals_changed],
        }


@dataclass(frozen=True, slots=True)
class _Requirements:
    confidence: ConfidenceLevel
    security: DataSecurity
    restriction: OutboundDataRestriction


def replay(
    records: Iterable[DecisionRecord], candidate: Policy, people: PeoplePolicies | None = None
) -> ReplayReport:
    """Re-decide every record under `candidate` and collect what would flip. A record of a
    signed-in person is decided as the gateway would decide for them: with the candidate's
    configurations for their groups (`DataGateway.ConfigurationsByGroup`) and their groups' own
    MCP server entries as `people` lists them (`policy replay` passes `policy.cli_options.
    people_with_own_listings(candidate)`; without it such an entry is not listed); one without a
    person as a person in no group."""
    from policy import Caller

    if people is None:
        from policy._runtime_seam import PeoplePolicies

        people = PeoplePolicies(candidate)
    providers: dict[tuple[object, ...], tuple[ProviderConfig, ProviderFacts]] = {}
    verdicts: dict[tuple[object, ...], _Verdict] = {}
    rules: dict[int, ApprovalRules] = {}
    changed: list[ToolFlip] = []
    blocked: list[BlockedCall] = []
    refused: list[ProviderChange] = []
    allowed: list[ProviderChange] = []
    approvals: list[ApprovalChange] = []
    count = 0
    for record in records:
        count += 1
        caller = Caller(record.subject, frozenset(record.groups)) if record.subject else None
        policy = people.for_caller(caller)
        provider, facts = _provider(record, policy, providers)
        registry = policy.registry
        start = _requirements_before(record)
        refusal = provider_refusal(start.confidence, start.security, facts)
        # Refused before the first request; a refusal between rounds follows a call's result.
        was_refused = record.outcome.stop_reason == "refused" and not record.calls
        if refusal is not None:
            if not was_refused:
                refused.append(
                    ProviderChange(
                        record.decision_id,
                        record.chat_id,
                        record.provider.id,
                        "allowed",
                        "refused before the request",
                        refusal,
                        record.subject,
                    )
                )
            continue
        if was_refused:
            allowed.append(
                ProviderChange(
                    record.decision_id,
                    record.chat_id,
                    record.provider.id,
                    "refused",
                    "allowed",
                    record.outcome.error_message,
                    record.subject,
                )
            )
            continue
        component = _read(Component, record.component, Component.CHAT)
        selection = (
            tuple(record.selected_tool_ids)
            if record.selected_tool_ids is not None
            else registry.default_tool_ids(component)
        )
        key = (id(policy), selection, id(provider), component, start.restriction)
        after = verdicts.get(key)
        if after is None:
            after = _verdict(
                registry.request_decisions(
                    selection, provider, component, outbound_restriction=start.restriction
                )
            )
            verdicts[key] = after
        changed.extend(_flips(record, after))
        blocked.extend(_blocked_calls(record, policy, provider, component, start, facts))
        held = rules.get(id(policy))
        if held is None:
            held = rules[id(policy)] = ApprovalRules.of(policy.configuration, (), policy.tool_ids)
        approvals.extend(_approval_changes(record, held))
    return ReplayReport(
        count, tuple(changed), tuple(blocked), tuple(refused), tuple(allowed), tuple(approvals)
    )


def _approval_changes(record: DecisionRecord, rules: ApprovalRules) -> list[ApprovalChange]:
    """Calls that ran with no approval asked and would now wait, and calls asked about whose
    tool would now need none."""
    asked = {a.call_id: a for a in record.approvals if a.event == "asked"}
    answered = {a.call_id for a in record.approvals if a.event in ("approved", "denied")}
    changes: list[ApprovalChange] = []
    for call in record.calls:
        if call.call_id in answered or call.status == "BLOCKED":
            continue
        reason = rules.reason(call.tool_id)
        if reason is not None:
            changes.append(
                ApprovalChange(
                    record.decision_id,
                    call.call_id,
                    call.tool_id,
                    f"ran without approval ({call.status})",
                    "would wait for approval",
                    reason,
                    record.subject,
                )
            )
    for call_id, approval in asked.items():
        if rules.reason(approval.tool_id) is None:
            changes.append(
                ApprovalChange(
                    record.decision_id,
                    call_id,
                    approval.tool_id,
                    "asked for approval",
                    "would run without approval",
                    subject=record.subject,
                )
            )
    return changes


@dataclass(frozen=True, slots=True)
class _Verdict:
    """The candidate's answer for one kind of request, worked out once per replay."""

    offered: frozenset[str]
    left_out: dict[str, str]
    """Tool id → the reason that keeps it out."""
    details: dict[str, str]


def _verdict(decisions: Iterable[OfferDecision]) -> _Verdict:
    offered: set[str] = set()
    left_out: dict[str, str] = {}
    details: dict[str, str] = {}
    for decision in decisions:
        if decision.offered:
            offered.add(decision.tool_id)
        else:
            left_out[decision.tool_id] = decision.reason.value
            details[decision.tool_id] = decision.message
    return _Verdict(frozenset(offered), left_out, details)


def _flips(record: DecisionRecord, after: _Verdict) -> list[ToolFlip]:
    offered = set(record.offered)
    left_out: dict[str, str] = {}
    details: dict[str, str] = {}
    for left in record.left_out:
        if left.reason == _PASSED_CHECKS:
            offered.add(left.tool_id)
        else:
            left_out[left.tool_id] = left.reason
            details[left.tool_id] = left.detail
    for tool_id in offered & left_out.keys():
        del left_out[tool_id]
    if offered == after.offered and left_out == after.left_out:
        return []
    flips = []
    for tool_id in sorted(offered | left_out.keys() | after.offered | after.left_out.keys()):
        was = OFFERED if tool_id in offered else left_out.get(tool_id, _NOT_SELECTED)
        now = OFFERED if tool_id in after.offered else after.left_out.get(tool_id, _NOT_SELECTED)
        if was != now:
            flips.append(
                ToolFlip(
                    record.decision_id,
                    tool_id,
                    was,
                    now,
                    details.get(tool_id, ""),
                    after.details.get(tool_id, ""),
                    record.subject,
                )
            )
    return flips


def _blocked_calls(
    record: DecisionRecord,
    candidate: Policy,
    provider: ProviderConfig,
    component: Component,
    start: _Requirements,
    facts: ProviderFacts,
) -> list[BlockedCall]:
    """Calls that ran (or failed) then and would not run now: the tool is no longer offered
    under the chat's requirements at that call, or the chat, tightened by an earlier round's
    results, would refuse the provider before the call's round."""
    found: list[BlockedCall] = []
    held = start
    current_round = 0
    pending: list[CallRecord] = []
    refusal: str | None = None
    for call in record.calls:
        if call.round != current_round:
            for earlier in pending:
                held = _tightened(held, earlier)
            pending = []
            current_round = call.round
            refusal = refusal or provider_refusal(held.confidence, held.security, facts)
        pending.append(call)
        if call.status not in ("SUCCESS", "ERROR"):
            continue
        if refusal is not None:
            why = (
                "PROVIDER_REFUSED",
                f"before round {call.round} the chat would refuse the provider: {refusal}",
            )
        else:
            decision = candidate.registry.offer_decision(
                call.tool_id, provider, component, outbound_restriction=held.restriction
            )
            if decision.offered:
                continue
            why = (decision.reason.value, decision.message)
        found.append(
            BlockedCall(
                record.decision_id, call.call_id, call.tool_id, call.status, *why, record.subject
            )
        )
    return found


def _tightened(held: _Requirements, call: CallRecord) -> _Requirements:
    demands = call.demands
    restriction = held.restriction
    if demands.outbound_restriction is not None:
        restriction = min(
            restriction,
            _read(OutboundDataRestriction, demands.outbound_restriction, _STRICTEST_RESTRICTION),
        )
    return _Requirements(
        max(
            held.confidence,
            _read(ConfidenceLevel, demands.provider_confidence, ConfidenceLevel.HIGH),
        ),
        tighten_data_security(
            held.security, _read(DataSecurity, demands.data_security, DataSecurity.SELF_HOSTED)
        ),
        restriction,
    )


def _requirements_before(record: DecisionRecord) -> _Requirements:
    before = record.chat_requirements.before
    return _Requirements(
        _read(ConfidenceLevel, before.provider_confidence, ConfidenceLevel.HIGH),
        _read(DataSecurity, before.data_security, DataSecurity.SELF_HOSTED),
        _read(OutboundDataRestriction, before.outbound_restriction, _STRICTEST_RESTRICTION),
    )


def _provider(
    record: DecisionRecord,
    candidate: Policy,
    seen: dict[tuple[object, ...], tuple[ProviderConfig, ProviderFacts]],
) -> tuple[ProviderConfig, ProviderFacts]:
    """The candidate's entry for the logged provider id (else the logged provider as it was),
    its confidence under the candidate and whether the candidate trusts it."""
    logged = record.provider
    key = (id(candidate), logged.id, logged.kind, logged.host, logged.model)
    found = seen.get(key)
    if found is None:
        from policy import ProviderConfig

        provider = candidate.provider(logged.id) or ProviderConfig(
            id=logged.id,
            name=logged.id,
            kind=_read(ProviderKind, logged.kind, ProviderKind.NONE),
            model=logged.model,
            host=logged.host,
        )
        found = (provider, ProviderFacts.of(candidate.registry, provider))
        seen[key] = found
    return found


_E = TypeVar("_E", bound=Enum)


def _read(kind: type[_E], text: str, fallback: _E) -> _E:
    """A logged name (or value) of `kind`; one this version cannot read is `fallback`, which for
    a requirement is the strictest level: replay must never lift a requirement by accident."""
    found = kind.__members__.get(text)
    if found is not None:
        return found
    try:
        return kind(text)
    except ValueError:
        return fallback


def replay_table(report: ReplayReport) -> tuple[Sequence[str], list[tuple[str, ...]]]:
    """One row per flip: the decision (and who asked), what flipped, before and after with
    their reasons."""
    rows: list[tuple[str, ...]] = []
    for flip in report.changed:
        rows.append(
            (
                _decision(flip.decision_id, flip.subject),
                f"tool {flip.tool_id}",
                _with_detail(flip.before, flip.before_detail),
                _with_detail(flip.after, flip.after_detail),
            )
        )
    for call in report.calls_now_blocked:
        rows.append(
            (
                _decision(call.decision_id, call.subject),
                f"call {call.call_id} ({call.tool_id})",
                call.status_before,
                _with_detail(f"BLOCKED: {call.reason}", call.detail),
            )
        )
    for approval in report.approvals_changed:
        rows.append(
            (
                _decision(approval.decision_id, approval.subject),
                f"call {approval.call_id} ({approval.tool_id})",
                approval.before,
                _with_detail(approval.after, approval.reason),
            )
        )
    for change in (*report.providers_now_refused, *report.providers_now_allowed):
        rows.append(
            (
                _decision(change.decision_id, change.subject),
                f"provider {change.provider_id} (chat {change.chat_id})",
                change.before,
                _with_detail(change.after, change.detail),
            )
        )
    return ("decision", "what", "before", "after"), rows


def _decision(decision_id: str, subject: str) -> str:
    """A decision with who asked (a hashed subject shortened: it only tells people apart)."""
    if subject.startswith("sha256:") and len(subject) > 19:
        subject = subject[:19] + "…"
    return f"{decision_id} ({subject})" if subject else decision_id


def _with_detail(state: str, detail: str) -> str:
    return f"{state} ({detail})" if detail else state
