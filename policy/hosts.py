"""Host names and allowlists: the one reading of a host that both the policy and the runtime use.

`policy check` and the registry's NOT_CONFIGURED check decide whether `allowedPrivateHosts` is
valid, and the runtime decides whether a URL's host is on it; both ask these functions, so an
entry the policy accepts is an entry the runtime honours. Rules (see read_web_page in
docs/developers/built-in-tools.md):

- entries are separated by comma, semicolon, CR or LF; blanks are skipped; each is `host` or
  `*.host` (`*.x` matches every subdomain of x, never x itself);
- names are compared in ASCII lower case; an internationalized name (`bücher.example`) is the
  same entry as its punycode form (`xn--bcher-kva.example`), encoded with IDNA 2008 (the `idna`
  package, as httpx encodes a URL's host);
- underscores are allowed in labels (`a_b.corp`): internal DNS and Windows host names use them;
- IP literals are allowed in every form the system resolver reads (`10.0.0.1`, `[fd00::1]`),
  compared canonically; a wildcard over an IP literal (`*.10.0.0.1`) is refused, since an address
  has no subdomains;
- a scheme, path, query, fragment, user info or port is refused: entries are hosts only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from policy._dataclass import dataclass
from policy._patterns import LazyPattern
from policy.vocabulary import ProviderKind

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
"""An IPv4 or IPv6 address."""


_IPV4_PART = re.compile(r"^(?:0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*)$")


def _parse_ipv4_part(part: str) -> int | None:
    if not _IPV4_PART.match(part):
        return None
    if part[:2] in ("0x", "0X"):
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part[0] == "0":
        return int(part, 8)
    return int(part, 10)


def _parse_ipv4_like_resolver(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 shorthand inet_aton accepts: 1-4 parts, decimal/octal/hex, the last fills the rest."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = [_parse_ipv4_part(p) for p in parts]
    if any(v is None for v in values):
        return None
    numbers = [v for v in values if v is not None]
    *leading, last = numbers
    if any(v > 0xFF for v in leading) or last >= 1 << (8 * (5 - len(numbers))):
        return None
    value = last
    for index, byte in enumerate(leading):
        value |= byte << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def normalize_host(host: str) -> str:
    """Lowercase, brackets and one trailing dot removed: the form host comparisons use."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host[:-1] if host.endswith(".") else host


def parse_host_literal(host: str) -> IPAddress | None:
    """The IP address a host names without DNS, in every form the system resolver accepts.

    That covers dotted quads, 2130706433, 0x7f.1, 127.1, 0177.0.0.1, 0 and IPv6 with or without
    brackets (a zone id is dropped). Anything else is a name and None.
    """
    text = normalize_host(host)
    if not text:
        return None
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.split("%", 1)[0])
        except ValueError:
            return None
    return _parse_ipv4_like_resolver(text)


_HOST_NAME_PATTERN = re.compile(
    r"^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$"
)
"""A host name in ASCII: labels of letters, digits, hyphens and underscores."""


def _ascii_host_name(name: str) -> str | None:
    """A host name in ASCII lower case (IDNA for non-ASCII names), or None if it cannot be one."""
    if name.isascii():
        return name.lower()
    import idna

    try:
        return idna.encode(name.lower()).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return None


def host_key(host: str) -> str | None:
    """The one canonical form of a host, which every host comparison compares; None if no host.

    IP literals in every form the resolver reads become one address (IPv6 compressed, without
    brackets or zone id); names become ASCII lower case (IDN as punycode) without one trailing
    dot. Anything else (empty labels, `%`, `:` outside an IPv6 literal) is no host: a caller
    deciding whether two hosts are one treats None as "not the same", never as a match.
    """
    literal = parse_host_literal(host)
    if literal is not None:
        return str(ipaddress.IPv6Address(literal.packed)) if literal.version == 6 else str(literal)
    name = _ascii_host_name(normalize_host(host))
    return name if name is not None and _HOST_NAME_PATTERN.match(name) else None


def is_loopback_host(host: str) -> bool:
    """Whether `host` names this machine only: `localhost` or a loopback address, in every
    spelling `host_key` reads (`LOCALHOST`, `localhost.`, `127.0.0.2`, `127.1`, `0x7f.1`,
    `[::1]`, `::ffff:127.0.0.1`).

    The one rule every serving command asks: a loopback `--host` needs no token (and gets
    DNS-rebinding protection instead), and a Host header naming a loopback host is this machine's.
    """
    key = host_key(host)
    if key == "localhost":
        return True
    address = parse_host_literal(key) if key is not None else None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address is not None and address.is_loopback


HOST_RULE = (
    "a host name or IP address (a name is dot-separated labels of letters, digits, hyphens and "
    "underscores, or an internationalized name)"
)
"""What `host_key` reads, as a message tells an administrator whose address names no host."""


@dataclass(frozen=True, slots=True)
class _WebAddress:
    """An absolute http(s) address an administrator configured, as the settings checks read it."""

    scheme: str
    """`http` or `https`, lower case."""
    host: str | None
    """`host_key` of the written host; None when the address names no host the runtime can reach
    (`wiki.corp..`, `exa mple.com`, a label IDNA refuses)."""
    has_user_info: bool
    has_query: bool
    has_fragment: bool


def read_web_address(text: str) -> _WebAddress | None:
    """`text` as an absolute http or https address with a host.

    None when it is none: another scheme, no host, a port or bracket urllib cannot read, or an
    ASCII control character (urllib drops tabs and line breaks silently; httpx, which makes the
    request, refuses them). A host `host_key` cannot read is returned with `host` None, so the
    caller can say what is wrong with it. The one reading of a configured service address
    (`policy check`, `policy settings set`, the registry and the provider profiles ask it).
    """
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
        return None
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - a bracket or port urllib cannot read raises here
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return None
    return _WebAddress(
        scheme=scheme,
        host=host_key(parts.hostname),
        has_user_info=parts.username is not None or parts.password is not None,
        has_query=bool(parts.query),
        has_fragment=bool(parts.fragment),
    )


