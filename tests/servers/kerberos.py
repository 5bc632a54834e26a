"""A real MIT Kerberos KDC for the tests: a fresh realm in a temporary folder, on 127.0.0.1 and a
free port (TCP only), with a user principal whose tickets sit in a cache of their own and a
keytab for the web server's `HTTP/<host>` principal.

Uses Debian's `krb5-kdc`, `krb5-admin-server` and `krb5-user` (`.ci/run` installs them when
missing). Nothing here reads the machine's `/etc/krb5.conf`: every program and the test process
are pointed at the realm's own files through `KRB5_CONFIG`, `KRB5_KDC_PROFILE`, `KRB5CCNAME` and
`KRB5_KTNAME` (`Realm.environment`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.servers.processes import free_port, stop

REALM = "TOOLPOLICY.TEST"
USER = "alice"
_START_SECONDS = 20
_PROGRAMS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit")


def _program(name: str) -> str | None:
    return shutil.which(name) or next(
        (str(p) for p in (Path("/usr/sbin") / name, Path("/usr/bin") / name) if p.exists()), None
    )


def kdc_installed() -> bool:
    """Whether MIT Kerberos' KDC and tools are on this machine."""
    return all(_program(name) for name in _PROGRAMS)


@dataclass(frozen=True)
class Realm:
    """A running realm: its folder, the user's principal and the files a process points at."""

    folder: Path
    user: str
    config: Path
    kdc_profile: Path
    ccache: Path
    """The user's ticket cache (holds a ticket once `kinit` ran)."""
    service_keytab: Path

    def environment(self, *, ccache: Path | None = None) -> dict[str, str]:
        """The variables a process of this realm needs (a client with `ccache` as its cache)."""
        return {
            "KRB5_CONFIG": str(self.config),
            "KRB5_KDC_PROFILE": str(self.kdc_profile),
            "KRB5CCNAME": f"FILE:{ccache or self.ccache}",
            "KRB5_KTNAME": f"FILE:{self.service_keytab}",
            "KRB5_TRACE": str(self.folder / "trace.log"),
        }


def _run(argv: list[str], environment: dict[str, str], stdin: bytes = b"") -> None:
    done = subprocess.run(
        argv, input=stdin, env={**os.environ, **environment}, capture_output=True, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{argv[0]} failed ({done.returncode}): {done.stderr.decode(errors='replace')}"
        )


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"krb5kdc ended at start: {log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("krb5kdc did not listen in time")


@contextmanager
def running_realm(service_hosts: tuple[str, ...]) -> Iterator[Realm]:
    """A KDC for `REALM` with the user `alice` (a ticket in `Realm.ccache`) and `HTTP/<host>`
    for each of `service_hosts` (their keys in `Realm.service_keytab`), for the block's length."""
    missing = [name for name in _PROGRAMS if _program(name) is None]
    if missing:
        raise RuntimeError(
            f"MIT Kerberos is not installed ({', '.join(missing)} missing: apt-get install "
            "krb5-kdc krb5-admin-server krb5-user)"
        )
    folder = Path(tempfile.mkdtemp(prefix="toolpolicy-krb5-"))
    port = free_port()
    realm = Realm(
        folder=folder,
        user=f"{USER}@{REALM}",
        config=folder / "krb5.conf",
        kdc_profile=folder / "kdc.conf",
        ccache=folder / "alice.ccache",
        service_keytab=folder / "http.keytab",
    )
    realm.config.write_text(
        "[libdefaults]\n"
        f"  default_realm = {REALM}\n"
        "  dns_lookup_kdc = false\n"
        "  dns_lookup_realm = false\n"
        "  dns_canonicalize_hostname = false\n"
        "  rdns = false\n"
        "  udp_preference_limit = 1\n"
        "[realms]\n"
        f"  {REALM} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n"
        "[domain_realm]\n"
        f"  .test = {REALM}\n"
    )
    realm.kdc_profile.write_text(
        "[kdcdefaults]\n"
        f"  kdc_listen = 127.0.0.1:{port}\n"
        f"  kdc_tcp_listen = 127.0.0.1:{port}\n"
        "[realms]\n"
        f"  {REALM} = {{\n"
        f"    database_name = {folder}/principal\n"
        f"    key_stash_file = {folder}/stash\n"
        f"    acl_file = {folder}/kadm5.acl\n"
        f"    kdc_listen = 127.0.0.1:{port}\n"
        f"    kdc_tcp_listen = 127.0.0.1:{port}\n"
        "  }\n"
        "[logging]\n"
        f"  kdc = FILE:{folder}/kdc.log\n"
    )
    (folder / "kadm5.acl").write_text("")
    environment = realm.environment()
    kadmin = [str(_program("kadmin.local")), "-r", REALM, "-q"]
    _run([str(_program("kdb5_util")), "create", "-s", "-r", REALM, "-P", "master-key"], environment)
    user_keytab = folder / "alice.keytab"
    _run([*kadmin, f"addprinc -randkey {realm.user}"], environment)
    _run([*kadmin, f"ktadd -k {user_keytab} {realm.user}"], environment)
    for host in service_hosts:
        _run([*kadmin, f"addprinc -randkey HTTP/{host}@{REALM}"], environment)
        _run([*kadmin, f"ktadd -k {realm.service_keytab} HTTP/{host}@{REALM}"], environment)
    log = folder / "kdc.log"
    process = subprocess.Popen(
        [str(_program("krb5kdc")), "-n", "-r", REALM],
        env={**os.environ, **environment},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process, log)
        _run([str(_program("kinit")), "-k", "-t", str(user_keytab), realm.user], environment)
        yield realm
    finally:
        stop(process)
        shutil.rmtree(folder, ignore_errors=True)
