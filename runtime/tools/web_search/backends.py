"""Search services behind one small interface, and the strategies that ask them.

A backend turns a `SearchRequest` into ranked hits. The dispatcher decides which backends to ask
(FAILOVER: the preferred one, then the others until one has hits; PARALLEL: all at once;
SPECIFIC: only the preferred one), merges their hits round-robin by rank, and reports what went
wrong as notes the model can read. SearXNG lives here; Tavily (`tavily`) and Staan
(`staan`) implement `SearchBackend` in their own modules on `ApiKeyBackend`, which posts a
search with its API key.

The backends are services an administrator configured, so they are reached directly (not through
the public-only page retrieval); error texts never show more of their address than its redacted
form, and never an API key.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from policy import ToolPolicyError
from policy._runtime_seam import SafeSearch, WebSearchBackend, WebSearchBackendStrategy
from runtime.arguments import ArgumentError
from runtime.web.addresses import redact_url_for_log, request_key

if TYPE_CHECKING:
    import httpx

_SEARXNG_MAX_PAGE = 20
_MAX_RESPONSE_BYTES = 1024 * 1024
"""Every search service's answer is dropped beyond this many decoded bytes."""
SEARXNG_MAX_RESPONSE_BYTES = _MAX_RESPONSE_BYTES

_BACKEND_LABELS: dict[WebSearchBackend, str] = {
    WebSearchBackend.SEARXNG: "SearXNG",
    WebSearchBackend.STAAN: "Staan",
    WebSearchBackend.TAVILY: "Tavily",
}


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search as every backend gets it; `language` is an IETF tag or "all"."""

    query: str
    language: str = "all"
    time_range: str | None = None
    page: int = 1
    limit: int = 5
    safe_search: SafeSearch | None = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result as the search service ranked it; every text is untrusted."""

    url: str
    title: str = ""
    snippet: str = ""
    published_date: str = ""


@dataclass(frozen=True, slots=True)
class BackendAnswer:
    """One backend's hits in its order, and notes for the model (e.g. engines that failed)."""

    hits: tuple[SearchHit, ...]
    notes: tuple[str, ...] = ()


class SearchBackendError(ToolPolicyError):
    """A backend could not answer; the message is safe to show the model and the log."""

    code = "search-backend"


