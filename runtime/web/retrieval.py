"""The one way any tool reads a web page: SSRF-safe retrieval.

Per hop: the target policy is checked, the host is resolved once, every address is classified,
and the connection is bound to exactly those addresses before a byte is sent. Redirects are
followed by hand and re-checked; the body is capped after decompression; binary content is refused
as soon as its headers arrive. Nothing returned here has been filtered for prompt injection.
"""

from __future__ import annotations

import asyncio
import codecs
import re
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from policy import ConfidenceLevel, ToolPolicyError
from runtime.web.addresses import (
    DEFAULT_PORTS,
    WEB_SCHEMES,
    AddressClass,
    IPAddress,
    canonical_host,
    classify_ip,
    connectable_ip,
    is_host_allowed,
    is_local_host_name,
    parse_allowed_private_hosts,
    parse_host_literal,
    redact_url_for_log,
)

if TYPE_CHECKING:
    import httpx

    from runtime.web._negotiate import NegotiateAuth

__all__ = [
    "AddressClassifier",
    "ApiResponse",
    "ContentKind",
    "Resolver",
    "RetrievalOptions",
    "RetrievedWebPage",
    "WebPageAccessBlockReason",
    "WebPageAccessBlocked",
    "WebRetrievalError",
    "WebRetrievalTimedOut",
    "classify_content_type",
    "normalize_text_document",
    "parse_allowed_private_hosts",
    "request_api",
    "retrieve",
    "system_resolver",
]

MAX_REDIRECTS = 10
_DEFAULT_MAX_BYTES = 5 * 1024 * 1024

Resolver = Callable[[str], Awaitable[Sequence[IPAddress]]]
"""Resolves a host name to its addresses; raises OSError when it cannot."""

AddressClassifier = Callable[[IPAddress], AddressClass]


class ContentKind(StrEnum):
    HTML_PAGE = "HTML_PAGE"
    TEXT_DOCUMENT = "TEXT_DOCUMENT"


class WebPageAccessBlockReason(StrEnum):
    UNSPECIFIED = "UNSPECIFIED"
    UNSUPPORTED_SCHEME = "UNSUPPORTED_SCHEME"
    LOCAL_HOST_NAME = "LOCAL_HOST_NAME"
    NEVER_ALLOWED_ADDRESS = "NEVER_ALLOWED_ADDRESS"
    PRIVATE_HOST_NOT_ALLOWED = "PRIVATE_HOST_NOT_ALLOWED"
    INSUFFICIENT_PROVIDER_CONFIDENCE = "INSUFFICIENT_PROVIDER_CONFIDENCE"
    TARGET_NOT_ALLOWED = "TARGET_NOT_ALLOWED"


_BLOCK_MESSAGES = {
    WebPageAccessBlockReason.UNSUPPORTED_SCHEME: "Only HTTP and HTTPS URLs are supported.",
    WebPageAccessBlockReason.LOCAL_HOST_NAME: "Local web page URLs are not supported.",
    WebPageAccessBlockReason.NEVER_ALLOWED_ADDRESS: (
        "Local, link-local, multicast, and unspecified network addresses are not supported."
    ),
    WebPageAccessBlockReason.PRIVATE_HOST_NOT_ALLOWED: (
        "Private or local-network web page URLs are not supported unless their host is "
        "explicitly allowed."
    ),
    WebPageAccessBlockReason.INSUFFICIENT_PROVIDER_CONFIDENCE: (
        "This private or VPN web page requires a High-confidence provider."
    ),
    WebPageAccessBlockReason.TARGET_NOT_ALLOWED: (
        "The web page is outside the addresses this tool may read."
    ),
}


class WebPageAccessBlocked(ToolPolicyError):
    """An intentional refusal of a target; tools turn it into a BLOCKED call."""

    code = "web-access-blocked"

    def __init__(self, reason: WebPageAccessBlockReason, message: str | None = None) -> None:
        self.reason = reason
        self.message = message or _BLOCK_MESSAGES.get(reason, "The web page may not be read.")
        super().__init__(self.message)


class WebRetrievalError(ToolPolicyError):
    """Loading failed (network, HTTP status, size, content type, unreadable text): an ERROR call."""

    code = "web-retrieval"

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        self.message = message
        self.status_code = status_code
        super().__init__(message)


