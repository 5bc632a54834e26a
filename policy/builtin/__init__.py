"""The four built-in tools as the policy sees them, one room each: `policy.builtin.web_search`,
`read_web_page`, `search_confluence` and `semantic_search` each hold that tool's id, argument and
setting names, definition, settings checks, per-request offer and typed settings; the runtime's
executable tools (`runtime.tools.<tool>`) subclass their tool class and add `execute`.

This package lists them (`BUILTIN_DEFINITIONS`, `builtin_tools`) and, for code written before
the rooms, still answers every name the single module had (`policy.builtin.WS_MAX_RESULTS`).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from policy.builtin import read_web_page, search_confluence, semantic_search, web_search
from policy.builtin._settings import ToolSettingsError
from policy.builtin.read_web_page import READ_WEB_PAGE, ReadWebPageTool
from policy.builtin.search_confluence import SEARCH_CONFLUENCE, SearchConfluenceTool
from policy.builtin.semantic_search import SEMANTIC_SEARCH, SemanticSearchTool
from policy.builtin.web_search import WEB_SEARCH, WebSearchTool
from policy.definitions import ToolDefinition

_ROOMS = (web_search, read_web_page, search_confluence, semantic_search)

BUILTIN_DEFINITIONS: Mapping[str, ToolDefinition] = {
    room.DEFINITION.id: room.DEFINITION for room in _ROOMS
}


def builtin_tools() -> tuple[
    WebSearchTool, ReadWebPageTool, SearchConfluenceTool, SemanticSearchTool
]:
    """The policy-side built-in tools (the CLI decides with these when the runtime is absent)."""
    return WebSearchTool(), ReadWebPageTool(), SearchConfluenceTool(), SemanticSearchTool()


def __getattr__(name: str) -> Any:
    """A name of the single module the rooms replaced, from the room that holds it now."""
    for module in (*_ROOMS, importlib.import_module("policy.builtin._settings")):
        if not name.startswith("_") and name in vars(module):
            return vars(module)[name]
    raise AttributeError(f"module 'policy.builtin' has no attribute {name!r}")


__all__ = [
    "BUILTIN_DEFINITIONS",
    "READ_WEB_PAGE",
    "SEARCH_CONFLUENCE",
    "SEMANTIC_SEARCH",
    "WEB_SEARCH",
    "ReadWebPageTool",
    "SearchConfluenceTool",
    "SemanticSearchTool",
    "ToolSettingsError",
    "WebSearchTool",
    "builtin_tools",
]
