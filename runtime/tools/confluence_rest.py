"""search_confluence over Confluence's REST search API: Cloud always, Data Center with a token.

The CQL is the search page's own (`search_cql`): the model's phrase and space key stay inside CQL
string literals, never CQL of the model's. An answer's `_links.next` is read only for its `cursor`
and `start`; every request is built here from our CQL, so an answer cannot change what is searched
or where. The credential goes only to the configured wiki, checked by the same address rules as
every retrieval, and never after a redirect (a redirect is an error). A rate limit is waited out
when Confluence asks for a short pause that fits the tool's timeout, else reported.
"""

from __future__ import annotations

import asyncio
import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

if TYPE_CHECKING:
    from policy._runtime_seam import SearchConfluenceSettings
    from runtime.web.retrieval import ApiResponse, RetrievalOptions

_REST_SEARCH_PATH = "rest/api/search"
_PAGE_LIMIT = 25
"""Hits asked for per request; Confluence may send fewer."""
_MAX_REQUESTS = 10
"""Requests one search may make, rate-limit retries included."""
_RETRY_AFTER_LIMIT_SECONDS = 10
"""The longest pause a rate limit may ask for and still be waited out within one search."""
_TITLE_LIMIT = 255
_EXCERPT_LIMIT = 500

UNAUTHORIZED_CLOUD_ERROR = (
    "Confluence refused the account e-mail and API token (HTTP 401), so the wiki was not "
    "searched. The administrator has to check search_confluence.accountEmail and "
    "search_confluence.apiToken."
)
UNAUTHORIZED_TOKEN_ERROR = (
    "Confluence refused the personal access token (HTTP 401), so the wiki was not searched. The "
    "administrator has to check search_confluence.apiToken."
)
_FORBIDDEN_ERROR = (
    "Confluence refused the search (HTTP 403): the account may not search this wiki or use its "
    "REST API."
)
NOT_FOUND_ERROR = (
    "Confluence has no REST search API at the configured address (HTTP 404). The administrator "
    "has to check search_confluence.baseUrl (Confluence Cloud: https://<site>.atlassian.net/wiki/)."
)
REDIRECT_ERROR = (
    "Confluence redirected the REST API request; the token is sent to the configured address "
    "only, so the wiki was not searched. The administrator has to check search_confluence.baseUrl "
    "(Confluence Cloud: https://<site>.atlassian.net/wiki/)."
)
UNREADABLE_ERROR = "Confluence's REST API answered with something other than search results."
NO_HITS_TEXT = "Confluence found no pages for this search."


def rate_limit_error(wait: str) -> str:
    return (
        f"Confluence is limiting the rate of searches (HTTP 429) and asked to wait {wait}, "
        "longer than this search may take. Try again later."
    )


def _timeout_error(seconds: int) -> str:
    return f"Confluence did not answer the search within {seconds} seconds."