def shown_address(text: str) -> str:
    """A configured address quoted as an error message shows it: user info masked, and hidden
    whole when it holds a query (a query may carry a key)."""
    from policy.secrets import without_user_info

    return "(hidden: it holds a query)" if "?" in text else repr(without_user_info(text))


_BASE_URL_EXAMPLES = "https://llm.example.org/v1 or http://localhost:11434"
"""How a service's base URL is written, as a message shows an administrator."""


def read_base_url(text: str, field: str) -> str:
    """`text` as a service's base URL: stripped and without trailing slashes, an address
    `read_web_address` reads with a host `host_key` reads, and no user info, query or fragment.

    Raises ValueError naming `field`, the value (user info masked; hidden whole when it holds a
    query, which may carry a key) and how a valid one is written. The one rule for a provider's
    `Hostname`: `policy check` skips an entry it refuses, and the runtime's host profiles ask it.
    """
    url = text.strip().rstrip("/")
    address = read_web_address(url)
    if address is None or address.host is None:
        shown = shown_address(text)
        problem = (
            "is not an http(s) address"
            if address is None
            else f"names no host: its host is not {HOST_RULE}"
        )
        raise ValueError(f"{field} {shown} {problem}; write it like {_BASE_URL_EXAMPLES}")
    if address.has_query or address.has_fragment or address.has_user_info:
        raise ValueError(
            f"{field} must be a plain base URL without query, fragment or user info; "
            f"write it like {_BASE_URL_EXAMPLES}"
        )
    return url


PROVIDER_HOSTS: dict[str, str | None] = {
    "NONE": None,
    "LM_STUDIO": "LM Studio",
    "LLAMA_CPP": "llama.cpp",
    "WHISPER_CPP": None,
    "OLLAMA": "Ollama",
    "VLLM": "vLLM",
}
"""Every `Host` value of a provider entry (AI Studio's), with the name messages show for one the
runtime sends chat requests to; None for one that serves no chat (the runtime refuses it)."""

SELF_HOSTED_CHAT_SERVERS: dict[str, str] = {
    host: name for host, name in PROVIDER_HOSTS.items() if name is not None
}
"""The self-hosted `Host` values that serve chat, with the name messages show."""

DEPLOYMENT_KINDS: dict[ProviderKind, str] = {
    ProviderKind.HETZNER: "Hetzner",
    ProviderKind.LITE_LLM: "LiteLLM",
}
"""Cloud provider kinds without a public default address (the plugin's `Hostname` names the
deployment), with the name messages show. A self-hosted server needs `Hostname` too."""


def provider_address_problem(kind: ProviderKind, host: str, base_url: str) -> str | None:
    """Why the runtime cannot call a provider of `kind` on `host` at `base_url`, or None.

    `base_url` is the `Hostname` as `read_base_url` read it, or "" when it is blank. A self-hosted
    provider needs a `Host` in `SELF_HOSTED_CHAT_SERVERS` and a `Hostname`; a kind in
    `DEPLOYMENT_KINDS` needs a `Hostname`. The one rule: `policy check` skips an entry it refuses,
    and the runtime's host profiles refuse the provider with this message.
    """
    if kind is ProviderKind.SELF_HOSTED:
        server = SELF_HOSTED_CHAT_SERVERS.get(host.strip().upper())
        if server is None:
            return (
                f"Host {host!r} cannot serve chat requests; use one of "
                f"{', '.join(SELF_HOSTED_CHAT_SERVERS)}"
            )
        if not base_url:
            return f"a self-hosted {server} needs Hostname, e.g. http://localhost:11434"
    elif kind in DEPLOYMENT_KINDS and not base_url:
        return (
            f"{DEPLOYMENT_KINDS[kind]} has no default address; set Hostname to the base URL of "
            "the deployment, e.g. https://llm.example.org/v1"
        )
    return None


_HOSTS_ONLY = "Allowed private hosts must be host names only, without scheme or path."
_ENTRY_SEPARATORS = LazyPattern(r"[,;\r\n]")


def parse_allowed_private_hosts(text: str | None) -> tuple[str, ...]:
    """The `allowedPrivateHosts` setting as canonical entries: `host` or `*.host`, each once.

    Entries are separated by comma, semicolon, CR or LF; blanks are skipped. Raises ValueError
    with the message an administrator sees when an entry has a scheme or path or is no host.
    """
    entries: list[str] = []
    for raw_entry in _ENTRY_SEPARATORS.split(text or ""):
        entry = raw_entry.strip()
        if not entry:
            continue
        if any(mark in entry for mark in ("://", "/", "\\", "?", "#", "@")):
            raise ValueError(_HOSTS_ONLY)
        wildcard = entry.startswith("*.")
        host = host_key(entry[2:] if wildcard else entry)
        if host is None or (wildcard and parse_host_literal(host) is not None):
            raise ValueError(f"Allowed private host '{entry}' is not valid.")
        canonical = f"*.{host}" if wildcard else host
        if canonical not in entries:
            entries.append(canonical)
    return tuple(entries)


def is_host_allowed(host: str, allowed_hosts: Iterable[str]) -> bool:
    """Whether a URL host is on an allowlist; `*.x` matches subdomains of x, never x itself."""
    name = host_key(host)
    if name is None:
        return False
    for entry in allowed_hosts:
        if entry.startswith("*."):
            if name.endswith("." + entry[2:]):
                return True
        elif name == entry:
            return True
    return False
