"""web_search: ask the configured search services, read the top pages, hand the model both.

Pages are read through the public-only retrieval (never a private, loopback or link-local
target), at most four at a time, each within its own timeout and all within an overall one. The
page content shares one character budget in which every page keeps a minimum; everything that
reaches the model is filtered in one guard batch after truncation. Only results whose page
content reached the model become sources — a snippet is no source.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from policy._runtime_seam import (
    ANY_LANGUAGE,
    ARG_LANGUAGE,
    ARG_LIMIT,
    ARG_PAGE,
    ARG_QUERY,
    ARG_TIME_RANGE,
    TIME_RANGES,
    WEB_SEARCH_MAX_LIMIT,
    WebSearchBackend,
    WebSearchSettings,
    WebSearchTool,
    web_search_settings,
)
from runtime.arguments import ArgumentError, ArgumentReader
from runtime.execution import ToolExecutionContext, ToolExecutionResult
from runtime.messages import Source, SourceOrigin
from runtime.tools._common import (
    SMALL_PAGE_CHARACTERS,
    PageContent,
    guard_of,
    page_content,
    retrieval_options,
)
from runtime.tools.web_search.backends import (
    Candidate,
    SearchBackend,
    SearchRequest,
    SearxngBackend,
    dispatch,
    eligible_backends,
)
from runtime.tools.web_search.staan import STAAN_SEARCH_URL, StaanBackend
from runtime.tools.web_search.tavily import TAVILY_SEARCH_URL, TavilyBackend

if TYPE_CHECKING:
    from runtime.web.retrieval import RetrievedWebPage
    from runtime.web.sanitize import WebPageModelContent

_MAX_PARALLEL_PAGES = 4
_SNIPPET_MAX_CHARACTERS = 1000
_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8}){0,3}", re.ASCII)


@dataclass(frozen=True, slots=True)
class SearchEndpoints:
    """Where Tavily and Staan are asked: web_search's own services object (an app passes it as
    `ToolServices(tool_services=[SearchEndpoints(...)])`). Code only: neither settings nor model
    arguments reach it, so nothing a model writes can send an API key elsewhere."""

    tavily: str = TAVILY_SEARCH_URL
    staan: str = STAAN_SEARCH_URL


class _PageOutcome(StrEnum):
    """What became of reading one result page; it decides the page's note and the result's flags."""

    RETRIEVED = "RETRIEVED"
    NO_READABLE_CONTENT = "NO_READABLE_CONTENT"
    BLOCKED = "BLOCKED"
    PAGE_TIMED_OUT = "PAGE_TIMED_OUT"
    RETRIEVAL_TIMED_OUT = "RETRIEVAL_TIMED_OUT"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class _WebSearchArguments:
    """The model's arguments, checked; None means left out (the settings decide)."""

    query: str
    language: str | None
    time_range: str | None
    page: int | None
    limit: int | None


def read_arguments(arguments: Mapping[str, Any]) -> _WebSearchArguments:
    """The model's arguments, each refused with a message it can correct itself from."""
    reader = ArgumentReader(arguments)
    query = reader.read_string(ARG_QUERY)
    language = reader.optional_line(ARG_LANGUAGE, 35, "to use the configured default language")
    if language is not None and language != ANY_LANGUAGE and not _LANGUAGE_TAG.fullmatch(language):
        raise ArgumentError(
            ARG_LANGUAGE,
            f"Argument '{ARG_LANGUAGE}' must be an IETF language tag such as de-DE or en-US, or "
            f"'{ANY_LANGUAGE}', but was \"{language[:40]}\". Leave it out to use the configured "
            "default language.",
        )
    time_range = reader.optional_choice(ARG_TIME_RANGE, TIME_RANGES, "to search any time")
    page = reader.optional_positive_int(ARG_PAGE, "to get the first page")
    limit = reader.optional_positive_int(ARG_LIMIT, "to get the configured number of results")
    if limit is not None and limit > WEB_SEARCH_MAX_LIMIT:
        raise ArgumentError(
            ARG_LIMIT,
            f"Argument '{ARG_LIMIT}' must be at most {WEB_SEARCH_MAX_LIMIT}, but was {limit}. "
            "Leave it out to get the configured number of results.",
        )
    return _WebSearchArguments(query, language, time_range, page, limit)


def _configured_backends(
    options: WebSearchSettings, endpoints: SearchEndpoints = SearchEndpoints()
) -> list[SearchBackend]:
    """A backend for every service with what it needs (an address or an API key)."""
    backends: list[SearchBackend] = []
    for kind in options.backends:
        if kind is WebSearchBackend.SEARXNG:
            backends.append(SearxngBackend(options.searxng_base_url, options.search_timeout))
        elif kind is WebSearchBackend.TAVILY:
            backends.append(
                TavilyBackend(
                    options.tavily_api_key,
                    options.search_timeout,
                    search_depth=options.tavily_search_depth,
                    endpoint=endpoints.tavily,
                )
            )
        else:
            backends.append(
                StaanBackend(
                    options.staan_api_key,
                    options.search_timeout,
                    market=options.staan_market,
                    endpoint=endpoints.staan,
                )
            )
    return backends