def _status_error(status: int) -> str:
    from http import HTTPStatus

    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    return f"Confluence's REST search failed: HTTP {status} ({reason})."


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result as the model may see it (before filtering)."""

    title: str
    link: str | None
    excerpt: str
    space: str
    modified: str


@dataclass(frozen=True, slots=True)
class _RestSearch:
    """What a REST search found: the first request's address, the hits and Confluence's total."""

    search_url: str
    hits: tuple[Hit, ...]
    total: int | None


def _rest_search_url(
    base_url: str, cql: str, limit: int, cursor: str | None = None, start: int | None = None
) -> str:
    """The search address; every parameter value is percent-encoded whole."""
    parameters = [("cql", cql), ("limit", str(limit))]
    if cursor:
        parameters.append(("cursor", cursor))
    if start is not None:
        parameters.append(("start", str(start)))
    return f"{base_url}{_REST_SEARCH_PATH}?{urlencode(parameters, quote_via=quote, safe='')}"


def authorization(settings: SearchConfluenceSettings) -> str:
    """Cloud: Basic with the account e-mail and API token; Data Center: Bearer with the token."""
    import httpx

    if not settings.is_cloud:
        return f"Bearer {settings.api_token}"
    request = httpx.Request("GET", "https://confluence.invalid/")
    auth = httpx.BasicAuth(settings.account_email, settings.api_token)
    return next(auth.sync_auth_flow(request)).headers["Authorization"]


_HIGHLIGHT = re.compile(r"@@@(?:end)?hl@@@")
_WHITESPACE = re.compile(r"\s+")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>#|])")


def _plain_text(value: object, limit: int) -> str:
    """A server-written text as one line: highlight markers and HTML entities gone, cut."""
    if not isinstance(value, str):
        return ""
    text = _WHITESPACE.sub(" ", html.unescape(_HIGHLIGHT.sub("", value))).strip()
    return text[:limit]


def _markdown_text(text: str) -> str:
    """Text that stays text in Markdown: it cannot open a link, code or a heading. The filter's
    removal marker is left as the filter wrote it."""
    from runtime.web.injection_filter import REMOVAL_MARKER

    parts = text.split(REMOVAL_MARKER)
    return REMOVAL_MARKER.join(_MARKDOWN_SPECIAL.sub(r"\\\1", part) for part in parts)


def _page_link(base_url: str, written: object) -> str | None:
    """A hit's address below the configured wiki (Confluence writes it relative to the wiki's
    base), or None when it is missing or would leave the wiki."""
    from runtime.tools.search_confluence import within_wiki

    if not isinstance(written, str) or not written.strip():
        return None
    written = written.strip()
    absolute = written if urlsplit(written).scheme else base_url + written.lstrip("/")
    link = quote(absolute, safe=":/?#@!$&'*+,;=%~")
    return link if within_wiki(link, base_url) else None


def _field(item: Mapping[str, Any], *path: str) -> object:
    value: object = item
    for name in path:
        value = value.get(name) if isinstance(value, Mapping) else None
    return value


def _read_hit(item: object, base_url: str) -> Hit | None:
    """A result of the search answer (`results[]`), or None for one without a title."""
    if not isinstance(item, Mapping):
        return None
    title = _plain_text(item.get("title") or _field(item, "content", "title"), _TITLE_LIMIT)
    if not title:
        return None
    return Hit(
        title=title,
        link=_page_link(base_url, item.get("url") or _field(item, "content", "_links", "webui")),
        excerpt=_plain_text(item.get("excerpt"), _EXCERPT_LIMIT),
        space=_plain_text(_field(item, "resultGlobalContainer", "title"), _TITLE_LIMIT),
        modified=_plain_text(item.get("lastModified"), 40),
    )


def _next_page(document: Mapping[str, Any]) -> tuple[str | None, int | None] | None:
    """The `cursor` and `start` of `_links.next`, or None when there is no further page."""
    written = _field(document, "_links", "next")
    if not isinstance(written, str) or not written:
        return None
    parameters = dict(parse_qsl(urlsplit(written).query))
    cursor = parameters.get("cursor") or None
    start_text = parameters.get("start", "")
    start = int(start_text) if start_text.isascii() and start_text.isdigit() else None
    if cursor is None and start is None:
        return None
    return cursor, start


def _retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: a whole number, or an HTTP date; None when unreadable."""
    from datetime import UTC, datetime

    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def _document(response: ApiResponse, settings: SearchConfluenceSettings) -> Mapping[str, Any]:
    status = response.status_code
    if 300 <= status < 400:
        raise RuntimeError(REDIRECT_ERROR)
    if status == 401:
        raise RuntimeError(
            UNAUTHORIZED_CLOUD_ERROR if settings.is_cloud else UNAUTHORIZED_TOKEN_ERROR
        )
    if status == 403:
        raise RuntimeError(_FORBIDDEN_ERROR)
    if status == 404:
        raise RuntimeError(NOT_FOUND_ERROR)
    if not 200 <= status < 300:
        raise RuntimeError(_status_error(status))
    try:
        document = json.loads(response.body)
    except ValueError as error:
        raise RuntimeError(UNREADABLE_ERROR) from error
    if not isinstance(document, Mapping) or not isinstance(document.get("results"), list):
        raise RuntimeError(UNREADABLE_ERROR)
    return document


