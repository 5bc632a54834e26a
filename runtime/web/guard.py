"""The prompt-injection guard: every text a tool brings in from outside passes through it.

The guard never rejects content. It asks a filter (built-in or an external service) to remove
suspicious passages; when the filter cannot run, the texts pass unchanged and the user is warned,
because failing a request over a best-effort check would cost the user their work. Reports are
collected per tool call: nested scopes report once, when the outermost one closes.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol

_log = logging.getLogger(__name__)

MAX_LISTED_FINDINGS = 8
"""Findings listed per filtered text; the redacted count stays exact."""


@dataclass(frozen=True, slots=True)
class GuardSource:
    """Where a text came from. All fields of one page share one source, so reports name the page."""

    kind: str
    label: str


def web_content(url: str) -> GuardSource:
    """The source of every field of a fetched web page, labelled by its final URL.

    The label is shown to the user and may reach traces, so user info and parameter values
    (possibly tokens) are masked; the page stays recognizable by host and path.
    """
    from runtime.web.addresses import redact_url_for_log

    return GuardSource(kind="web_content", label=redact_url_for_log(url))


def tool_content(tool_name: str) -> GuardSource:
    """The source of text a tool brings from a data source that is not a web page."""
    return GuardSource(kind="tool_content", label=tool_name)


@dataclass(frozen=True, slots=True)
class GuardText:
    text: str
    source: GuardSource


@dataclass(frozen=True, slots=True)
class Finding:
    """One removed passage: which rule matched, its category, where, how much, and an excerpt.

    The snippet is for the app's reporter (an alert may show it); the guard's own log lines
    carry counts only, never the text.
    """

    rule_id: str
    category: str
    snippet: str
    location: str = ""
    """Where in the text: a field such as `$[0].body`, `row 3, column 2`, or empty for prose."""
    removed_characters: int = 0


@dataclass(frozen=True, slots=True)
class FilterContext:
    """What a filter may know about the call whose texts it filters.

    The runtime fills it per tool call (see `PromptInjectionGuard.for_call`); a filter that needs
    nothing of it ignores it.
    """

    offered_tool_names: frozenset[str] = frozenset()
    """The function names of the tools the chat offers the model: a text asking to call one of
    them by name, with arguments, addresses the agent."""


NO_FILTER_CONTEXT = FilterContext()


@dataclass(frozen=True, slots=True)
class FilterResult:
    """A filter's answer for one text, in the shape of the external filtering service."""

    sanitized_text: str
    findings: tuple[Finding, ...] = ()
    redacted_count: int = 0


class InjectionFilter(Protocol):
    """Filters many texts in one go; answers in the same order and length, or raises.

    Every filter kind (the built-in structural one, an HTTP service, a model) sits behind this
    one method, so the guard's never-reject fallback and its reports hold for all of them.
    """

    async def filter_batch(
        self, texts: Sequence[str], context: FilterContext = NO_FILTER_CONTEXT
    ) -> Sequence[FilterResult]: ...


@dataclass(frozen=True, slots=True)
class _SourceRemovals:
    """What was removed from one source across all its texts."""

    source: GuardSource
    findings: tuple[Finding, ...]
    redacted_count: int


@dataclass(frozen=True, slots=True)
class GuardCheckFailed:
    """The filter could not run: these sources were used as they are."""

    sources: tuple[GuardSource, ...]
    message: str


@dataclass(frozen=True, slots=True)
class GuardRemovalReport:
    """Suspicious passages were removed; `message` is for the user, `log_message` for the log."""

    removals: tuple[_SourceRemovals, ...]
    message: str
    log_message: str

    @property
    def redacted_count(self) -> int:
        return sum(removal.redacted_count for removal in self.removals)


_GuardReport = GuardRemovalReport
GuardEvent = GuardCheckFailed | GuardRemovalReport
"""What the reporter receives; an app shows warnings, and an alert with all removals if it wants."""
_GuardReporter = Callable[[GuardEvent], None]


@dataclass(slots=True)
class GuardScope:
    """What one outermost scope has collected: a caller reads it once the scope has closed (the
    executor does, to record in the chat and the decision log that an injection was seen)."""

    failed: list[GuardSource] = field(default_factory=list)
    removals: list[_SourceRemovals] = field(default_factory=list)

    @property
    def sources_with_removals(self) -> tuple[_SourceRemovals, ...]:
        """What was removed, one entry per source (findings concatenated, counts summed)."""
        return _merge_by_source(self.removals)


def _check_failed_message(sources: Sequence[GuardSource]) -> str:
    if len(sources) == 1:
        return (
            f"'{sources[0].label}' could not be checked for prompt injections; "
            "its content is used as it is."
        )
    return (
        f"{len(sources)} sources could not be checked for prompt injections; "
        "their content is used as it is."
    )


def _removal_message(removals: Sequence[_SourceRemovals]) -> str:
    if len(removals) == 1:
        return (
            f"Suspicious instructions were removed from '{removals[0].source.label}' "
            "before it was used."
        )
    return (
        f"Suspicious instructions were removed from {len(removals)} sources before they were used."
    )


def _removal_log_message(removals: Sequence[_SourceRemovals]) -> str:
    passages = sum(removal.redacted_count for removal in removals)
    return (
        f"Detected and removed {passages} potentially dangerous passage(s) "
        f"in {len(removals)} content source(s)."
    )


