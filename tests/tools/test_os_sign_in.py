"""Operating-system sign-in (HTTP Negotiate) for read_web_page and search_confluence, against a
real MIT Kerberos KDC and a loopback HTTPS intranet that checks the ticket with gssapi; NTLM
against pyspnego's server side with a credential file.

One KDC for this file. Without MIT Kerberos installed the file is skipped, except in CI, where
`.ci/run` installs it and a missing KDC is a failure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policy.builtin import READ_WEB_PAGE, SEARCH_CONFLUENCE
from policy.vocabulary import ConfidenceLevel, ProviderKind
from runtime.execution import ToolExecutionBlocked, ToolExecutionResult, ToolServices
from runtime.tools.read_web_page import create_tool as read_web_page
from runtime.tools.search_confluence import create_tool as search_confluence
from runtime.web.addresses import AddressClass
from runtime.web.retrieval import WebRetrievalError
from tests.servers.kerberos import Realm, kdc_installed, running_realm
from tests.servers.negotiate_server import NegotiateServer, Seen, running_negotiate_server
from tests.servers.tls import TlsFiles, self_signed
from tests.tools.conftest import make_context, overrides

INTRANET = "intranet.test"
OTHER = "docs.intranet.test"
PUBLIC = "public.test"


@pytest.fixture(scope="module")
def realm() -> Iterator[Realm]:
    if not kdc_installed() and not os.environ.get("CI"):
        pytest.skip("MIT Kerberos (krb5-kdc) is not installed; .ci/run installs it in CI")
    try:
        import gssapi  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("gssapi is not installed (pip install 'toolpolicy[kerberos]')")
    with running_realm((INTRANET, OTHER, PUBLIC)) as running:
        yield running


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return self_signed(tmp_path_factory.mktemp("negotiate-tls"), [INTRANET, OTHER, PUBLIC])


@pytest.fixture(scope="module")
def module_server(realm: Realm, tls: TlsFiles) -> Iterator[NegotiateServer]:
    with running_negotiate_server(tls.certfile, tls.keyfile, realm.service_keytab) as server:
        yield server


@pytest.fixture
def intranet(
    module_server: NegotiateServer, realm: Realm, monkeypatch: pytest.MonkeyPatch
) -> NegotiateServer:
    """The server with a fresh record, and this process signed in as the realm's user."""
    module_server.state.reset()
    for name, value in realm.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("NTLM_USER_FILE", raising=False)
    return module_server


def services(tls: TlsFiles, loopback: AddressClass = AddressClass.NON_PUBLIC) -> ToolServices:
    return ToolServices(retrieval_overrides=overrides(loopback, tls.client_context()))


async def read(
    url: str,
    tls: TlsFiles,
    *,
    allowed: str = INTRANET,
    loopback: AddressClass = AddressClass.NON_PUBLIC,
    **settings: str,
) -> ToolExecutionResult:
    context = make_context(
        READ_WEB_PAGE,
        {"allowedPrivateHosts": allowed, "freeAddressChoice": "ON", **settings},
        services=services(tls, loopback),
        confidence=ConfidenceLevel.HIGH,
        provider_kind=ProviderKind.SELF_HOSTED,
    )
    return await read_web_page().execute({"url": url}, context)


def text_of(result: ToolExecutionResult) -> str:
    content: dict[str, Any] = result.json_content["content"]
    return str(content["text_content"])


async def test_an_allowed_private_page_is_read_with_the_users_kerberos_ticket(
    intranet: NegotiateServer, tls: TlsFiles, realm: Realm
) -> None:
    result = await read(intranet.url(INTRANET), tls)

    assert f"Signed in as {realm.user}" in text_of(result)
    assert intranet.state.signed_in == [realm.user]
    assert [s.authorization for s in intranet.state.seen] == ["", "Negotiate"]


