"""Fixtures for the web tests: a loopback page server and a socket-level connection guard.

The guard is opt-in (tests ask for `socket_guard`), so other web tests are not affected.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.servers.page_server import PageServer, running_page_server
from tests.servers.tls import TlsFiles, self_signed


@dataclass
class SocketGuard:
    """Records every TCP connect and system DNS lookup; refuses what a test did not allow."""

    allowed_addresses: set[str] = field(default_factory=set)
    allowed_names: set[str] = field(default_factory=set)
    connections: list[tuple[str, int]] = field(default_factory=list)
    refused: list[tuple[str, int]] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)

    def allow(self, *addresses: str) -> None:
        self.allowed_addresses.update(str(ipaddress.ip_address(a)) for a in addresses)


@pytest.fixture
def socket_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[SocketGuard]:
    """Fails any connection to an address the test did not declare validated."""
    guard = SocketGuard()
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        host = str(ipaddress.ip_address(str(address[0]).split("%", 1)[0]))
        if host not in guard.allowed_addresses:
            guard.refused.append((host, int(address[1])))
            raise ConnectionRefusedError(f"socket guard: {host} was never validated")
        guard.connections.append((host, int(address[1])))

    def connect(sock: socket.socket, address: Any) -> None:
        check(sock, address)
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        check(sock, address)
        return real_connect_ex(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            ipaddress.ip_address(name)
        except ValueError:
            guard.lookups.append(name)
            if name not in guard.allowed_names:
                raise socket.gaierror(
                    socket.EAI_NONAME, "socket guard: no system DNS in tests"
                ) from None
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield guard


@pytest.fixture(scope="module")
def page_server() -> Iterator[PageServer]:
    with running_page_server() as server:
        yield server


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A self-signed certificate for `public.test` (and nothing else)."""
    return self_signed(tmp_path_factory.mktemp("tls"), ["public.test"])


@pytest.fixture(scope="module")
def tls_page_server(tls_files: TlsFiles) -> Iterator[PageServer]:
    with running_page_server(certfile=tls_files.certfile, keyfile=tls_files.keyfile) as server:
        yield server
