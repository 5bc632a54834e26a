"""A loopback SearXNG: `GET /search?format=json` answers like a real instance, scripted per test.

Tests set the results (per query or for any query), unresponsive engines, or a failure mode
(a forced status, an HTML answer, an oversized answer); every request's parameters are recorded.
As in SearXNG, a format other than json is refused with 403 unless the test switches JSON off.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.servers.loopback import RunningApp, running_app


@dataclass
class SearxngState:
    results: list[dict[str, Any]] = field(default_factory=list)
    results_by_query: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    unresponsive_engines: list[list[str]] = field(default_factory=list)
    forced_status: int | None = None
    json_enabled: bool = True
    answer_as_html: bool = False
    oversized: bool = False
    requests: list[dict[str, str]] = field(default_factory=list)

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


def hit(url: str, title: str = "", content: str = "", **extra: Any) -> dict[str, Any]:
    """One result as SearXNG writes it."""
    return {"url": url, "title": title, "content": content, "engine": "duckduckgo", **extra}


def build_app(state: SearxngState) -> Starlette:
    async def search(request: Request) -> Response:
        params = dict(request.query_params)
        state.requests.append(params)
        if state.forced_status is not None:
            return Response("<html>refused</html>", state.forced_status, media_type="text/html")
        if params.get("format") != "json" or not state.json_enabled:
            return Response("<html>403 Forbidden</html>", 403, media_type="text/html")
        if state.answer_as_html:
            return Response("<html><body>results</body></html>", media_type="text/html")
        if state.oversized:
            padding = "x" * (1024 * 1024 + 10)
            return Response(
                json.dumps({"results": [], "padding": padding}), media_type="application/json"
            )
        query = params.get("q", "")
        results = state.results_by_query.get(query, state.results)
        body = {
            "query": query,
            "number_of_results": len(results),
            "results": results,
            "answers": [],
            "suggestions": [],
            "unresponsive_engines": state.unresponsive_engines,
        }
        return Response(json.dumps(body), media_type="application/json")

    return Starlette(routes=[Route("/search", search)])


@dataclass
class SearxngServer:
    app: RunningApp
    state: SearxngState

    @property
    def base_url(self) -> str:
        return self.app.url("")


@contextmanager
def running_searxng() -> Iterator[SearxngServer]:
    state = SearxngState()
    with running_app(build_app(state)) as app:
        yield SearxngServer(app, state)
