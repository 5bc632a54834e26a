"""toolpolicy's runtime: provider adapters, the tool-calling loop, the executor and built-in tools."""

from __future__ import annotations

__all__: list[str] = []
