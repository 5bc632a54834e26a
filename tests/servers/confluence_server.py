"""A loopback Confluence under `/wiki/`: search page, REST search API, login redirect, redirects.

`/wiki/dosearchsite.action` records its parameters and answers by the state's `mode`:
"results" (a search page listing hits), "empty" (a page without readable text), "login" (a
redirect to the login page, as Confluence does without a session), "outside" (a redirect to
`outside_location`). Pages under `/wiki/display/...` and `/wiki-evil/...` exist so a test can tell
whether a request went where it must not.

`/wiki/rest/api/search` answers as Confluence Cloud's REST search documents it (`results[]` with
`title`, `excerpt` with highlight markers, `url` relative to the wiki, `resultGlobalContainer`,
`lastModified`; `start`, `limit`, `size`, `totalSize`, `cqlQuery`; `_links` with `base`,
`context` and a `next` carrying an opaque `cursor`), at most `rest_page_size` hits a page. It reads
the CQL the way CQL reads string literals and answers 400 to anything but `siteSearch ~ "<text>"`
with an optional `and space="<key>"`, recording the text and key as read. A wrong Authorization
gets 401; `throttle` queued Retry-After values get 429 first.
"""

from __future__ import annotations

import base64
import html
import json
import re
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
    authorization: str = "Basic " + base64.b64encode(b"ada@example.org:cloud-token-7f3a").decode()
    rest_hits: list[dict[str, object]] = field(default_factory=lambda: list(_REST_HITS))
    rest_page_size: int = 25
    throttle: list[str] = field(default_factory=list)
    rest_requests: list[dict[str, str]] = field(default_factory=list)
    read_cql: list[tuple[str, str | None]] = field(default_factory=list)
    rest_redirect: str = ""
    rest_html: str = ""


def rest_hit(path: str, title: str, excerpt: str, space: str = "Engineering") -> dict[str, object]:
    """One result as Confluence Cloud's search API writes it."""
    page_id = str(abs(hash(path)) % 10**9)
    return {
        "content": {
            "id": page_id,
            "type": "page",
            "status": "current",
            "title": title,
            "_links": {"webui": path, "self": f"/rest/api/content/{page_id}"},
        },
        "title": title,
        "excerpt": excerpt,
        "url": path,
        "resultGlobalContainer": {"title": space, "displayUrl": "/spaces/ENG"},
        "breadcrumbs": [],
        "entityType": "content",
        "iconCssClass": "aui-icon content-type-page",
        "lastModified": "2026-01-10T09:00:00.000Z",
        "friendlyLastModified": "Jan 10, 2026",
    }


_REST_HITS = (
    rest_hit(
        "/spaces/ENG/pages/101/Release+plan+2026",
        "@@@hl@@@Release@@@endhl@@@ plan 2026",
        "The @@@hl@@@release@@@endhl@@@ plan lists the dates &amp; owners",
    ),
    rest_hit("/spaces/ENG/pages/102/Roadmap", "Roadmap", "Quarterly roadmap of the platform team"),
)

_CQL = re.compile(r'siteSearch ~ "((?:[^"\\]|\\.)*)"(?: and space="((?:[^"\\]|\\.)*)")?')


def read_cql(cql: str) -> tuple[str, str | None] | None:
    """The text term and space key of the only CQL the tool may send, read as CQL reads string
    literals (a backslash takes the next character as it is); None for anything else."""
    match = _CQL.fullmatch(cql)
    if match is None:
        return None
    text, space = match.groups()

    def unescape(value: str) -> str:
        return re.sub(r"\\(.)", r"\1", value)

    return unescape(text), None if space is None else unescape(space)


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

    async def rest_search(request: Request) -> Response:
        state.paths.append(request.url.path)
        parameters = dict(request.query_params)
        state.rest_requests.append(parameters)
        if state.rest_redirect:
            return Response(status_code=302, headers={"Location": state.rest_redirect})
        if request.headers.get("authorization") != state.authorization:
            return Response(
                "Client must be authenticated to access this resource.",
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="protected-area"'},
                media_type="text/plain",
            )
        if state.rest_html:
            return page(state.rest_html)
        if state.throttle:
            return Response(
                json.dumps({"message": "Rate limit exceeded"}),
                status_code=429,
                headers={"Retry-After": state.throttle.pop(0)},
                media_type="application/json",
            )
        read = read_cql(parameters.get("cql", ""))
        if read is None:
            body = {"statusCode": 400, "message": "Could not parse cql"}
            return Response(json.dumps(body), status_code=400, media_type="application/json")
        state.read_cql.append(read)
        cursor = parameters.get("cursor")
        start = int(base64.urlsafe_b64decode(cursor).decode()) if cursor else 0
        limit = min(int(parameters.get("limit", "25")), state.rest_page_size)
        found = state.rest_hits[start : start + limit]
        links: dict[str, str] = {
            "base": str(request.base_url).rstrip("/") + "/wiki",
            "context": "/wiki",
            "self": str(request.url),
        }
        if start + limit < len(state.rest_hits):
            following = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            links["next"] = (
                f"/rest/api/search?next=true&cursor={following}&limit={limit}"
                f"&start={start + limit}&cql=type%3Dspace"
            )
        document = {
            "results": found,
            "start": start,
            "limit": limit,
            "size": len(found),
            "totalSize": len(state.rest_hits),
            "cqlQuery": parameters.get("cql", ""),
            "searchDuration": 12,
            "_links": links,
        }
        return Response(json.dumps(document), media_type="application/json")

    async def display(request: Request) -> Response:
        state.paths.append(request.url.path)
        return page("<html><body><main><h1>A wiki page</h1><p>Content.</p></main></body></html>")

    return Starlette(
        routes=[
            Route("/wiki/dosearchsite.action", search),
            Route("/wiki/login.action", login),
            Route("/wiki/rest/api/search", rest_search),
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
