"""semantic_search: the model searches the chat's data sources with a query of its own.

The app hands the tool the chat's data sources as `SearchableDataSource`s (runtime.data_sources)
in `ToolExecutionContext.services.data_sources`, each with a `DataSourceSearcher` that answers one
page of passages. The tool re-checks which of them the provider may use (asking a server that
describes itself again when its details are due), searches them in parallel (a source whose
server could not be asked is reported as not searched, never contacted), lets them take turns
(the best passage of each, then the second of each, …) within a 100,000-character budget,
filters every passage through the guard in one batch, and reports a source that failed as not
searched rather than empty. Only data sources whose passages reached the model raise the chat's
requirements.

`LocalFolderSearcher` is a searcher that needs no external service: an SQLite FTS5 index over the
text files of a folder.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policy import ConfidenceLevel, DataSecurity
from policy._runtime_seam import (
    ARG_DATA_SOURCE_IDS,
    ARG_PAGE,
    ARG_QUERY,
    SEMANTIC_SEARCH_MAX_QUERY_CHARACTERS,
    SemanticSearchTool,
)
from runtime.arguments import ArgumentError, ArgumentReader
from runtime.data_sources import (
    Availability,
    DataSourceKind,
    Passage,
    PassagePage,
    SearchableDataSource,
    SearchGap,
    last_page,
    refresh_data_sources,
    searchable_data_sources,
)
from runtime.execution import ToolExecutionBlocked, ToolExecutionContext, ToolExecutionResult
from runtime.messages import Source, SourceOrigin
from runtime.tools._common import guard_of

_log = logging.getLogger(__name__)

_RESULT_BUDGET_CHARACTERS = 100_000
NO_SOURCES_REFUSAL = "None of the data sources of this chat can be searched right now."

ISSUE_NOT_SEARCHED = (
    "This data source could not be searched right now, so its results are missing rather than "
    "empty."
)
ISSUE_PARTIAL = (
    "Only part of this data source could be searched, so some of its results may be missing."
)
ISSUE_QUERY_NOT_UNDERSTOOD = (
    "This data source could not search for the query as written. Rephrase it shorter or simpler."
)


# --- arguments ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _SemanticSearchRequest:
    """The model's arguments, checked: what to search, in which offered sources, which page."""

    query: str
    sources: tuple[SearchableDataSource, ...]
    page: int


def read_request(
    arguments: Mapping[str, Any], offered: Sequence[SearchableDataSource]
) -> _SemanticSearchRequest:
    """The query, the named data sources in offer order, and a page that exists for them."""
    reader = ArgumentReader(arguments)
    try:
        query = reader.read_line(ARG_QUERY, SEMANTIC_SEARCH_MAX_QUERY_CHARACTERS)
    except ArgumentError as error:
        if "at most" not in str(error):
            raise
        raise ArgumentError(
            ARG_QUERY,
            f"{error} Search for a few distinctive words, or for each aspect of the question "
            "separately.",
        ) from error
    ids = [s.id for s in offered]
    named = reader.optional_choices(ARG_DATA_SOURCE_IDS, ids, "to search all listed data sources")
    chosen = tuple(s for s in offered if named is None or s.id in named)
    page = reader.optional_positive_int(ARG_PAGE, "to get the first page") or 1
    if page > 1:
        if len(chosen) != 1:
            raise ArgumentError(
                ARG_PAGE,
                f"Argument '{ARG_PAGE}' may be above 1 only for exactly one data source in "
                f"'{ARG_DATA_SOURCE_IDS}', but was {page} for {len(chosen)}. Name the one data "
                f"source to page through, or leave '{ARG_PAGE}' out to get the first page of each.",
            )
        last = last_page(chosen[0].page_size)
        if page > last:
            raise ArgumentError(
                ARG_PAGE,
                f"Argument '{ARG_PAGE}' must be at most {last} for the data source "
                f"'{chosen[0].id}', but was {page}. Rephrase the query to find other passages.",
            )
    return _SemanticSearchRequest(query, chosen, page)


# --- searching ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Searched:
    source: SearchableDataSource
    page: PassagePage | None
    included: int = 0
    left_out: int = 0


async def _search_one(
    source: SearchableDataSource, query: str, page: int, unreachable: bool
) -> tuple[SearchableDataSource, PassagePage | None]:
    if unreachable:
        _log.warning(
            "The data source %s was not searched: its server could not be asked.", source.id
        )
        return source, None
    try:
        found = await source.searcher.search(query, page, source.page_size)
    except Exception as error:
        _log.warning(
            "The data source %s could not be searched: %s: %s",
            source.id,
            type(error).__name__,
            error,
        )
        return source, None
    passages = tuple(found.passages[: source.page_size])
    return source, PassagePage(passages, found.has_more, found.gaps)