class WebRetrievalTimedOut(WebRetrievalError):
    """The overall timeout of one retrieval ran out."""


@dataclass(frozen=True, slots=True)
class RetrievalOptions:
    """How one retrieval may reach its target.

    `resolver`, `classify_address` and `ssl_context` replace the system resolver, the built-in
    classification and the certifi trust store. They are Python objects an embedding app or a test
    passes in code; no setting or model argument can produce one.
    """

    timeout_seconds: float
    public_targets_only: bool = False
    target_chosen_by_user: bool = False
    provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    allowed_private_hosts: tuple[str, ...] = ()
    is_target_allowed: Callable[[str], bool] | None = None
    on_private_host_provider_block: Callable[[str, ConfidenceLevel], Awaitable[None]] | None = None
    max_bytes: int = _DEFAULT_MAX_BYTES
    resolver: Resolver | None = None
    classify_address: AddressClassifier | None = None
    ssl_context: ssl.SSLContext | None = None
    os_sign_in: bool = False
    """Answer a server's Negotiate/NTLM request with the user's operating-system sign-in, only
    where `_may_sign_in` allows it."""


@dataclass(frozen=True, slots=True)
class RetrievedWebPage:
    """A page as the server sent it: HTML source or a normalized text document, decoded."""

    requested_url: str
    final_url: str
    media_type: str
    content_kind: ContentKind
    body_text: str
    retrieved_at_utc: datetime
    required_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE


@dataclass(frozen=True, slots=True)
class _Target:
    host: str
    port: int
    addresses: tuple[IPAddress, ...]
    non_public: bool
    all_private: bool = False
    """Every address is a private one the allowlist let through (never after a public one)."""


async def system_resolver(host: str) -> list[IPAddress]:
    """The operating system's answer for a host name, each address once, in its order."""
    import ipaddress

    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


async def _resolve(host: str, options: RetrievalOptions) -> tuple[IPAddress, ...]:
    literal = parse_host_literal(host)
    if literal is not None:
        return (connectable_ip(literal),)
    resolver = options.resolver or system_resolver
    try:
        found = await resolver(host)
    except (OSError, UnicodeError) as error:
        detail = getattr(error, "strerror", None) or str(error) or type(error).__name__
        raise WebRetrievalError(f"The host '{host}' could not be resolved: {detail}") from error
    addresses = tuple(dict.fromkeys(connectable_ip(a) for a in found))
    if not addresses:
        raise WebRetrievalError(f"The host '{host}' did not resolve to an IP address.")
    return addresses


async def _validate_target(url: httpx.URL, options: RetrievalOptions) -> _Target:
    """Everything that must hold before a byte goes to this hop's target."""
    scheme = url.scheme.lower()
    if scheme not in WEB_SCHEMES:
        raise WebPageAccessBlocked(WebPageAccessBlockReason.UNSUPPORTED_SCHEME)
    raw_host = url.raw_host.decode("ascii", "replace")
    host = canonical_host(raw_host)
    if host is None:
        raise WebRetrievalError(
            f"The address '{redact_url_for_log(str(url))}' has no valid host name."
        )
    if options.is_target_allowed is not None and not options.is_target_allowed(str(url)):
        raise WebPageAccessBlocked(WebPageAccessBlockReason.TARGET_NOT_ALLOWED)
    # `or`, not `is None`: httpcore dials the scheme's default port for a written port 0 too, and
    # the pinned transport accepts only the port it will be asked for.
    port = url.port or DEFAULT_PORTS[scheme]
    if not options.target_chosen_by_user and is_local_host_name(host):
        raise WebPageAccessBlocked(WebPageAccessBlockReason.LOCAL_HOST_NAME)
    addresses = await _resolve(raw_host, options)
    if options.target_chosen_by_user:
        return _Target(raw_host, port, addresses, non_public=False)
    classify = options.classify_address or classify_ip
    classes = {classify(address) for address in addresses}
    if AddressClass.NEVER_ALLOWED in classes:
        raise WebPageAccessBlocked(WebPageAccessBlockReason.NEVER_ALLOWED_ADDRESS)
    non_public = AddressClass.NON_PUBLIC in classes
    all_private = classes == {AddressClass.NON_PUBLIC}
    if non_public:
        if options.public_targets_only or not is_host_allowed(host, options.allowed_private_hosts):
            raise WebPageAccessBlocked(WebPageAccessBlockReason.PRIVATE_HOST_NOT_ALLOWED)
        if options.provider_confidence < ConfidenceLevel.HIGH:
            if options.on_private_host_provider_block is not None:
                await options.on_private_host_provider_block(
                    redact_url_for_log(str(url)), options.provider_confidence
                )
            raise WebPageAccessBlocked(WebPageAccessBlockReason.INSUFFICIENT_PROVIDER_CONFIDENCE)
    return _Target(raw_host, port, addresses, non_public, all_private)


