"""A loopback Staan: `POST /v2/search/web` answers like the real API, scripted per test.

Like Staan, it serves ten hits per page and refuses an offset that is not a multiple of ten up to
30 with 400. Tests set the hits (the whole ranked list; the server cuts the page out of it), an
altered query, or a failure mode. Every request's headers and JSON body are recorded.
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

PAGE_SIZE = 10
MAX_OFFSET = 30


@dataclass
class StaanRequest:
    """What arrived: the path with its query string, the headers and the JSON body."""

    target: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class StaanState:
    results: list[dict[str, Any]] = field(default_factory=list)
    altered_query: str = ""
    forced_status: int | None = None
    answer_as_html: bool = False
    broken_json: bool = False
    requests: list[StaanRequest] = field(default_factory=list)

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]


def web_result(url: str, title: str = "", snippet: str = "", **extra: Any) -> dict[str, Any]:
    """One web hit as Staan writes it."""
    host = url.split("/")[2] if url.count("/") >= 2 else ""
    return {"url": url, "title": title, "snippet": snippet, "hostname": host, **extra}


def _error(status: int, message: str) -> Response:
    return Response(
        json.dumps({"statusCode": status, "message": [message], "error": "Bad Request"}),
        status,
        media_type="application/json",
    )


def build_app(state: StaanState) -> Starlette:
    async def search(request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw) if raw else {}
        state.requests.append(
            StaanRequest(
                target=str(request.url.path)
                + (f"?{request.url.query}" if request.url.query else ""),
                headers={k.lower(): v for k, v in request.headers.items()},
                body=body,
            )
        )
        if state.forced_status is not None:
            return _error(state.forced_status, "refused by the test")
        if state.answer_as_html:
            return Response("<html><body>maintenance</body></html>", media_type="text/html")
        if state.broken_json:
            return Response('{"web": {"results": [', media_type="application/json")
        offset = body.get("offset", 0)
        if not isinstance(offset, int) or offset % PAGE_SIZE or not 0 <= offset <= MAX_OFFSET:
            return _error(400, "offset must be a multiple of 10 between 0 and 30")
        if "count" in body and body["count"] != PAGE_SIZE:
            return _error(400, "count must be 10")
        page = state.results[offset : offset + PAGE_SIZE]
        document = {
            "query": {"original": body.get("q", ""), "altered_query": state.altered_query},
            "market": body.get("market", "fr-fr"),
            "offset": offset,
            "web": {"results": page},
        }
        return Response(json.dumps(document), media_type="application/json")

    return Starlette(routes=[Route("/v2/search/web", search, methods=["POST", "GET"])])


@dataclass
class StaanServer:
    app: RunningApp
    state: StaanState

    @property
    def endpoint(self) -> str:
        return self.app.url("/v2/search/web")


@contextmanager
def running_staan() -> Iterator[StaanServer]:
    state = StaanState()
    with running_app(build_app(state)) as app:
        yield StaanServer(app, state)
