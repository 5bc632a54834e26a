"""A search service's compressed answer is capped after decompression, in small pieces.

Even a configured SearXNG may be a public instance; a gzip bomb from it must neither inflate in
memory nor reach the model, only end the search with the size note.
"""

from __future__ import annotations

import gzip
import tracemalloc

from runtime.tools.search_backends import (
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
