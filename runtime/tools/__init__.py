"""The built-in tools with their execution: web_search, read_web_page, search_confluence,
semantic_search. Each module's `create_tool()` is the `toolpolicy.tools` entry point; this package
only imports them when asked, so discovering tools stays cheap.
"""

from __future__ import annotations

from runtime.execution import ExecutableTool


def builtin_executable_tools() -> tuple[ExecutableTool, ...]:
    """One executable instance of each built-in tool, in the order the policy lists them."""
    from runtime.tools import read_web_page, search_confluence, semantic_search, web_search

    return (
        web_search.create_tool(),
        read_web_page.create_tool(),
        search_confluence.create_tool(),
        semantic_search.create_tool(),
    )


__all__ = ["builtin_executable_tools"]
