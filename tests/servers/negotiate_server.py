"""A loopback HTTPS intranet server that signs people in with HTTP Negotiate or NTLM.

`Negotiate` tokens are accepted with gssapi against the realm's service keytab (a real Kerberos
ticket of a real KDC, `tests.servers.kerberos`), and answered with the mutual-authentication
token; `NTLM` tokens, and NTLM inside Negotiate (a client without a ticket falls back to it), with
pyspnego's server side, which checks them against `NTLM_USER_FILE`.
An NTLM sign-in spans two requests on one connection, so its context is kept per client
connection. Every request is recorded with the Host it named and the scheme of its
Authorization header (never the token), so a test can prove where a sign-in went.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.servers.loopback import RunningApp, running_app

PAGE_TEXT = (
    "The travel policy of the organization: book trains for trips under four hours, economy "
    "class for flights, and hotels within the negotiated rates. "
)


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it: the Host header, the path and the Authorization scheme
    ("" when it carried none)."""

    host: str
    path: str
    authorization: str


@dataclass
class NegotiateState:
    service_keytab: Path
    channel_binding: bytes | None = None
    """The TLS channel a sign-in must be bound to (`tls-server-end-point:` and the hash of the
    server's certificate), as Extended Protection checks it; None over plain HTTP."""
    schemes: tuple[str, ...] = ("Negotiate",)
    """What a 401 offers, in order."""
    seen: list[Seen] = field(default_factory=list)
    signed_in: list[str] = field(default_factory=list)
    """Who each successful sign-in was (the client principal or NTLM user)."""
    _ntlm: dict[Any, Any] = field(default_factory=dict)

    def reset(self, schemes: tuple[str, ...] = ("Negotiate",)) -> None:
        self.schemes = schemes
        self.seen.clear()
        self.signed_in.clear()
        self._ntlm.clear()


def _challenge(state: NegotiateState, token: bytes | None = None, scheme: str = "") -> Response:
    response = HTMLResponse("<html><body><h1>Sign-in required</h1></body></html>", 401)
    if token is not None:
        response.headers.append("WWW-Authenticate", f"{scheme} {base64.b64encode(token).decode()}")
    else:
        for offered in state.schemes:
            response.headers.append("WWW-Authenticate", offered)
    return response


def _accept_kerberos(state: NegotiateState, token: bytes) -> tuple[str, bytes | None] | None:
    import gssapi

    credentials = gssapi.Credentials(usage="accept", store={"keytab": str(state.service_keytab)})
    bindings = (
        None
        if state.channel_binding is None
        else gssapi.raw.ChannelBindings(application_data=state.channel_binding)
    )
    context = gssapi.SecurityContext(creds=credentials, usage="accept", channel_bindings=bindings)
    try:  # gssapi may report a refused token at `complete` or later rather than at `step`
        answer = context.step(token)
        if not context.complete:
            return None
        return str(context.initiator_name), answer
    except gssapi.exceptions.GSSError:
        return None


def _page(who: str) -> str:
    body = "".join(f"<p>{PAGE_TEXT} Section {n}.</p>" for n in range(1, 6))
    return (
        "<!doctype html><html lang='en'><head><title>Travel policy</title></head><body><main>"
        f"<h1>Travel policy</h1><p>Signed in as {who}.</p>{body}</main></body></html>"
    )


def _signed_in(state: NegotiateState, request: Request) -> Response | str:
    """The signed-in name, or the response that asks for (or continues) the sign-in."""
    header = request.headers.get("authorization", "")
    scheme, _, data = header.partition(" ")
    if not header or scheme not in state.schemes:
        return _challenge(state)
    token = base64.b64decode(data)
    connection = request.client
    if scheme == "Negotiate" and connection not in state._ntlm:
        accepted = _accept_kerberos(state, token)
        if accepted is not None:
            who, answer = accepted
            request.state.mutual = answer
            return who
    return _accept_with_pyspnego(state, request, scheme, token)


