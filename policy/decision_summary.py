"""`policy log summary`: counts over a decision log, a view of its records. Nothing here decides."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import ValidationError

from policy._patterns import LazyPattern
from policy.decision_record import DecisionRecord
from policy.errors import ToolPolicyError

_TOP_BLOCKED = 10
_DURATION = LazyPattern(r"^\s*(\d+)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class DecisionLogError(ToolPolicyError):
    """A decision-log line that is not a record, named by file:line; or a bad --since."""

    code = "decision-log"


def read_decision_log(path: Path) -> list[DecisionRecord]:
    """Every record of a JSON Lines decision log. The first line that is not a record stops the
    reading with an error naming file:line and what is wrong (bytes that are not UTF-8 by their
    column, a field that does not fit by its path): counts over a log with a damaged line left
    out would be wrong without saying so. Lines end at a newline only (U+2028 inside a record
    does not end it)."""
    records: list[DecisionRecord] = []
    try:
        handle = path.open("rb")
    except OSError as error:
        raise DecisionLogError(
            f"{path}: cannot be read ({error.strerror or type(error).__name__})"
        ) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DecisionLogError(
                    f"{path}:{number}: not a decision record (byte {error.start + 1} of the "
                    f"line, 0x{raw[error.start]:02x}, is not UTF-8: the line is damaged; repair "
                    "or remove it)."
                ) from None
            if not line.strip():
                continue
            try:
                records.append(DecisionRecord.model_validate_json(line))
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "the line"
                raise DecisionLogError(
                    f"{path}:{number}: not a decision record ({where}: {first['msg']}); "
                    "see policy schema --decision-log."
                ) from None
    return records


def read_decision_logs(
    paths: Sequence[Path], since: datetime | None = None
) -> list[DecisionRecord]:
    """The records of several logs (a file and its rotated copies), oldest first, from `since`."""
    records = [r for path in paths for r in read_decision_log(path)]
    if since is not None:
        records = [r for r in records if _aware(r.timestamp) >= since]
    return sorted(records, key=lambda r: _aware(r.timestamp))


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`--since`: a duration back from now (30m, 24h, 7d, 2w) or an ISO 8601 date or time
    (UTC unless it names its offset)."""
    match = _DURATION.match(text)
    if match:
        amount, unit = int(match.group(1)), _UNITS[match.group(2).lower()]
        return (now or datetime.now(UTC)) - timedelta(**{unit: amount})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise DecisionLogError(
            f"--since {text!r} is neither a duration nor a date: write e.g. 30m, 24h, 7d, 2w, "
            "2026-01-31 or 2026-01-31T08:00:00+01:00."
        ) from None
    return _aware(moment)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def summary_rows(records: Iterable[DecisionRecord]) -> list[tuple[str, str, int]]:
    """(what, value, count) rows: decisions per configuration revision and provider, refusals,
    left-out tools per reason, calls per status and tool, approvals asked, approved and denied
    (by whom) and not taken per tool, and the most frequent blocked calls."""
    counts: Counter[tuple[str, str]] = Counter()
    blocked: Counter[str] = Counter()
    total = 0
    for record in records:
        total += 1
        counts["revision", record.configuration.revision[:12] or "(none)"] += 1
        counts["provider", record.provider.id] += 1
        if record.outcome.stop_reason in ("refused", "error"):
            what = f"{record.outcome.stop_reason}"
            counts[what, f"{record.provider.id}: {record.outcome.error_class}"] += 1
        for left in record.left_out:
            counts["left out", f"{left.tool_id}: {left.reason}"] += 1
        for call in record.calls:
            counts[f"call {call.status}", call.tool_id] += 1
            if call.status == "BLOCKED":
                blocked[f"{call.tool_id}: {call.status_message}".rstrip(": ")] += 1
        for approval in record.approvals:
            who = f" by {approval.by}" if approval.by else ""
            shown = approval.tool_id + (who if approval.event in ("approved", "denied") else "")
            counts[f"approval {approval.event}", shown] += 1
    rows = [("decisions", "", total)] + [
        (what, value, n)
        for (what, value), n in sorted(counts.items(), key=lambda i: (i[0][0], -i[1], i[0][1]))
    ]
    top = sorted(blocked.items(), key=lambda i: (-i[1], i[0]))[:_TOP_BLOCKED]
    return rows + [("top blocked", value, n) for value, n in top]


_NO_SUBJECT = "(no sign-in)"
"""How a summary by subject names the records of requests without a signed-in person."""


def summary_rows_by_subject(
    records: Iterable[DecisionRecord],
) -> list[tuple[str, str, str, int]]:
    """(subject, what, value, count) rows: `summary_rows` per person who asked (as the records
    name them: `DataGateway.RecordSubject`), the most active first."""
    people: dict[str, list[DecisionRecord]] = {}
    for record in records:
        people.setdefault(record.subject or _NO_SUBJECT, []).append(record)
    ordered = sorted(people.items(), key=lambda item: (-len(item[1]), item[0]))
    return [(subject, *row) for subject, held in ordered for row in summary_rows(held)]