class _Requests:
    """The requests of one search: a bounded count, rate limits waited out within the deadline."""

    def __init__(
        self, settings: SearchConfluenceSettings, options: RetrievalOptions, deadline: float
    ) -> None:
        self._settings = settings
        self._options = options
        self._deadline = deadline
        self._headers = {"Accept": "application/json", "Authorization": authorization(settings)}
        self.left = _MAX_REQUESTS

    async def document(self, url: str) -> Mapping[str, Any]:
        from runtime.web.retrieval import request_api

        loop = asyncio.get_running_loop()
        while True:
            self.left -= 1
            response = await request_api(url, self._options, self._headers)
            if response.status_code != 429:
                return _document(response, self._settings)
            written = response.headers.get("retry-after")
            wait = _retry_after_seconds(written)
            shown = "an unstated time" if wait is None else f"{math.ceil(wait)} seconds"
            room = self._deadline - loop.time()
            if wait is None or wait > min(_RETRY_AFTER_LIMIT_SECONDS, room) or self.left <= 0:
                raise RuntimeError(rate_limit_error(shown))
            await asyncio.sleep(wait)


async def search_rest(
    settings: SearchConfluenceSettings, cql: str, options: RetrievalOptions
) -> _RestSearch:
    """Up to `settings.max_results` hits, page after page; raises RuntimeError with a message for
    the model when Confluence refuses or fails."""
    loop = asyncio.get_running_loop()
    base = settings.base_url
    requests = _Requests(settings, options, loop.time() + settings.timeout_seconds)
    hits: list[Hit] = []
    seen: set[tuple[str | None, int | None]] = set()
    page: tuple[str | None, int | None] = (None, None)
    first_url = ""
    total: int | None = None
    try:
        async with asyncio.timeout(settings.timeout_seconds):
            while requests.left > 0 and len(hits) < settings.max_results:
                limit = min(_PAGE_LIMIT, settings.max_results - len(hits))
                url = _rest_search_url(base, cql, limit, *page)
                first_url = first_url or url
                document = await requests.document(url)
                if total is None and isinstance(document.get("totalSize"), int):
                    total = document["totalSize"]
                hits.extend(h for h in (_read_hit(i, base) for i in document["results"]) if h)
                following = _next_page(document)
                if following is None or following in seen or not document["results"]:
                    break
                seen.add(following)
                page = following
    except TimeoutError as error:
        raise RuntimeError(_timeout_error(settings.timeout_seconds)) from error
    return _RestSearch(first_url, tuple(hits[: settings.max_results]), total)


def hits_markdown(heading: str, hits: Sequence[Hit], total: int | None) -> str:
    """The hits as a numbered Markdown list with links to the pages."""
    if not hits:
        return f"{heading}\n\n{NO_HITS_TEXT}"
    count = f"{len(hits)} hit" + ("" if len(hits) == 1 else "s")
    if total and total > len(hits):
        count = f"{len(hits)} of {total} hits"
    lines = [f"{heading}: {count}.", ""]
    for number, hit in enumerate(hits, 1):
        title = _markdown_text(hit.title)
        lines.append(f"{number}. [{title}]({hit.link})" if hit.link else f"{number}. {title}")
        about = " · ".join(
            part
            for part in (
                f"Space: {_markdown_text(hit.space)}" if hit.space else "",
                f"modified {_markdown_text(hit.modified)}" if hit.modified else "",
            )
            if part
        )
        if about:
            lines.append(f"   {about}")
        if hit.excerpt:
            lines.append(f"   {_markdown_text(hit.excerpt)}")
    return "\n".join(lines)
