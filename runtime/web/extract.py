"""HTML page → main content as Markdown, plus the page's metadata.

The page is parsed once with lxml. Everything a reader cannot see, or that runs code, is removed
from that tree first (scripts, styles, comments, hidden elements, `javascript:`/`data:` URLs), so
hidden text never reaches the Markdown; the cleaned tree then goes to trafilatura for the main
content, with a plain Markdown conversion of the content root when trafilatura finds nothing.
Nothing here is filtered for prompt injection yet: callers truncate, then sanitize.
"""

from __future__ import annotations

import html as html_entities
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any
from urllib.parse import urljoin, urlsplit

MAX_METADATA_CHARACTERS = 1000
_MAX_AUTHOR_CHARACTERS = 200
MAX_AUTHORS = 10
_MAX_OUTLINE_CHARACTERS = 200
_MAX_JSON_LD_SCRIPTS = 20
_MAX_JSON_LD_BYTES = 256 * 1024
_MAX_JSON_LD_DEPTH = 32
_MAX_ROOT_CANDIDATES = 100
_MIN_ROOT_TEXT = 200


@dataclass(frozen=True, slots=True)
class ExtractedPage:
    """What an HTML page says, before truncation and prompt-injection filtering."""

    markdown: str
    title: str = ""
    description: str = ""
    authors: tuple[str, ...] = ()
    language: str = ""
    published_time: str = ""
    modified_time: str = ""
    final_url: str = ""
    site_name: str = ""
    canonical_url: str = ""
    outline: tuple[str, ...] = ()


# --- HTML content rules ------------------------------------------------------------------------

