"""The chat's searchable data sources, as the app hands them to the runtime.

An app describes each data source of a chat as a `SearchableDataSource` with a
`DataSourceSearcher` that answers one page of passages; `ChatRuntime(data_sources=...)` keeps them,
offers semantic_search the ones a provider may use (`offered_data_sources`) and gives the running
tool the same list (`ToolServices.data_sources`). Kept apart from the tool itself, so that the
runtime's session needs no tool module to describe them.

A data source whose server describes itself (an ERI v1 server, `eri_source.EriDataSource`) also
has a `server`: what it said last (`ServerDetails`: its description, the providers it allows),
brought up to date by `refresh_data_sources` before offering and again before each search, and
read here as a lookup. The protocol's client is `eri.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from policy import ConfidenceLevel, DataSecurity
from policy._runtime_seam import (
    DataSourceConfig,
    OfferedDataSource,
    may_receive_data,
    tighten_data_security,
)

if TYPE_CHECKING:
    from policy._runtime_seam import ProviderFacts
    from runtime.web.guard import PromptInjectionGuard

MAX_RESULT_WINDOW = 100
"""The deepest ranking position a page may reach: page p fetches p × size + 1 matches."""


class DataSourceKind(StrEnum):
    """How a data source is described to the model."""

    LOCAL_FOLDER = "local folder"
    LOCAL_FILE = "local file"
    EXTERNAL = "external data source"
    OTHER = "data source"


class SearchGap(StrEnum):
    """Why a page of passages may be incomplete."""

    PARTIAL = "PARTIAL"
    QUERY_NOT_UNDERSTOOD = "QUERY_NOT_UNDERSTOOD"


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of a data source; `key` identifies it (defaults to url), `url` is its source."""

    text: str
    title: str = ""
    url: str = ""
    key: str = ""


@dataclass(frozen=True, slots=True)
class PassagePage:
    """One page of passages in rank order; `has_more` says whether a next page exists."""

    passages: tuple[Passage, ...]
    has_more: bool = False
    gaps: frozenset[SearchGap] = frozenset()


class DataSourceSearcher(Protocol):
    """What the app supplies per data source: one page of its best passages for a query.

    Raising means the data source could not be searched; the tool reports it as not searched.
    """

    async def search(self, query: str, page: int, page_size: int) -> PassagePage: ...


@dataclass(frozen=True, slots=True)
class ServerDetails:
    """What a data source's server said of itself, as offering and searching read it.

    `description` has passed the prompt-injection guard; `security` is what the server requires
    of providers (NOT_SPECIFIED: nothing beyond the configuration); `refusal`, when set, says why
    no provider may read the source at all."""

    description: str = ""
    security: DataSecurity = DataSecurity.NOT_SPECIFIED
    refusal: str = ""


class _DescribedByServer(Protocol):
    """A data source's server, asked for its details (kept for a while by the implementation)."""

    async def refresh(self, guard: PromptInjectionGuard, *, wait: bool = True) -> None:
        """Bring the details up to date when they are due; never raises (a failure leaves none).

        `wait=False` (offering) waits only for the first answer ever; later ones are fetched in
        the background while the details known keep being offered."""
        ...

    def current(self) -> ServerDetails | None:
        """The details as last fetched, or None while the server could not be asked."""
        ...


class Availability(StrEnum):
    """Whether a provider may search a data source now."""

    USABLE = "USABLE"
    REFUSED = "REFUSED"
    """The configuration or the server rules this provider out (or the source is empty)."""
    UNREACHABLE = "UNREACHABLE"
    """Its server could not be asked: not offered, and reported as not searched if named."""