async def test_a_page_a_mutual_answer_does_not_verify_for_is_not_taken(
    intranet: NegotiateServer, tls: TlsFiles
) -> None:
    """The server's answer is checked: a page behind a sign-in answer that is not the service's
    own is refused, whatever it says."""
    from tests.servers import negotiate_server

    original = negotiate_server._accept_kerberos

    def forged(state: Any, token: bytes) -> tuple[str, bytes | None] | None:
        accepted = original(state, token)
        return None if accepted is None else (accepted[0], b"\x60\x03\x06\x01\x00")

    try:
        negotiate_server._accept_kerberos = forged
        with pytest.raises(WebRetrievalError, match="did not verify"):
            await read(intranet.url(INTRANET), tls)
    finally:
        negotiate_server._accept_kerberos = original


async def test_a_host_not_allowlisted_gets_nothing_not_even_a_request(
    intranet: NegotiateServer, tls: TlsFiles
) -> None:
    with pytest.raises(ToolExecutionBlocked, match="explicitly allowed"):
        await read(intranet.url(OTHER), tls, allowed=INTRANET)
    assert intranet.state.seen == []


async def test_a_redirect_to_another_allowed_host_carries_no_sign_in(
    intranet: NegotiateServer, tls: TlsFiles
) -> None:
    away = intranet.url(INTRANET, "/away") + "?to=" + intranet.url(OTHER)

    with pytest.raises(WebRetrievalError, match="HTTP 401"):
        await read(away, tls, allowed=f"{INTRANET},{OTHER}")

    port = intranet.app.port
    assert intranet.state.seen[-1] == Seen(f"{OTHER}:{port}", "/page", "")
    assert [s.authorization for s in intranet.state.seen if s.host.startswith(OTHER)] == [""]
    assert [s.authorization for s in intranet.state.seen if s.host.startswith(INTRANET)] == [
        "",
        "Negotiate",
    ]


async def test_a_service_ticket_never_reaches_a_public_host(
    intranet: NegotiateServer, tls: TlsFiles
) -> None:
    with pytest.raises(WebRetrievalError, match="HTTP 401") as refused:
        await read(intranet.url(PUBLIC), tls, loopback=AddressClass.PUBLIC)

    assert [s.authorization for s in intranet.state.seen] == [""]
    assert "sign-in" not in str(refused.value)


async def test_plain_http_to_an_allowed_host_gets_no_sign_in(
    intranet: NegotiateServer, realm: Realm, tls: TlsFiles
) -> None:
    """Only HTTPS: over plain HTTP the ticket would travel in the clear."""
    with running_negotiate_server(None, None, realm.service_keytab) as plain:
        with pytest.raises(WebRetrievalError, match="HTTP 401"):
            await read(plain.url(INTRANET), tls)
        assert [s.authorization for s in plain.state.seen] == [""]


async def test_os_sign_in_off_sends_no_authorization(
    intranet: NegotiateServer, tls: TlsFiles
) -> None:
    with pytest.raises(WebRetrievalError, match="HTTP 401") as refused:
        await read(intranet.url(INTRANET), tls, osSignIn="OFF")
    assert [s.authorization for s in intranet.state.seen] == [""]
    assert "sign-in" not in str(refused.value)


async def test_without_a_ticket_the_error_says_the_sign_in_is_missing(
    intranet: NegotiateServer, tls: TlsFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'empty.ccache'}")

    with pytest.raises(WebRetrievalError, match="asked for the operating-system sign-in"):
        await read(intranet.url(INTRANET), tls)
    assert [s.authorization for s in intranet.state.seen] == [""]


