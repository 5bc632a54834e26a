"""A host name that does not resolve is reported as such, not as a refused connection."""

from __future__ import annotations

import socket

import httpx
import pytest

from policy.config_sources import ConfigurationReference
from runtime._network import could_not_resolve
from runtime.config_fetch import _describe_failure
from runtime.providers.client import _transport_reason


def _unresolved() -> httpx.ConnectError:
    """The chain httpx raises when name resolution fails: ConnectError from a real gaierror
    (AI_NUMERICHOST makes the resolver refuse a name without asking any server)."""
    try:
        socket.getaddrinfo("wiki.intra.example", 443, flags=socket.AI_NUMERICHOST)
    except socket.gaierror as cause:
        try:
            raise httpx.ConnectError(str(cause)) from cause
        except httpx.ConnectError as error:
            return error
    pytest.fail("the resolver accepted a name as a numeric host")


def test_a_name_that_does_not_resolve_is_told_apart_from_a_refused_connection() -> None:
    assert could_not_resolve(_unresolved())
    assert not could_not_resolve(httpx.ConnectError("[Errno 111] Connection refused"))
    unresolved = _transport_reason(_unresolved(), "https://llm.intra.example:8443/v1")
    assert unresolved == "could not be reached: could not resolve llm.intra.example"
    refused = _transport_reason(httpx.ConnectError("refused"), "http://127.0.0.1:9/v1")
    assert refused == "refused the connection"


def test_a_fetch_names_the_host_it_could_not_resolve_without_user_info() -> None:
    reference = ConfigurationReference(
        "4a7c4a2e-1111-4111-8111-111111111111",
        "https://admin:s3cret@config.intra.example/configs",
        "--config-server",
    )
    message = _describe_failure(_unresolved(), reference)
    assert message.startswith("could not resolve config.intra.example (")
    assert "s3cret" not in message
