"""search_confluence: search the configured Confluence Data Center wiki through its search page.

The model supplies a phrase and optionally a space key — never a URL or CQL. Both end up inside a
CQL string literal (backslash escaped first, then the quote) and every parameter is
percent-encoded, so no query text can leave its string or add a parameter. Every hop, redirects
included, must stay below the base URL; a redirect to the login page is reported as a missing
sign-in. Wiki content is internal: the provider must be High-confidence, checked again before
each search, and the result raises the chat's requirement to High.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from policy import ConfidenceLevel
from policy._runtime_seam import (
    ARG_QUERY,
    ARG_SPACE_KEY,
    CONFLUENCE_MAX_QUERY_CHARACTERS,
    CONFLUENCE_MAX_SPACE_KEY_CHARACTERS,
    SearchConfluenceTool,
    normalize_confluence_base_url,
    search_confluence_settings,
)
from runtime.arguments import ArgumentError, echo, has_control_character
from runtime.execution import ToolExecutionBlocked, ToolExecutionContext, ToolExecutionResult
from runtime.messages import Source, SourceOrigin
from runtime.tools._common import (
    guard_of,
    page_content,
    retrieval_options,
    retrieve_page,
    sanitized_page,
)
from runtime.web.addresses import host_key, web_origin

if TYPE_CHECKING:
    from policy._runtime_seam import SearchConfluenceSettings
    from runtime.web.retrieval import RetrievalOptions

_CONTENT_LIMIT = 30_000
CONFIDENCE_REFUSAL = "Searching your company's wiki requires a High-confidence provider."
REDIRECT_REFUSAL = "Confluence redirected the search outside the configured wiki."
LOGIN_PAGE_ERROR = (
    "Confluence answered with its login page instead of search results, so the wiki was not "
    "searched. Check in a browser that you are signed in to the wiki and may search it."
)
EMPTY_RESULT_ERROR = "Confluence returned a search page without readable results."
_QUERY_REFUSAL = (
    f"Argument '{ARG_QUERY}' must contain 1 to {CONFLUENCE_MAX_QUERY_CHARACTERS} characters "
    "without control characters."
)


def read_query(arguments: Mapping[str, Any]) -> str:
    """The search words: one trimmed line of bounded length, refused in the model's terms."""
    value = arguments.get(ARG_QUERY)
    if value is None:
        raise ArgumentError(ARG_QUERY, f"Missing required argument '{ARG_QUERY}'.")
    if not isinstance(value, str):
        raise ArgumentError(ARG_QUERY, f"{_QUERY_REFUSAL} It was {echo(value)}.")
    query = value.strip()
    if not 1 <= len(query) <= CONFLUENCE_MAX_QUERY_CHARACTERS or has_control_character(query):
        raise ArgumentError(ARG_QUERY, _QUERY_REFUSAL)
    return query


def read_space_key(arguments: Mapping[str, Any]) -> str | None:
    """An optional space key; blank means the whole wiki."""
    value = arguments.get(ARG_SPACE_KEY)
    if value is None:
        return None
    refusal = (
        f"Argument '{ARG_SPACE_KEY}' must be a space key of at most "
        f"{CONFLUENCE_MAX_SPACE_KEY_CHARACTERS} characters without control characters, but was "
        f"{echo(value)}. Leave it out to search the whole wiki."
    )
    if not isinstance(value, str):
        raise ArgumentError(ARG_SPACE_KEY, refusal)
    key = value.strip()
    if len(key) > CONFLUENCE_MAX_SPACE_KEY_CHARACTERS or has_control_character(key):
        raise ArgumentError(ARG_SPACE_KEY, refusal)
    return key or None


def _cql_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def search_cql(query: str, space_key: str | None) -> str:
    """`siteSearch ~ "<q>"`, plus ` and space="<key>"`: what the wiki's own search box sends."""
    cql = f"siteSearch ~ {_cql_string(query)}"
    if space_key:
        cql += f" and space={_cql_string(space_key)}"
    return cql


def search_url(base_url: str, query: str, space_key: str | None) -> str:
    """The search page address; every parameter value is percent-encoded whole."""
    cql = quote(search_cql(query, space_key), safe="")
    return f"{base_url}dosearchsite.action?cql={cql}&queryString={quote(query, safe='')}"


def within_wiki(url: str, base_url: str) -> bool:
    """Same origin as the base (the address rules' `web_origin`), and a path below the base path.

    A URL or base the address rules cannot read is outside. Paths are compared decoded, and any
    `..` segment (also `%2e%2e`, after a backslash, or with a path parameter as in `..;x`, which
    Tomcat reads as `..`) is outside, since a server may resolve it above the base path.
    """
    origin = web_origin(url)
    if origin is None or origin != web_origin(base_url):
        return False
    base_path = unquote(urlsplit(normalize_confluence_base_url(base_url)).path)
    path = unquote(urlsplit(url.strip()).path)
    if any(segment.split(";", 1)[0] == ".." for segment in re.split(r"[/\\]", path)):
        return False
    return path.startswith(base_path)


