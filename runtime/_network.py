"""What a failed connection was, in words an administrator acts on (one rule for every client)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit


def could_not_resolve(error: BaseException) -> bool:
    """Whether the failure was the host name not resolving (DNS), anywhere in its cause chain."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, socket.gaierror):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def host_of(url: str) -> str:
    """The host part of an address, for a message (the address itself when it has none)."""
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url