def _turns(searched: Sequence[_Searched]) -> Iterator[tuple[_Searched, Passage]]:
    """The best passage of each data source, then the second of each, and so on."""
    depth = max((len(s.page.passages) for s in searched if s.page), default=0)
    for rank in range(depth):
        for entry in searched:
            if entry.page is not None and rank < len(entry.page.passages):
                yield entry, entry.page.passages[rank]


def _render(number: int, passage: Passage, source_name: str) -> str:
    heading = f"[{number}] {passage.title or 'Passage'} (from {source_name})"
    lines = [heading]
    if passage.url:
        lines.append(f"Source: {passage.url}")
    return "\n".join(lines) + "\n\n" + passage.text.strip()


def _issues(entry: _Searched) -> list[str]:
    if entry.page is None:
        return [ISSUE_NOT_SEARCHED]
    issues = []
    if SearchGap.PARTIAL in entry.page.gaps:
        issues.append(ISSUE_PARTIAL)
    if SearchGap.QUERY_NOT_UNDERSTOOD in entry.page.gaps:
        issues.append(ISSUE_QUERY_NOT_UNDERSTOOD)
    if entry.left_out:
        issues.append(
            f"{entry.left_out} further passages of this page were left out to keep the result "
            "within its size limit. Search this data source with a narrower query to see them."
        )
    return issues


def _requirements(
    contributing: Sequence[SearchableDataSource],
) -> tuple[ConfidenceLevel, DataSecurity]:
    if not contributing:
        return ConfidenceLevel.NONE, DataSecurity.NOT_SPECIFIED
    confidence = max(s.required_confidence for s in contributing)
    self_hosted = any(
        s.effective_security is DataSecurity.SELF_HOSTED and s.kind is DataSourceKind.EXTERNAL
        for s in contributing
    )
    return confidence, DataSecurity.SELF_HOSTED if self_hosted else DataSecurity.ALLOW_ANY


class SemanticSearchExecutableTool(SemanticSearchTool):
    """The policy-side semantic_search plus its execution."""

    sensitive_trace_argument_names: frozenset[str] = frozenset()
    returns_untrusted_external_content = True

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        from runtime.sources import merge_sources
        from runtime.web.guard import GuardText, tool_content

        guard = guard_of(context)
        await refresh_data_sources(context.services.data_sources, guard)
        offered = searchable_data_sources(context.services.data_sources, context.provider)
        usable = {s.id for s in offered if s.availability(context.provider) is Availability.USABLE}
        if not usable:
            raise ToolExecutionBlocked(NO_SOURCES_REFUSAL)
        request = read_request(arguments, offered)
        found = await asyncio.gather(
            *(
                _search_one(s, request.query, request.page, s.id not in usable)
                for s in request.sources
            )
        )
        searched = [_Searched(source, page) for source, page in found]
        turns = list(_turns(searched))
        async with guard.scope():
            texts = [
                GuardText(text, tool_content(entry.source.name))
                for entry, passage in turns
                for text in (passage.text, passage.title, passage.url)
            ]
            cleaned = await guard.sanitize_many(texts)
        rendered: list[str] = []
        sources: list[Source] = []
        total = 0
        for index, (entry, passage) in enumerate(turns):
            text, title, shown_url = cleaned[3 * index : 3 * index + 3]
            # The model reads the filtered address; the user's source keeps the real one.
            clean = Passage(text, title, shown_url, passage.key)
            block = _render(len(rendered) + 1, clean, entry.source.name)
            separator = 2 if rendered else 0
            if total + separator + len(block) > _RESULT_BUDGET_CHARACTERS:
                entry.left_out += 1
                continue
            total += separator + len(block)
            rendered.append(block)
            entry.included += 1
            if passage.url:
                sources.append(Source(clean.title or passage.url, passage.url, SourceOrigin.RAG))
        reports = []
        for entry in searched:
            report: dict[str, Any] = {
                "id": entry.source.id,
                "name": entry.source.name,
                "result_count": entry.included,
                # No more pages past the last one the model may ask for, whatever the source has.
                "has_more": bool(entry.page and entry.page.has_more)
                and request.page < last_page(entry.source.page_size),
            }
            issues = _issues(entry)
            if issues:
                report["issues"] = issues
            reports.append(report)
        confidence, security = _requirements([e.source for e in searched if e.included])
        return ToolExecutionResult(
            json_content={
                "query": request.query,
                "page": request.page,
                "data_sources": reports,
                "text_content": "\n\n".join(rendered),
            },
            sources=tuple(merge_sources([], sources)),
            required_provider_confidence=confidence,
            required_data_security=security,
            brought=None if any(e.included for e in searched) else (),
            injection_filtered=True,
        )


