"""Web addresses as the runtime sees them: which network a target is on, and which URLs are equal.

Classification, the request key and the address finding are documented in docs/security/web-retrieval.md.
Everything here is pure (no I/O), so the retrieval service, the executor and the tools can
share one meaning of "the same address" and "a private address".
"""

from __future__ import annotations

import html
import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from policy._runtime_seam import (
    MASK,
    IPAddress,
    host_key,
    is_host_allowed,
    normalize_host,
    parse_allowed_private_hosts,
    parse_host_literal,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_PORTS",
    "WEB_SCHEMES",
    "AddressClass",
    "IPAddress",
    "canonical_host",
    "classify_ip",
    "connectable_ip",
    "default_port",
    "embedded_ipv4",
    "embedded_ipv4s",
    "find_web_addresses",
    "host_key",
    "is_host_allowed",
    "is_local_host_name",
    "normalize_host",
    "parse_allowed_private_hosts",
    "parse_host_literal",
    "redact_url_for_log",
    "request_key",
    "web_origin",
]


class AddressClass(StrEnum):
    """Where an IP address points, from the point of view of a page a model asked for."""

    PUBLIC = "PUBLIC"
    NON_PUBLIC = "NON_PUBLIC"
    NEVER_ALLOWED = "NEVER_ALLOWED"


