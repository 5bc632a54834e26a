"""Where a configured value came from: every value an administrator wrote can be traced back."""

from __future__ import annotations

from policy._dataclass import dataclass


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """A file and a 1-based line (0 when the line is unknown)."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(frozen=True, slots=True)
class Origin:
    """The plugin and the place in it that set a value."""

    plugin_id: str
    plugin_name: str
    location: SourceLocation

    def __str__(self) -> str:
        return f"{self.plugin_name} ({self.location})"
