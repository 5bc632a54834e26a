"""`policy log summary`: counts over a decision log, a view of its records. Nothing here decides."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from policy.decision_record import DecisionRecord


class DecisionLogError(Exception):
    """A decision-log line that is not a record, named by file:line."""


def read_decision_log(path: Path) -> list[DecisionRecord]:
    """Every record of a JSON Lines decision log; a bad line is an error naming file:line."""
    records: list[DecisionRecord] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
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


def summary_rows(records: list[DecisionRecord]) -> list[tuple[str, str, int]]:
    """(what, value, count) rows: decisions per provider, left-out reasons, calls per tool and status."""
    counts: Counter[tuple[str, str]] = Counter()
    for record in records:
        counts["provider", record.provider.id] += 1
        for left in record.left_out:
            counts["left out", f"{left.tool_id}: {left.reason}"] += 1
        for call in record.calls:
            counts[f"call {call.status}", call.tool_id] += 1
    return [("decisions", "", len(records))] + [
        (what, value, n)
        for (what, value), n in sorted(counts.items(), key=lambda i: (i[0][0], -i[1], i[0][1]))
    ]
