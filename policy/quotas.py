"""Call limits per person and tool (`DataGateway.CallLimits`): the one reading of the setting.

A limit is "<count>/<window>" (second, minute, hour, day). The entry that applies to a tool is
the most specific: its exact id, else the longest glob that matches (`"*"` last). The runtime
counts calls per person against it (`runtime.quotas`); this module only says what the limit is
and where it was written.
"""

from __future__ import annotations

from dataclasses import field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

from policy._dataclass import dataclass

if TYPE_CHECKING:
    from policy.configuration import PolicyConfiguration

CALL_LIMITS = "DataGateway.CallLimits"
LIMIT_FORM = 'a limit like "5/hour" (a whole number of calls, then /second, /minute, /hour or /day)'
_WINDOWS: dict[str, int] = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
CALL_LIMIT_PATTERN = (
    "^\\s*[0-9]{1,10}\\s*/\\s*("
    + "|".join("".join(f"[{c.lower()}{c.upper()}]" for c in w) for w in _WINDOWS)
    + ")[sS]?\\s*$"
)
"""What `parse_limit` reads, as the JSON Schema pattern `policy schema` gives (any case)."""

__all__ = [
    "CALL_LIMITS",
    "CALL_LIMIT_PATTERN",
    "LIMIT_FORM",
    "CallLimit",
    "CallLimits",
    "parse_limit",
    "zero_limit",
]


@dataclass(frozen=True, slots=True)
class CallLimit:
    """At most `calls` calls per `window` (a name of `_WINDOWS`), per person."""

    calls: int
    window: str
    where: str = ""
    """The entry that set it (key and file:line), for the refusal and explain."""

    @property
    def seconds(self) -> int:
        return _WINDOWS[self.window]

    @property
    def text(self) -> str:
        return f"{self.calls}/{self.window}"


def parse_limit(value: Any) -> CallLimit | None:
    """A written limit ("5/hour", "600 / Minute", "1/days"), or None when it is none."""
    if not isinstance(value, str):
        return None
    count, slash, window = value.partition("/")
    count, window = count.strip(), window.strip().lower()
    if window.endswith("s") and window[:-1] in _WINDOWS:
        window = window[:-1]
    if not slash or window not in _WINDOWS or not count.isascii() or not count.isdigit():
        return None
    if len(count) > 10:
        return None
    return CallLimit(int(count), window)


def zero_limit() -> CallLimit:
    """What a malformed limit reads as: no call at all, until it is fixed."""
    return CallLimit(0, "hour")


@dataclass(slots=True)
class CallLimits:
    """The configured limits; `limit_for(tool_id)` is the one that applies (None: no limit)."""

    exact: dict[str, CallLimit] = field(default_factory=dict)
    globs: tuple[tuple[str, CallLimit], ...] = ()
    _answers: dict[str, CallLimit | None] = field(default_factory=dict)

    @classmethod
    def of(cls, configuration: PolicyConfiguration) -> CallLimits:
        from policy.approvals import is_tool_glob

        setting = configuration.setting(CALL_LIMITS)
        if setting is None or not setting.value:
            return cls()
        exact: dict[str, CallLimit] = {}
        globs: list[tuple[str, CallLimit]] = []
        for key, text in dict(setting.value).items():
            read = parse_limit(text) or zero_limit()
            at = setting.entry_locations.get(key) or setting.origin.location
            limit = CallLimit(read.calls, read.window, f'{CALL_LIMITS}["{key}"] ({at})')
            if is_tool_glob(key):
                globs.append((key, limit))
            else:
                exact[key] = limit
        globs.sort(key=lambda entry: -len(entry[0].replace("*", "")))
        return cls(exact, tuple(globs))

    def __bool__(self) -> bool:
        return bool(self.exact or self.globs)

    def limit_for(self, tool_id: str) -> CallLimit | None:
        if tool_id in self._answers:
            return self._answers[tool_id]
        answer = self.exact.get(tool_id)
        if answer is None:
            answer = next((lim for glob, lim in self.globs if fnmatchcase(tool_id, glob)), None)
        self._answers[tool_id] = answer
        return answer
