"""A search service's compressed answer is capped after decompression, in small pieces.

Even a configured SearXNG may be a public instance; a gzip bomb from it must neither inflate in
memory nor reach the model, only end the search with the size note.
"""

from __future__ import annotations

import gzip
import logging
import tracemalloc

import pytest

from runtime.tools.web_search.backends import (
    SEARXNG_MAX_RESPONSE_BYTES,
    SearchBackendError,
    SearchRequest,
    SearxngBackend,
)
from tests.security._raw_server import answer, raw_server

MIB = 1024 * 1024


async def test_a_gzip_bomb_from_the_search_service_never_inflates() -> None:
    bomb = gzip.compress(b" " * (96 * MIB), compresslevel=9)
    routes = {
        "/search?q=x&format=json&language=all&pageno=1": answer(
            bomb, content_type="application/json", headers={"Content-Encoding": "gzip"}
        )
    }
    async with raw_server(routes) as server:
        backend = SearxngBackend(f"http://127.0.0.1:{server.port}", timeout_seconds=10)
        tracemalloc.start()
        try:
            try:
                await backend.search(SearchRequest("x"))
            except SearchBackendError as error:
                message = str(error)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert f"more than {SEARXNG_MAX_RESPONSE_BYTES} bytes" in message
    assert peak < 16 * MIB


async def test_no_log_record_shows_the_search_services_credentials_or_the_query(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = b'{"results": [{"url": "https://docs.test/a", "title": "A", "content": "x"}]}'
    routes = {
        "/search?q=salary+list&format=json&language=all&pageno=1": answer(
            body, content_type="application/json"
        )
    }
    caplog.set_level(logging.DEBUG)
    async with raw_server(routes) as server:
        backend = SearxngBackend(f"http://svc:pa55@127.0.0.1:{server.port}", timeout_seconds=10)
        found = await backend.search(SearchRequest("salary list"))
    assert [hit.url for hit in found.hits] == ["https://docs.test/a"]
    assert b"authorization: basic" in server.heads[0].lower()
    logged = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert "pa55" not in logged and "salary" not in logged
