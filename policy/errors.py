"""The root of every error toolpolicy raises on purpose, and the lookups that fail by name.

An app catches `ToolPolicyError` to tell "the configuration, an input or a service said no" from a
bug; the `policy` CLI prints such an error as one line and keeps tracebacks for everything else.
Each documented error (`PluginLoadError`, `UserSettingsError`, `ProviderError`, `ChatRequirementError`,
`WebPageAccessBlocked`, ...) derives from it, some also from the builtin they used to be
(`KeyError`, `ValueError`), so existing `except` clauses keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policy.configuration import ProviderConfig


class ToolPolicyError(Exception):
    """Something toolpolicy refuses or reports on purpose; its message is meant for a person.

    `code` names the kind of failure, stable across versions (`policy ... --format json` reports
    it); each documented error sets its own.
    """

    code: str = "error"


class UnknownProviderError(ToolPolicyError, LookupError):
    """No configured provider has this id or name; the message lists the configured ones."""

    code = "unknown-provider"

    def __init__(self, wanted: str, configured: Sequence[ProviderConfig]) -> None:
        from policy.suggest import did_you_mean

        self.wanted = wanted
        hint = did_you_mean(wanted, [name for p in configured for name in (p.id, p.name) if name])
        listed = ", ".join(f"{p.id} ({p.name}, {p.kind.value})" for p in configured)
        super().__init__(
            f"no configured provider '{wanted}'{hint or '.'} Configured: {listed or 'none'}"
        )
