"""The chat's searchable data sources, as the app hands them to the runtime.

An app describes each data source of a chat as a `SearchableDataSource` with a
`DataSourceSearcher` that answers one page of passages; `ChatRuntime(data_sources=...)` keeps them,
offers semantic_search the ones a provider may use (`offered_data_sources`) and gives the running
tool the same list (`ToolServices.data_sources`). Kept apart from the tool itself, so that the
runtime's session needs no tool module to describe them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from policy import ConfidenceLevel, DataSecurity
from policy._runtime_seam import DataSourceConfig, OfferedDataSource, may_receive_data

if TYPE_CHECKING:
    from policy._runtime_seam import ProviderFacts

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

    @property
    def offer(self) -> OfferedDataSource:
        return OfferedDataSource(
            id=self.id,
            name=self.name,
            type_label=self.kind.value,
            results_per_page=self.page_size,
            last_page=last_page(self.page_size),
            description=self.description,
            num=self.num,
        )

    def may_be_used_by(self, provider: ProviderFacts) -> bool:
        """Whether `provider` may search this source (one the organization trusts counts as
        self-hosted here)."""
        if self.page_size <= 0 or provider.confidence < self.required_confidence:
            return False
        return may_receive_data(self.security, provider.kind, provider.trusted)


def usable_data_sources(
    sources: Sequence[SearchableDataSource], provider: ProviderFacts
) -> tuple[SearchableDataSource, ...]:
    """The data sources this provider may search, by number then id (a stable offer)."""
    usable = [s for s in sources if s.may_be_used_by(provider)]
    return tuple(sorted(usable, key=lambda s: (s.num, s.id)))


def offered_data_sources(
    sources: Sequence[SearchableDataSource], provider: ProviderFacts
) -> tuple[OfferedDataSource, ...]:
    """What to put into `ResolutionContext.extras["data_sources"]` for a request."""
    return tuple(s.offer for s in usable_data_sources(sources, provider))


def data_sources_from_configuration(
    configured: Sequence[DataSourceConfig],
    searchers: Mapping[str, DataSourceSearcher],
    first_num: int = 0,
) -> tuple[SearchableDataSource, ...]:
    """`CONFIG["DATA_SOURCES"]` entries the app has a searcher for (the others cannot be searched).

    The page size is the entry's `MaxMatches` (default 10); SELF_HOSTED entries may only be used
    by self-hosted providers, and their passages restrict the chat to self-hosted providers.
    """
    sources: list[SearchableDataSource] = []
    for number, config in enumerate(configured, start=first_num):
        searcher = searchers.get(config.id)
        if searcher is None:
            continue
        matches = config.raw.get("MaxMatches", 10)
        page_size = matches if isinstance(matches, int) and not isinstance(matches, bool) else 10
        description = config.raw.get("Description", "")
        sources.append(
            SearchableDataSource(
                id=config.id,
                name=config.name,
                searcher=searcher,
                page_size=page_size,
                kind=DataSourceKind.EXTERNAL,
                description=description if isinstance(description, str) else "",
                num=number,
                security=config.security,
            )
        )
    return tuple(sources)
