"""The loopback provider the adapter and provider tests talk to: one per test module, and every
test starts with no scripted replies and no recorded requests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers.provider_server import ProviderServer, running_provider_server


@pytest.fixture(scope="module")
def provider_server_module() -> Iterator[ProviderServer]:
    with running_provider_server() as server:
        yield server


@pytest.fixture
def server(provider_server_module: ProviderServer) -> ProviderServer:
    provider_server_module.reset()
    return provider_server_module