def wiki_host(base_url: str) -> tuple[str, ...]:
    """The base URL's host as the allowlist writes it (the wiki may be on a private address);
    none when the address rules cannot read the base, so nothing private is let through."""
    origin = web_origin(base_url)
    host = None if origin is None else host_key(origin[1])
    return () if host is None else (host,)


def is_login_page(url: str) -> bool:
    """The address Confluence sends an unsigned visitor to, not a search for those words."""
    parts = urlsplit(url)
    if parts.path.lower().endswith("/login.action"):
        return True
    return any(name.lower() == "os_destination" for name, _ in parse_qsl(parts.query, True))


class SearchConfluenceExecutableTool(SearchConfluenceTool):
    """The policy-side search_confluence plus its execution."""

    sensitive_trace_argument_names: frozenset[str] = frozenset({ARG_QUERY})
    returns_untrusted_external_content = True

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        from runtime.web.truncate import truncate_markdown

        if context.provider.confidence < ConfidenceLevel.HIGH:
            raise ToolExecutionBlocked(CONFIDENCE_REFUSAL)
        query = read_query(arguments)
        space_key = read_space_key(arguments)
        settings = search_confluence_settings(self, context.settings)
        base = settings.base_url
        options = retrieval_options(
            context,
            timeout_seconds=settings.timeout_seconds,
            provider_confidence=context.provider.confidence,
            allowed_private_hosts=wiki_host(base),
            is_target_allowed=lambda hop: within_wiki(hop, base),
            os_sign_in=settings.os_sign_in,
        )
        if settings.uses_rest_api:
            return await _search_rest_api(context, settings, options, query, space_key)
        url = search_url(base, query, space_key)
        page = await retrieve_page(url, options, REDIRECT_REFUSAL)
        if is_login_page(page.final_url):
            raise RuntimeError(LOGIN_PAGE_ERROR)
        content = await page_content(page)
        if not content.markdown.strip():
            raise RuntimeError(EMPTY_RESULT_ERROR)
        markdown = truncate_markdown(content.markdown, _CONTENT_LIMIT)
        clean = await sanitized_page(context, content, markdown, page.final_url)
        return ToolExecutionResult(
            json_content={
                "search_url": page.final_url,
                "title": clean.title,
                "text_content": clean.markdown,
            },
            sources=(
                Source(f"Confluence search for “{query}”", page.final_url, SourceOrigin.TOOL),
            ),
            required_provider_confidence=ConfidenceLevel.HIGH,
            injection_filtered=True,
        )


async def _search_rest_api(
    context: ToolExecutionContext,
    settings: SearchConfluenceSettings,
    options: RetrievalOptions,
    query: str,
    space_key: str | None,
) -> ToolExecutionResult:
    """The REST API's hits as Markdown with links, every server-written field filtered, and each
    linked page as a source."""
    from runtime.tools.confluence_rest import Hit, hits_markdown, search_rest
    from runtime.web.retrieval import WebPageAccessBlocked, WebPageAccessBlockReason
    from runtime.web.sanitize import WebPageModelContent, sanitize_pages
    from runtime.web.truncate import truncate_markdown

    try:
        found = await search_rest(settings, search_cql(query, space_key), options)
    except WebPageAccessBlocked as error:
        if error.reason is WebPageAccessBlockReason.TARGET_NOT_ALLOWED:
            raise ToolExecutionBlocked(REDIRECT_REFUSAL) from error
        raise ToolExecutionBlocked(error.message) from error
    fields = [
        (
            WebPageModelContent(
                markdown=hit.excerpt,
                title=hit.title,
                description=hit.space,
                modified_time=hit.modified,
            ),
            hit.link or settings.base_url,
        )
        for hit in found.hits
    ]
    clean = await sanitize_pages(guard_of(context), fields)
    hits = [
        Hit(c.title, hit.link, c.markdown, c.description, c.modified_time)
        for hit, c in zip(found.hits, clean, strict=True)
    ]
    heading = f"Confluence search for “{query}”" + (f" in space {space_key}" if space_key else "")
    markdown = truncate_markdown(hits_markdown(heading, hits, found.total), _CONTENT_LIMIT)
    return ToolExecutionResult(
        json_content={"search_url": found.search_url, "title": heading, "text_content": markdown},
        sources=tuple(Source(h.title, h.link, SourceOrigin.TOOL) for h in hits if h.link),
        required_provider_confidence=ConfidenceLevel.HIGH,
        injection_filtered=True,
    )


def create_tool() -> SearchConfluenceExecutableTool:
    """The entry point `toolpolicy.tools: search_confluence`."""
    return SearchConfluenceExecutableTool()
