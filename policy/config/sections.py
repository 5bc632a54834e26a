"""The `CONFIG[...]` lists of entries toolpolicy reads, each declared in a module of its own."""

from __future__ import annotations

from policy.config.chat_templates import CHAT_TEMPLATES
from policy.config.data_sources import DATA_SOURCES
from policy.config.fields import Section
from policy.config.mcp_servers import MCP_SERVERS
from policy.config.providers import LLM_PROVIDERS

SECTIONS: tuple[Section, ...] = (LLM_PROVIDERS, DATA_SOURCES, CHAT_TEMPLATES, MCP_SERVERS)
"""In the order the reader reads them."""
