"""A real PostgreSQL server for the tests: a fresh cluster in a temporary folder, on 127.0.0.1
and a free port, started once per test session and stopped at its end.

Uses the server binaries of Debian's `postgresql` package (`.ci/run` installs it when missing).
PostgreSQL refuses to run as root, so as root the cluster is owned by and run as `postgres`.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from tests.servers.processes import free_port, stop

_START_SECONDS = 30


def server_binaries() -> Path | None:
    """The folder holding `initdb` and `postgres`, newest version first; None when missing."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "postgres").exists():
            return Path(folder)
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


@contextmanager
def running_postgres(password: str | None = None) -> Iterator[str]:
    """A connection string (`postgresql://…`) to a fresh server, for the length of the block.

    With `password`, connections over TCP must give it (scram-sha-256) and the string holds it;
    without, the server trusts every connection."""
    binaries = server_binaries()
    if binaries is None:
        raise RuntimeError(
            "PostgreSQL's server binaries are not installed (apt-get install postgresql)"
        )
    folder = Path(tempfile.mkdtemp(prefix="toolpolicy-pg-"))
    data = folder / "data"
    prefix: list[str] = []
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        os.chown(folder, account.pw_uid, account.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run(
        [
            *prefix,
            str(binaries / "initdb"),
            "-D",
            str(data),
            *(
                ("-A", "trust")
                if password is None
                else ("--auth-local=trust", "--auth-host=scram-sha-256")
            ),
            "-U",
            "toolpolicy",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        check=True,
        capture_output=True,
    )
    server = subprocess.Popen(
        [
            *prefix,
            str(binaries / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-k",
            str(folder),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "max_connections=60",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    user = "toolpolicy" if password is None else f"toolpolicy:{quote(password, safe='')}"
    dsn = f"postgresql://{user}@127.0.0.1:{port}/postgres"
    try:
        import psycopg

        if password is not None:
            _set_password(folder, port, password, server)

        deadline = time.monotonic() + _START_SECONDS
        while True:
            try:
                psycopg.connect(dsn, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the test PostgreSQL server did not start") from None
                time.sleep(0.1)
        yield dsn
    finally:
        stop(server)
        shutil.rmtree(folder, ignore_errors=True)


def _set_password(
    socket_folder: Path, port: int, password: str, server: subprocess.Popen[bytes]
) -> None:
    """Give the cluster's user its password, over the local socket (trusted)."""
    import psycopg
    from psycopg import sql

    deadline = time.monotonic() + _START_SECONDS
    while True:
        try:
            with psycopg.connect(
                host=str(socket_folder),
                port=port,
                user="toolpolicy",
                dbname="postgres",
                autocommit=True,
                connect_timeout=2,
            ) as connection:
                connection.execute(
                    sql.SQL("ALTER USER toolpolicy PASSWORD {}").format(sql.Literal(password))
                )
            return
        except psycopg.OperationalError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the test PostgreSQL server did not start") from None
            time.sleep(0.1)
