"""Fixtures for the security review tests: the socket guard of the web tests, reused."""

from __future__ import annotations

from tests.web.conftest import SocketGuard, socket_guard

__all__ = ["SocketGuard", "socket_guard"]
