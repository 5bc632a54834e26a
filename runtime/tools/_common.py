"""What the built-in tools share: services from the context, retrieval options, page content.

Test and embedding hooks (a resolver, an address classifier, a TLS context) reach a tool only as
`ToolExecutionContext.services.retrieval_overrides`, never through settings or model arguments, so
nothing a model writes can change how addresses are checked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from runtime.execution import ToolExecutionBlocked, ToolExecutionContext

if TYPE_CHECKING:
    from runtime.web.extract import ExtractedPage
    from runtime.web.guard import PromptInjectionGuard
    from runtime.web.retrieval import (
        RetrievalOptions,
        RetrievedWebPage,
    )
    from runtime.web.sanitize import WebPageModelContent

SMALL_PAGE_CHARACTERS = 500
"""Extracted HTML shorter than this is probably incomplete."""


def retrieval_options(context: ToolExecutionContext, **fields: Any) -> RetrievalOptions:
    """Options for one retrieval, with the app's overrides (if any) applied on top."""
    from runtime.web.retrieval import RetrievalOptions

    options = RetrievalOptions(**fields)
    overrides = context.services.retrieval_overrides
    if overrides is None:
        return options
    return replace(
        options,
        resolver=overrides.resolver or options.resolver,
        classify_address=overrides.classify_address or options.classify_address,
        ssl_context=overrides.ssl_context or options.ssl_context,
    )


def guard_of(context: ToolExecutionContext) -> PromptInjectionGuard:
    """The app's guard, or one over the built-in structural filter when the app gave none,
    bound to this call (its filter learns the names of the tools offered)."""
    from runtime.web.guard import FilterContext, guard_or_default

    guard = guard_or_default(context.services.guard)
    return guard.for_call(FilterContext(offered_tool_names=context.offered_tool_names))


async def retrieve_page(
    url: str, options: RetrievalOptions, out_of_bounds_refusal: str
) -> RetrievedWebPage:
    """The page, or a BLOCKED call: a redirect the tool's target rule rejects is refused with
    `out_of_bounds_refusal`, any other refusal with retrieval's own text (neither names an address).
    """
    from runtime.web.retrieval import WebPageAccessBlocked, WebPageAccessBlockReason, retrieve

    try:
        return await retrieve(url, options)
    except WebPageAccessBlocked as error:
        if error.reason is WebPageAccessBlockReason.TARGET_NOT_ALLOWED:
            raise ToolExecutionBlocked(out_of_bounds_refusal) from error
        raise ToolExecutionBlocked(error.message) from error


@dataclass(frozen=True, slots=True)
class PageContent:
    """A retrieved page as the model may see it, before truncation and filtering."""

    markdown: str
    is_html: bool
    extracted: ExtractedPage | None


async def page_content(page: RetrievedWebPage) -> PageContent:
    """HTML gets its main content extracted (off the event loop); a text document stays as sent."""
    from runtime.web.retrieval import ContentKind

    if page.content_kind is ContentKind.TEXT_DOCUMENT:
        return PageContent(page.body_text, is_html=False, extracted=None)
    from runtime.web.extract import extract_page

    extracted = await asyncio.to_thread(extract_page, page.body_text, page.final_url)
    return PageContent(extracted.markdown, is_html=True, extracted=extracted)


async def sanitized_page(
    context: ToolExecutionContext, content: PageContent, markdown: str, final_url: str
) -> WebPageModelContent:
    """The page as the model may see it: `markdown` (the cut content) plus, for HTML, the
    extracted title, description and dates, all through the context's injection guard."""
    from runtime.web.sanitize import WebPageModelContent, sanitize_page

    model = (
        WebPageModelContent.from_page(content.extracted, markdown)
        if content.extracted is not None
        else WebPageModelContent(markdown=markdown)
    )
    return await sanitize_page(guard_of(context), model, final_url)


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with a Z, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
