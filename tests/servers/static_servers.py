"""Real static web servers (nginx, Caddy) on 127.0.0.1 and a free port, started from a
configuration text, for the length of a `with` block: the Fleets page's configuration server examples
(docs/administrators/fleets.md) run as written, with only the address, the folder and the certificate put in.

Uses Debian's `nginx-light` and `caddy` packages (`.ci/run` installs them when missing).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.servers.processes import stop

_START_SECONDS = 20


def _wait_listening(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _START_SECONDS
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                shown = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
                raise RuntimeError(f"the test web server did not start: {shown[-2000:]}") from None
            time.sleep(0.05)


@contextmanager
def _running(command: list[str], port: int, log: Path, env: dict[str, str]) -> Iterator[None]:
    with log.open("ab") as output:
        server = subprocess.Popen(command, stdout=output, stderr=output, env=env)
    try:
        _wait_listening(port, server, log)
        yield
    finally:
        stop(server)


@contextmanager
def running_nginx(server_block: str, port: int, folder: Path) -> Iterator[None]:
    """nginx serving `server_block` (an nginx `server { … }`), listening on `port`; its pid,
    logs and temporary files live in `folder`, the status of each answer is a line of
    `folder/access.log`. One process (no workers), so it reads the files of whoever runs the
    test."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    configuration = folder / "nginx.conf"
    temporary = {name: folder / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    configuration.write_text(
        f"""daemon off;
master_process off;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;
events {{}}
http {{
    log_format statuses '$status';
    access_log {folder / "access.log"} statuses;
    client_body_temp_path {temporary["body"]};
    proxy_temp_path {temporary["proxy"]};
    fastcgi_temp_path {temporary["fastcgi"]};
    uwsgi_temp_path {temporary["uwsgi"]};
    scgi_temp_path {temporary["scgi"]};
{server_block}
}}
""",
        encoding="utf-8",
    )
    command = [binary, "-p", str(folder), "-c", str(configuration), "-e", str(folder / "error.log")]
    with _running(command, port, folder / "error.log", dict(os.environ)):
        yield


@contextmanager
def running_caddy(caddyfile: str, port: int, folder: Path) -> Iterator[None]:
    """Caddy serving `caddyfile`, listening on `port`, without its admin endpoint; its data
    and configuration folders live in `folder`. (A site logs its answers with a `log` block.)"""
    binary = shutil.which("caddy") or "/usr/bin/caddy"
    configuration = folder / "Caddyfile"
    configuration.write_text("{\n    admin off\n}\n\n" + caddyfile, encoding="utf-8")
    env = {
        **os.environ,
        "HOME": str(folder),
        "XDG_DATA_HOME": str(folder / "data"),
        "XDG_CONFIG_HOME": str(folder / "config"),
    }
    command = [binary, "run", "--config", str(configuration), "--adapter", "caddyfile"]
    with _running(command, port, folder / "caddy.log", env):
        yield


def nginx_installed() -> bool:
    return (shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")) is not None


def caddy_installed() -> bool:
    return shutil.which("caddy") is not None


def nginx_statuses(folder: Path) -> list[int]:
    """The status of each answer `running_nginx(…, folder)` gave so far."""
    log = folder / "access.log"
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def caddy_statuses(log: Path) -> list[int]:
    """The status of each answer in a Caddy access log (`log { output file … }`, JSON lines)."""
    import json

    lines = log.read_text().splitlines() if log.exists() else []
    return [int(json.loads(line)["status"]) for line in lines if line.strip()]