class SearchBackend(Protocol):
    """What the dispatcher needs of a search service."""

    @property
    def kind(self) -> WebSearchBackend: ...

    @property
    def max_page(self) -> int: ...

    @property
    def filters_safe_search(self) -> bool: ...

    async def search(self, request: SearchRequest) -> BackendAnswer: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A merged hit: the address to read (fragment removed), its first hit and who found it."""

    url: str
    hit: SearchHit
    rank: int
    backends: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _DispatchResult:
    """The merged candidates of all backends asked, with who answered and their notes."""

    candidates: tuple[Candidate, ...]
    backends: tuple[str, ...]
    """Labels of the backends that answered, in the order they were asked."""
    notes: tuple[str, ...] = ()


# --- SearXNG ------------------------------------------------------------------------------------

_SAFE_SEARCH_LEVELS = {SafeSearch.OFF: "0", SafeSearch.MODERATE: "1", SafeSearch.STRICT: "2"}


def searxng_search_endpoint(base_url: str) -> str:
    """`<base>/search`, whether or not the setting already ends in `/search`."""
    base = base_url.strip().rstrip("/")
    base = base.removesuffix("/search").rstrip("/")
    return f"{base}/search"


@dataclass(frozen=True, slots=True)
class SearxngBackend:
    """A SearXNG instance with the JSON output format enabled (`search.formats: [html, json]`)."""

    base_url: str
    timeout_seconds: float
    transport: httpx.AsyncBaseTransport | None = field(default=None, repr=False)

    @property
    def kind(self) -> WebSearchBackend:
        return WebSearchBackend.SEARXNG

    @property
    def max_page(self) -> int:
        return _SEARXNG_MAX_PAGE

    @property
    def filters_safe_search(self) -> bool:
        return True

    def parameters(self, request: SearchRequest) -> dict[str, str]:
        params = {
            "q": request.query,
            "format": "json",
            "language": request.language or "all",
            "pageno": str(request.page),
        }
        if request.time_range:
            params["time_range"] = request.time_range
        if request.safe_search is not None:
            params["safesearch"] = _SAFE_SEARCH_LEVELS[request.safe_search]
        return params

    async def search(self, request: SearchRequest) -> BackendAnswer:
        import httpx

        endpoint = searxng_search_endpoint(self.base_url)
        shown = redact_url_for_log(endpoint)
        url = httpx.URL(endpoint).copy_merge_params(self.parameters(request))
        outgoing = outgoing_request("GET", url, self.timeout_seconds)
        if url.userinfo:
            outgoing = next(httpx.BasicAuth(url.username, url.password).sync_auth_flow(outgoing))
        body = await exchange(
            outgoing,
            label="SearXNG",
            shown=shown,
            timeout_seconds=self.timeout_seconds,
            transport=self.transport,
            check_status=lambda response: _check_status(response, shown),
        )
        return _searxng_answer(body)


# --- what every backend's exchange shares -------------------------------------------------------


def outgoing_request(
    method: str,
    url: httpx.URL | str,
    timeout_seconds: float,
    *,
    headers: Mapping[str, str] | None = None,
    json_body: Mapping[str, Any] | None = None,
) -> httpx.Request:
    """A request that asks for JSON in the codings `_read_capped` can decode in small pieces."""
    import httpx

    return httpx.Request(
        method,
        url,
        headers={
            "Accept": "application/json",
            "Accept-Encoding": "gzip, deflate, br",
            **(headers or {}),
        },
        json=json_body,
        extensions={"timeout": httpx.Timeout(timeout_seconds).as_dict()},
    )


async def exchange(
    outgoing: httpx.Request,
    *,
    label: str,
    shown: str,
    timeout_seconds: float,
    transport: httpx.AsyncBaseTransport | None,
    check_status: Callable[[httpx.Response], None],
) -> bytes:
    """Send one request and read the answer under `_MAX_RESPONSE_BYTES`.

    Straight to a transport: httpx's client logs every URL in full (credentials, the query), and
    the request line is all a transport's debug log shows, never a header or the body.
    """
    import httpx

    transport = transport or httpx.AsyncHTTPTransport(trust_env=False)
    try:
        async with transport:
            response = await transport.handle_async_request(outgoing)
            try:
                check_status(response)
                return await _read_capped(response, _MAX_RESPONSE_BYTES, label)
            finally:
                await response.aclose()
    except httpx.TimeoutException as error:
        raise SearchBackendError(
            f"{label} at '{shown}' did not answer within {timeout_seconds:g} seconds."
        ) from error
    except httpx.HTTPError as error:
        raise SearchBackendError(
            f"{label} at '{shown}' could not be reached: {type(error).__name__}."
        ) from error


@dataclass(frozen=True, slots=True)
class ApiKeyBackend:
    """A search service asked with a JSON POST and a Bearer API key (Tavily, Staan).

    The key never shows in a repr; `endpoint` and `transport` are for code (tests, a proxy),
    never data. A subclass names its `label`, the `key_setting` where the key is configured (so
    a key that cannot be sent or is refused is traced there), its own status `hints` (402, 432,
    ...) and its service's address as the default `endpoint`.
    """

    label: ClassVar[str]
    key_setting: ClassVar[str]
    hints: ClassVar[Mapping[int, str]]

    api_key: str = field(repr=False)
    timeout_seconds: float
    endpoint: str
    transport: httpx.AsyncBaseTransport | None = field(default=None, repr=False)

    async def post(self, body: Mapping[str, Any]) -> bytes:
        """POST one JSON search and read the JSON answer under `_MAX_RESPONSE_BYTES`."""
        headers = _bearer_header(self.api_key, self.label, self.key_setting)
        outgoing = outgoing_request(
            "POST", self.endpoint, self.timeout_seconds, headers=headers, json_body=body
        )
        return await exchange(
            outgoing,
            label=self.label,
            shown=redact_url_for_log(self.endpoint),
            timeout_seconds=self.timeout_seconds,
            transport=self.transport,
            check_status=lambda response: _check_api_status(
                response, self.label, self.key_setting, self.hints
            ),
        )


def search_hit(item: Mapping[str, Any], snippet_key: str, date_key: str) -> SearchHit:
    """One service's result object as a hit; the services differ only in two field names."""
    return SearchHit(
        url=text_field(item.get("url")),
        title=text_field(item.get("title")),
        snippet=text_field(item.get(snippet_key)),
        published_date=text_field(item.get(date_key)),
    )


