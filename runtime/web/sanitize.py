"""Filter every model-facing field of fetched pages through the guard, in one request per tool call.

A title, a description, an author name or a date is written by whoever controls the page, so each
goes through the filter with the main content. All fields of a page share the page's source, so
the user's report names the page rather than its fields. Callers filter after truncation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from runtime.web.extract import ExtractedPage
from runtime.web.guard import GuardText, PromptInjectionGuard, web_content


@dataclass(frozen=True, slots=True)
class WebPageModelContent:
    """Everything of a page that reaches the model. All of it is untrusted."""

    markdown: str
    title: str = ""
    description: str = ""
    authors: tuple[str, ...] = ()
    language: str = ""
    published_time: str = ""
    modified_time: str = ""

    @classmethod
    def from_page(cls, page: ExtractedPage, markdown: str | None = None) -> WebPageModelContent:
        """The model-facing fields of an extracted page; pass `markdown` once truncated."""
        return cls(
            markdown=page.markdown if markdown is None else markdown,
            title=page.title,
            description=page.description,
            authors=page.authors,
            language=page.language,
            published_time=page.published_time,
            modified_time=page.modified_time,
        )


def _fields(content: WebPageModelContent) -> list[str]:
    return [
        content.markdown,
        content.title,
        content.description,
        content.language,
        content.published_time,
        content.modified_time,
        *content.authors,
    ]


async def sanitize_pages(
    guard: PromptInjectionGuard,
    pages: Sequence[tuple[WebPageModelContent, str]],
) -> list[WebPageModelContent]:
    """Filter all pages of one tool call in ONE guard batch; `str` is each page's final URL.

    Fields are sent in the order markdown, title, description, language, published time,
    modified time, then each author, page after page, and rebuilt by position.
    """
    cleaned, _ = await sanitize_pages_and_texts(guard, pages, ())
    return cleaned


async def sanitize_pages_and_texts(
    guard: PromptInjectionGuard,
    pages: Sequence[tuple[WebPageModelContent, str]],
    texts: Sequence[GuardText],
) -> tuple[list[WebPageModelContent], list[str]]:
    """`sanitize_pages` plus other outside texts of the same call (e.g. a search service's notes),
    still in ONE guard batch."""
    page_texts = [
        GuardText(text, source)
        for content, final_url in pages
        for source in (web_content(final_url),)
        for text in _fields(content)
    ]
    if not page_texts and not texts:
        return [], []
    filtered = await guard.sanitize_many([*page_texts, *texts])
    rebuilt: list[WebPageModelContent] = []
    position = 0
    for content, _ in pages:
        count = 6 + len(content.authors)
        markdown, title, description, language, published, modified, *authors = filtered[
            position : position + count
        ]
        position += count
        rebuilt.append(
            WebPageModelContent(
                markdown=markdown,
                title=title,
                description=description,
                authors=tuple(authors),
                language=language,
                published_time=published,
                modified_time=modified,
            )
        )
    return rebuilt, filtered[position:]


async def sanitize_page(
    guard: PromptInjectionGuard, content: WebPageModelContent, final_url: str
) -> WebPageModelContent:
    """The single-page form of `sanitize_pages`."""
    return (await sanitize_pages(guard, [(content, final_url)]))[0]