def last_page(page_size: int) -> int:
    """The last page a model may ask for; the first page is always allowed."""
    return max(1, (MAX_RESULT_WINDOW - 1) // max(page_size, 1))


@dataclass(frozen=True, slots=True)
class SearchableDataSource:
    """A data source of the chat with its searcher and what its passages demand of the chat."""

    id: str
    name: str
    searcher: DataSourceSearcher
    page_size: int
    kind: DataSourceKind = DataSourceKind.OTHER
    description: str = ""
    num: int = 0
    security: DataSecurity = DataSecurity.NOT_SPECIFIED
    required_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    server: _DescribedByServer | None = None
    """Set for a source whose server describes itself (ERI v1)."""

    @property
    def offer(self) -> OfferedDataSource:
        details = self.server.current() if self.server is not None else None
        return OfferedDataSource(
            id=self.id,
            name=self.name,
            type_label=self.kind.value,
            results_per_page=self.page_size,
            last_page=last_page(self.page_size),
            description=details.description if details is not None else self.description,
            num=self.num,
        )

    @property
    def effective_security(self) -> DataSecurity:
        """The stricter of the configured security policy and what the server requires."""
        details = self.server.current() if self.server is not None else None
        if details is None:
            return self.security
        return tighten_data_security(self.security, details.security)

    def availability(self, provider: ProviderFacts) -> Availability:
        """Whether `provider` may search this source now (one the organization trusts counts
        as self-hosted here); a server not asked yet is UNREACHABLE, never USABLE."""
        if self.page_size <= 0 or provider.confidence < self.required_confidence:
            return Availability.REFUSED
        if not may_receive_data(self.security, provider.kind, provider.trusted):
            return Availability.REFUSED
        if self.server is None:
            return Availability.USABLE
        details = self.server.current()
        if details is None:
            return Availability.UNREACHABLE
        if details.refusal or not may_receive_data(
            details.security, provider.kind, provider.trusted
        ):
            return Availability.REFUSED
        return Availability.USABLE

    def may_be_used_by(self, provider: ProviderFacts) -> bool:
        """Whether `provider` may search this source now."""
        return self.availability(provider) is Availability.USABLE


def usable_data_sources(
    sources: Sequence[SearchableDataSource], provider: ProviderFacts
) -> tuple[SearchableDataSource, ...]:
    """The data sources this provider may search, by number then id (a stable offer)."""
    usable = [s for s in sources if s.may_be_used_by(provider)]
    return tuple(sorted(usable, key=lambda s: (s.num, s.id)))


def searchable_data_sources(
    sources: Sequence[SearchableDataSource], provider: ProviderFacts
) -> tuple[SearchableDataSource, ...]:
    """What a search may name: the usable sources and those whose server could not be asked
    (searched as "not searched", never contacted), by number then id."""
    kept = [s for s in sources if s.availability(provider) is not Availability.REFUSED]
    return tuple(sorted(kept, key=lambda s: (s.num, s.id)))


async def refresh_data_sources(
    sources: Sequence[SearchableDataSource], guard: PromptInjectionGuard, *, wait: bool = True
) -> None:
    """Ask every server whose details are due, in parallel (each bounded by its time-out).

    A search waits for the answers (`wait=True`), so it never goes by details past their time;
    offering passes `wait=False` and waits only for a server never asked before."""
    servers = [s.server for s in sources if s.server is not None]
    if servers:
        import asyncio

        await asyncio.gather(*(server.refresh(guard, wait=wait) for server in servers))


def offered_data_sources(
    sources: Sequence[SearchableDataSource], provider: ProviderFacts
) -> tuple[OfferedDataSource, ...]:
    """What to put into `ResolutionContext.extras["data_sources"]` for a request."""
    return tuple(s.offer for s in usable_data_sources(sources, provider))


def data_sources_from_configuration(
    configured: Sequence[DataSourceConfig],
    searchers: Mapping[str, DataSourceSearcher] | None = None,
    first_num: int = 0,
    *,
    os_user_is_person: bool = True,
) -> tuple[SearchableDataSource, ...]:
    """`CONFIG["DATA_SOURCES"]` entries as searchable data sources.

    An entry the app has a searcher for (by id) uses it; every other ERI_V1 entry is searched
    over ERI v1 by an `EriDataSource`, which also asks the server for its description and
    security requirements. The page size is the entry's `MaxMatches` (default 10); SELF_HOSTED
    entries (or servers) may only be used by self-hosted providers, and their passages restrict
    the chat to self-hosted providers; `MinimumProviderConfidence` is the lowest confidence that
    may search the entry, and its passages raise the chat's requirement to it. An entry that
    signs in with the operating-system user name (OS_USERNAME_SHARED_PASSWORD) is refused, never
    searched, unless `os_user_is_person`: the OS user this process runs as is the person asking.
    """
    given = searchers or {}
    sources: list[SearchableDataSource] = []
    for number, config in enumerate(configured, start=first_num):
        searcher = given.get(config.id)
        if searcher is None:
            if config.kind != "ERI_V1":
                continue
            from runtime.data_sources.eri_source import EriDataSource

            eri = EriDataSource(config, os_user_is_person=os_user_is_person)
            sources.append(eri.searchable(number))
            continue
        description = config.raw.get("Description", "")
        sources.append(
            SearchableDataSource(
                id=config.id,
                name=config.name,
                searcher=searcher,
                page_size=configured_page_size(config),
                kind=DataSourceKind.EXTERNAL,
                description=description if isinstance(description, str) else "",
                num=number,
                security=config.security,
                required_confidence=config.minimum_confidence,
            )
        )
    return tuple(sources)


def configured_page_size(config: DataSourceConfig) -> int:
    """The entry's `MaxMatches`, 10 when it has none."""
    matches = config.raw.get("MaxMatches", 10)
    return matches if isinstance(matches, int) and not isinstance(matches, bool) else 10


class ConfiguredDataSources:
    """The app's data sources joined by the ERI_V1 entries of each configuration a runtime decides
    with (a signed-in person's adds their groups' entries). Each entry's source is made once and
    shared, so its server is asked once for everyone; an entry that changed gets a new one. An
    entry that sends the OS user name is made twice: searched for the process's own user, and
    refused for people a server answers (`os_user_is_person=False`)."""

    __slots__ = ("_app", "_made")

    def __init__(self, app: Sequence[SearchableDataSource]) -> None:
        self._app = tuple(app)
        self._made: dict[tuple[str, bool], tuple[DataSourceConfig, SearchableDataSource]] = {}

    def of(
        self, configured: Sequence[DataSourceConfig], *, os_user_is_person: bool = True
    ) -> tuple[SearchableDataSource, ...]:
        taken = {source.id for source in self._app}
        first = max((source.num for source in self._app), default=-1) + 1
        joined = list(self._app)
        for number, config in enumerate(configured, start=first):
            if config.kind != "ERI_V1" or config.id in taken:
                continue
            key = (config.id, os_user_is_person)
            made = self._made.get(key)
            if made is None or made[0] != config:
                (source,) = data_sources_from_configuration(
                    [config], first_num=number, os_user_is_person=os_user_is_person
                )
                made = self._made[key] = (config, source)
            joined.append(made[1])
        return tuple(joined)
