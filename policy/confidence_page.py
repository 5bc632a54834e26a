"""The site's table of the confidence level each scheme gives each provider kind, and how levels
compare, on docs/administrators/provider-confidence.md: written by
`python -m policy.confidence_page` from what `policy.vocabulary.provider_confidence` answers and
the levels' own values, so the page cannot drift from the decision (a test fails while it shows
anything else). Only the writer and the tests import this module.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from policy._page_parts import write_part
from policy.config.settings import TOOLPOLICY_KEYS
from policy.vocabulary import ConfidenceLevel, ConfidenceScheme, ProviderKind, provider_confidence

PAGE = "docs/administrators/provider-confidence.md"
"""The page, from the repository root."""

_SCHEME_KEY = "DataConfidence.ConfidenceScheme"


def _kinds(kinds: list[ProviderKind]) -> str:
    return ", ".join(f"`{kind.name}`" for kind in kinds)


def scheme_part() -> str:
    """A row per named scheme (CUSTOM is the administrator's own): the kinds it sets apart by
    level, and the level every other kind gets; then the kinds every scheme gives the same level,
    and the levels in order."""
    default = next(key.default for key in TOOLPOLICY_KEYS if key.name == _SCHEME_KEY)
    kinds = [kind for kind in ProviderKind if kind is not ProviderKind.NONE]
    schemes = [scheme for scheme in ConfidenceScheme if scheme is not ConfidenceScheme.CUSTOM]
    levels = {s: {k: provider_confidence(k, s) for k in kinds} for s in schemes}
    others = {s: Counter(levels[s].values()).most_common(1)[0][0] for s in schemes}
    alike = [
        kind
        for kind in kinds
        if len({levels[s][kind] for s in schemes}) == 1
        and all(levels[s][kind] != others[s] for s in schemes)
    ]
    rows = ["| scheme | kinds set apart | every other kind |", "|---|---|---|"]
    for scheme in schemes:
        apart: dict[ConfidenceLevel, list[ProviderKind]] = {}
        for kind, level in levels[scheme].items():
            if level != others[scheme] and kind not in alike:
                apart.setdefault(level, []).append(kind)
        shown = "; ".join(
            f"{_kinds(apart[level])} {level.name}" for level in sorted(apart, reverse=True)
        )
        name = f"`{scheme.name}`" + (" (default)" if scheme.value == default else "")
        rows.append(f"| {name} | {shown or '—'} | {others[scheme].name} |")
    same = [f"{_kinds([k])} is {levels[schemes[0]][k].name}" for k in alike]
    none = provider_confidence(ProviderKind.NONE, schemes[0]).name
    order = " < ".join(f"{level.name} {level.value}" for level in sorted(ConfidenceLevel))
    note = f"Provider kind `NONE` (no provider) is {none}."
    if same:
        note = f"In every scheme above {', '.join(same)}. {note}"
    parts = [*rows, "", note, "", f"Levels compare by their numbers: {order}."]
    return "\n".join(parts) + "\n"


def main(arguments: list[str]) -> int:
    """`python -m policy.confidence_page [PAGE ...]`: write the table into the page(s)."""
    return write_part(arguments, "policy.confidence_page", scheme_part(), Path(PAGE))


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
