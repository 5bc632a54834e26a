"""A request to the identity provider's token endpoint as the gateway's own client: its client
id and decrypted secret (HTTP Basic, `client_secret_basic`), the answer read as JSON. The token
exchange and the web page's sign-in both ask through here."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from policy._runtime_seam import (
    SECRET_SOURCES,
    SecretError,
    SecretMask,
    SignInSettings,
    configured_secret,
    decrypt,
    is_loopback_host,
    mask_in_logs,
)
from runtime.signin._issuer import IssuerKeys
from runtime.web.addresses import redact_url_for_log


class TokenEndpointError(Exception):
    """The token endpoint gave no answer to use; the words are safe to log and show."""


async def token_request(
    settings: SignInSettings,
    keys: IssuerKeys,
    form: dict[str, str],
    client: httpx.AsyncClient | None = None,
) -> dict[str, Any]:
    """The token endpoint's JSON answer to `form`, or `TokenEndpointError` saying why not."""
    if not (settings.client_id and settings.client_secret):
        raise TokenEndpointError(
            "the gateway has no client credentials (DataGateway.ClientId and "
            "DataGateway.ClientSecret)"
        )
    secret = configured_secret()
    if secret is None:
        raise TokenEndpointError(
            f"DataGateway.ClientSecret cannot be decrypted: no encryption secret is configured "
            f"({SECRET_SOURCES})"
        )
    client_secret = _client_secret(settings, secret)
    metadata = await keys.metadata()
    endpoint = metadata.get("token_endpoint")
    if not isinstance(endpoint, str):
        raise TokenEndpointError(
            f"the OpenID metadata of {settings.issuer} names no token endpoint"
        )
    if not _protected(endpoint):
        raise TokenEndpointError(
            f"the OpenID metadata of {settings.issuer} names a token endpoint that is not https "
            f"({redact_url_for_log(endpoint)}); the client secret and the caller's token are "
            "sent only over https (http only to a loopback host)"
        )
    own = client or httpx.AsyncClient(timeout=10.0)
    try:
        answer = await own.post(
            endpoint,
            data=form,
            auth=(settings.client_id, client_secret),
            headers={"Accept": "application/json"},
        )
    except httpx.HTTPError as error:
        raise TokenEndpointError(f"{endpoint} cannot be reached: {type(error).__name__}") from None
    finally:
        if client is None:
            await own.aclose()
    try:
        body = answer.json()
    except ValueError:
        body = None
    if answer.status_code != 200 or not isinstance(body, dict):
        code = body.get("error") if isinstance(body, dict) else None
        raise TokenEndpointError(
            f"the identity provider refused ({answer.status_code}"
            f"{', ' + str(code)[:80] if code else ''})"
        )
    return body


def _client_secret(settings: SignInSettings, secret: str) -> str:
    """The decrypted client secret, from now on masked in every log record of the process."""
    try:
        plaintext = decrypt(settings.client_secret, secret)
    except SecretError as error:
        raise TokenEndpointError(
            f"DataGateway.ClientSecret cannot be decrypted: {error.message}"
        ) from None
    mask_in_logs(SecretMask.of([plaintext]))
    return plaintext


def _protected(endpoint: str) -> bool:
    """Whether a request to `endpoint` is encrypted on the way: https, or http to a loopback
    host (OAuth 2.1's allowance for development)."""
    try:
        parts = urlsplit(endpoint)
        host = parts.hostname or ""
    except ValueError:
        return False
    return bool(host) and (
        parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(host))
    )
