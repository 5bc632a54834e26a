"""The sign-in's token checks against a real OpenID provider (oidc-provider on 127.0.0.1) issuing
real signed tokens: who a valid token names, and every refusal the MCP authorization spec asks of a
resource server — expired, another audience, another issuer, a key the issuer does not publish
(its key set fetched once more, then refused, and not again at once)."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

import pytest

from policy.identity import Caller
from policy.sign_in import SignInSettings
from runtime.signin._issuer import IssuerKeys
from runtime.signin.verifier import CallerTokenVerifier
from tests.servers.oidc_provider import (
    GATEWAY_AUDIENCE,
    TICKETS_RESOURCE,
    OidcProvider,
    oidc_provider,
    signing_key,
)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _verifier(
    provider: OidcProvider,
    *,
    clock: _Clock | None = None,
    now: int | None = None,
    groups_claim: str = "groups",
) -> CallerTokenVerifier:
    settings = SignInSettings(provider.issuer, GATEWAY_AUDIENCE, groups_claim)
    keys = IssuerKeys(provider.issuer, clock=clock or _Clock())
    later = None if now is None else (lambda: now)
    return CallerTokenVerifier(settings, lambda: settings, keys=keys, now=later)


def _refusal(caplog: pytest.LogCaptureFixture) -> str:
    refused = [r.getMessage() for r in caplog.records if "refused a token" in r.getMessage()]
    assert refused, [r.getMessage() for r in caplog.records]
    return refused[-1]


def test_a_valid_token_names_its_subject_and_groups(tmp_path: Path) -> None:
    with oidc_provider(tmp_path) as provider:
        verifier = _verifier(provider)
        accepted = asyncio.run(verifier.verify_token(provider.token("alice")))
        assert accepted is not None
        assert accepted.caller == Caller("alice", frozenset({"engineering"}))  # type: ignore[attr-defined]
        bob = asyncio.run(verifier.verify_token(provider.token("bob")))
        assert bob is not None and bob.caller == Caller("bob", frozenset({"finance"}))  # type: ignore[attr-defined]
        assert provider.jwks_hits() == 1, "the key set is fetched once and kept"


def test_an_expired_token_is_refused_beyond_the_clock_skew(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "runtime.signin")
    with oidc_provider(tmp_path, ttl=600) as provider:
        token = provider.token("alice")
        within_skew = int(time.time()) + 600 + 30
        assert asyncio.run(_verifier(provider, now=within_skew).verify_token(token)) is not None
        past_skew = int(time.time()) + 600 + 120
        assert asyncio.run(_verifier(provider, now=past_skew).verify_token(token)) is None
        assert "expired" in _refusal(caplog)
        assert token not in caplog.text, "a token is never logged"


def test_a_token_for_another_audience_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "runtime.signin")
    with oidc_provider(tmp_path) as provider:
        token = provider.token("alice", resource=TICKETS_RESOURCE)
        assert asyncio.run(_verifier(provider).verify_token(token)) is None
        assert "'aud'" in _refusal(caplog)


def test_a_token_of_another_issuer_is_refused_even_signed_with_the_same_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "runtime.signin")
    with oidc_provider(tmp_path) as ours:
        impostor_port = ours.port + 1 if ours.port < 65000 else ours.port - 1
        with oidc_provider(
            tmp_path, keys=ours.keys, issuer=f"http://localhost:{impostor_port}"
        ) as impostor:
            token = impostor.token("alice")
        assert asyncio.run(_verifier(ours).verify_token(token)) is None
        assert "'iss'" in _refusal(caplog)


def test_an_unknown_key_id_refreshes_the_keys_once_then_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "runtime.signin")
    clock = _Clock()
    with oidc_provider(tmp_path) as ours:
        verifier = _verifier(ours, clock=clock)
        assert asyncio.run(verifier.verify_token(ours.token("alice"))) is not None
        assert ours.jwks_hits() == 1
        # Another provider under our issuer's name, with a key ours never published.
        with oidc_provider(tmp_path, keys=[signing_key("rogue")], issuer=ours.issuer) as rogue:
            forged = rogue.token("alice")
            other = rogue.token("bob")
        clock.now += 60
        assert asyncio.run(verifier.verify_token(forged)) is None
        assert "does not publish" in _refusal(caplog)
        assert ours.jwks_hits() == 2, "one refresh for the unknown key id"
        assert asyncio.run(verifier.verify_token(other)) is None
        assert ours.jwks_hits() == 2, "refreshes are rate-limited"
        assert asyncio.run(verifier.verify_token(ours.token("bob"))) is not None


def test_a_rotated_key_is_fetched_and_accepted(tmp_path: Path) -> None:
    clock = _Clock()
    old, new = signing_key("old"), signing_key("new")
    with oidc_provider(tmp_path, keys=[old]) as before:
        verifier = _verifier(before, clock=clock)
        assert asyncio.run(verifier.verify_token(before.token("alice"))) is not None
    with oidc_provider(tmp_path, keys=[new, old], port=before.port) as after:
        token = after.token("bob")
        clock.now += 60
        accepted = asyncio.run(verifier.verify_token(token))
        assert accepted is not None and accepted.subject == "bob"
        assert after.jwks_hits() == 1


def test_a_groups_claim_of_another_shape_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "runtime.signin")
    with oidc_provider(tmp_path) as provider:
        token = provider.token("alice")
        assert asyncio.run(_verifier(provider, groups_claim="iat").verify_token(token)) is None
        assert "'iat' claim is not a list of group names" in _refusal(caplog)
        absent = asyncio.run(_verifier(provider, groups_claim="roles").verify_token(token))
        assert absent is not None and absent.caller.groups == frozenset()  # type: ignore[attr-defined]


def test_a_token_without_the_groups_claim_is_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "runtime.signin")
    with oidc_provider(tmp_path) as provider:
        verifier = _verifier(provider, groups_claim="grups")
        for person in ("alice", "bob"):
            accepted = asyncio.run(verifier.verify_token(provider.token(person)))
            assert accepted is not None and accepted.caller.groups == frozenset()  # type: ignore[attr-defined]
        said = [r for r in caplog.records if "carries no 'grups' claim" in r.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.WARNING
        assert "DataGateway.GroupsClaim" in said[0].getMessage()


def test_a_token_accepted_before_is_refused_once_it_expired(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "runtime.signin")
    with oidc_provider(tmp_path, ttl=600) as provider:
        token = provider.token("alice")
        now = [int(time.time())]
        settings = SignInSettings(provider.issuer, GATEWAY_AUDIENCE)
        verifier = CallerTokenVerifier(settings, lambda: settings, now=lambda: now[0])
        assert asyncio.run(verifier.verify_token(token)) is not None
        assert asyncio.run(verifier.verify_token(token)) is not None, "kept: a lookup"
        now[0] += 600 + 120
        assert asyncio.run(verifier.verify_token(token)) is None
        assert "expired" in _refusal(caplog)
