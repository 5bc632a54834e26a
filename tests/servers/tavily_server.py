"""A loopback Tavily: `POST /search` answers like the real API, scripted per test.

Tests set the results, or a failure mode (a forced status, an HTML answer, unreadable JSON, an
answer without results, an oversized or a gzip-compressed answer, a slow answer). Every request's headers and
JSON body are recorded, so tests can check where the API key travelled.
"""

from __future__ import annotations

import asyncio
import gzip
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
class TavilyRequest:
    """What arrived: the path with its query string, the headers and the JSON body."""

    target: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class TavilyState:
    results: list[dict[str, Any]] = field(default_factory=list)
    forced_status: int | None = None
    answer_as_html: bool = False
    broken_json: bool = False
    without_results: bool = False
    oversized: bool = False
    gzipped: bool = False
    delay_seconds: float = 0.0
    requests: list[TavilyRequest] = field(default_factory=list)

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


def result(
    url: str, title: str = "", content: str = "", score: float = 0.5, **extra: Any
) -> dict[str, Any]:
    """One hit as Tavily writes it."""
    return {
        "url": url,
        "title": title,
        "content": content,
        "score": score,
        "raw_content": None,
        **extra,
    }


def build_app(state: TavilyState) -> Starlette:
    async def search(request: Request) -> Response:
        raw = await request.body()
        state.requests.append(
            TavilyRequest(
                target=str(request.url.path)
                + (f"?{request.url.query}" if request.url.query else ""),
                headers={k.lower(): v for k, v in request.headers.items()},
                body=json.loads(raw) if raw else {},
            )
        )
        if state.delay_seconds:
            await asyncio.sleep(state.delay_seconds)
        if state.forced_status is not None:
            detail = {"detail": {"error": "refused by the test"}}
            return Response(json.dumps(detail), state.forced_status, media_type="application/json")
        if state.answer_as_html:
            return Response("<html><body>maintenance</body></html>", media_type="text/html")
        if state.broken_json:
            return Response('{"results": [', media_type="application/json")
        if state.without_results:
            return Response(json.dumps({"query": "x"}), media_type="application/json")
        document: dict[str, Any] = {
            "query": state.requests[-1].body.get("query", ""),
            "answer": None,
            "images": [],
            "results": state.results,
            "response_time": 0.42,
            "request_id": "req-1",
        }
        if state.oversized:
            document["padding"] = "x" * (1024 * 1024 + 10)
        encoded = json.dumps(document).encode()
        if state.gzipped:
            return Response(
                gzip.compress(encoded),
                media_type="application/json",
                headers={"Content-Encoding": "gzip"},
            )
        return Response(encoded, media_type="application/json")

    return Starlette(routes=[Route("/search", search, methods=["POST", "GET"])])


@dataclass
class TavilyServer:
    app: RunningApp
    state: TavilyState

    @property
    def endpoint(self) -> str:
        return self.app.url("/search")


@contextmanager
def running_tavily() -> Iterator[TavilyServer]:
    state = TavilyState()
    with running_app(build_app(state)) as app:
        yield TavilyServer(app, state)