def _require_json(response: httpx.Response, label: str, hint: str = "") -> None:
    """Refuse an answer that does not say it is JSON (an error page, a captive portal)."""
    media_type = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise SearchBackendError(
            f"{label} answered with '{media_type or 'no content type'}' instead of JSON.{hint}"
        )


def _bearer_header(api_key: str, label: str, setting: str) -> dict[str, str]:
    """`Authorization: Bearer <key>`; a key a header cannot carry is refused without quoting it."""
    key = api_key.strip()
    if not key or not all("!" <= character <= "~" for character in key):
        raise SearchBackendError(
            f"The {label} API key ({setting}) is empty or holds spaces or characters outside "
            "printable ASCII, so it cannot be sent. Copy the key again without extra characters."
        )
    return {"Authorization": f"Bearer {key}"}


def _check_api_status(
    response: httpx.Response, label: str, setting: str, hints: Mapping[int, str]
) -> None:
    """An API-key service's status: the service's own hints first, then the common cases."""
    code = response.status_code
    hint = hints.get(code) or _api_status_hint(code, label, setting)
    if hint:
        raise SearchBackendError(f"{label} refused the search with HTTP {code}. {hint}")
    if 300 <= code < 400:
        raise SearchBackendError(
            f"{label} redirected the search (HTTP {code}); its API address may have changed."
        )
    if code >= 500:
        raise SearchBackendError(
            f"{label} had a server error (HTTP {code}). Try again later or use another search "
            "service."
        )
    if not 200 <= code < 300:
        raise SearchBackendError(f"{label} refused the search with HTTP {code}.")
    _require_json(response, label)


def _api_status_hint(code: int, label: str, setting: str) -> str:
    """What every API-key service's refusal with `code` means ("" for a status without one);
    `setting` names where the key is configured, so a refused key is traced there."""
    if code == 400:
        return f"{label} did not accept the parameters of the search."
    if code in (401, 403):
        return f"{label} refused the API key; check that {setting} is complete and still active."
    if code == 429:
        return f"{label} rate-limits this API key. Wait a moment before searching again."
    return ""


def json_object(body: bytes, label: str) -> dict[str, Any]:
    """The answer as a JSON object; anything else is the service's fault, said in one line."""
    try:
        document = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise SearchBackendError(f"{label} answered with JSON that could not be read.") from error
    if not isinstance(document, dict):
        raise SearchBackendError(f"{label} answered without a list of results.")
    return document


def text_field(value: Any) -> str:
    """A string field trimmed, anything else (missing, a number, a list) as empty."""
    return value.strip() if isinstance(value, str) else ""


