"""Staan: the European search index of Ecosia and Qwant, asked with `POST /v2/search/web`.

Staan searches one market at a time (this tool offers de-de, en-us and fr-fr, as AI Studio does),
serves ten hits per page up to an offset of 30 (four pages), and filters neither by time nor for
explicit content; the dispatcher therefore leaves Staan out while safe search is on, and a time
range is reported as not applied. The key travels only in the Authorization header.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from policy._runtime_seam import (
    ANY_LANGUAGE,
    STAAN_DEFAULT_MARKET,
    STAAN_MARKETS,
    WS_STAAN_API_KEY,
    WebSearchBackend,
)
from runtime.tools.web_search.backends import (
    ApiKeyBackend,
    BackendAnswer,
    SearchBackendError,
    SearchHit,
    SearchRequest,
    json_object,
    search_hit,
    text_field,
)

STAAN_SEARCH_URL = "https://api.staan.ai/v2/search/web"
_STAAN_RESULTS_PER_PAGE = 10
_STAAN_MAX_PAGE = 4
_STAAN_MAX_QUERY_CHARACTERS = 400

_LABEL = "Staan"
_MARKET_BY_LANGUAGE = {"de": "de-de", "en": "en-us", "fr": "fr-fr"}
_ALTERED_QUERY_SHOWN = 400
_STATUS_HINTS: dict[int, str] = {
    402: "The Staan account has no searches left: the free requests are used up and paid usage "
    "has to be set up to continue.",
}


def staan_market(language: str) -> str | None:
    """The market for a language tag by its primary subtag (de-AT → de-de), or None."""
    return _MARKET_BY_LANGUAGE.get(language.strip().split("-", 1)[0].lower())


@dataclass(frozen=True, slots=True)
class StaanBackend(ApiKeyBackend):
    """Staan's web search API."""

    label: ClassVar[str] = _LABEL
    key_setting: ClassVar[str] = f"web_search.{WS_STAAN_API_KEY}"
    hints: ClassVar[Mapping[int, str]] = _STATUS_HINTS

    endpoint: str = STAAN_SEARCH_URL
    market: str = STAAN_DEFAULT_MARKET

    @property
    def kind(self) -> WebSearchBackend:
        return WebSearchBackend.STAAN

    @property
    def max_page(self) -> int:
        return _STAAN_MAX_PAGE

    @property
    def filters_safe_search(self) -> bool:
        return False

    def body(self, request: SearchRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The JSON body for one search, and notes on what could not be asked as requested.

        No result count is sent: Staan fixes it at ten and refuses any other value.
        """
        configured = self.market.strip().lower()
        fallback = configured if configured in STAAN_MARKETS else STAAN_DEFAULT_MARKET
        notes: list[str] = []
        wanted = (request.language or ANY_LANGUAGE).strip()
        if wanted.lower() == ANY_LANGUAGE:
            market = fallback
            notes.append(
                f"Staan searches one market at a time, not all languages, so it searched the "
                f"'{market}' market."
            )
        else:
            market = staan_market(wanted) or fallback
            if staan_market(wanted) is None:
                notes.append(
                    f"Staan has no market for the language '{wanted}', so it searched the "
                    f"'{market}' market; the results may be in another language."
                )
        if request.time_range:
            notes.append(
                "Staan cannot restrict a search to a period, so these results are not limited "
                f"to the last {request.time_range}."
            )
        body: dict[str, Any] = {"q": request.query, "market": market}
        if request.page > 1:
            body["offset"] = (request.page - 1) * _STAAN_RESULTS_PER_PAGE
        return body, tuple(notes)

    async def search(self, request: SearchRequest) -> BackendAnswer:
        if len(request.query) > _STAAN_MAX_QUERY_CHARACTERS:
            # Shortening it here would search for something else than was asked.
            raise SearchBackendError(
                f"Staan accepts a search query of at most {_STAAN_MAX_QUERY_CHARACTERS} "
                f"characters, but this one has {len(request.query)}. Search again with a "
                "shorter query."
            )
        if request.page > _STAAN_MAX_PAGE:
            raise SearchBackendError(
                f"Staan serves at most {_STAAN_MAX_PAGE} pages of results, not page {request.page}."
            )
        body, notes = self.body(request)
        answer = await self.post(body)
        hits, altered = _staan_answer(answer)
        if altered and altered != request.query:
            notes = (*notes, f"Staan corrected the query and searched for '{altered}' instead.")
        return BackendAnswer(hits, notes)


def _staan_answer(body: bytes) -> tuple[tuple[SearchHit, ...], str]:
    """Staan's `web.results` in its order, and the query it ran instead of ours (if any)."""
    document = json_object(body, _LABEL)
    web = document.get("web", {})
    results = web.get("results", []) if isinstance(web, dict) else None
    if not isinstance(results, list):
        raise SearchBackendError("Staan answered without a list of results.")
    hits = tuple(
        search_hit(item, "snippet", "published_date")
        for item in results
        if isinstance(item, dict) and text_field(item.get("url"))
    )
    query = document.get("query")
    altered = text_field(query.get("altered_query")) if isinstance(query, dict) else ""
    return hits, altered[:_ALTERED_QUERY_SHOWN]
