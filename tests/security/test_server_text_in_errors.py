"""A server must not reach the model around the guard through the texts of an error.

Errors of page retrieval go to the model (read_web_page's "Tool execution failed: …", web_search's
`reason`) without the prompt-injection filter, so no server-written text may appear in them: not
the reason phrase, not a content type or content encoding, not a malformed header line or status
line, not an unreadable redirect target.
"""

from __future__ import annotations

import json

import pytest

from policy.builtin import READ_WEB_PAGE, WEB_SEARCH
from policy.vocabulary import ConfidenceLevel, ProviderKind
from runtime import RetrievalOverrides
from runtime.execution import ToolExecutionContext, ToolServices
from runtime.web.addresses import AddressClass
from runtime.web.retrieval import WebRetrievalError, retrieve
from tests.security._kit import INJECTION, RecordingGuard, loopback_is, loopback_resolver, options
from tests.security._raw_server import answer, raw_server, redirect

HOSTILE_ROUTES = {
    "/reason": answer(b"", status=f"404 {INJECTION}"),
    "/unknown-code": answer(b"", status=f"599 {INJECTION}"),
    "/content-type": answer(b"x", content_type=f"application/{INJECTION}; a=b"),
    "/content-encoding": answer(b"x", headers={"Content-Encoding": INJECTION}),
    "/header-line": f"HTTP/1.1 200 OK\r\n{INJECTION}\r\n\r\n".encode(),
    "/status-line": f"HTTP/1.1 2000 {INJECTION}\r\n\r\n".encode(),
    "/location": redirect(f"http://[{INJECTION}]/"),
}


@pytest.mark.parametrize("path", sorted(HOSTILE_ROUTES))
async def test_no_server_written_text_reaches_a_retrieval_error(path: str) -> None:
    async with raw_server(HOSTILE_ROUTES) as server:
        with pytest.raises(WebRetrievalError) as caught:
            await retrieve(server.url(path), options())
    message = str(caught.value).lower()
    assert "ignore" not in message and "system prompt" not in message
    assert message.strip()


async def test_a_standard_reason_phrase_is_still_named() -> None:
    routes = {"/gone": answer(b"", status="410 Whatever The Server Says")}
    async with raw_server(routes) as server:
        with pytest.raises(WebRetrievalError) as caught:
            await retrieve(server.url("/gone"), options())
    assert "HTTP 410 (Gone)" in str(caught.value)
    assert caught.value.status_code == 410


async def test_a_plain_unsupported_type_is_still_named() -> None:
    routes = {"/pdf": answer(b"%PDF", content_type="application/pdf")}
    async with raw_server(routes) as server:
        with pytest.raises(WebRetrievalError, match="'application/pdf'"):
            await retrieve(server.url("/pdf"), options())


def _context(tool_id: str, settings: dict[str, str], guard: RecordingGuard) -> ToolExecutionContext:
    from policy.builtin import BUILTIN_DEFINITIONS

    return ToolExecutionContext(
        definition=BUILTIN_DEFINITIONS[tool_id],
        call_id="c1",
        settings=settings,
        provider_kind=ProviderKind.OPEN_AI,
        provider_confidence=ConfidenceLevel.MEDIUM,
        services=ToolServices(guard=guard.guard, retrieval_overrides=_OVERRIDES),
    )


_OVERRIDES = RetrievalOverrides(loopback_resolver, loopback_is(AddressClass.PUBLIC))


async def test_read_web_page_failure_carries_no_reason_phrase_to_the_model() -> None:
    from runtime.executor import ToolExecutor
    from runtime.tools.read_web_page import create_tool
    from tests.security._chat import executor_call

    async with raw_server(HOSTILE_ROUTES) as server:
        outcome = await executor_call(
            ToolExecutor(
                settings_for=lambda _: {"freeAddressChoice": "ON"},
                services=ToolServices(retrieval_overrides=_OVERRIDES),
            ),
            create_tool(),
            {"url": server.url("/reason")},
        )
    assert outcome.trace.status.value == "ERROR"
    assert "ignore" not in outcome.content.lower()
    assert "HTTP 404 (Not Found)" in outcome.content


async def test_web_search_reason_carries_no_content_type_to_the_model() -> None:
    from runtime.tools.web_search import create_tool
    from tests.servers.searxng_server import hit, running_searxng

    guard = RecordingGuard()
    async with raw_server(HOSTILE_ROUTES) as server:
        with running_searxng() as searxng:
            searxng.state.results = [hit(server.url("/content-type"), "A title", "A snippet")]
            context = _context(
                WEB_SEARCH, {"defaultLanguage": "all", "searxng.baseUrl": searxng.base_url}, guard
            )
            result = await create_tool().execute({"query": "report"}, context)
    [entry] = result.json_content["results"]
    assert entry["page"]["status"] == "snippet only"
    assert "ignore" not in entry["page"]["reason"].lower()


async def test_a_text_type_with_words_in_it_never_reaches_the_result() -> None:
    from runtime.tools.read_web_page import create_tool as read_web_page_tool

    routes = {
        "/words": answer(b"plain words", content_type=f"text/{INJECTION}"),
        "/words-nul": answer(b"a\x00b", content_type=f"text/{INJECTION}"),
    }
    guard = RecordingGuard()
    settings = {"freeAddressChoice": "ON"}
    async with raw_server(routes) as server:
        for path in routes:
            try:
                result = await read_web_page_tool().execute(
                    {"url": server.url(path)}, _context(READ_WEB_PAGE, settings, guard)
                )
                shown = json.dumps(result.json_content)
            except WebRetrievalError as error:
                shown = str(error)
            assert "ignore" not in shown.lower()
