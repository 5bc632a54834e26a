"""Operating-system sign-in for one web request: HTTP Negotiate (Kerberos, NTLM as fallback).

The protocol work is pyspnego's (Kerberos through gssapi and the user's ticket cache,
`KRB5CCNAME`; NTLM from its own credential sources such as `NTLM_USER_FILE`): this module is the
httpx auth flow around it, and `runtime.web.retrieval` alone decides when it may run. It never
takes a user name or password. A context step may ask the KDC for a service ticket, so it runs
off the event loop.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import AsyncGenerator, Iterable
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from spnego import ContextProxy
    from spnego.channel_bindings import GssChannelBindings

logger = logging.getLogger(__name__)

_NEGOTIATE = "Negotiate"
NTLM = "NTLM"
_PROTOCOLS = {_NEGOTIATE.lower(): "negotiate", NTLM.lower(): "ntlm"}
_MAX_LEGS = 4
"""Kerberos takes one leg, NTLM two; a server asking for more is not signing anyone in."""


def _offered_scheme(response: httpx.Response) -> str | None:
    """The sign-in scheme a 401 asks for: Negotiate before NTLM, None for any other."""
    if response.status_code != 401:
        return None
    offered = {_scheme_of(value) for value in response.headers.get_list("WWW-Authenticate")}
    return next((s for s in (_NEGOTIATE, NTLM) if s.lower() in offered), None)


def _scheme_of(challenge: str) -> str:
    return challenge.strip().split(" ", 1)[0].lower()


def _token_in(response: httpx.Response, scheme: str) -> bytes | None:
    """The server's token for `scheme` (a challenge, or the mutual-authentication answer)."""
    return _first_token(response.headers.get_list("WWW-Authenticate"), scheme)


def _first_token(challenges: Iterable[str], scheme: str) -> bytes | None:
    for challenge in challenges:
        name, _, data = challenge.strip().partition(" ")
        if name.lower() == scheme.lower() and data.strip():
            try:
                return base64.b64decode(data.strip(), validate=True)
            except (binascii.Error, ValueError):
                return None
    return None


class SignInFailed(Exception):
    """The server asked for a sign-in this user could not give (no ticket, no credentials, or a
    server answer that did not verify); the message is safe to show."""


class NegotiateAuth(httpx.Auth):
    """Answers a 401 that asks for Negotiate or NTLM with the user's own sign-in, on the same
    connection; any other response passes unchanged. `failure` says why a sign-in the server
    asked for was not given."""

    def __init__(self, host: str) -> None:
        self._host = host
        self.failure: str | None = None

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        response = yield request
        scheme = _offered_scheme(response)
        if scheme is None:
            return
        try:
            bindings = _channel_bindings(response)
            context = await asyncio.to_thread(self._context, _PROTOCOLS[scheme.lower()], bindings)
            token = await asyncio.to_thread(context.step)
        except Exception as error:  # any failure of the library: no sign-in
            self._failed("no sign-in of this user is available", error)
            return
        for _leg in range(_MAX_LEGS):
            if token is None:
                return
            request.headers["Authorization"] = f"{scheme} {base64.b64encode(token).decode()}"
            response = yield request
            answer = _token_in(response, scheme)
            if response.status_code != 401:
                if answer is not None and not context.complete:
                    await self._verify(context, answer, response)
                return
            if answer is None or context.complete:
                self.failure = "the server refused the sign-in"
                return
            try:
                token = await asyncio.to_thread(context.step, answer)
            except Exception as error:
                self._failed("the server's sign-in challenge could not be answered", error)
                return

    def _context(self, protocol: str, bindings: GssChannelBindings | None) -> ContextProxy:
        import spnego

        return spnego.client(
            hostname=self._host, service="HTTP", protocol=protocol, channel_bindings=bindings
        )

    async def _verify(self, context: ContextProxy, answer: bytes, response: httpx.Response) -> None:
        """The server's mutual-authentication answer must verify, or its page is not taken."""
        try:
            await asyncio.to_thread(context.step, answer)
        except Exception as error:
            self._failed("the server's sign-in answer did not verify", error)
            raise SignInFailed(
                "The server's answer to the operating-system sign-in did not verify, so the page "
                "was not read."
            ) from None

    def _failed(self, why: str, error: Exception) -> None:
        self.failure = why
        logger.info("operating-system sign-in to %s not given: %s (%s)", self._host, why, error)


def _channel_bindings(response: httpx.Response) -> GssChannelBindings | None:
    """The TLS channel the sign-in is bound to (RFC 5929 `tls-server-end-point`: the server
    certificate's hash), so a token cannot be relayed to another server; servers with Extended
    Protection (IIS, SharePoint) require it. None on a connection without TLS."""
    stream = response.extensions.get("network_stream")
    tls = stream.get_extra_info("ssl_object") if stream is not None else None
    certificate = tls.getpeercert(binary_form=True) if tls is not None else None
    if not certificate:
        return None
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from spnego.channel_bindings import GssChannelBindings

    algorithm = x509.load_der_x509_certificate(certificate).signature_hash_algorithm
    if algorithm is None or isinstance(algorithm, hashes.MD5 | hashes.SHA1):
        algorithm = hashes.SHA256()
    digest = hashes.Hash(algorithm)
    digest.update(certificate)
    return GssChannelBindings(application_data=b"tls-server-end-point:" + digest.finalize())
