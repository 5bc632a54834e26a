"""Sign-in as the organization configures it: the `DataGateway.*` settings read once.

`policy mcp serve` and `policy serve` accept the access tokens of one identity provider
(`DataGateway.Issuer`) issued for one audience (`DataGateway.Audience`); the runtime's sign-in
(`runtime.signin`) checks them. This module only reads and checks what the plugins say: the
rules each key's text must meet (the settings parser asks them, so a mistake is an error in
`policy check` naming file:line) and `SignInSettings.of(configuration)`, the one reading of the
keys together that both serving commands and the token exchange ask.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from policy._dataclass import dataclass

if TYPE_CHECKING:
    from policy.configuration import PolicyConfiguration
    from policy.provenance import SourceLocation

_ISSUER_KEY = "DataGateway.Issuer"
_AUDIENCE_KEY = "DataGateway.Audience"
_GROUPS_CLAIM_KEY = "DataGateway.GroupsClaim"
_CLIENT_ID_KEY = "DataGateway.ClientId"
_CLIENT_SECRET_KEY = "DataGateway.ClientSecret"
_SIGN_IN_KEYS = (_ISSUER_KEY, _AUDIENCE_KEY, _GROUPS_CLAIM_KEY, _CLIENT_ID_KEY, _CLIENT_SECRET_KEY)
DEFAULT_GROUPS_CLAIM = "groups"

_ISSUER_EXAMPLE = "https://login.example.org/realms/corp"


def issuer_problem(text: str) -> str | None:
    """None for an issuer address OAuth accepts, else what would be valid: https (http only
    on a loopback host, as OAuth 2.1 allows for development), a host, no query or fragment."""
    from policy.hosts import host_key, is_loopback_host

    wanted = (
        f'an https:// issuer address like "{_ISSUER_EXAMPLE}" (http:// only on a loopback '
        "host; no query, fragment or user info)"
    )
    try:
        parts = urlsplit(text.strip())
        host = host_key(parts.hostname or "")
        _ = parts.port
    except ValueError:
        return wanted
    if text != text.strip() or host is None or parts.query or parts.fragment:
        return wanted
    if "@" in parts.netloc:
        return wanted
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(host)):
        return None
    return wanted


def audience_problem(text: str) -> str | None:
    """None for an audience value (non-blank, no surrounding spaces), else what is valid."""
    if text.strip() and text == text.strip():
        return None
    return 'a non-blank audience like "toolpolicy-gateway"'


def claim_problem(text: str) -> str | None:
    """None for a claim name or dotted path (`groups`, `realm_access.roles`)."""
    if text and all(part.strip() and part == part.strip() for part in text.split(".")):
        return None
    return 'a claim name like "groups" or a dotted path like "realm_access.roles"'


def secret_problem(text: str) -> str | None:
    """None for an ENC:v1: value: a client secret is never written in plain text."""
    from policy.secrets import is_encrypted

    if is_encrypted(text):
        return None
    return "an ENC:v1: value (encrypt the client secret with `policy encrypt`)"


@dataclass(frozen=True, slots=True)
class SignInSettings:
    """What the organization configured for sign-in, as one value (equal settings compare
    equal, so a server can tell whether a reload changed them)."""

    issuer: str
    audience: str
    groups_claim: str = DEFAULT_GROUPS_CLAIM
    client_id: str = ""
    client_secret: str = ""
    """The ENC:v1: text of the gateway's client secret (decrypted only where it is sent)."""

    @classmethod
    def of(cls, configuration: PolicyConfiguration) -> SignInSettings | None:
        """The sign-in in force, or None when `DataGateway.Issuer` is not set."""

        def text(key: str) -> str:
            setting = configuration.setting(key)
            value = setting.value if setting is not None else None
            return value if isinstance(value, str) else ""

        issuer = text(_ISSUER_KEY)
        if not issuer:
            return None
        return cls(
            issuer=issuer,
            audience=text(_AUDIENCE_KEY),
            groups_claim=text(_GROUPS_CLAIM_KEY) or DEFAULT_GROUPS_CLAIM,
            client_id=text(_CLIENT_ID_KEY),
            client_secret=text(_CLIENT_SECRET_KEY),
        )


def sign_in_problems(configuration: PolicyConfiguration) -> tuple[str, ...]:
    """Why the sign-in cannot be served as configured (each naming file:line), or nothing.

    A `DataGateway.*` value the loader skipped is one: serving without it would accept what the
    administrator meant to refuse (a server left open, or another issuer's tokens). An issuer
    without an audience is another: any token the issuer signs for any service would do.
    """
    label = 'CONFIG["SETTINGS"]["DataGateway.'
    problems = [
        f"{finding.location}: {finding.message}"
        for plugin in configuration.applied_plugins
        for finding in plugin.findings
        if finding.message.startswith(label) and finding.severity.value == "error"
    ]
    problems.extend(
        f"{where}: {message}" for message, where in token_exchange_problems(configuration)
    )
    problems.extend(
        f"{where}: {message}" if where else message
        for message, where in audience_problems(configuration)
    )
    return tuple(problems)


def audience_problems(
    configuration: PolicyConfiguration,
) -> Iterator[tuple[str, SourceLocation | None]]:
    """An issuer without an audience, with where the issuer is set: any token the issuer signs
    for any service would do, so the serving commands refuse to serve; `policy check` calls it
    an error."""
    settings = SignInSettings.of(configuration)
    if settings is not None and not settings.audience:
        where = configuration.setting(_ISSUER_KEY)
        yield (
            f"{_ISSUER_KEY} is set without {_AUDIENCE_KEY}: set the audience your identity "
            "provider writes into the gateway's tokens (the serving commands refuse to serve "
            "until then)",
            where.origin.location if where is not None else None,
        )


def token_exchange_problems(
    configuration: PolicyConfiguration,
) -> Iterator[tuple[str, SourceLocation | None]]:
    """Why an MCP server's `Auth` TOKEN_EXCHANGE cannot work as configured, with where it is
    written: a token cannot be handed to a process over stdio, and without the gateway's sign-in
    (issuer, client id, client secret) there is nobody to act for and no way to ask. Its calls
    are refused then (never made with another identity); `policy check` calls it an error."""
    if not configuration.mcp_servers:
        return  # nothing to check, and `policy check` without MCP servers imports no MCP model
    from policy.mcp import McpAuthType, McpTransport

    settings = SignInSettings.of(configuration)
    missing = [
        key
        for key, value in (
            (_ISSUER_KEY, settings.issuer if settings else ""),
            (_CLIENT_ID_KEY, settings.client_id if settings else ""),
            (_CLIENT_SECRET_KEY, settings.client_secret if settings else ""),
        )
        if not value
    ]
    for server in configuration.mcp_servers:
        if server.auth.type is not McpAuthType.TOKEN_EXCHANGE:
            continue
        where = server.origin.location if server.origin else None
        label = f'CONFIG["MCP_SERVERS"] {server.name}: Auth.Type TOKEN_EXCHANGE'
        if server.transport is not McpTransport.STREAMABLE_HTTP:
            yield (
                f"{label} needs Transport STREAMABLE_HTTP (the exchanged token is sent as its "
                "HTTP Authorization header); its calls are refused",
                where,
            )
        if missing:
            yield (
                f"{label} needs the gateway's sign-in: set {', '.join(missing)}; its calls are "
                "refused",
                where,
            )
