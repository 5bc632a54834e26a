"""What every test server run as a program shares: a free loopback port to give it, and
stopping it at the end of its block (terminated, killed when it does not end in time)."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now (the server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def stop(server: subprocess.Popen[bytes]) -> None:
    """End `server`: terminate, then kill when it has not ended within 20 seconds."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@contextmanager
def announced_mcp_server(argv: Sequence[str]) -> Iterator[str]:
    """An MCP test server run as `argv` that prints "PORT <n>" once listening: its streamable
    HTTP address while the block runs."""
    process = subprocess.Popen(list(argv), stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        stop(process)