_NOISE_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "dialog",
    "iframe",
    "object",
    "embed",
    "canvas",
    "svg",
    "button",
    "input",
    "select",
    "textarea",
    "link",
    "meta",
    "frame",
    "frameset",
    "applet",
)
_NOISE_ROLES = frozenset({"navigation", "dialog", "alertdialog"})
_NOISE_TOKENS = frozenset(
    {
        "cookie-banner",
        "cookie-consent",
        "consent-banner",
        "newsletter-popup",
        "share-buttons",
        "social-share",
    }
)
_HIDING_TOKENS = frozenset(
    {
        "hidden",
        "d-none",
        "sr-only",
        "visually-hidden",
        "visuallyhidden",
        "screen-reader-text",
        "screen-reader-only",
        "is-hidden",
        "u-hidden",
        "hide",
        "invisible",
    }
)
_HIDING_ATTRIBUTES = frozenset({"hidden", "aria-hidden", "style", "role", "class", "id"})
"""The attributes `_is_hidden` reads: an element without any of them is not hidden by itself."""
_URL_ATTRIBUTES = ("href", "src", "poster", "action", "formaction", "background", "cite", "data")
_ABSOLUTE_ATTRIBUTES = ("href", "src", "poster")
_DROPPED_ATTRIBUTES = ("srcset", "xlink:href", "ping")
_CLEANED_ATTRIBUTES = frozenset({"style", *_DROPPED_ATTRIBUTES, *_URL_ATTRIBUTES})
"""The attributes cleaning touches (an `img` is looked at whatever it carries)."""
_MEDIA_TAGS = frozenset({"img", "video", "audio", "source", "track", "picture"})
_CODE_SCHEMES = ("javascript:", "vbscript:", "data:")
_SCHEME_NOISE = re.compile(r"[\x00-\x20\x7f-\x9f\u00ad\u200b-\u200f\u2028\u2029\ufeff]+")
_SCHEME_PREFIX = re.compile(r"^([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_NEGATIVE_OFFSET = re.compile(r"^-\d{3,}(?:\.\d+)?(?:px|em|rem|pt|vw|vh|%)?$")


def is_code_running_url(value: str) -> bool:
    """A `javascript:`, `vbscript:` or `data:` URL, however its scheme is disguised.

    Browsers ignore whitespace and control characters inside a scheme and decode character
    references before reading it, so `java&#9;script:` and `JaVa\\nScript:` count too.
    """
    if "&" not in value:
        colon = value.find(":")
        return colon >= 0 and _SCHEME_NOISE.sub("", value[: colon + 1]).lower() in _CODE_SCHEMES
    decoded = value
    for _ in range(3):
        unescaped = html_entities.unescape(decoded)
        if unescaped == decoded:
            break
        decoded = unescaped
    squeezed = _SCHEME_NOISE.sub("", decoded).lower()
    return squeezed.startswith(_CODE_SCHEMES)


def _declarations(style: str) -> Iterator[tuple[str, str, bool]]:
    for declaration in style.split(";"):
        name, colon, value = declaration.partition(":")
        if not colon:
            continue
        value = "".join(value.split()).lower()
        important = value.endswith("!important")
        if important:
            value = value[: -len("!important")]
        yield "".join(name.split()).lower(), value, important


def _effective_style(style: str) -> dict[str, str]:
    """Property → value as a browser would apply it: the last wins, unless an earlier one is !important."""
    values: dict[str, tuple[str, bool]] = {}
    for name, value, important in _declarations(style):
        earlier = values.get(name)
        if earlier is None or important or not earlier[1]:
            values[name] = (value, important)
    return {name: value for name, (value, _) in values.items()}


def is_hidden_by_style(style: str) -> bool:
    """True when a style declaration list hides its element from a reader."""
    properties = _effective_style(style)
    if properties.get("display") == "none":
        return True
    if properties.get("visibility") in ("hidden", "collapse"):
        return True
    if properties.get("content-visibility") == "hidden":
        return True
    if properties.get("opacity") in ("0", "0.0", "0%", ".0"):
        return True
    if properties.get("font-size") in ("0", "0px", "0em", "0rem", "0pt", "0%"):
        return True
    return any(
        _NEGATIVE_OFFSET.match(properties.get(name, "")) is not None
        for name in ("text-indent", "left", "top")
    )


def _tokens(element: Any) -> set[str]:
    classes = (element.get("class") or "").lower().split()
    identifier = (element.get("id") or "").lower().split()
    return {*classes, *identifier}


def _hidden_selectors(style_sheets: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """Classes and ids that top-level rules of the page's own style sheets hide.

    Only plain `.class` / `#id` selectors outside `@media` and other at-rules are read: enough
    for the common trick of hiding injected text through a class, without a CSS engine.
    """
    classes: set[str] = set()
    ids: set[str] = set()
    for sheet in style_sheets:
        for selectors, body in _top_level_rules(sheet):
            if not is_hidden_by_style(body):
                continue
            for selector in selectors.split(","):
                selector = selector.strip()
                if _SIMPLE_SELECTOR.fullmatch(selector):
                    (classes if selector[0] == "." else ids).add(selector[1:].lower())
    return frozenset(classes), frozenset(ids)


_SIMPLE_SELECTOR = re.compile(r"[.#][A-Za-z_][\w\-]*")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)
_CSS_BRACE = re.compile(r"[{}]")


def _top_level_rules(sheet: str) -> Iterator[tuple[str, str]]:
    sheet = _CSS_COMMENT.sub("", sheet)
    depth = 0
    start = 0
    selector = ""
    for brace in _CSS_BRACE.finditer(sheet):
        index = brace.start()
        if brace.group(0) == "{":
            if depth == 0:
                selector = sheet[start:index]
                start = index + 1
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                if not selector.lstrip().startswith("@"):
                    yield selector, sheet[start:index]
                start = index + 1


def _is_hidden(element: Any, hidden_classes: frozenset[str], hidden_ids: frozenset[str]) -> bool:
    if element.get("hidden") is not None:
        return True
    if (element.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = element.get("style")
    if style and is_hidden_by_style(style):
        return True
    if (element.get("role") or "").strip().lower() in _NOISE_ROLES:
        return True
    classes = (element.get("class") or "").lower().split()
    if any(token in _HIDING_TOKENS or token in hidden_classes for token in classes):
        return True
    if (element.get("id") or "").lower() in hidden_ids:
        return True
    return bool(_tokens(element) & _NOISE_TOKENS)


# --- cleaning ---------------------------------------------------------------------------------


@lru_cache(maxsize=64)
def _origin(base: str) -> str:
    parts = urlsplit(base)
    return f"{parts.scheme}://{parts.netloc}"


def _readable(url: str) -> bool:
    """Whether urllib can split `url`; a page may hold any string, e.g. an unclosed `[` host."""
    try:
        urlsplit(url)
    except ValueError:
        return False
    return True


def _absolute(value: str, base: str) -> str | None:
    """`value` resolved against `base` when the result is an http(s) URL, else None."""
    value = value.strip()
    if (
        value.startswith("/")
        and not value.startswith("//")
        and "\\" not in value
        and value.isprintable()
    ):
        # A site-relative path, most links on a page: urlsplit cannot fail on it (no scheme, no
        # host, and no tab or line break whose removal would make `//` of it), so skip asking.
        return _origin(base) + value
    if not _readable(value):
        return None
    if value.startswith(("https://", "http://")):
        return value
    if value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return _origin(base) + value
    joined = urljoin(base, value)
    return joined if joined.startswith(("https://", "http://")) else None


def _base_url(document: Any, final_url: str) -> str:
    for base in document.iter("base"):
        href = base.get("href")
        if href:
            absolute = _absolute(href, final_url)
            if absolute:
                return absolute
    return final_url


def _clean(document: Any, body: Any, base: str) -> None:
    """Remove, in place, everything a reader cannot see or that would run code."""
    from lxml import etree

    sheets = [style.text_content() for style in document.iter("style")]
    hidden_classes, hidden_ids = _hidden_selectors(sheets)
    doomed: list[Any] = list(body.iter(etree.Comment, etree.ProcessingInstruction))
    doomed.extend(body.iter(*_NOISE_TAGS))
    for element in body.iter(etree.Element):
        # Most elements carry no attribute that can hide them (a link's href, a cell's colspan):
        # their attribute names alone rule them out.
        if not _HIDING_ATTRIBUTES.isdisjoint(element.keys()) and _is_hidden(
            element, hidden_classes, hidden_ids
        ):
            doomed.append(element)
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()
    for form in list(body.iter("form")):
        if form.getparent() is not None:
            form.drop_tag()
    for element in list(body.iter(etree.Element)):
        names = element.keys()
        if not names or (_CLEANED_ATTRIBUTES.isdisjoint(names) and element.tag != "img"):
            continue
        # Visibility is decided; a leftover style must not make the extractor second-guess it.
        if "style" in names:
            del element.attrib["style"]
        _clean_urls(element, base, names)


def _clean_urls(element: Any, base: str, names: list[str]) -> None:
    """Drop code-running URLs, make the others absolute, keep only images a reader can name.

    `names`: the element's attribute names when cleaning began."""
    for name in _DROPPED_ATTRIBUTES:
        if name in names:
            del element.attrib[name]
    for name in _URL_ATTRIBUTES:
        if name not in names:
            continue
        value = element.get(name)
        if value is None:
            continue
        if is_code_running_url(value):
            if element.tag in _MEDIA_TAGS and element.getparent() is not None:
                element.drop_tree()
                return
            del element.attrib[name]
            if element.tag == "a" and element.getparent() is not None:
                element.drop_tag()
                return
        elif name in _ABSOLUTE_ATTRIBUTES:
            absolute = _absolute(value, base)
            if absolute is not None:
                element.set(name, absolute)
    if element.tag == "img":
        alt = next(
            (
                element.get(name).strip()
                for name in ("alt", "aria-label", "title")
                if (element.get(name) or "").strip()
            ),
            None,
        )
        if alt is None or not element.get("src"):
            if element.getparent() is not None:
                element.drop_tree()
        else:
            element.set("alt", alt)
            element.attrib.pop("title", None)


def _text_length(element: Any) -> int:
    """The length of the element's text (its tail not included), as `itertext` would join it."""
    from lxml import etree

    return len(etree.tostring(element, method="text", encoding="unicode", with_tail=False).strip())


def _content_root(body: Any) -> Any:
    """main, [role=main] or article with the most text, when it is clearly the content."""
    candidates = body.xpath("(.//main | .//*[@role='main'] | .//article)")[:_MAX_ROOT_CANDIDATES]
    if not candidates:
        return body
    lengths = [(_text_length(candidate), candidate) for candidate in candidates]
    length, best = max(lengths, key=lambda pair: pair[0])
    if length < _MIN_ROOT_TEXT:
        return body
    if best.tag == "main" or (best.get("role") or "").lower() == "main":
        return best
    return best if length * 2 >= _text_length(body) else body


def _drop_page_furniture(body: Any) -> None:
    """Asides and footers outside main/article, when the whole body is the content root."""
    for element in body.xpath(
        ".//*[(self::aside or self::footer or @role='contentinfo' or @role='complementary')"
        " and not(ancestor::main) and not(ancestor::article)]"
    ):
        if element.getparent() is not None:
            element.drop_tree()


# --- conversion -------------------------------------------------------------------------------

_EXCESS_BLANK_LINES = re.compile(r"\n{3,}")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_AS_CONTROL_MARKS = bytes(
    0x01 if _CONTROL_CHARACTERS.fullmatch(chr(byte)) else 0x20 for byte in range(256)
)


def _has_control_character(text: str) -> bool:
    """What `_CONTROL_CHARACTERS.search` answers, found in C several times faster: every
    control character is ASCII, so a non-ASCII one (a lone surrogate too) may stand as `?`."""
    return b"\x01" in text.encode("ascii", "replace").translate(_AS_CONTROL_MARKS)


def _normalize_markdown(markdown: str) -> str:
    markdown = markdown.replace("\r\n", "\n").replace("\r", "\n")
    if _has_control_character(markdown):
        markdown = _CONTROL_CHARACTERS.sub("", markdown)
    if "\n\n\n" in markdown:  # the pattern tries every position; a plain search does not
        markdown = _EXCESS_BLANK_LINES.sub("\n\n", markdown)
    return markdown.strip()


TRAFILATURA_OPTIONS: Mapping[str, Any] = MappingProxyType(
    {
        "output_format": "markdown",
        "include_links": True,
        "include_tables": True,
        "include_images": True,
        "include_formatting": True,
        "include_comments": False,
        "fast": True,
        "with_metadata": False,
    }
)
"""How the main content is extracted (`bench/fetch_extract.py` gives plain trafilatura the same).

`fast`: no fallback extractors (readability, justext): the tree is already cleaned, and a page
where trafilatura finds nothing falls back to a plain conversion of the content root. No `url`:
links are already absolute, and trafilatura would resolve each one again."""


def _with_trafilatura(document: Any) -> str:
    import trafilatura

    markdown = trafilatura.extract(document, **TRAFILATURA_OPTIONS)
    return markdown or ""


def _with_markdownify(root: Any) -> str:
    from lxml import html as lxml_html
    from markdownify import markdownify

    markup = lxml_html.tostring(root, encoding="unicode")
    markdown: str = markdownify(markup, heading_style="ATX", bullets="-", autolinks=True)
    return markdown


# --- metadata ---------------------------------------------------------------------------------

_WHITESPACE = re.compile(r"\s+")
_LOOKS_LIKE_URL = re.compile(r"^(?:https?:)?//|^www\.", re.IGNORECASE)
_ARTICLE_TYPES = frozenset(
    {
        "article",
        "newsarticle",
        "blogposting",
        "techarticle",
        "scholarlyarticle",
        "report",
        "socialmediaposting",
        "liveblogposting",
        "analysisnewsarticle",
        "reportagenewsarticle",
        "opinionnewsarticle",
        "reviewnewsarticle",
        "howto",
        "recipe",
        "review",
    }
)
_PAGE_TYPES = frozenset(
    {
        "webpage",
        "aboutpage",
        "faqpage",
        "itempage",
        "collectionpage",
        "profilepage",
        "qapage",
        "searchresultspage",
        "contactpage",
        "medicalwebpage",
    }
)


def _clip(text: str, limit: int = MAX_METADATA_CHARACTERS) -> str:
    return _WHITESPACE.sub(" ", text).strip()[:limit].strip()


def _meta_index(document: Any) -> dict[str, list[str]]:
    """`name`/`property`/`itemprop`/`http-equiv` of every meta tag (lowercased) → its contents."""
    index: dict[str, list[str]] = {}
    for meta in document.iter("meta"):
        content = meta.get("content")
        if content is None or not content.strip():
            continue
        for attribute in ("name", "property", "itemprop", "http-equiv"):
            key = (meta.get(attribute) or "").strip().lower()
            if key:
                index.setdefault(key, []).append(content)
    return index


def _depth_within(value: Any, limit: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return True


def _json_ld_objects(document: Any) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    budget = _MAX_JSON_LD_BYTES
    scripts = document.xpath(
        "//script[translate(normalize-space(@type), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', "
        "'abcdefghijklmnopqrstuvwxyz')='application/ld+json']"
    )
    for script in scripts[:_MAX_JSON_LD_SCRIPTS]:
        text = script.text or ""
        budget -= len(text.encode("utf-8"))
        if budget < 0:
            break
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not _depth_within(data, _MAX_JSON_LD_DEPTH):
            continue
        pending = [data]
        while pending:
            item = pending.pop()
            if isinstance(item, list):
                pending.extend(reversed(item))
            elif isinstance(item, dict):
                objects.append(item)
                graph = item.get("@graph")
                if isinstance(graph, list):
                    pending.extend(reversed(graph))
    return objects


def _types(item: dict[str, Any]) -> set[str]:
    kind = item.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.lower() for k in kinds if isinstance(k, str)}


def _same_page(a: str, b: str) -> bool:
    def key(url: str) -> str:
        parts = urlsplit(url.strip())
        return f"{parts.netloc.lower()}{parts.path.rstrip('/')}"

    return _readable(a.strip()) and _readable(b.strip()) and key(a) == key(b)


def _item_urls(item: dict[str, Any]) -> list[str]:
    urls: list[str] = []
    for name in ("url", "@id", "mainEntityOfPage"):
        value = item.get(name)
        if isinstance(value, dict):
            value = value.get("@id") or value.get("url")
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            urls.append(value)
    return urls


def _best_json_ld(objects: list[dict[str, Any]], page_url: str) -> dict[str, Any] | None:
    best: tuple[int, dict[str, Any]] | None = None
    for item in objects:
        types = _types(item)
        score = 100 if types & _ARTICLE_TYPES else 20 if types & _PAGE_TYPES else 0
        if score == 0:
            continue
        urls = _item_urls(item)
        if urls:
            score += 50 if any(_same_page(url, page_url) for url in urls) else -80
        if _string(item.get("headline")) or _string(item.get("name")):
            score += 10
        if best is None or score > best[0]:
            best = (score, item)
    return best[1] if best is not None else None


def _string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _string(value.get("name") or value.get("@value"))
    if isinstance(value, list) and value:
        return _string(value[0])
    return ""


def _json_ld_people(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [_string(item) for item in items if _string(item)]


def _first(*candidates: str | None) -> str:
    for candidate in candidates:
        if candidate and candidate.strip():
            return _clip(candidate)
    return ""


_ITEMPROPS = frozenset({"headline", "description", "author", "datePublished", "dateModified"})


def _itemprop_texts(root: Any) -> dict[str, str]:
    """Per microdata property we read: the text of the first element (not a meta) that has it
    and any text, found in one pass over the content."""
    found: dict[str, str] = {}
    for element in root.xpath(".//*[@itemprop]"):
        name = element.get("itemprop")
        if name not in _ITEMPROPS or name in found or element.tag == "meta":
            continue
        text = str(element.get("content") or element.get("datetime") or element.text_content())
        if text.strip():
            found[name] = text
    return found


def _authors(candidates: Iterable[Iterable[str]]) -> tuple[str, ...]:
    """The first source that names anyone, deduplicated case-insensitively, URLs left out."""
    for source in candidates:
        names: dict[str, str] = {}
        for raw in source:
            for part in (raw,) if "," not in raw or len(raw) > 80 else raw.split(","):
                name = _clip(part, _MAX_AUTHOR_CHARACTERS)
                if name and not _LOOKS_LIKE_URL.search(name):
                    names.setdefault(name.casefold(), name)
        if names:
            return tuple(list(names.values())[:MAX_AUTHORS])
    return ()


def _outline(root: Any) -> tuple[str, ...]:
    headings: dict[str, str] = {}
    for heading in root.iter("h1", "h2", "h3"):
        text = _clip(heading.text_content(), _MAX_OUTLINE_CHARACTERS)
        if text:
            headings.setdefault(text.casefold(), text)
    return tuple(headings.values())


# --- the page ---------------------------------------------------------------------------------


@lru_cache(maxsize=2)
def _html_parser(encoding: str | None = None) -> Any:
    """lxml.html's parser, with every node's Python class chosen in C.

    lxml.html picks each node's class in a Python method (special classes for form controls,
    which cleaning removes); a page of 450 elements paid 0.2-0.3 ms for it, and trafilatura's
    copies of the tree paid it again. Here every element is an `HtmlElement`, every comment an
    `HtmlComment`: the same methods, found without calling back into Python. Built once; lxml
    serializes parses that share a parser.
    """
    from lxml import etree
    from lxml import html as lxml_html

    parser = lxml_html.HTMLParser(encoding=encoding)
    parser.set_element_class_lookup(
        etree.ElementDefaultClassLookup(
            element=lxml_html.HtmlElement,
            comment=lxml_html.HtmlComment,
            pi=lxml_html.HtmlProcessingInstruction,
            entity=lxml_html.HtmlEntity,
        )
    )
    return parser


def _parse(html: str) -> Any | None:
    from lxml import etree
    from lxml import html as lxml_html

    if not html.strip():
        return None
    try:
        return lxml_html.document_fromstring(html, parser=_html_parser())
    except ValueError:
        # A str carrying an XML encoding declaration: hand lxml bytes it may decode itself.
        parser = _html_parser("utf-8")
        try:
            return lxml_html.document_fromstring(html.encode("utf-8"), parser=parser)
        except (etree.ParserError, ValueError):
            return None
    except etree.ParserError:
        return None


def extract_page(html: str, final_url: str) -> ExtractedPage:
    """Main content as Markdown plus metadata. CPU only; an unreadable page gives empty fields."""
    document = _parse(html)
    if document is None:
        return ExtractedPage(markdown="", final_url=final_url)
    meta = _meta_index(document)
    json_ld = _best_json_ld(_json_ld_objects(document), final_url) or {}
    title_element = document.find(".//title")
    base = _base_url(document, final_url)
    canonical = next(
        (
            _absolute(link.get("href") or "", base)
            for link in document.iter("link")
            if "canonical" in (link.get("rel") or "").lower().split()
        ),
        None,
    )
    body = document.find("body")
    if body is None:
        body = document
    _clean(document, body, base)
    root = _content_root(body)
    if root is body:
        _drop_page_furniture(body)
    first_h1 = next((h1.text_content() for h1 in root.iter("h1")), "")
    itemprops = _itemprop_texts(body)

    def metas(*names: str) -> list[str]:
        return [value for name in names for value in meta.get(name, [])]

    def meta_first(*names: str) -> str:
        return next(iter(metas(*names)), "")

    title = _first(
        _string(json_ld.get("headline")) or _string(json_ld.get("name")),
        meta_first("og:title"),
        meta_first("citation_title"),
        meta_first("dc.title", "dcterms.title"),
        meta_first("headline") or itemprops.get("headline", ""),
        first_h1,
        meta_first("twitter:title"),
        title_element.text_content() if title_element is not None else "",
    )
    description = _first(
        _string(json_ld.get("description")),
        meta_first("og:description"),
        meta_first("description"),
        meta_first("dc.description", "dcterms.description"),
        meta_first("twitter:description"),
        itemprops.get("description", ""),
    )
    authors = _authors(
        [
            _json_ld_people(json_ld.get("author")),
            metas("author"),
            metas("citation_author"),
            metas("article:author"),
            metas("dc.creator", "dcterms.creator"),
            [itemprops.get("author", "")],
        ]
    )
    language = _first(
        document.get("lang"),
        document.get("xml:lang"),
        meta_first("content-language", "language", "dc.language"),
        meta_first("og:locale"),
        _string(json_ld.get("inLanguage")),
    )
    published = _first(
        _string(json_ld.get("datePublished")),
        meta_first("article:published_time"),
        meta_first("citation_publication_date", "citation_date"),
        meta_first("dc.date", "dcterms.created", "dcterms.date", "date"),
        meta_first("datepublished") or itemprops.get("datePublished", ""),
    )
    modified = _first(
        _string(json_ld.get("dateModified")),
        meta_first("article:modified_time"),
        meta_first("og:updated_time"),
        meta_first("dcterms.modified", "last-modified"),
        meta_first("datemodified") or itemprops.get("dateModified", ""),
    )
    site_name = _first(
        meta_first("og:site_name"),
        _string(json_ld.get("publisher")),
        meta_first("application-name"),
    )
    outline = _outline(root)
    markdown = _normalize_markdown(_with_trafilatura(document))
    if not markdown:
        markdown = _normalize_markdown(_with_markdownify(root))
    return ExtractedPage(
        markdown=markdown,
        title=title,
        description=description,
        authors=authors,
        language=language,
        published_time=published,
        modified_time=modified,
        final_url=final_url,
        site_name=site_name,
        canonical_url=canonical or "",
        outline=outline,
    )
