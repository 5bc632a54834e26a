"""The identity provider's signing keys: found through its OpenID metadata, fetched once, kept.

A token naming a key id the kept set lacks makes one refresh (the provider may have rotated its
keys); refreshes are at most one per `min_refresh_seconds`, so tokens with invented key ids
cannot make the gateway hammer the provider. Every fetch is bounded in time and size.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
from joserfc.jwk import Key, KeySet

from runtime.signin._errors import SignInUnavailable

logger = logging.getLogger("runtime.signin")

_MAX_DOCUMENT_BYTES = 1 << 20
"""The most a metadata or key-set document may hold."""
DEFAULT_TIMEOUT_SECONDS = 10.0
_DEFAULT_MIN_REFRESH_SECONDS = 30.0
_DEFAULT_MAX_AGE_SECONDS = 3600.0
"""Kept keys are fetched anew after this long (on the next token), so a withdrawn key stops
working within the hour even when no unknown key id ever arrives."""


class IssuerKeys:
    """The signing keys of `issuer`, fetched through `<issuer>/.well-known/openid-configuration`."""

    def __init__(
        self,
        issuer: str,
        *,
        client: httpx.AsyncClient | None = None,
        min_refresh_seconds: float = _DEFAULT_MIN_REFRESH_SECONDS,
        max_age_seconds: float = _DEFAULT_MAX_AGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self._client = client
        self._min_refresh = min_refresh_seconds
        self._max_age = max_age_seconds
        self._clock = clock
        self._keys: KeySet | None = None
        self._metadata: dict[str, Any] | None = None
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def metadata(self) -> dict[str, Any]:
        """The issuer's OpenID metadata (its `issuer` checked to be this issuer)."""
        if self._metadata is None:
            document = await self._document(
                self.issuer.rstrip("/") + "/.well-known/openid-configuration"
            )
            if document.get("issuer") != self.issuer:
                raise SignInUnavailable(
                    f"the OpenID metadata of {self.issuer} names another issuer "
                    f"({str(document.get('issuer'))[:200]!r}); DataGateway.Issuer must be "
                    "written exactly as the provider names itself"
                )
            if not isinstance(document.get("jwks_uri"), str):
                raise SignInUnavailable(f"the OpenID metadata of {self.issuer} names no jwks_uri")
            self._metadata = document
        return self._metadata

    async def key(self, kid: str | None) -> Key | None:
        """The signing key named `kid` (None: the only key), or None when the issuer has none
        by that id even after the one refresh allowed now."""
        keys = self._keys
        if keys is None or self._clock() - self._fetched_at >= self._max_age:
            keys = await self._refresh(force=True)
        found = _find(keys, kid)
        if found is None and self._clock() - self._fetched_at >= self._min_refresh:
            found = _find(await self._refresh(force=False), kid)
        return found

    async def _refresh(self, *, force: bool) -> KeySet:
        """Fetch the key set anew; concurrent callers share one fetch."""
        started = self._fetched_at
        async with self._lock:
            if self._keys is not None and self._fetched_at != started:
                return self._keys
            if not force and self._clock() - self._fetched_at < self._min_refresh:
                return self._keys or KeySet([])
            metadata = await self.metadata()
            document = await self._document(str(metadata["jwks_uri"]))
            try:
                keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
            except Exception as error:  # joserfc raises several types for a bad key set
                raise SignInUnavailable(
                    f"the key set of {self.issuer} cannot be read: {type(error).__name__}"
                ) from None
            self._keys = keys
            self._fetched_at = self._clock()
            logger.info("signing keys of %s fetched (%d keys)", self.issuer, len(keys.keys))
            return keys

    async def _document(self, url: str) -> dict[str, Any]:
        client = self._client or httpx.AsyncClient(timeout=DEFAULT_TIMEOUT_SECONDS)
        try:
            async with client.stream("GET", url, headers={"Accept": "application/json"}) as answer:
                if answer.status_code != 200:
                    raise SignInUnavailable(f"{url} answered HTTP {answer.status_code}")
                body = bytearray()
                async for chunk in answer.aiter_bytes():
                    body += chunk
                    if len(body) > _MAX_DOCUMENT_BYTES:
                        raise SignInUnavailable(f"{url} sent more than {_MAX_DOCUMENT_BYTES} bytes")
        except httpx.HTTPError as error:
            raise SignInUnavailable(f"{url} cannot be read: {type(error).__name__}") from None
        finally:
            if self._client is None:
                await client.aclose()
        import json

        try:
            document = json.loads(bytes(body))
        except ValueError:
            raise SignInUnavailable(f"{url} did not answer JSON") from None
        if not isinstance(document, dict):
            raise SignInUnavailable(f"{url} did not answer a JSON object")
        return document


def _find(keys: KeySet, kid: str | None) -> Key | None:
    if kid is None:
        return keys.keys[0] if len(keys.keys) == 1 else None
    for key in keys.keys:
        if key.kid == kid:
            return key
    return None