def _may_sign_in(
    hop: httpx.URL, target: _Target, first: httpx.URL, options: RetrievalOptions
) -> bool:
    """The operating-system sign-in goes only where the specification lets it: switched on, over
    HTTPS, to the address the tool was asked for (never after a redirect to another origin), and
    only to a host whose every address is private and allowed (so never to a public host, and
    never for a tool that reads public targets only)."""
    return (
        options.os_sign_in
        and not options.public_targets_only
        and not options.target_chosen_by_user
        and target.all_private
        and hop.scheme.lower() == "https"
        and _origin(hop) == _origin(first)
    )


def _origin(url: httpx.URL) -> tuple[str, str | None, int]:
    return (
        url.scheme.lower(),
        canonical_host(url.raw_host.decode("ascii", "replace")),
        url.port or DEFAULT_PORTS[url.scheme.lower()],
    )


_HTML_TYPES = frozenset({"", "text/html", "application/xhtml+xml"})
_TEXT_APPLICATION_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/x-ndjson",
        "application/javascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/sql",
    }
)


def _media_type_of(content_type: str | None) -> str:
    """The media type without parameters, lowercase."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def classify_content_type(media_type: str | None) -> ContentKind | None:
    """HTML page, text document, or None for content that is refused."""
    kind = _media_type_of(media_type)
    if kind in _HTML_TYPES:
        return ContentKind.HTML_PAGE
    if kind.startswith("text/") or kind in _TEXT_APPLICATION_TYPES:
        return ContentKind.TEXT_DOCUMENT
    if kind.startswith("application/") and kind.endswith(("+json", "+xml")):
        return ContentKind.TEXT_DOCUMENT
    return None


_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t\f\v]*\n)+")


def normalize_text_document(text: str, final_url: str, media_type: str) -> str:
    """A text document as sent, with only BOM, line endings and outer blank space tidied.

    Leading fully blank lines go but the first line's indentation stays; escape sequences are
    left for the prompt-injection filter. A NUL means the body is no text: ValueError.
    """
    if "\x00" in text:
        raise ValueError(
            f"The response of '{redact_url_for_log(final_url)}' is declared as '{media_type}' "
            "but does not contain readable text."
        )
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return _LEADING_BLANK_LINES.sub("", text).rstrip()


_CHARSET_PARAMETER = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9._:+-]+)", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9._:+-]+)", re.IGNORECASE)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _known_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _decode_body(body: bytes, content_type: str | None, kind: ContentKind) -> str:
    """Text by BOM, then the declared charset, then (HTML) a meta charset, else UTF-8."""
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return body.decode(bom_codec, errors="replace")
    declared = _CHARSET_PARAMETER.search(content_type or "")
    codec = _known_codec(declared.group(1) if declared else None)
    if codec is None and kind is ContentKind.HTML_PAGE:
        meta = _META_CHARSET.search(body[:4096])
        codec = _known_codec(meta.group(1).decode("ascii") if meta else None)
    return body.decode(codec or "utf-8", errors="replace")


_HEADERS = {
    "User-Agent": (
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "MindWorkAIStudio/1.0"
    ),
    "Accept": "text/html,application/xhtml+xml,text/*;q=0.9,application/json;q=0.9,"
    "application/xml;q=0.9,*/*;q=0.1",
    "Accept-Language": "en-US, en;q=0.9",
    "Accept-Encoding": "gzip, deflate, br",
    "Upgrade-Insecure-Requests": "1",
    "Sec-Fetch-Site": "none",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-Dest": "document",
    "Sec-Fetch-User": "?1",
}


def _too_large(max_bytes: int) -> WebRetrievalError:
    return WebRetrievalError(
        f"The response body is too large. Maximum allowed size is {max_bytes} bytes."
    )


async def _read_capped_body(response: httpx.Response, max_bytes: int) -> bytes:
    """The decoded body, aborting as soon as it passes the cap (compressed or not)."""
    from runtime.web._decoding import BodyDecoder, BodyDecodingError, UnsupportedContentEncoding

    declared = response.headers.get("Content-Length", "").strip()
    if declared.isdigit() and int(declared) > max_bytes:
        raise _too_large(max_bytes)
    try:
        decoder = BodyDecoder(response.headers.get("Content-Encoding", ""))
    except UnsupportedContentEncoding as error:
        coding = str(error)
        shown = f"'{coding}'" if _CODING_TOKEN.fullmatch(coding) else "(not a plain name)"
        raise WebRetrievalError(
            f"Loading the web page failed: the server used the content encoding {shown}, "
            "which is not supported (gzip, deflate and br are)."
        ) from error
    body = bytearray()

    def take(pieces: Iterable[bytes]) -> None:
        for piece in pieces:
            body.extend(piece)
            if len(body) > max_bytes:
                raise _too_large(max_bytes)

    try:
        async for raw in response.aiter_raw():
            take(decoder.feed(raw))
        take(decoder.finish())
    except BodyDecodingError as error:
        raise WebRetrievalError(
            f"Loading the web page failed: the compressed response could not be decoded ({error})."
        ) from error
    return bytes(body)


@dataclass(frozen=True, slots=True)
class _Fetched:
    final_url: httpx.URL
    content_type: str
    kind: ContentKind
    text: str
    non_public: bool


def _request(url: httpx.URL, cookies: httpx.Cookies) -> httpx.Request:
    """One GET with the browser headers, this origin's cookies and Basic auth from user info.

    Sent straight to the pinned transport: httpx's client would log every URL in full (user info
    and parameter values included) at INFO.
    """
    import httpx

    # An empty jar adds no Cookie header; skipping it spares httpx its cookie-jar round trip.
    request = httpx.Request("GET", url, headers=_HEADERS, cookies=cookies if cookies else None)
    if url.userinfo:
        request = next(httpx.BasicAuth(url.username, url.password).sync_auth_flow(request))
    return request


@asynccontextmanager
async def _sent(
    transport: httpx.AsyncBaseTransport,
    request: httpx.Request,
    sign_in: NegotiateAuth | None = None,
) -> AsyncIterator[httpx.Response]:
    """The response to `request`; with `sign_in`, after the server's sign-in legs on the same
    connection (each refused leg's body read and dropped, within the cap)."""
    if sign_in is None:
        response = await transport.handle_async_request(request)
    else:
        response = await _signed_in(transport, request, sign_in)
    response.request = request
    try:
        yield response
    finally:
        await response.aclose()


_SIGN_IN_BODY_BYTES = 64 * 1024
"""How much of a 401 between sign-in legs is read (and dropped) to keep the connection."""


async def _signed_in(
    transport: httpx.AsyncBaseTransport, request: httpx.Request, sign_in: NegotiateAuth
) -> httpx.Response:
    from runtime.web._negotiate import SignInFailed

    flow = sign_in.async_auth_flow(request)
    request = await flow.__anext__()
    while True:
        response = await transport.handle_async_request(request)
        try:
            request = await flow.asend(response)
        except StopAsyncIteration:
            return response
        except SignInFailed as error:
            await response.aclose()
            raise WebRetrievalError(str(error)) from None
        try:
            await _read_capped_body(response, _SIGN_IN_BODY_BYTES)
        finally:
            await response.aclose()


_MEDIA_TYPE_TOKEN = re.compile(r"[a-z0-9][a-z0-9.+-]{0,30}/[a-z0-9][a-z0-9.+_-]{0,100}")
_CODING_TOKEN = re.compile(r"[a-z0-9][a-z0-9.+-]{0,30}")


def _is_plain_media_type(media_type: str) -> bool:
    """`type/subtype` tokens, or none at all (HTML); the media type is shown to the model."""
    return not media_type or _MEDIA_TYPE_TOKEN.fullmatch(media_type) is not None


def _shown_media_type(content_type: str) -> str:
    """The media type quoted if it is a plain token, since the server wrote it for the model."""
    media_type = _media_type_of(content_type)
    if media_type and _is_plain_media_type(media_type):
        return f"'{media_type}'"
    return "(a content type that is not a plain media type)"


async def _fetch(requested: httpx.URL, options: RetrievalOptions) -> _Fetched:
    """The redirect loop: validate, connect bound, follow Location by hand, read the final body."""
    import httpx

    from runtime.web._negotiate import NegotiateAuth
    from runtime.web._transport import PinnedTransport

    cookies = httpx.Cookies()
    current = requested
    non_public = False
    for _hop in range(MAX_REDIRECTS + 1):
        target = await _validate_target(current, options)
        non_public = non_public or target.non_public
        transport = PinnedTransport(target.host, target.port, target.addresses, options.ssl_context)
        sign_in = (
            NegotiateAuth(canonical_host(target.host) or target.host)
            if _may_sign_in(current, target, requested, options)
            else None
        )
        async with transport, _sent(transport, _request(current, cookies), sign_in) as response:
            if "set-cookie" in response.headers:  # the jar takes nothing from other answers
                cookies.extract_cookies(response)
            if 300 <= response.status_code < 400:
                location = response.headers.get("Location")
                if not location:
                    raise WebRetrievalError(
                        f"Loading the web page failed: The server returned HTTP "
                        f"{response.status_code} without a redirect target for "
                        f"'{redact_url_for_log(str(current))}'.",
                        status_code=response.status_code,
                    )
                current = _redirect_target(current, location)
                continue
            if not 200 <= response.status_code < 300:
                raise _status_error(response, current, sign_in)
            content_type = response.headers.get("Content-Type", "")
            kind = classify_content_type(content_type)
            if kind is None or not _is_plain_media_type(_media_type_of(content_type)):
                raise WebRetrievalError(
                    f"Unsupported content type {_shown_media_type(content_type)}. "
                    "Only HTML pages and text documents are supported."
                )
            body = await _read_capped_body(response, options.max_bytes)
            text = _decode_body(body, content_type, kind)
            return _Fetched(current, content_type, kind, text, non_public)
    raise WebRetrievalError(
        f"The server returned more than {MAX_REDIRECTS} redirects for "
        f"'{redact_url_for_log(str(requested))}'."
    )


def _redirect_target(current: httpx.URL, location: str) -> httpx.URL:
    import httpx

    try:
        return current.join(location.strip())
    except (httpx.InvalidURL, ValueError) as error:
        raise WebRetrievalError(
            "Loading the web page failed: the server redirected to an address that could not be "
            "read."
        ) from error


def _status_error(
    response: httpx.Response, url: httpx.URL, sign_in: NegotiateAuth | None = None
) -> WebRetrievalError:
    """The standard phrase of the status: the server's own reason phrase could address the model.
    A sign-in the server asked for and did not get is said as such."""
    from http import HTTPStatus

    try:
        reason = HTTPStatus(response.status_code).phrase
    except ValueError:
        reason = "Unknown"
    message = (
        f"Loading the web page failed: The server returned HTTP {response.status_code} ({reason}) "
        f"for '{redact_url_for_log(str(url))}'."
    )
    if sign_in is not None and sign_in.failure is not None:
        message += (
            f" It asked for the operating-system sign-in, but {sign_in.failure}: the user has to "
            "be signed in to the organization's network (a Kerberos ticket, e.g. from kinit)."
        )
    return WebRetrievalError(message, status_code=response.status_code)


def _refuse_unreadable_literal(url: str, options: RetrievalOptions) -> None:
    """A URL httpx cannot read (e.g. `0177.0.0.1`) still gets its block reason when it names an IP."""
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return
    literal = parse_host_literal(host)
    if literal is None or options.target_chosen_by_user:
        return
    address_class = (options.classify_address or classify_ip)(connectable_ip(literal))
    if address_class is AddressClass.NEVER_ALLOWED:
        raise WebPageAccessBlocked(WebPageAccessBlockReason.NEVER_ALLOWED_ADDRESS)
    if address_class is AddressClass.NON_PUBLIC:
        raise WebPageAccessBlocked(WebPageAccessBlockReason.PRIVATE_HOST_NOT_ALLOWED)


def _parse_url(url: str, options: RetrievalOptions) -> httpx.URL:
    import httpx

    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, ValueError, TypeError) as error:
        _refuse_unreadable_literal(url, options)
        raise WebRetrievalError(f"The address could not be read as a URL: {error}") from error
    if parsed.scheme.lower() not in WEB_SCHEMES:
        raise WebPageAccessBlocked(WebPageAccessBlockReason.UNSUPPORTED_SCHEME)
    return parsed