# --- reading the result pages -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Read:
    outcome: _PageOutcome
    reason: str = ""
    page: RetrievedWebPage | None = None
    content: PageContent | None = None


async def _read_page(
    candidate: Candidate,
    context: ToolExecutionContext,
    options: WebSearchSettings,
    slots: asyncio.Semaphore,
) -> _Read:
    from runtime.web.retrieval import (
        WebPageAccessBlocked,
        WebRetrievalError,
        WebRetrievalTimedOut,
        retrieve,
    )

    retrieval = retrieval_options(
        context,
        timeout_seconds=options.page_timeout,
        public_targets_only=True,
        provider_confidence=context.provider.confidence,
    )
    async with slots:
        try:
            page = await retrieve(candidate.url, retrieval)
        except WebPageAccessBlocked as error:
            return _Read(_PageOutcome.BLOCKED, f"The page may not be read: {error.message}")
        except WebRetrievalTimedOut:
            return _Read(
                _PageOutcome.PAGE_TIMED_OUT,
                f"The page did not load within {options.page_timeout} seconds.",
            )
        except WebRetrievalError as error:
            return _Read(_PageOutcome.FAILED, error.message)
        content = await page_content(page)
    if not content.markdown.strip():
        return _Read(
            _PageOutcome.NO_READABLE_CONTENT,
            "No readable static content was extracted; the page may need JavaScript or a sign-in.",
            page=page,
        )
    return _Read(_PageOutcome.RETRIEVED, page=page, content=content)


async def _read_pages(
    candidates: Sequence[Candidate], context: ToolExecutionContext, options: WebSearchSettings
) -> list[_Read]:
    """Every candidate's page, four at a time; what the overall timeout cuts off says so."""
    slots = asyncio.Semaphore(_MAX_PARALLEL_PAGES)
    tasks = [
        asyncio.create_task(_read_page(candidate, context, options, slots))
        for candidate in candidates
    ]
    if not tasks:
        return []
    _done, pending = await asyncio.wait(tasks, timeout=options.all_pages_timeout)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    cut_off = _Read(
        _PageOutcome.RETRIEVAL_TIMED_OUT,
        f"Reading all result pages took longer than {options.all_pages_timeout} seconds, so "
        "this page was not read.",
    )
    reads: list[_Read] = []
    for task in tasks:
        if task.cancelled() or task in pending:
            reads.append(cut_off)
        elif task.exception() is not None:
            reads.append(_Read(_PageOutcome.FAILED, "The page could not be read."))
        else:
            reads.append(task.result())
    return reads


# --- building the result ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Entry:
    candidate: Candidate
    read: _Read
    content: str = ""
    truncated: bool = False


def _snippet(text: str) -> str:
    text = text.strip()
    if len(text) <= _SNIPPET_MAX_CHARACTERS:
        return text
    return text[: _SNIPPET_MAX_CHARACTERS - 1] + "…"


def _entries(candidates: Sequence[Candidate], reads: Sequence[_Read]) -> list[_Entry]:
    """One entry per candidate worth showing: duplicates of a final address merge into the first."""
    from runtime.sources import source_key

    entries: list[_Entry] = []
    seen_final: set[str] = set()
    for candidate, read in zip(candidates, reads, strict=True):
        if read.outcome is _PageOutcome.RETRIEVED and read.page is not None:
            key = source_key(read.page.final_url)
            if key in seen_final:
                continue
            seen_final.add(key)
        elif not (candidate.hit.title or candidate.hit.snippet):
            continue
        entries.append(_Entry(candidate, read))
    return entries


def _apply_budget(entries: list[_Entry], options: WebSearchSettings) -> list[_Entry]:
    """allowed_i = remaining − minimum × (pages after i): every page keeps its minimum."""
    from runtime.web.truncate import truncate_markdown

    with_content = [i for i, e in enumerate(entries) if e.read.content is not None]
    remaining = options.max_total_characters
    budgeted = list(entries)
    for position, index in enumerate(with_content):
        entry = entries[index]
        assert entry.read.content is not None
        markdown = entry.read.content.markdown
        later = len(with_content) - position - 1
        allowed = max(remaining - options.min_characters_per_result * later, 0)
        cut = truncate_markdown(markdown, allowed)
        remaining -= len(cut)
        budgeted[index] = _Entry(entry.candidate, entry.read, cut, truncated=cut != markdown)
    return budgeted