def _distinct(sources: Sequence[GuardSource]) -> tuple[GuardSource, ...]:
    return tuple(dict.fromkeys(sources))


def _merge_by_source(removals: Sequence[_SourceRemovals]) -> tuple[_SourceRemovals, ...]:
    merged: dict[GuardSource, _SourceRemovals] = {}
    for removal in removals:
        earlier = merged.get(removal.source)
        if earlier is None:
            merged[removal.source] = removal
        else:
            merged[removal.source] = _SourceRemovals(
                source=removal.source,
                findings=earlier.findings + removal.findings,
                redacted_count=earlier.redacted_count + removal.redacted_count,
            )
    return tuple(merged.values())


class PromptInjectionGuard:
    """Filters untrusted texts through one filter and reports to the app, once per tool call."""

    def __init__(self, filter: InjectionFilter, reporter: _GuardReporter | None = None) -> None:
        self._filter = filter
        self._reporter = reporter
        self._pending: ContextVar[GuardScope | None] = ContextVar(
            f"toolpolicy_guard_scope_{id(self)}", default=None
        )
        self._context = NO_FILTER_CONTEXT

    def for_call(self, context: FilterContext) -> PromptInjectionGuard:
        """This guard for one tool call: the same filter, reporter and scopes, and the call's
        context passed to the filter with every batch."""
        bound = copy.copy(self)
        bound._context = context
        return bound

    async def sanitize(self, text: str, source: GuardSource) -> str:
        """One text; a blank text comes back unchanged without asking the filter."""
        return (await self.sanitize_many([GuardText(text, source)]))[0]

    async def sanitize_many(self, texts: Sequence[GuardText]) -> list[str]:
        """All texts of one tool call in one filter request; results in the same order."""
        results = [item.text for item in texts]
        positions = [index for index, item in enumerate(texts) if item.text.strip()]
        if not positions:
            return results
        async with self.scope():
            answers = await self._ask_filter([texts[index].text for index in positions])
            if answers is None:
                self._queue_failure(_distinct([texts[index].source for index in positions]))
                return results
            removals: list[_SourceRemovals] = []
            for index, answer in zip(positions, answers, strict=True):
                results[index] = answer.sanitized_text
                if answer.redacted_count > 0:
                    removals.append(
                        _SourceRemovals(
                            texts[index].source, tuple(answer.findings), answer.redacted_count
                        )
                    )
            self._queue_removals(removals)
        return results

    @asynccontextmanager
    async def scope(self) -> AsyncIterator[GuardScope]:
        """Collect reports until the outermost scope of this task closes, then report once.
        A nested scope yields the outermost one's collection."""
        held = self._pending.get()
        if held is not None:
            yield held
            return
        pending = GuardScope()
        token = self._pending.set(pending)
        try:
            yield pending
        finally:
            self._pending.reset(token)
            self._report(pending)

    async def _ask_filter(self, texts: list[str]) -> list[FilterResult] | None:
        try:
            answers = list(await self._filter.filter_batch(texts, self._context))
        except Exception as error:
            _log.error(
                "The prompt-injection filter failed for %d text(s): %s: %s",
                len(texts),
                type(error).__name__,
                error,
            )
            return None
        if len(answers) != len(texts):
            _log.error(
                "The prompt-injection filter answered %d result(s) for %d text(s).",
                len(answers),
                len(texts),
            )
            return None
        return answers

    def _queue_failure(self, sources: Sequence[GuardSource]) -> None:
        pending = self._pending.get()
        if pending is not None:
            pending.failed.extend(sources)

    def _queue_removals(self, removals: Sequence[_SourceRemovals]) -> None:
        pending = self._pending.get()
        if pending is not None:
            pending.removals.extend(removals)

    def _report(self, pending: GuardScope) -> None:
        if pending.failed:
            failed = _distinct(pending.failed)
            self._emit(GuardCheckFailed(failed, _check_failed_message(failed)))
        if pending.removals:
            removals = pending.sources_with_removals
            report = GuardRemovalReport(
                removals=removals,
                message=_removal_message(removals),
                log_message=_removal_log_message(removals),
            )
            _log.warning(report.log_message)
            self._emit(report)

    def _emit(self, event: GuardEvent) -> None:
        if self._reporter is None:
            if isinstance(event, GuardCheckFailed):
                # Counts only: a label may be a URL carrying a token, and logs must not hold it.
                _log.warning(
                    "%d source(s) could not be checked for prompt injections and were used as "
                    "they are.",
                    len(event.sources),
                )
            return
        try:
            self._reporter(event)
        except Exception as error:
            _log.error("The prompt-injection reporter failed: %s: %s", type(error).__name__, error)


_default_guard: PromptInjectionGuard | None = None


def guard_or_default(guard: PromptInjectionGuard | None) -> PromptInjectionGuard:
    """`guard`, or the one shared guard over the built-in structural filter when it is None."""
    global _default_guard
    if guard is not None:
        return guard
    if _default_guard is None:
        from runtime.web.injection_filter import StructuralInjectionFilter

        _default_guard = PromptInjectionGuard(StructuralInjectionFilter())
    return _default_guard