def create_tool() -> SemanticSearchExecutableTool:
    """The entry point `toolpolicy.tools: semantic_search`."""
    return SemanticSearchExecutableTool()


# --- a searcher without external services -------------------------------------------------------

_TERM = re.compile(r"\w+", re.UNICODE)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER);
CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(
    path UNINDEXED, title UNINDEXED, chunk UNINDEXED, body, tokenize = 'unicode61'
);
"""


def _chunks(text: str, limit: int) -> list[str]:
    """Paragraphs packed into chunks of at most `limit` characters (a long paragraph is cut)."""
    chunks: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in re.split(r"\n\s*\n", text)):
        if not paragraph:
            continue
        while len(paragraph) > limit:
            if current:
                chunks.append(current)
                current = ""
            chunks.append(paragraph[:limit])
            paragraph = paragraph[limit:]
        if current and len(current) + 2 + len(paragraph) > limit:
            chunks.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        chunks.append(current)
    return chunks


@dataclass
class LocalFolderSearcher:
    """Full-text search (SQLite FTS5, BM25 ranking) over the text files of one folder.

    `refresh()` (re)indexes files that are new, changed or gone; call it when the folder
    changes — a search only looks up the index (the first search indexes once if needed).
    Files outside the folder (through links) and files over `max_file_bytes` are skipped.
    """

    folder: Path
    database: str = ":memory:"
    patterns: tuple[str, ...] = ("*.txt", "*.md", "*.markdown", "*.rst", "*.csv", "*.json")
    chunk_characters: int = 1500
    max_file_bytes: int = 10 * 1024 * 1024
    _connection: sqlite3.Connection | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _indexed: bool = field(default=False, init=False, repr=False)

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = sqlite3.connect(self.database, check_same_thread=False)
            self._connection.executescript(_SCHEMA)
        return self._connection

    def _files(self) -> dict[str, Path]:
        root = self.folder.resolve()
        found: dict[str, Path] = {}
        for pattern in self.patterns:
            for path in root.rglob(pattern):
                resolved = path.resolve()
                if resolved.is_file() and resolved.is_relative_to(root):
                    found[str(resolved)] = resolved
        return found

    def refresh(self) -> int:
        """Bring the index up to date; returns the number of files (re)indexed."""
        with self._lock:
            db = self._db()
            files = self._files()
            known = {
                path: (mtime, size)
                for path, mtime, size in db.execute("SELECT path, mtime_ns, size FROM files")
            }
            changed = 0
            with db:
                for gone in set(known) - set(files):
                    db.execute("DELETE FROM files WHERE path = ?", (gone,))
                    db.execute("DELETE FROM passages WHERE path = ?", (gone,))
                for name, path in files.items():
                    stat = path.stat()
                    if known.get(name) == (stat.st_mtime_ns, stat.st_size):
                        continue
                    db.execute("DELETE FROM passages WHERE path = ?", (name,))
                    db.execute(
                        "INSERT OR REPLACE INTO files VALUES (?, ?, ?)",
                        (name, stat.st_mtime_ns, stat.st_size),
                    )
                    changed += 1
                    if stat.st_size > self.max_file_bytes:
                        continue
                    text = path.read_text(encoding="utf-8", errors="replace")
                    title = str(path.relative_to(self.folder.resolve()))
                    db.executemany(
                        "INSERT INTO passages (path, title, chunk, body) VALUES (?, ?, ?, ?)",
                        (
                            (name, title, number, chunk)
                            for number, chunk in enumerate(_chunks(text, self.chunk_characters))
                        ),
                    )
            self._indexed = True
            return changed

    def _search(self, query: str, page: int, page_size: int) -> PassagePage:
        if not self._indexed:
            self.refresh()
        terms = list(dict.fromkeys(t.lower() for t in _TERM.findall(query)))
        if not terms:
            return PassagePage((), gaps=frozenset({SearchGap.QUERY_NOT_UNDERSTOOD}))
        expression = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "SELECT path, title, chunk, body FROM passages WHERE passages MATCH ? "
                    "ORDER BY bm25(passages), path, chunk LIMIT ? OFFSET ?",
                    (expression, page_size + 1, (page - 1) * page_size),
                )
                .fetchall()
            )
        passages = tuple(
            Passage(text=body, title=title, url=Path(path).as_uri(), key=f"{path}#{chunk}")
            for path, title, chunk, body in rows[:page_size]
        )
        return PassagePage(passages, has_more=len(rows) > page_size)

    async def search(self, query: str, page: int, page_size: int) -> PassagePage:
        return await asyncio.to_thread(self._search, query, page, page_size)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
                self._indexed = False
