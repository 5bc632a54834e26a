"""Every text a tool brings from outside reaches the model only through the guard.

Checked per field: search hits (title, snippet, date), the search service's own notes, page
metadata (title, description, authors, dates), and only the truncated content (what the model
gets is what the filter saw).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from policy.builtin import BUILTIN_DEFINITIONS, READ_WEB_PAGE, WEB_SEARCH
from policy.vocabulary import ConfidenceLevel, ProviderKind
from runtime import RetrievalOverrides
from runtime.execution import ToolExecutionContext, ToolServices
from runtime.tools.read_web_page import create_tool as read_web_page_tool
from runtime.tools.web_search import create_tool as web_search_tool
from runtime.web.addresses import AddressClass
from tests.security._kit import INJECTION, RecordingGuard, loopback_is, loopback_resolver
from tests.security._raw_server import answer, raw_server
from tests.servers.searxng_server import SearxngServer, hit, running_searxng

MARKER = "removed suspicious content"

PAGE = f"""<!doctype html><html lang="en"><head>
<title>Report. {INJECTION}.</title>
<meta name="description" content="Figures. {INJECTION}.">
<meta name="author" content="{INJECTION}">
<meta property="article:published_time" content="{INJECTION}">
<meta property="article:modified_time" content="{INJECTION}">
</head><body><main><h1>Report</h1>
<p>{"Revenue grew steadily in every region of the company. " * 12}</p>
<p>Closing words. {INJECTION}.</p>
<p>{"Tail paragraph that is cut off by the content limit. " * 200}</p>
<p>Beyond the limit: {INJECTION}.</p>
</main></body></html>""".encode()


@pytest.fixture(scope="module")
def searxng() -> Iterator[SearxngServer]:
    with running_searxng() as server:
        yield server


def _context(tool_id: str, settings: dict[str, str], guard: RecordingGuard) -> ToolExecutionContext:
    return ToolExecutionContext(
        definition=BUILTIN_DEFINITIONS[tool_id],
        call_id="c1",
        settings=settings,
        provider_kind=ProviderKind.OPEN_AI,
        provider_confidence=ConfidenceLevel.MEDIUM,
        services=ToolServices(
            guard=guard.guard,
            retrieval_overrides=RetrievalOverrides(
                loopback_resolver, loopback_is(AddressClass.PUBLIC)
            ),
        ),
    )


def _clean(text: str) -> bool:
    return "ignore all previous" not in text.lower()


async def test_web_search_filters_hits_and_the_search_services_notes(
    searxng: SearxngServer,
) -> None:
    searxng.state.reset()
    searxng.state.results = [
        hit(
            "http://nowhere.invalid/a",
            f"Title. {INJECTION}.",
            f"Snippet. {INJECTION}.",
            publishedDate=INJECTION,
        ),
    ]
    searxng.state.unresponsive_engines = [["bing", f"Error. {INJECTION}."]]
    guard = RecordingGuard()
    settings = {"searxng.baseUrl": searxng.base_url, "defaultLanguage": "all"}
    result = await web_search_tool().execute(
        {"query": "report"}, _context(WEB_SEARCH, settings, guard)
    )
    document = result.json_content
    [entry] = document["results"]
    page = entry["page"]
    assert page["status"] == "snippet only"
    for text in (page["title"], page["content"], entry["search_metadata"]["published_date"]):
        assert _clean(text)
    assert document["notes"] and all(_clean(note) for note in document["notes"])
    assert any("bing" in note for note in document["notes"])


async def test_read_web_page_filters_every_field_and_only_what_was_kept() -> None:
    guard = RecordingGuard()
    async with raw_server({"/report": answer(PAGE)}) as server:
        settings = {"freeAddressChoice": "ON", "maxContentCharacters": "2000"}
        result = await read_web_page_tool().execute(
            {"url": server.url("/report")}, _context(READ_WEB_PAGE, settings, guard)
        )
    document = result.json_content
    content = document["content"]
    fields = [
        content["text_content"],
        content.get("title", ""),
        content.get("description", ""),
        *content.get("authors", []),
        *(str(v) for v in document["metadata"].values()),
    ]
    assert all(_clean(field) for field in fields)
    assert MARKER in content["text_content"]
    assert "Beyond the limit" not in "\n".join(guard.checked)
    assert all(len(text) <= 2000 for text in guard.checked)
