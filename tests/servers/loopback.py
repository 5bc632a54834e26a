"""Serves a Starlette app on 127.0.0.1, port 0, in a thread, for the length of a `with` block.

Every loopback test server runs through `running_app`, so start-up, the start deadline and the
shutdown are the same for all of them, and nothing is left running after a test module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

_START_SECONDS = 10


@dataclass(frozen=True)
class RunningApp:
    """Where a running app answers: its port, and http or https."""

    port: int
    scheme: str

    def url(self, path: str = "", host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


@contextmanager
def running_app(
    app: ASGIApp,
    *,
    certfile: Path | None = None,
    keyfile: Path | None = None,
    lifespan: bool = False,
) -> Iterator[RunningApp]:
    """Serve `app` (HTTPS when a certificate is given) until the block ends; with `lifespan`,
    the app's startup and shutdown run too (e.g. a task it keeps while serving)."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="critical",
        lifespan="on" if lifespan else "off",
        access_log=False,
        ssl_certfile=str(certfile) if certfile else None,
        ssl_keyfile=str(keyfile) if keyfile else None,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="loopback-test-server", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + _START_SECONDS
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("The loopback test server did not start.")
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield RunningApp(port=port, scheme="https" if certfile else "http")
    finally:
        server.should_exit = True
        thread.join(timeout=10)