def score_of(value: Any) -> float | None:
    """A numeric relevance score, or None (booleans are not scores)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def ranked_hits(scored: Sequence[tuple[float | None, SearchHit]]) -> tuple[SearchHit, ...]:
    """Highest score first when the service gave scores, otherwise its own order; ties keep it."""
    if all(score is None for score, _ in scored):
        return tuple(hit for _, hit in scored)
    keys = [
        (-(score if score is not None else float("-inf")), i) for i, (score, _) in enumerate(scored)
    ]
    return tuple(scored[i][1] for _, i in sorted(keys))


def _check_status(response: httpx.Response, shown: str) -> None:
    code = response.status_code
    if code == 429:
        raise SearchBackendError(
            "SearXNG refused the search with HTTP 429 (too many requests). Try again later; the "
            "administrator can relax the instance's limiter for this client."
        )
    if code in (401, 403):
        raise SearchBackendError(
            f"SearXNG refused access with HTTP {code}. The instance may require a sign-in, block "
            "this client, or have the JSON format switched off (enable 'json' under "
            "search.formats in its settings.yml)."
        )
    if 300 <= code < 400:
        raise SearchBackendError(
            f"SearXNG at '{shown}' redirected the search (HTTP {code}). Set searxng.baseUrl to the "
            "address the instance answers on."
        )
    if not 200 <= code < 300:
        raise SearchBackendError(f"SearXNG answered HTTP {code} for '{shown}'.")
    _require_json(
        response,
        "SearXNG",
        " Enable the JSON format of the instance (add 'json' to search.formats in its "
        "settings.yml).",
    )


async def _read_capped(response: httpx.Response, limit: int, label: str) -> bytes:
    """The decoded answer, counted in small decompressed pieces (a gzip bomb never inflates)."""
    from runtime.web._decoding import BodyDecoder, BodyDecodingError, UnsupportedContentEncoding

    declared = response.headers.get("Content-Length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise _too_large(limit, label)
    body = bytearray()
    try:
        decoder = BodyDecoder(response.headers.get("Content-Encoding", ""))
        async for chunk in response.aiter_raw():
            for piece in decoder.feed(chunk):
                body.extend(piece)
                if len(body) > limit:
                    raise _too_large(limit, label)
        for piece in decoder.finish():
            body.extend(piece)
            if len(body) > limit:
                raise _too_large(limit, label)
    except (UnsupportedContentEncoding, BodyDecodingError) as error:
        raise SearchBackendError(
            f"{label} answered with a compressed body that could not be decoded."
        ) from error
    return bytes(body)


def _too_large(limit: int, label: str) -> SearchBackendError:
    return SearchBackendError(
        f"{label} answered with more than {limit} bytes; the answer was dropped."
    )


def _searxng_answer(body: bytes) -> BackendAnswer:
    document = json_object(body, "SearXNG")
    results = document.get("results", [])
    if not isinstance(results, list):
        raise SearchBackendError("SearXNG answered without a list of results.")
    scored = [
        (
            score_of(item.get("score")),
            search_hit(item, "content", "publishedDate"),
        )
        for item in results
        if isinstance(item, dict) and text_field(item.get("url"))
    ]
    engines = document.get("unresponsive_engines")
    notes = tuple(
        f"SearXNG: the engine '{text_field(entry[0])}' did not respond "
        f"({text_field(entry[1]) or 'no reason given'})."
        for entry in (engines if isinstance(engines, list) else [])
        if isinstance(entry, list | tuple) and len(entry) >= 2
    )
    return BackendAnswer(ranked_hits(scored), notes)


# --- the dispatcher -----------------------------------------------------------------------------


def _order(
    backends: Sequence[SearchBackend],
    strategy: WebSearchBackendStrategy,
    primary: WebSearchBackend | None,
    notes: list[str],
) -> list[SearchBackend]:
    ordered = sorted(backends, key=lambda b: list(WebSearchBackend).index(b.kind))
    chosen = next((b for b in ordered if b.kind is primary), None)
    if primary is not None and chosen is None:
        notes.append(
            f"The preferred search service {_BACKEND_LABELS[primary]} is not configured, so the "
            "others were asked."
        )
        return ordered
    if chosen is None:
        return ordered
    if strategy is WebSearchBackendStrategy.SPECIFIC:
        return [chosen]
    return [chosen, *(b for b in ordered if b is not chosen)]


def eligible_backends(
    backends: Sequence[SearchBackend],
    strategy: WebSearchBackendStrategy,
    primary: WebSearchBackend | None,
    request: SearchRequest,
    notes: list[str],
) -> list[SearchBackend]:
    """The backends to ask, in order; refuses a page no backend has with the last page there is."""
    ordered = _order(backends, strategy, primary, notes)
    if request.safe_search in (SafeSearch.MODERATE, SafeSearch.STRICT):
        ordered = [b for b in ordered if b.filters_safe_search]
        if not ordered:
            raise SearchBackendError(
                "Safe search is on, but none of the configured search services can filter results."
            )
    last_page = max((b.max_page for b in ordered), default=1)
    if request.page > last_page:
        raise ArgumentError(
            "page",
            f"Argument 'page' must be at most {last_page}, the last page the search offers, but "
            f"was {request.page}. Leave it out to get the first page.",
        )
    return [b for b in ordered if b.max_page >= request.page]


async def _ask(
    backend: SearchBackend, request: SearchRequest, timeout_seconds: float
) -> BackendAnswer:
    label = _BACKEND_LABELS[backend.kind]
    try:
        async with asyncio.timeout(timeout_seconds):
            return await backend.search(request)
    except TimeoutError as error:
        raise SearchBackendError(
            f"{label} did not answer within {timeout_seconds:g} seconds."
        ) from error


def _merge_answers(
    answers: Sequence[tuple[str, BackendAnswer]], limit: int
) -> tuple[Candidate, ...]:
    """Round-robin by rank; hits naming the same address become one candidate; then the limit."""
    merged: dict[str, Candidate] = {}
    longest = max((len(answer.hits) for _, answer in answers), default=0)
    for position in range(longest):
        for label, answer in answers:
            if position >= len(answer.hits):
                continue
            hit = answer.hits[position]
            key = request_key(hit.url)
            if key is None:
                continue
            found = merged.get(key)
            if found is None:
                merged[key] = Candidate(key, hit, len(merged) + 1, (label,))
            elif label not in found.backends:
                merged[key] = Candidate(key, found.hit, found.rank, (*found.backends, label))
    return tuple(merged.values())[:limit]


async def dispatch(
    backends: Sequence[SearchBackend],
    strategy: WebSearchBackendStrategy,
    primary: WebSearchBackend | None,
    request: SearchRequest,
    timeout_seconds: float,
) -> _DispatchResult:
    """Ask the backends the strategy names and merge what they found."""
    notes: list[str] = []
    ordered = eligible_backends(backends, strategy, primary, request, notes)
    answered: list[tuple[str, BackendAnswer]] = []
    failures = 0
    if strategy is WebSearchBackendStrategy.PARALLEL:
        outcomes = await asyncio.gather(
            *(_ask(b, request, timeout_seconds) for b in ordered), return_exceptions=True
        )
        pairs = list(zip(ordered, outcomes, strict=True))
    else:
        pairs = []
        for backend in ordered:
            try:
                outcome: BackendAnswer | BaseException = await _ask(
                    backend, request, timeout_seconds
                )
            except SearchBackendError as error:
                outcome = error
            pairs.append((backend, outcome))
            if isinstance(outcome, BackendAnswer) and outcome.hits:
                break
    for backend, outcome in pairs:
        label = _BACKEND_LABELS[backend.kind]
        if isinstance(outcome, SearchBackendError):
            failures += 1
            notes.append(f"{label} could not be asked: {outcome}")
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            answered.append((label, outcome))
            notes.extend(outcome.notes)
    if failures and not answered:
        raise SearchBackendError(
            "None of the configured search services could be asked. " + " ".join(notes)
        )
    return _DispatchResult(
        candidates=_merge_answers(answered, request.limit),
        backends=tuple(label for label, _ in answered),
        notes=tuple(notes),
    )
