"""Tavily: a hosted search API for AI agents, asked with `POST /search` and a Bearer key.

Tavily filters by language, by time and (at the basic and advanced depths) for explicit content,
so no filter of a search is lost. It answers one ranked list per search and has no next page, so
its last page is 1. The key travels only in the Authorization header; nothing Tavily could
generate beyond the hits (an answer, raw page content, images) is asked for, because it would
bypass the tool's own page reader and its prompt-injection guard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from policy._runtime_seam import (
    ANY_LANGUAGE,
    TAVILY_DEFAULT_SEARCH_DEPTH,
    TAVILY_SEARCH_DEPTHS,
    WS_TAVILY_API_KEY,
    SafeSearch,
    WebSearchBackend,
)
from runtime.tools.web_search.backends import (
    ApiKeyBackend,
    BackendAnswer,
    SearchBackendError,
    SearchHit,
    SearchRequest,
    json_object,
    ranked_hits,
    score_of,
    search_hit,
    text_field,
)

TAVILY_SEARCH_URL = "https://api.tavily.com/search"
_TAVILY_MAX_PAGE = 1
_TAVILY_MAX_RESULTS = 20

_LABEL = "Tavily"
_STATUS_HINTS: dict[int, str] = {
    432: "The Tavily plan's monthly requests, or this key's own limit, are used up. Searching "
    "works again next month or with a larger plan.",
    433: "The spending limit of the Tavily pay-as-you-go account is reached; raising it in the "
    "Tavily account allows searching again.",
}


def tavily_language(language: str) -> str | None:
    """The ISO 639-1 code Tavily takes: the primary subtag of a tag (de-AT → de), else None."""
    primary = language.strip().split("-", 1)[0].lower()
    if len(primary) == 2 and primary.isascii() and primary.isalpha():
        return primary
    return None


@dataclass(frozen=True, slots=True)
class TavilyBackend(ApiKeyBackend):
    """Tavily's search API."""

    label: ClassVar[str] = _LABEL
    key_setting: ClassVar[str] = f"web_search.{WS_TAVILY_API_KEY}"
    hints: ClassVar[Mapping[int, str]] = _STATUS_HINTS

    endpoint: str = TAVILY_SEARCH_URL
    search_depth: str = TAVILY_DEFAULT_SEARCH_DEPTH

    @property
    def kind(self) -> WebSearchBackend:
        return WebSearchBackend.TAVILY

    @property
    def max_page(self) -> int:
        return _TAVILY_MAX_PAGE

    @property
    def filters_safe_search(self) -> bool:
        return True

    def body(self, request: SearchRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The JSON body for one search, and notes on what could not be asked as requested.

        The depth is always sent, so a change of Tavily's default cannot change what a search
        costs or whether safe search holds (Tavily's faster depths ignore it).
        """
        depth = self.search_depth.strip().lower()
        body: dict[str, Any] = {
            "query": request.query,
            "search_depth": depth if depth in TAVILY_SEARCH_DEPTHS else TAVILY_DEFAULT_SEARCH_DEPTH,
            "topic": "general",
            "max_results": max(1, min(request.limit, _TAVILY_MAX_RESULTS)),
            "include_answer": False,
            "include_raw_content": False,
            "include_images": False,
        }
        notes: list[str] = []
        if request.time_range:
            body["time_range"] = request.time_range
        wanted = (request.language or ANY_LANGUAGE).strip()
        if wanted.lower() != ANY_LANGUAGE:
            code = tavily_language(wanted)
            if code is None:
                notes.append(
                    f"Tavily could not read '{wanted}' as a language, so it searched without "
                    "restricting the language of the results."
                )
            else:
                # Without the filter Tavily takes the language as a mere preference.
                body["language"] = code
                body["filter_by_language"] = True
        if request.safe_search is not None:
            body["safe_search"] = request.safe_search is not SafeSearch.OFF
        return body, tuple(notes)

    async def search(self, request: SearchRequest) -> BackendAnswer:
        if request.page > _TAVILY_MAX_PAGE:
            raise SearchBackendError("Tavily answers one page of results and has no next page.")
        body, notes = self.body(request)
        answer = await self.post(body)
        return BackendAnswer(_tavily_hits(answer), notes)


def _tavily_hits(body: bytes) -> tuple[SearchHit, ...]:
    """Tavily's `results`, highest score first (Tavily ranks by it; ties keep its order)."""
    results = json_object(body, _LABEL).get("results")
    if not isinstance(results, list):
        raise SearchBackendError("Tavily answered without a list of results.")
    return ranked_hits(
        [
            (
                score_of(item.get("score")),
                search_hit(item, "content", "published_date"),
            )
            for item in results
            if isinstance(item, dict) and text_field(item.get("url"))
        ]
    )
