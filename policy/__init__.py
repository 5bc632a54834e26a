"""toolpolicy's policy side: decides which tools may be offered, with which settings, and why."""

from __future__ import annotations

__all__: list[str] = []
