"""SSRF through redirects: every hop is checked before a byte goes to it, whatever the spelling.

The page server answers for `public.test` on loopback; the socket guard proves that a refused hop
was never dialled, and the server's path log that nothing after a refused hop was asked for.
"""

from __future__ import annotations

import pytest

from policy.vocabulary import ConfidenceLevel
from runtime.web.addresses import AddressClass, is_host_allowed, parse_allowed_private_hosts
from runtime.web.retrieval import (
    WebPageAccessBlocked,
    WebPageAccessBlockReason,
    WebRetrievalError,
    retrieve,
)
from tests.security._kit import LOOPBACK, StandIn
from tests.security._raw_server import answer, raw_server, redirect
from tests.security.conftest import SocketGuard

Reason = WebPageAccessBlockReason
PUBLIC = AddressClass.PUBLIC
PRIVATE = AddressClass.NON_PUBLIC
STATUSES = ["301 Moved Permanently", "302 Found", "303 See Other", "307 Temporary", "308 Perm"]

HOSTILE_TARGETS = {
    "http://127.0.0.1:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "//127.0.0.1:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://public.test@127.0.0.1:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://public.test:{port}@127.0.0.1:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://[::ffff:7f00:1]:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://[::ffff:127.0.0.1]:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://[64:ff9b::a9fe:a9fe]/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://0:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://0x7f.1:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://2130706433:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://127.0.0.1.:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://[::]:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://[::1]:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://[fe80::1%25eth0]:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://169.254.169.254/latest/meta-data/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://LocalHost.:{port}/": Reason.LOCAL_HOST_NAME,
    "http://api.localhost/": Reason.LOCAL_HOST_NAME,
    "http://10.0.0.7/": Reason.PRIVATE_HOST_NOT_ALLOWED,
    "http://[fd00::7]/": Reason.PRIVATE_HOST_NOT_ALLOWED,
    "http://mixed.test:{port}/": Reason.PRIVATE_HOST_NOT_ALLOWED,
    "http://many.test:{port}/": Reason.NEVER_ALLOWED_ADDRESS,
    "http://intranet.test:{port}/": Reason.INSUFFICIENT_PROVIDER_CONFIDENCE,
    "file:///etc/passwd": Reason.UNSUPPORTED_SCHEME,
    "gopher://public.test:{port}/_": Reason.UNSUPPORTED_SCHEME,
}


def _stand_in() -> StandIn:
    return StandIn(
        {
            "public.test": ([LOOPBACK], PUBLIC),
            "intranet.test": ([LOOPBACK], PRIVATE),
            "mixed.test": (["93.184.216.34", "10.0.0.7"], PUBLIC),
            "many.test": ([*(f"93.184.216.{n}" for n in range(1, 30)), "169.254.169.254"], PUBLIC),
        }
    )


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("target", sorted(HOSTILE_TARGETS))
async def test_a_redirect_to_a_refused_target_is_never_followed(
    target: str, status: str, socket_guard: SocketGuard
) -> None:
    socket_guard.allow(LOOPBACK)
    async with raw_server({}) as server:
        location = target.format(port=server.port)
        server.routes["/start"] = redirect(location, status)
        resolver = _stand_in()
        opts = resolver.options(
            provider_confidence=ConfidenceLevel.MEDIUM,
            allowed_private_hosts=("intranet.test",),
        )
        with pytest.raises(WebPageAccessBlocked) as caught:
            await retrieve(server.url("/start"), opts)
    assert caught.value.reason is HOSTILE_TARGETS[target]
    assert server.paths == ["/start"]
    assert socket_guard.connections == [(LOOPBACK, server.port)]


async def test_an_allowed_private_host_redirected_to_is_read_by_a_high_provider_only(
    socket_guard: SocketGuard,
) -> None:
    socket_guard.allow(LOOPBACK)
    async with raw_server({"/inside": answer(b"<p>internal</p>")}) as server:
        server.routes["/start"] = redirect(f"http://intranet.test:{server.port}/inside")
        page = await retrieve(
            server.url("/start"),
            _stand_in().options(allowed_private_hosts=("intranet.test",)),
        )
    assert "internal" in page.body_text
    assert page.required_provider_confidence is ConfidenceLevel.HIGH


async def test_public_only_retrieval_never_follows_into_an_allowed_private_host() -> None:
    async with raw_server({"/inside": answer(b"<p>internal</p>")}) as server:
        server.routes["/start"] = redirect(f"http://intranet.test:{server.port}/inside")
        opts = _stand_in().options(
            allowed_private_hosts=("intranet.test",), public_targets_only=True
        )
        with pytest.raises(WebPageAccessBlocked) as caught:
            await retrieve(server.url("/start"), opts)
    assert caught.value.reason is Reason.PRIVATE_HOST_NOT_ALLOWED
    assert server.paths == ["/start"]


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("wiki.corp.test", True),
        ("WIKI.Corp.Test.", True),
        ("a.b.corp.test", True),
        ("corp.test", False),
        ("evilcorp.test", False),
        ("corp.test.evil", False),
        ("wiki.corp.test.evil", False),
        ("intranet", True),
        ("intranet.evil", False),
        ("evilintranet", False),
        ("xn--intrnet-9ya", False),
        ("10.0.0.5", True),
        ("0x0a.0.0.5", True),
        ("10.0.0.50", False),
    ],
)
def test_allowlist_entries_match_only_what_they_name(host: str, allowed: bool) -> None:
    entries = parse_allowed_private_hosts("*.corp.test; intranet, 10.0.0.5")
    assert is_host_allowed(host, entries) is allowed


@pytest.mark.parametrize(
    "entry", ["*.10.0.0.5", "http://intranet", "intranet/x", "user@intranet", "*.", "a..b"]
)
def test_allowlist_entries_that_are_no_plain_host_are_refused(entry: str) -> None:
    with pytest.raises(ValueError, match=r"(host names only|is not valid)"):
        parse_allowed_private_hosts(entry)


@pytest.mark.parametrize(
    "target",
    [
        "http://ｌｏｃａｌｈｏｓｔ:{port}/",
        "http://１２７.０.０.１:{port}/",
        "http://127。0。0。1:{port}/",
        "http://lоcalhost:{port}/",
        "http://xn--lcalhost-9fh:{port}/",
        "http://[::ffff:7f00:1%25lo]:{port}/",
    ],
)
async def test_look_alike_spellings_of_loopback_are_never_dialled(
    target: str, socket_guard: SocketGuard
) -> None:
    socket_guard.allow(LOOPBACK)
    async with raw_server({}) as server:
        server.routes["/start"] = redirect(target.format(port=server.port))
        with pytest.raises((WebPageAccessBlocked, WebRetrievalError)):
            await retrieve(server.url("/start"), _stand_in().options())
    assert server.paths == ["/start"]
    assert socket_guard.connections == [(LOOPBACK, server.port)]