def _accept_with_pyspnego(
    state: NegotiateState, request: Request, scheme: str, token: bytes
) -> Response | str:
    """NTLM, bare or inside Negotiate (the fallback of a client without a Kerberos ticket):
    pyspnego's server side, one context per connection across the legs."""
    import spnego

    connection = request.client
    context = state._ntlm.get(connection)
    if context is None:
        bindings = (
            None
            if state.channel_binding is None
            else spnego.channel_bindings.GssChannelBindings(application_data=state.channel_binding)
        )
        context = spnego.server(
            protocol="ntlm" if scheme == "NTLM" else "negotiate", channel_bindings=bindings
        )
        state._ntlm[connection] = context
    try:
        answer = context.step(token)
    except Exception:  # a refused token (pyspnego's errors, or gssapi's under Negotiate)
        state._ntlm.pop(connection, None)
        return _challenge(state)
    if not context.complete:
        return _challenge(state, answer, scheme)
    state._ntlm.pop(connection, None)
    if answer:
        request.state.mutual = answer
    return str(context.client_principal)


def _record(state: NegotiateState, request: Request) -> None:
    header = request.headers.get("authorization", "")
    state.seen.append(
        Seen(request.headers.get("host", ""), request.url.path, header.partition(" ")[0])
    )


def _guarded(state: NegotiateState, request: Request, html: str) -> Response:
    who = _signed_in(state, request)
    if isinstance(who, Response):
        return who
    state.signed_in.append(who)
    response = HTMLResponse(html.replace("{who}", who))
    mutual = getattr(request.state, "mutual", None)
    if mutual:
        response.headers["WWW-Authenticate"] = f"Negotiate {base64.b64encode(mutual).decode()}"
    return response


def negotiate_app(state: NegotiateState) -> Starlette:
    async def page(request: Request) -> Response:
        _record(state, request)
        return _guarded(state, request, _page("{who}"))

    async def search(request: Request) -> Response:
        _record(state, request)
        words = request.query_params.get("queryString", "")
        hits = "".join(
            f"<li><a href='/wiki/display/HR/Travel+{n}'>Travel policy {n}</a>: {PAGE_TEXT}</li>"
            for n in range(1, 4)
        )
        html = (
            "<!doctype html><html><head><title>Search - Wiki</title></head><body><main>"
            f"<h1>Results for {words}</h1><p>Signed in as {{who}}.</p><ol>{hits}</ol>"
            "</main></body></html>"
        )
        return _guarded(state, request, html)

    async def away(request: Request) -> Response:
        """Signed in, then sent to the address in `to` (another host)."""
        _record(state, request)
        who = _signed_in(state, request)
        if isinstance(who, Response):
            return who
        return RedirectResponse(request.query_params["to"], 302)

    return Starlette(
        routes=[
            Route("/page", page),
            Route("/wiki/dosearchsite.action", search),
            Route("/away", away),
        ]
    )


def _end_point_binding(certfile: Path) -> bytes:
    """RFC 5929's `tls-server-end-point` of the certificate (SHA-256 for the test's ECDSA one)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization

    certificate = x509.load_pem_x509_certificate(certfile.read_bytes())
    digest = hashes.Hash(hashes.SHA256())
    digest.update(certificate.public_bytes(serialization.Encoding.DER))
    return b"tls-server-end-point:" + digest.finalize()


@dataclass
class NegotiateServer:
    app: RunningApp
    state: NegotiateState

    def url(self, host: str, path: str = "/page") -> str:
        return self.app.url(path, host)


@contextmanager
def running_negotiate_server(
    certfile: Path | None, keyfile: Path | None, service_keytab: Path
) -> Iterator[NegotiateServer]:
    """The server over HTTPS with the certificate, else over plain HTTP."""
    state = NegotiateState(service_keytab, _end_point_binding(certfile) if certfile else None)
    with running_app(negotiate_app(state), certfile=certfile, keyfile=keyfile) as app:
        yield NegotiateServer(app, state)