async def test_ntlm_signs_in_with_the_users_credential_file(
    intranet: NegotiateServer, tls: TlsFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that offers NTLM only; the user's NTLM credentials come from the credential file
    pyspnego reads (which the server side checks against too)."""
    credentials = tmp_path / "ntlm-users"
    credentials.write_text("CORP:bob:correct horse battery staple\n")
    monkeypatch.setenv("NTLM_USER_FILE", str(credentials))
    intranet.state.reset(schemes=("NTLM",))

    result = await read(intranet.url(INTRANET), tls)

    assert "Signed in as CORP\\bob" in text_of(result)
    assert [s.authorization for s in intranet.state.seen] == ["", "NTLM", "NTLM"]
    assert "correct horse" not in str(result.json_content)


async def test_without_a_ticket_negotiate_falls_back_to_ntlm(
    intranet: NegotiateServer, tls: TlsFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "ntlm-users"
    credentials.write_text("CORP:bob:correct horse battery staple\n")
    monkeypatch.setenv("NTLM_USER_FILE", str(credentials))
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{tmp_path / 'empty.ccache'}")

    result = await read(intranet.url(INTRANET), tls)

    assert "Signed in as CORP\\bob" in text_of(result)
    assert [s.authorization for s in intranet.state.seen] == ["", "Negotiate", "Negotiate"]


@pytest.mark.parametrize("scheme", ["Negotiate", "NTLM"])
async def test_a_sign_in_is_bound_to_the_tls_channel(
    scheme: str,
    intranet: NegotiateServer,
    tls: TlsFiles,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Extended Protection: the server takes a sign-in only for its own certificate, so a token
    relayed from another TLS channel is refused (and ours, bound to this one, is taken)."""
    credentials = tmp_path / "ntlm-users"
    credentials.write_text("CORP:bob:correct horse battery staple\n")
    monkeypatch.setenv("NTLM_USER_FILE", str(credentials))
    intranet.state.reset(schemes=(scheme,))
    await read(intranet.url(INTRANET), tls)
    assert len(intranet.state.signed_in) == 1

    own = intranet.state.channel_binding
    intranet.state.reset(schemes=(scheme,))
    try:
        intranet.state.channel_binding = b"tls-server-end-point:" + bytes(32)
        with pytest.raises(WebRetrievalError, match="refused the sign-in"):
            await read(intranet.url(INTRANET), tls)
    finally:
        intranet.state.channel_binding = own
    assert intranet.state.signed_in == []


async def test_web_search_retrieval_never_signs_in(
    intranet: NegotiateServer, tls: TlsFiles
) -> None:
    """Public targets only (web_search's result pages) never sign in, even when asked to."""
    from runtime.web.retrieval import RetrievalOptions, retrieve

    hooks = overrides(AddressClass.PUBLIC, tls.client_context())
    options = RetrievalOptions(
        timeout_seconds=30,
        public_targets_only=True,
        os_sign_in=True,
        resolver=hooks.resolver,
        classify_address=hooks.classify_address,
        ssl_context=hooks.ssl_context,
    )
    with pytest.raises(WebRetrievalError, match="HTTP 401"):
        await retrieve(intranet.url(PUBLIC), options)
    assert [s.authorization for s in intranet.state.seen] == [""]


async def test_the_wiki_is_searched_with_the_users_sign_in(
    intranet: NegotiateServer, tls: TlsFiles, realm: Realm
) -> None:
    context = make_context(
        SEARCH_CONFLUENCE,
        {"baseUrl": intranet.url(INTRANET, "/wiki/")},
        services=services(tls),
        confidence=ConfidenceLevel.HIGH,
        provider_kind=ProviderKind.SELF_HOSTED,
    )
    result = await search_confluence().execute({"query": "travel"}, context)

    assert f"Signed in as {realm.user}" in result.json_content["text_content"]
    assert [s.authorization for s in intranet.state.seen] == ["", "Negotiate"]


async def test_a_wiki_on_a_public_address_gets_no_sign_in(
    intranet: NegotiateServer, tls: TlsFiles
) -> None:
    context = make_context(
        SEARCH_CONFLUENCE,
        {"baseUrl": intranet.url(PUBLIC, "/wiki/"), "osSignIn": "ON"},
        services=services(tls, AddressClass.PUBLIC),
        confidence=ConfidenceLevel.HIGH,
        provider_kind=ProviderKind.SELF_HOSTED,
    )
    with pytest.raises(WebRetrievalError, match="HTTP 401"):
        await search_confluence().execute({"query": "travel"}, context)
    assert [s.authorization for s in intranet.state.seen] == [""]
