"""The HTTP side of a provider: one POST per round, read back as server-sent events.

Retries (429 with Retry-After, 5xx, timeouts, refused connections) happen only while nothing of
the answer has been handed on, so no text is ever streamed twice. httpx is imported on first use
to keep `import runtime` cheap.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from policy import ProviderConfig
from policy._runtime_seam import SecretMask, mask_in_logs, without_user_info
from runtime.providers.errors import (
    ProviderAuthError,
    ProviderConfigurationError,
    ProviderError,
    ProviderModelNotFound,
    ProviderProtocolError,
    ProviderRateLimited,
    ProviderRequestRejected,
    ProviderUnavailable,
)
from runtime.providers.hosts import HostProfile, WireApi, host_profile_for

if TYPE_CHECKING:
    import httpx

_log = logging.getLogger(__name__)
_MAX_PROVIDER_MESSAGE = 300


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to retry before any of the answer was handed on."""

    max_attempts: int = 3
    initial_backoff_seconds: float = 0.5
    max_backoff_seconds: float = 8.0
    max_retry_after_seconds: float = 30.0
    """A Retry-After longer than this is not waited for: the call fails at once instead."""

    def backoff(self, attempt: int) -> float:
        return float(
            min(self.initial_backoff_seconds * 2 ** (attempt - 1), self.max_backoff_seconds)
        )


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long one request may take to connect, to send, and between two pieces of stream."""

    connect_seconds: float = 10.0
    read_seconds: float = 120.0
    """Longest silence between two pieces of the stream (reasoning models think quietly)."""
    write_seconds: float = 30.0


class ProviderClient:
    """Sends one round's request body to a host and yields the `data:` payloads of its stream.

    Holds one pooled `httpx.AsyncClient`; close it with `aclose()` or `async with`.
    """

    def __init__(
        self,
        profile: HostProfile,
        api_key: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        provider_name: str = "",
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.profile = profile
        self.retry = retry or RetryPolicy()
        self.timeouts = timeouts or Timeouts()
        self.provider_name = provider_name or profile.name
        self._api_key = api_key or ""
        self._mask = SecretMask.of([self._api_key])
        mask_in_logs(self._mask)
        self._http = http_client
        self._owns_http = http_client is None
        self._headers = self._build_headers()

    def __repr__(self) -> str:
        return f"ProviderClient({self.provider_name!r}, {without_user_info(self.profile.endpoint_url)!r})"

    @property
    def _shown_base_url(self) -> str:
        return without_user_info(self.profile.base_url)

    def _build_headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        headers.update(self.profile.extra_headers)
        if self._api_key:
            _refuse_unsendable_key(self._api_key, self.provider_name)
            scheme = self.profile.auth_scheme
            headers[self.profile.auth_header] = (
                f"{scheme} {self._api_key}" if scheme else self._api_key
            )
        return headers

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            t = self.timeouts
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(
                    connect=t.connect_seconds,
                    read=t.read_seconds,
                    write=t.write_seconds,
                    pool=t.connect_seconds,
                ),
                follow_redirects=False,
            )
        return self._http

    async def aclose(self) -> None:
        if self._http is not None and self._owns_http:
            await self._http.aclose()
        self._http = None

    async def __aenter__(self) -> ProviderClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def stream(self, body: bytes | Mapping[str, Any]) -> AsyncIterator[str]:
        """POST `body` and yield each event's data (empty payloads are skipped).

        Raises a `ProviderError` subclass; a stream that simply ends is not an error here —
        whether the round completed is the adapter's call. Whatever an error quotes (a body, a
        header, an address) is redacted here, once, before it leaves the client.
        """
        try:
            async for data in self._stream(body):
                yield data
        except ProviderError as error:
            error.args = tuple(self.redact(a) if isinstance(a, str) else a for a in error.args)
            raise

    async def _stream(self, body: bytes | Mapping[str, Any]) -> AsyncIterator[str]:
        import httpx

        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        attempt = 0
        while True:
            attempt += 1
            handed_on = False
            failure: ProviderError
            try:
                async with self._client().stream(
                    "POST", self.profile.endpoint_url, content=content, headers=self._headers
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        raise self._status_error(response)
                    self._check_event_stream(response)
                    async for data in _event_data(response):
                        handed_on = True
                        yield data
                return
            except (ProviderRateLimited, ProviderUnavailable) as error:
                failure = error
            except httpx.DecodingError:
                raise ProviderProtocolError(
                    f"{self.provider_name} sent an answer that cannot be decompressed (its "
                    "Content-Encoding does not match the body); check any proxy or gateway "
                    "between here and the host.",
                    provider=self.provider_name,
                ) from None
            except httpx.TimeoutException:
                failure = self._transport_error("did not answer in time", handed_on)
            except httpx.TransportError as exc:
                failure = self._transport_error(
                    _transport_reason(exc, self.profile.base_url), handed_on
                )
            wait = self._wait_before_retry(failure, attempt, handed_on)
            _log.warning(
                "Provider %s: %s Retrying in %.1f s (attempt %d of %d).",
                self.provider_name,
                _sentence(self.redact(str(failure))),
                wait,
                attempt + 1,
                self.retry.max_attempts,
            )
            await asyncio.sleep(wait)

    def _wait_before_retry(self, error: ProviderError, attempt: int, handed_on: bool) -> float:
        if handed_on or attempt >= self.retry.max_attempts:
            raise error
        if isinstance(error, ProviderRateLimited) and error.retry_after_seconds is not None:
            if error.retry_after_seconds > self.retry.max_retry_after_seconds:
                raise error
            return error.retry_after_seconds
        return self.retry.backoff(attempt)

    def _transport_error(self, reason: str, handed_on: bool) -> ProviderUnavailable:
        where = f"{self.provider_name} at {self._shown_base_url}"
        if handed_on:
            return ProviderUnavailable(
                f"The connection to {where} broke off while the answer was streaming ({reason}); "
                "the round is incomplete. Try again.",
                provider=self.provider_name,
            )
        return ProviderUnavailable(
            f"{where} {reason}. Check that the host is reachable and the Hostname is right.",
            provider=self.provider_name,
        )

    def _check_event_stream(self, response: httpx.Response) -> None:
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" not in content_type:
            raise ProviderProtocolError(
                f"{self.provider_name} answered with {content_type or 'no content type'!r} "
                "instead of a server-sent event stream; check the base URL (it should end in "
                "the API version, e.g. /v1) and that the host supports streaming.",
                provider=self.provider_name,
                status_code=response.status_code,
            )

    def _status_error(self, response: httpx.Response) -> ProviderError:
        status = response.status_code
        said = self._provider_message(response)
        suffix = f" The host said: {said}" if said else ""
        name = self.provider_name
        if status in (401, 403):
            return ProviderAuthError(
                f"{name} refused the credentials (HTTP {status}). Check the API key and that it "
                f"may use this model.{suffix}",
                provider=name,
                status_code=status,
            )
        if status == 404:
            return ProviderModelNotFound(
                f"{name} found no such model or endpoint (HTTP 404). Check the model id and "
                f"the base URL {self._shown_base_url}.{suffix}",
                provider=name,
                status_code=status,
            )
        if status == 429:
            retry_after = _retry_after_seconds(response.headers.get("retry-after"))
            hint = f" The host asks to wait {retry_after:g} s." if retry_after is not None else ""
            return ProviderRateLimited(
                f"{name} is rate limiting this key (HTTP 429).{hint} Try again later or raise "
                f"the key's limits.{suffix}",
                provider=name,
                retry_after_seconds=retry_after,
            )
        if status >= 500:
            return ProviderUnavailable(
                f"{name} failed on its side (HTTP {status}). Try again later.{suffix}",
                provider=name,
                status_code=status,
            )
        return ProviderRequestRejected(
            f"{name} rejected the request (HTTP {status}). Check the additional API parameters "
            f"and the model's capabilities.{suffix}",
            provider=name,
            status_code=status,
        )

    def _provider_message(self, response: httpx.Response) -> str:
        text = response.text
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            message = text
        else:
            message = _message_of(parsed) or ""
        message = self.redact(" ".join(message.split()))
        return message[:_MAX_PROVIDER_MESSAGE]

    def redact(self, text: str) -> str:
        """`text` with the API key masked in every spelling (hosts sometimes echo the key they
        refused, in a body, a header or an address)."""
        return self._mask.text(text)


def _refuse_unsendable_key(key: str, provider_name: str) -> None:
    """A header value is printable ASCII; anything else would fail deep inside the HTTP client."""
    if not all(" " <= ch <= "~" for ch in key):
        raise ProviderConfigurationError(
            f"The API key of '{provider_name}' holds a character that cannot be sent in an HTTP "
            "header (only printable ASCII can); check it for a copied typographic dash, a "
            "non-breaking space or a line break.",
            provider=provider_name,
        )


def _message_of(payload: Any) -> str | None:
    """The first text under `error` / `message` / `detail`, depth first (a loop, not recursion: a
    host's body may nest as deep as the JSON parser allows)."""
    pending = [payload]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if item:
                return item
        elif isinstance(item, dict):
            pending.extend(item.get(key) for key in ("detail", "message", "error"))
    return None


async def _event_data(response: httpx.Response) -> AsyncIterator[str]:
    from httpx_sse._decoders import SSEDecoder, SSELineDecoder

    lines = SSELineDecoder()
    events = SSEDecoder()
    async for text in response.aiter_text():
        for line in lines.decode(text):
            event = events.decode(line.rstrip("\n"))
            if event is not None and event.data:
                yield event.data
    for line in lines.flush():
        event = events.decode(line.rstrip("\n"))
        if event is not None and event.data:
            yield event.data
    event = events.decode("")
    if event is not None and event.data:
        yield event.data


def _transport_reason(exc: Exception, base_url: str) -> str:
    import httpx

    from runtime._network import could_not_resolve, host_of

    if could_not_resolve(exc):
        return f"could not be reached: could not resolve {host_of(base_url)}"
    if isinstance(exc, httpx.ConnectError):
        return "refused the connection"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "closed the connection before the answer was complete"
    return f"could not be reached ({type(exc).__name__})"


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import datetime

    now = datetime.datetime.now(when.tzinfo or datetime.UTC)
    return max(0.0, (when - now).total_seconds())


def create_client(
    provider: ProviderConfig,
    api_key: str | None = None,
    *,
    wire_api: WireApi | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    environ: Mapping[str, str] | None = None,
) -> ProviderClient:
    """A client for a policy provider entry.

    The key comes from the caller, else the organization's `ENC:v1:` key of the provider entry
    (decrypted with the configured encryption secret), else the host's environment variable.
    """
    profile = host_profile_for(provider, wire_api=wire_api)
    env = os.environ if environ is None else environ
    key = (
        api_key
        or _organization_key(provider, env)
        or (env.get(profile.api_key_env, "") if profile.api_key_env else "")
    )
    if profile.requires_api_key and not key:
        source = f" or set {profile.api_key_env}" if profile.api_key_env else ""
        raise ProviderConfigurationError(
            f"provider '{provider.name or provider.id}' ({profile.name}) needs an API key: pass "
            f"api_key{source}.",
            provider=provider.name,
        )
    return ProviderClient(
        profile,
        key or None,
        retry=retry,
        timeouts=timeouts,
        provider_name=provider.name or profile.name,
    )


def _organization_key(provider: ProviderConfig, environ: Mapping[str, str]) -> str:
    """The provider entry's deployed key in plain text; a key that cannot be read is an error."""
    if provider.api_key is None:
        return ""
    from policy._runtime_seam import SECRET_SOURCES, SecretError, configured_secret, decrypt

    secret = configured_secret(environ)
    name = provider.name or provider.id
    if secret is None:
        raise ProviderConfigurationError(
            f"provider '{name}' has an encrypted API key from its configuration plugin, but no "
            f"encryption secret is configured ({SECRET_SOURCES}).",
            provider=provider.name,
        )
    try:
        return decrypt(provider.api_key.encrypted, secret)
    except SecretError:
        raise ProviderConfigurationError(
            f"provider '{name}': its encrypted API key cannot be decrypted with the configured "
            "encryption secret.",
            provider=provider.name,
        ) from None


def _sentence(text: str) -> str:
    """`text` ending as a sentence, so the retry notice after it reads as the next one."""
    return text if text.endswith((".", "!", "?")) else text + "."