@asynccontextmanager
async def _bounded(options: RetrievalOptions) -> AsyncIterator[None]:
    """The overall timeout, and httpx's failures as `WebRetrievalError` (a refusal raised inside
    the transport as itself)."""
    import httpx

    if not options.timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be positive, but was {options.timeout_seconds}.")
    try:
        async with asyncio.timeout(options.timeout_seconds):
            yield
    except TimeoutError as error:
        raise WebRetrievalTimedOut(
            f"Loading the web page timed out after {options.timeout_seconds:g} seconds."
        ) from error
    except httpx.HTTPError as error:
        if isinstance(error.__cause__, WebPageAccessBlocked):
            raise error.__cause__ from None
        if isinstance(error, httpx.ProtocolError):
            raise WebRetrievalError(
                "Loading the web page failed: the server's answer is not valid HTTP."
            ) from error
        detail = str(error) or type(error).__name__
        raise WebRetrievalError(f"Loading the web page failed: {detail}") from error


async def retrieve(url: str, options: RetrievalOptions) -> RetrievedWebPage:
    """Load one page under the options' target policy; see the module docstring for the rules.

    Raises WebPageAccessBlocked for a refused target (first URL or any redirect), and
    WebRetrievalError (WebRetrievalTimedOut for the overall timeout) when loading fails.
    """
    requested = _parse_url(url, options)
    async with _bounded(options):
        fetched = await _fetch(requested, options)
    media_type = _media_type_of(fetched.content_type)
    text = fetched.text
    if fetched.kind is ContentKind.TEXT_DOCUMENT:
        try:
            text = normalize_text_document(text, str(fetched.final_url), media_type)
        except ValueError as error:
            raise WebRetrievalError(str(error)) from error
    return RetrievedWebPage(
        requested_url=url,
        final_url=str(fetched.final_url),
        media_type=media_type,
        content_kind=fetched.kind,
        body_text=text,
        retrieved_at_utc=datetime.now(UTC),
        required_provider_confidence=(
            ConfidenceLevel.HIGH if fetched.non_public else ConfidenceLevel.NONE
        ),
    )


@dataclass(frozen=True, slots=True)
class ApiResponse:
    """One answer of a web API, as sent: status, headers and the (capped) body."""

    status_code: int
    headers: Mapping[str, str]
    body: bytes


async def request_api(
    url: str, options: RetrievalOptions, headers: Mapping[str, str]
) -> ApiResponse:
    """One GET to a web API under the same target rules as `retrieve`, with the caller's headers
    (an Authorization header among them).

    No redirect is followed: the credential goes only to the address checked here, so a 3xx
    answer is returned as it is for the caller to refuse. Errors are `retrieve`'s.
    """
    import httpx

    from runtime.web._transport import PinnedTransport

    requested = _parse_url(url, options)
    async with _bounded(options):
        target = await _validate_target(requested, options)
        transport = PinnedTransport(target.host, target.port, target.addresses, options.ssl_context)
        request = httpx.Request("GET", requested, headers={**_HEADERS, **headers})
        async with transport, _sent(transport, request) as response:
            body = await _read_capped_body(response, options.max_bytes)
            return ApiResponse(response.status_code, dict(response.headers), body)
    raise AssertionError("unreachable")  # pragma: no cover
