"""A loopback Confluence Data Center under `/wiki/`: search page, login redirect, redirects out.

`/wiki/dosearchsite.action` records its parameters and answers by the state's `mode`:
"results" (a search page listing hits), "empty" (a page without readable text), "login" (a
redirect to the login page, as Confluence does without a session), "outside" (a redirect to
`outside_location`). Pages under `/wiki/display/...` and `/wiki-evil/...` exist so a test can tell
whether a request went where it must not.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.servers.loopback import RunningApp, running_app


@dataclass
class ConfluenceState:
    mode: str = "results"
    outside_location: str = "https://elsewhere.test/collect"
    page_title: str = "Search - Company Wiki"
    hits: list[tuple[str, str, str]] = field(
        default_factory=lambda: [
            ("/wiki/display/ENG/Release+plan", "Release plan 2026", "The release plan lists"),
            ("/wiki/display/ENG/Roadmap", "Roadmap", "Quarterly roadmap of the platform team"),
        ]
    )
    searches: list[dict[str, str]] = field(default_factory=list)
    raw_queries: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


def _search_page(state: ConfluenceState, query: str) -> str:
    items = "\n".join(
        f'<li><h3><a href="{html.escape(href)}">{html.escape(title)}</a></h3>'
        f"<p>{html.escape(excerpt)} for the wiki search.</p></li>"
        for href, title, excerpt in state.hits
    )
    return f"""<!doctype html><html lang="en"><head><title>{html.escape(state.page_title)}</title></head>
<body><nav>Spaces People Create</nav><main>
<h1>Search results for {html.escape(query)}</h1>
<p>{len(state.hits)} results were found in the company wiki for this search.</p>
<ol>{items}</ol>
</main></body></html>"""


def build_app(state: ConfluenceState) -> Starlette:
    def page(body: str, status: int = 200) -> Response:
        return Response(body, status_code=status, media_type="text/html; charset=utf-8")

    async def search(request: Request) -> Response:
        state.paths.append(request.url.path)
        state.searches.append(dict(request.query_params))
        state.raw_queries.append(request.url.query)
        if state.mode == "login":
            return Response(
                status_code=302,
                headers={"Location": "/wiki/login.action?os_destination=%2Fdosearchsite.action"},
            )
        if state.mode == "outside":
            return Response(status_code=302, headers={"Location": state.outside_location})
        if state.mode == "empty":
            return page(
                "<html><head><title>Search</title></head><body><script>x()</script></body></html>"
            )
        return page(_search_page(state, request.query_params.get("queryString", "")))

    async def login(request: Request) -> Response:
        state.paths.append(request.url.path)
        return page(
            "<html><head><title>Log In - Company Wiki</title></head><body><main>"
            "<h1>Log in</h1><p>Enter your user name and password to continue to the wiki.</p>"
            "<form><input name='os_username'></form></main></body></html>"
        )

    async def display(request: Request) -> Response:
        state.paths.append(request.url.path)
        return page("<html><body><main><h1>A wiki page</h1><p>Content.</p></main></body></html>")

    return Starlette(
        routes=[
            Route("/wiki/dosearchsite.action", search),
            Route("/wiki/login.action", login),
            Route("/wiki/display/{rest:path}", display),
            Route("/wiki-evil/{rest:path}", display),
        ]
    )


@dataclass
class ConfluenceServer:
    app: RunningApp
    state: ConfluenceState

    def base_url(self, host: str) -> str:
        return self.app.url("/wiki/", host)


@contextmanager
def running_confluence(certfile: Path, keyfile: Path) -> Iterator[ConfluenceServer]:
    state = ConfluenceState()
    with running_app(build_app(state), certfile=certfile, keyfile=keyfile) as app:
        yield ConfluenceServer(app, state)
