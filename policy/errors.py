"""Every error toolpolicy's policy side raises on purpose, in one place, and their common root.

An app catches `ToolPolicyError` to tell "the configuration, an input or a service said no" from a
bug; the `policy` CLI prints such an error as one line and keeps tracebacks for everything else.
Some also derive from the builtin they used to be (`KeyError`, `ValueError`), so existing `except`
clauses keep working. Each sets a `code`, stable across versions (`--format json` reports it).
The errors are defined next to the code that raises them and importable from here (loaded on
first use, so importing this module stays cheap); `runtime.errors` shows the runtime's.

    ToolPolicyError                 error             (runtime.errors adds its own subclasses)
    ├── UnknownProviderError        unknown-provider  also LookupError
    ├── UnknownToolError            unknown-tool      also KeyError
    ├── PluginLoadError             plugin-load       a plugin rejected whole, findings by file:line
    ├── PluginFileError             plugin-file       a plugin file refused or unreadable
    ├── LuaSandboxError             lua               a plugin could not be run
    ├── UserSettingsError           user-settings     a bad settings file or value
    ├── ToolSettingsError           tool-settings     also ValueError; a tool's own checks refuse
    ├── SecretError                 secret            an `ENC:v1:` value or the secret is unusable
    ├── ExportError                 export            an export that cannot be produced
    │   └── SecretExportError       secret-export     secrets asked for but not encryptable
    ├── DecisionLogError            decision-log      a decision-log line that is not a record
    └── WhatIfError                 what-if           a what-if the web page cannot decide
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from policy._lazy import lazy_attributes

if TYPE_CHECKING:
    from policy.builtin._settings import ToolSettingsError
    from policy.catalog import UnknownToolError
    from policy.configuration import ProviderConfig
    from policy.decision_summary import DecisionLogError
    from policy.export import ExportError, SecretExportError
    from policy.lua_sandbox import LuaSandboxError
    from policy.plugin_files import PluginFileError
    from policy.plugins import PluginLoadError
    from policy.secrets import SecretError
    from policy.user_settings import UserSettingsError
    from policy.web_what_if import WhatIfError

__all__ = [
    "DecisionLogError",
    "ExportError",
    "LuaSandboxError",
    "PluginFileError",
    "PluginLoadError",
    "SecretError",
    "SecretExportError",
    "ToolPolicyError",
    "ToolSettingsError",
    "UnknownProviderError",
    "UnknownToolError",
    "UserSettingsError",
    "WhatIfError",
]

_DEFINED_IN = {
    "DecisionLogError": "policy.decision_summary",
    "ExportError": "policy.export",
    "LuaSandboxError": "policy.lua_sandbox",
    "PluginFileError": "policy.plugin_files",
    "PluginLoadError": "policy.plugins",
    "SecretError": "policy.secrets",
    "SecretExportError": "policy.export",
    "ToolSettingsError": "policy.builtin._settings",
    "UnknownToolError": "policy.catalog",
    "UserSettingsError": "policy.user_settings",
    "WhatIfError": "policy.web_what_if",
}


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _DEFINED_IN, __all__)


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