def _v4(cidr: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(cidr)


def _v6(cidr: str) -> ipaddress.IPv6Network:
    return ipaddress.IPv6Network(cidr)


_NEVER_ALLOWED_V4 = (
    _v4("0.0.0.0/8"),
    _v4("127.0.0.0/8"),
    _v4("169.254.0.0/16"),
    _v4("224.0.0.0/3"),
)
_NON_PUBLIC_V4 = (
    _v4("10.0.0.0/8"),
    _v4("100.64.0.0/10"),
    _v4("172.16.0.0/12"),
    _v4("192.168.0.0/16"),
    _v4("192.0.0.0/24"),
    _v4("192.0.2.0/24"),
    _v4("198.18.0.0/15"),
    _v4("198.51.100.0/24"),
    _v4("203.0.113.0/24"),
)
_NEVER_ALLOWED_V6 = (_v6("::/128"), _v6("::1/128"), _v6("fe80::/10"), _v6("ff00::/8"))
_NON_PUBLIC_V6 = (_v6("fc00::/7"), _v6("fec0::/10"))
_IPV4_MAPPED = _v6("::ffff:0:0/96")
_IPV4_COMPATIBLE = _v6("::/96")


def _last_32_bits(packed: bytes) -> tuple[ipaddress.IPv4Address, ...]:
    return (ipaddress.IPv4Address(packed[12:16]),)


def _local_use_nat64(packed: bytes) -> tuple[ipaddress.IPv4Address, ...]:
    """A local-use NAT64 prefix (RFC 8215) may be any RFC 6052 length from /48 to /96, so every
    position an IPv4 address may sit at counts (the strictest class wins)."""
    return tuple(_rfc6052_v4(packed, bits) for bits in (48, 56, 64, 96))


_RFC6052_OCTETS = {48: (6, 7, 9, 10), 56: (7, 9, 10, 11), 64: (9, 10, 11, 12), 96: (12, 13, 14, 15)}


def _rfc6052_v4(packed: bytes, prefix_bits: int) -> ipaddress.IPv4Address:
    """The IPv4 address RFC 6052 §2.2 places after a prefix of `prefix_bits` (bits 64–71 skipped)."""
    return ipaddress.IPv4Address(bytes(packed[i] for i in _RFC6052_OCTETS[prefix_bits]))


def _six_to_four(packed: bytes) -> tuple[ipaddress.IPv4Address, ...]:
    return (ipaddress.IPv4Address(packed[2:6]),)


def _teredo(packed: bytes) -> tuple[ipaddress.IPv4Address, ...]:
    """The Teredo client's IPv4 address (bits 96–127, inverted) and the Teredo server's (bits
    32–63, RFC 4380 §4): a relay talks to both, so the stricter of the two classifies."""
    client = ipaddress.IPv4Address(bytes(b ^ 0xFF for b in packed[12:16]))
    return (client, ipaddress.IPv4Address(packed[4:8]))


_Extractor = Callable[[bytes], tuple[ipaddress.IPv4Address, ...]]

#: Every IPv6 form that reaches an IPv4 host: classified by the IPv4 inside. One row per prefix.
TRANSLATION_PREFIXES: tuple[tuple[ipaddress.IPv6Network, str, _Extractor], ...] = (
    (_IPV4_MAPPED, "RFC 4291 §2.5.5.2 IPv4-mapped", _last_32_bits),
    (_v6("::ffff:0:0:0/96"), "RFC 2765 / RFC 6145 IPv4-translated", _last_32_bits),
    (_IPV4_COMPATIBLE, "RFC 4291 §2.5.5.1 IPv4-compatible (deprecated)", _last_32_bits),
    (_v6("64:ff9b::/96"), "RFC 6052 well-known NAT64", _last_32_bits),
    (_v6("64:ff9b:1::/48"), "RFC 8215 local-use NAT64", _local_use_nat64),
    (_v6("2002::/16"), "RFC 3056 6to4", _six_to_four),
    (_v6("2001::/32"), "RFC 4380 Teredo", _teredo),
)


def embedded_ipv4s(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """Every IPv4 address an IPv6 address may carry to an IPv4 host (empty when none)."""
    packed = ip.packed
    for network, _rfc, extract in TRANSLATION_PREFIXES:
        if ip in network:
            return extract(packed)
    return ()


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The first IPv4 address an IPv6 address carries, if it is a form that reaches IPv4 hosts."""
    inner = embedded_ipv4s(ip)
    return inner[0] if inner else None


def _classify_v4(ip: ipaddress.IPv4Address) -> AddressClass:
    if any(ip in net for net in _NEVER_ALLOWED_V4):
        return AddressClass.NEVER_ALLOWED
    if any(ip in net for net in _NON_PUBLIC_V4):
        return AddressClass.NON_PUBLIC
    return AddressClass.PUBLIC


def classify_ip(ip: IPAddress) -> AddressClass:
    """Never allowed, non-public or public, IPv4 hidden in IPv6 included.

    The deprecated IPv4-compatible form (::a.b.c.d) has no public use, so it is at least
    non-public even when the IPv4 inside is public.
    """
    if isinstance(ip, ipaddress.IPv4Address):
        return _classify_v4(ip)
    ip = ipaddress.IPv6Address(ip.packed)  # drops a zone id
    if any(ip in net for net in _NEVER_ALLOWED_V6):
        return AddressClass.NEVER_ALLOWED
    inner = embedded_ipv4s(ip)
    if inner:
        classes = {_classify_v4(v4) for v4 in inner}
        for strictest in (AddressClass.NEVER_ALLOWED, AddressClass.NON_PUBLIC):
            if strictest in classes:
                return strictest
        if ip in _IPV4_COMPATIBLE:
            return AddressClass.NON_PUBLIC
        return AddressClass.PUBLIC
    if any(ip in net for net in _NON_PUBLIC_V6):
        return AddressClass.NON_PUBLIC
    return AddressClass.PUBLIC


def connectable_ip(ip: IPAddress) -> IPAddress:
    """The address to dial: IPv4-mapped IPv6 is treated as the IPv4 it stands for."""
    if isinstance(ip, ipaddress.IPv6Address) and ip in _IPV4_MAPPED:
        return ipaddress.IPv4Address(ip.packed[12:16])
    return ip


def is_local_host_name(host: str) -> bool:
    """`localhost` and every `*.localhost` name (RFC 6761), case and trailing dot ignored."""
    name = normalize_host(host)
    return name == "localhost" or name.endswith(".localhost")


#: The port a scheme means when an address names none: the one table every address rule reads.
DEFAULT_PORTS: Mapping[str, int] = MappingProxyType(
    {"http": 80, "https": 443, "ftp": 21, "ws": 80, "wss": 443}
)
#: The schemes a web page is read over.
WEB_SCHEMES = ("http", "https")


def default_port(scheme: str) -> int | None:
    """The port an address of this scheme names when it writes none (None: no such default)."""
    return DEFAULT_PORTS.get(scheme.lower())


def canonical_host(raw_host: str) -> str | None:
    """`host_key` as a URL writes it (an IPv6 literal in brackets), or None if it is no host."""
    host = host_key(raw_host)
    return f"[{host}]" if host is not None and ":" in host else host


@dataclass(frozen=True, slots=True)
class _WebUrl:
    scheme: str
    host: str
    port: int
    url: httpx.URL


def _read_web_url(url: str) -> _WebUrl | None:
    """An absolute http(s) URL as httpx (which makes the request) reads it, with its canonical
    host and effective port; None when httpx or the host rule cannot read it."""
    import httpx

    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, ValueError, TypeError):
        return None
    scheme = parsed.scheme.lower()
    if scheme not in WEB_SCHEMES:
        return None
    host = canonical_host(parsed.raw_host.decode("ascii", "replace"))
    if host is None:
        return None
    port = DEFAULT_PORTS[scheme] if parsed.port is None else parsed.port
    return _WebUrl(scheme, host, port, parsed)


def web_origin(url: str) -> tuple[str, str, int] | None:
    """Scheme, canonical host and port (the default filled in) of an absolute http(s) URL.

    Two URLs are on one origin when both have an origin and the two are equal; a URL the address
    rules cannot read has none, so it is on no origin, not even its own spelling's.
    """
    read = _read_web_url(url)
    return None if read is None else (read.scheme, read.host, read.port)


def request_key(url: str | None) -> str | None:
    """What a URL asks for, so two spellings of one request compare equal.

    Scheme and host are case-insensitive (IDN as punycode, trailing dot, default port and `..`
    segments normalized, IP literals canonical); path and query stay exact; the fragment is
    ignored; user info counts. Only absolute http and https URLs have a key.
    """
    read = None if url is None else _read_web_url(url)
    if read is None:
        return None
    port = "" if read.port == DEFAULT_PORTS[read.scheme] else f":{read.port}"
    userinfo = read.url.userinfo.decode("ascii", "replace")
    user = f"{userinfo}@" if userinfo else ""
    return f"{read.scheme}://{user}{read.host}{port}{read.url.raw_path.decode('ascii', 'replace')}"


_URL_CANDIDATE = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING_PUNCTUATION = ".,;:!?*_~'\""
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _trim_candidate(candidate: str) -> str:
    """Drop the punctuation and unbalanced closing brackets prose and Markdown put after a URL.

    Bracket counts are taken once and updated while trimming, so a page ending a URL in a long
    run of `)` costs linear time (this runs on every tool result).
    """
    counts = {ch: candidate.count(ch) for pair in _CLOSERS.items() for ch in pair}
    end = len(candidate)
    while end:
        last = candidate[end - 1]
        unbalanced = last in _CLOSERS and counts[last] > counts[_CLOSERS[last]]
        if last not in _TRAILING_PUNCTUATION and not unbalanced:
            break
        if last in counts:
            counts[last] -= 1
        end -= 1
    return candidate[:end]


def _candidates(text: str) -> Iterable[str]:
    position = 0
    while match := _URL_CANDIDATE.search(text, position):
        raw = match.group(0)
        link_end = raw.find("](")  # Markdown "[url](url)": the label ends here
        if link_end > 0:
            raw = raw[:link_end]
        position = match.start() + len(raw)
        candidate = _trim_candidate(raw)
        if candidate:
            yield candidate


def find_web_addresses(text: str | None) -> list[str]:
    """Request keys of the http(s) URLs written in a text, in order of appearance, each once.

    Surrounding punctuation, quotes, `<>` and Markdown link syntax are not part of an address;
    balanced parentheses inside it are. HTML-entity-encoded text is also searched decoded.
    """
    if not text:
        return []
    texts = [text]
    decoded = html.unescape(text)
    if decoded != text:
        texts.append(decoded)
    keys: list[str] = []
    seen: set[str] = set()
    for source in texts:
        for candidate in _candidates(source):
            key = request_key(candidate)
            if key is not None and key not in seen:
                seen.add(key)
                keys.append(key)
    return keys


_MAX_LOGGED_URL = 2000


def redact_url_for_log(url: str) -> str:
    """A URL safe to log or show in an error: no user info (read as `without_user_info` reads it,
    so a password holding `/` is no path) or fragment, parameter values masked.

    Parameter names stay so the log remains useful; a parameter without `=` could itself be a
    token, so it is masked whole. The result is at most 2000 characters.
    """
    from policy._runtime_seam import without_user_info

    try:
        parts = urlsplit(without_user_info(url.strip()))
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(an address that could not be read)"
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port is None else f"{host}:{port}"
    query = (
        "&".join(
            f"{item.split('=', 1)[0]}={MASK}" if "=" in item else (MASK if item else "")
            for item in parts.query.split("&")
        )
        if parts.query
        else ""
    )
    redacted = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    return redacted[:_MAX_LOGGED_URL]
