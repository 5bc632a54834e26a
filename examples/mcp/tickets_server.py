"""A small ticketing MCP server written with the official `mcp` SDK, for examples/mcp/plugin.lua.

    python examples/mcp/tickets_server.py        (speaks MCP on stdin/stdout)

It offers a read-only search and a destructive delete; the plugin denies the delete and requires
every definition to be pinned before it is offered.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("tickets")

_TICKETS = {
    12: "VPN drops every hour on the guest network",
    31: "Shared mailbox not visible in the mail client",
    47: "Printer on floor 3 prints blank pages",
}


@server.tool(title="Search tickets", annotations=ToolAnnotations(read_only_hint=True))
def search_tickets(query: str, requester_email: str = "") -> str:
    """Searches the service desk's open tickets for words of the query."""
    words = query.casefold().split()
    hits = [f"#{n}: {t}" for n, t in _TICKETS.items() if any(w in t.casefold() for w in words)]
    return "\n".join(hits) or f"No open ticket matches '{query}'."


@server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
def delete_ticket(ticket_id: int) -> str:
    """Deletes a ticket for good."""
    return f"Ticket {ticket_id} deleted." if _TICKETS.pop(ticket_id, None) else "No such ticket."


if __name__ == "__main__":
    server.run()
