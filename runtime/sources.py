"""Sources shown with an answer: deduplicated while the loop collects them, rendered as Markdown.

Two sources are the same when they name the same address: scheme case, the spelling of the host
(as the address rules read it: `runtime.web.addresses.canonical_host`), a default port
(`default_port`) and a fragment do not matter. `file:` links keep a `#page=` fragment, because
two pages of one document are two different citations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, quote, urlsplit, urlunsplit

from runtime.messages import Source, SourceOrigin
from runtime.web.addresses import canonical_host, default_port

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]+:")
_MARKDOWN_LINK = re.compile(r"^\[[^\]]*\]\((?P<url>.*)\)$")
_ANGLE_LINK = re.compile(r"^<(?P<url>[^<>]*)>$")
_PAGE_ANCHOR = re.compile(r"^page=\d+$", re.IGNORECASE)

#: Characters an absolute address keeps; everything else is percent-escaped. Parentheses and
#: angle brackets are escaped too, so an address cannot end its Markdown link early.
_URI_SAFE = "/:@!$&'*+,;=-._~%?#[]"
#: Characters a relative address or local path keeps when written into a link.
_PATH_SAFE = "/:\\-._~"

_GROUP_HEADINGS: tuple[tuple[SourceOrigin, str], ...] = (
    (SourceOrigin.LLM, "Sources provided by the AI"),
    (SourceOrigin.TOOL, "Sources used by tools"),
    (SourceOrigin.RAG, "Sources provided by the data providers"),
)


def _clean(url: str) -> str:
    return url.strip().replace("\r", "").replace("\n", "")


def _absolute(url: str) -> SplitResult | None:
    if not _SCHEME.match(url):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for an unreadable port
    except ValueError:
        return None
    return parts


def _host(host: str) -> str:
    """The host as the address rules write it; one they cannot read stays as written, in lower
    case (a source is still shown, it only finds no other spelling of itself)."""
    return canonical_host(host) or host.lower()


def source_key(url: str) -> str:
    """The identity two sources share when they name the same address."""
    cleaned = _clean(url)
    parts = _absolute(cleaned)
    if parts is None:
        return cleaned
    scheme = parts.scheme.lower()
    host = _host(parts.hostname) if parts.hostname else ""
    port = parts.port
    netloc = host
    if port is not None and default_port(scheme) != port:
        netloc = f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{netloc}"
    fragment = parts.fragment if scheme == "file" and _PAGE_ANCHOR.match(parts.fragment) else ""
    # An address with a host and no path asks for the root: "https://a.b" is "https://a.b/".
    path = parts.path or ("/" if host else "")
    return urlunsplit(
        (
            scheme,
            netloc,
            quote(path, safe=_URI_SAFE),
            quote(parts.query, safe=_URI_SAFE),
            fragment,
        )
    )


def merge_sources(existing: Iterable[Source], new: Iterable[Source]) -> list[Source]:
    """`existing` followed by the new sources whose address is not there yet; the first wins."""
    merged = list(existing)
    seen = {source_key(s.url) for s in merged}
    for source in new:
        key = source_key(source.url)
        if key not in seen:
            seen.add(key)
            merged.append(source)
    return merged


@dataclass(frozen=True, slots=True)
class _SourceGroup:
    """Sources of one origin under their heading; `numbered` counts through all groups."""

    origin: SourceOrigin
    heading: str
    numbered: tuple[tuple[int, Source], ...]


def group_sources(sources: Sequence[Source]) -> list[_SourceGroup]:
    """Groups in the fixed order AI, tools, data providers; empty groups are left out."""
    groups: list[_SourceGroup] = []
    number = 0
    for origin, heading in _GROUP_HEADINGS:
        members = [s for s in sources if s.origin is origin]
        if not members:
            continue
        numbered = []
        for source in members:
            number += 1
            numbered.append((number, source))
        groups.append(_SourceGroup(origin, heading, tuple(numbered)))
    return groups


def _markdown_title(title: str) -> str:
    flat = title.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return flat.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _markdown_url(url: str, strip_file_page_anchor: bool) -> str:
    cleaned = _clean(url)
    for wrapped in (_MARKDOWN_LINK, _ANGLE_LINK):
        match = wrapped.match(cleaned)
        if match:
            cleaned = _clean(match.group("url"))
    parts = _absolute(cleaned)
    if parts is None:
        return quote(cleaned, safe=_PATH_SAFE)
    if strip_file_page_anchor and parts.scheme.lower() == "file":
        parts = parts._replace(fragment="")
    return quote(urlunsplit(parts), safe=_URI_SAFE)


def render_sources_markdown(
    sources: Sequence[Source], *, strip_file_page_anchors: bool = False
) -> str:
    """`## <heading>` per group and `- [n] [title](url)` per source; "" when there are none."""
    blocks = []
    for group in group_sources(sources):
        lines = [f"## {group.heading}"]
        for number, source in group.numbered:
            title = _markdown_title(source.title or source.url)
            url = _markdown_url(source.url, strip_file_page_anchors)
            lines.append(f"- [{number}] [{title}]({url})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_sources_export(
    sources: Sequence[Source], *, strip_file_page_anchors: bool = True
) -> str:
    """The Markdown for an exported chat: one `# Sources` heading above the groups, or nothing."""
    body = render_sources_markdown(sources, strip_file_page_anchors=strip_file_page_anchors)
    return f"# Sources\n\n{body}" if body else ""