def _model_content(entry: _Entry) -> tuple[WebPageModelContent, str]:
    from runtime.web.sanitize import WebPageModelContent

    hit = entry.candidate.hit
    read = entry.read
    if read.content is None or read.page is None:
        return (
            WebPageModelContent(
                markdown=_snippet(hit.snippet), title=hit.title, published_time=hit.published_date
            ),
            entry.candidate.url,
        )
    extracted = read.content.extracted
    return (
        WebPageModelContent(
            markdown=entry.content,
            title=(extracted.title if extracted else "") or hit.title,
            description=extracted.description if extracted else "",
            authors=extracted.authors if extracted else (),
            published_time=hit.published_date,
        ),
        read.page.final_url,
    )


def _status(entry: _Entry) -> str:
    content = entry.read.content
    if content is None:
        return "snippet only"
    small = content.is_html and len(content.markdown) < SMALL_PAGE_CHARACTERS
    return "partial or truncated" if entry.truncated or small else "complete"


def _result_json(entry: _Entry, clean: WebPageModelContent) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "rank": entry.candidate.rank,
        "backends": list(entry.candidate.backends),
    }
    if entry.read.page is not None and entry.read.content is not None:
        metadata["final_url"] = entry.read.page.final_url
    metadata["published_date"] = clean.published_time
    page: dict[str, Any] = {"status": _status(entry)}
    if entry.read.content is None and entry.read.reason:
        page["reason"] = entry.read.reason
    page.update(
        {
            "title": clean.title,
            "description": clean.description,
            "authors": list(clean.authors),
            "content": clean.markdown,
        }
    )
    return {"requested_url": entry.candidate.url, "search_metadata": metadata, "page": page}


def _diagnostic(candidate_count: int, results: Sequence[dict[str, Any]]) -> str | None:
    if candidate_count == 0:
        return (
            "The search found nothing for this query. Try other or fewer words, another "
            "language, or no time range."
        )
    if not results:
        return "The search found hits, but none had a readable page, a title or a snippet."
    if all(r["page"]["status"] == "snippet only" for r in results):
        return (
            "None of the result pages could be read, so only the search service's titles and "
            "snippets are given. They are short and may be outdated; do not rely on them alone."
        )
    return None


class WebSearchExecutableTool(WebSearchTool):
    """The policy-side web_search plus its execution."""

    sensitive_trace_argument_names: frozenset[str] = frozenset()
    returns_untrusted_external_content = True

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        from runtime.sources import merge_sources
        from runtime.web.guard import GuardText, tool_content
        from runtime.web.sanitize import sanitize_pages_and_texts

        args = read_arguments(arguments)
        options = web_search_settings(self, context.settings)
        endpoints = context.services.of(SearchEndpoints) or SearchEndpoints()
        backends = _configured_backends(options, endpoints)
        request = SearchRequest(
            query=args.query,
            language=args.language or options.default_language,
            time_range=args.time_range,
            page=args.page or 1,
            limit=args.limit or options.max_results,
            safe_search=options.safe_search,
        )
        found = await dispatch(
            backends, options.strategy, options.primary, request, options.search_timeout
        )
        reads = await _read_pages(found.candidates, context, options)
        entries = _apply_budget(_entries(found.candidates, reads), options)
        pairs = [_model_content(entry) for entry in entries]
        # A search service's notes quote what its engines said: outside text like the hits.
        note_texts = [GuardText(note, tool_content(self.definition.id)) for note in found.notes]
        cleaned, clean_notes = await sanitize_pages_and_texts(guard_of(context), pairs, note_texts)
        results = [
            _result_json(entry, clean) for entry, clean in zip(entries, cleaned, strict=True)
        ]
        sources = merge_sources(
            [],
            (
                Source(clean.title or final_url, final_url, SourceOrigin.TOOL)
                for entry, clean, (_, final_url) in zip(entries, cleaned, pairs, strict=True)
                if entry.read.content is not None and clean.markdown.strip()
            ),
        )
        # The next page is asked of the same backends, so only theirs count (SPECIFIC, safe search).
        eligible = eligible_backends(backends, options.strategy, options.primary, request, [])
        last_page = max(b.max_page for b in eligible)
        document: dict[str, Any] = {
            "query": args.query,
            "page": request.page,
            "has_more": bool(found.candidates) and request.page < last_page,
            "backends": list(found.backends),
            "candidate_count": len(found.candidates),
            "result_count": len(results),
            "retrieved_page_count": sum(1 for e in entries if e.read.content is not None),
            "retrieval_timed_out": any(
                r.outcome is _PageOutcome.RETRIEVAL_TIMED_OUT for r in reads
            ),
            "results": results,
        }
        if clean_notes:
            document["notes"] = clean_notes
        diagnostic = _diagnostic(len(found.candidates), results)
        if diagnostic:
            document["diagnostic"] = diagnostic
        return ToolExecutionResult(
            json_content=document,
            sources=tuple(sources),
            brought=None if results else (),
            injection_filtered=True,
        )


def create_tool() -> WebSearchExecutableTool:
    """The entry point `toolpolicy.tools: web_search`."""
    return WebSearchExecutableTool()
