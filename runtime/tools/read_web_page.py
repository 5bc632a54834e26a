"""read_web_page: load one address the chat may read, as metadata plus Markdown (or text as sent).

Before a byte is sent, two rules decide whether the address may be read at all: the chat's
outbound-data restriction (after a mailbox was read) and, with free address choice OFF, whether
the address was given to the model word for word (system prompt, user messages and their
attachments, tool results — compared by request key). Refusals never repeat the address, so a
made-up address carrying data leaves no second trace. The rest is the SSRF-safe retrieval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from policy._runtime_seam import (
    ARG_URL,
    OutboundDataRestriction,
    ReadWebPageTool,
    read_web_page_settings,
)
from runtime.arguments import ArgumentError, ArgumentReader
from runtime.execution import ToolExecutionBlocked, ToolExecutionContext, ToolExecutionResult
from runtime.messages import Source, SourceOrigin
from runtime.tools._common import (
    SMALL_PAGE_CHARACTERS,
    iso_utc,
    page_content,
    retrieval_options,
    retrieve_page,
    sanitized_page,
)

FREE_ADDRESS_CHOICE_REFUSAL = (
    "Free address choice is off, so only web pages whose address stands word for word in the "
    "chat can be read: in the system prompt, in a message of the user or a document attached to "
    "it, or in the result of a tool. The requested address is none of them. If the page is "
    "needed, the user can write its address into the chat."
)
ONLY_LINKS_FROM_CHAT_REFUSAL = (
    "This chat read a mailbox, so only addresses given in the chat and pages of the configured "
    "wiki can be read. The requested address is neither. If the page is needed, the user can "
    "write its address into the chat."
)
ONLY_CONFIGURED_SERVICES_REFUSAL = (
    "This chat read a mailbox, so only pages of the configured wiki can be read. The requested "
    "address is not one of them."
)
REDIRECT_OUT_OF_BOUNDS_REFUSAL = (
    "The page redirected to an address this chat may not read, so it was not loaded."
)

_EMPTY_TEXT_WARNING = "The response was empty."
EMPTY_PAGE_WARNING = (
    "No readable static page content was extracted. The page may require JavaScript, "
    "authentication, or browser cookies."
)
SMALL_PAGE_WARNING = (
    "Only a small amount of readable page content was extracted; the result may be incomplete."
)


def _read_url(arguments: Mapping[str, Any]) -> tuple[str, str]:
    """The url argument and its request key; anything but an absolute http(s) URL is refused."""
    from runtime.web.addresses import request_key

    url = ArgumentReader(arguments).read_string(ARG_URL)
    key = request_key(url)
    if key is None or not _has_usable_port(url):
        raise ArgumentError(ARG_URL, f"Argument '{ARG_URL}' must be a valid HTTP or HTTPS URL.")
    return url, key


def _has_usable_port(url: str) -> bool:
    """A written port a socket can connect to (urlsplit refuses anything above 65535)."""
    try:
        port = urlsplit(url.strip()).port
    except ValueError:
        return False
    return port is None or port > 0


def _within_wiki_check(context: ToolExecutionContext) -> Callable[[str], bool] | None:
    from runtime.tools.search_confluence import within_wiki

    wiki = context.services.request_extras.wiki_base_url.strip()
    if not wiki:
        return None
    return lambda url: within_wiki(url, wiki)


def _target_rule(
    url: str, key: str, context: ToolExecutionContext, free_address_choice: bool
) -> Callable[[str], bool] | None:
    """Refuses what the chat's restriction and free address choice forbid; else the redirect rule.

    Returns the check every hop must pass (the wiki only, when only the wiki makes the address
    readable), or None when any hop the retrieval allows may be followed.
    """
    given = key in context.given_web_addresses
    in_wiki = _within_wiki_check(context)
    is_wiki_page = in_wiki is not None and in_wiki(url)
    restriction = context.outbound_restriction
    rule: Callable[[str], bool] | None = None
    if restriction is OutboundDataRestriction.UNRESTRICTED:
        pass
    elif restriction is OutboundDataRestriction.ONLY_LINKS_FROM_CHAT:
        if not (given or is_wiki_page):
            raise ToolExecutionBlocked(ONLY_LINKS_FROM_CHAT_REFUSAL)
        rule = None if given else in_wiki
    else:
        if not is_wiki_page:
            raise ToolExecutionBlocked(ONLY_CONFIGURED_SERVICES_REFUSAL)
        rule = in_wiki
    if not free_address_choice and not given:
        raise ToolExecutionBlocked(FREE_ADDRESS_CHOICE_REFUSAL)
    return rule


class ReadWebPageExecutableTool(ReadWebPageTool):
    """The policy-side read_web_page plus its execution."""

    sensitive_trace_argument_names: frozenset[str] = frozenset()
    returns_untrusted_external_content = True

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        from runtime.web.truncate import truncate_markdown

        settings = read_web_page_settings(self, context.settings)
        url, key = _read_url(arguments)
        rule = _target_rule(url, key, context, settings.free_address_choice)
        options = retrieval_options(
            context,
            timeout_seconds=settings.timeout_seconds,
            provider_confidence=context.provider.confidence,
            allowed_private_hosts=settings.allowed_private_hosts,
            is_target_allowed=rule,
            os_sign_in=settings.os_sign_in,
        )
        page = await retrieve_page(url, options, REDIRECT_OUT_OF_BOUNDS_REFUSAL)
        content = await page_content(page)
        limit = settings.max_content_characters
        markdown = truncate_markdown(content.markdown, limit)
        truncated = markdown != content.markdown
        warnings: list[str] = []
        if not content.markdown.strip():
            warnings.append(EMPTY_PAGE_WARNING if content.is_html else _EMPTY_TEXT_WARNING)
        elif content.is_html and len(content.markdown) < SMALL_PAGE_CHARACTERS:
            warnings.append(SMALL_PAGE_WARNING)
        if truncated:
            warnings.append(
                f"The extracted page content was truncated from {len(content.markdown)} to "
                f"{len(markdown)} characters."
            )
        clean = await sanitized_page(context, content, markdown, page.final_url)
        status = (
            "empty response"
            if not clean.markdown.strip()
            else "partial"
            if truncated or SMALL_PAGE_WARNING in warnings
            else "complete"
        )
        page_json: dict[str, Any] = {"text_content": clean.markdown}
        if clean.title:
            page_json["title"] = clean.title
        if clean.description:
            page_json["description"] = clean.description
        if clean.authors:
            page_json["authors"] = list(clean.authors)
        metadata: dict[str, Any] = {}
        for name, value in (
            ("language", clean.language),
            ("published_time", clean.published_time),
            ("modified_time", clean.modified_time),
            ("media_type", page.media_type),
        ):
            if value:
                metadata[name] = value
        metadata["warnings"] = warnings
        if truncated:
            metadata["original_content_characters"] = len(content.markdown)
            metadata["returned_content_characters"] = len(markdown)
        sources = (
            (Source(clean.title or page.final_url, page.final_url, SourceOrigin.TOOL),)
            if clean.markdown.strip()
            else ()
        )
        return ToolExecutionResult(
            json_content={
                "url": url,
                "status": status,
                "retrieved_at_utc": iso_utc(page.retrieved_at_utc),
                "content": page_json,
                "metadata": metadata,
            },
            sources=sources,
            required_provider_confidence=page.required_provider_confidence,
            injection_filtered=True,
        )


def create_tool() -> ReadWebPageExecutableTool:
    """The entry point `toolpolicy.tools: read_web_page`."""
    return ReadWebPageExecutableTool()
