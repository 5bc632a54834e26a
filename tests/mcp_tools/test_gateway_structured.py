"""Issue 30: structured output through `policy mcp serve`, for real SDK clients over stdio and
streamable HTTP at two protocol versions: an upstream tool's output schema is listed, its
structured result arrives as structured content (the SDK client checks it against the schema),
still guarded: a prompt injection inside it is removed, and a result the removal made invalid
against the schema is dropped with a note and answered as an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_tools.gateway_clients import gateway_client, protocol, serving_structured_tools
from tests.mcp_tools.test_mcp import state
from tests.servers.mcp_server import _STRUCTURED

__all__ = ["protocol", "state"]


async def test_structured_output_end_to_end(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch, protocol: tuple[str, str]
) -> None:
    serve = serving_structured_tools(tmp_path / "org", state)
    async with gateway_client(*protocol, monkeypatch, *serve) as (client, _):
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["tickets__count_tickets"].output_schema == _STRUCTURED[0]["outputSchema"]
        assert listed["tickets__search_tickets"].output_schema is None

        counted = await client.call_tool("tickets__count_tickets", {"query": "vpn"})
        assert not counted.is_error, counted
        assert counted.structured_content == {
            "count": 2,
            "summary": "2 tickets match 'vpn': #12 VPN down, #31 mail slow.",
            "ids": [12, 31],
            "status": "open",
        }

        attacked = await client.call_tool("tickets__count_tickets", {"inject": True})
        assert not attacked.is_error, attacked
        summary = (attacked.structured_content or {})["summary"]
        assert summary.startswith("Ticket 7: printer broken.")
        assert "Ignore all previous instructions" not in summary, "filtered inside the JSON"

        broken = await client.call_tool("tickets__count_tickets", {"hostile_status": True})
        assert broken.is_error, "the filtered status is no longer one the schema allows"
        assert broken.structured_content is None
        text = broken.content[0].text  # type: ignore[union-attr]
        assert "the structured result was dropped" in text and "output schema" in text
        assert "Ignore all previous instructions" not in text
