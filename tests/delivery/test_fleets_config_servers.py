"""The Fleets page's configuration server examples work: the Caddy and nginx configurations of
docs/administrators/fleets.md, run by the real servers with only the address, the folder and the
certificate put in, serve `<server url>/<id>.zip` to a fetch round, answer the next round's ETag
check with 304 (no download) and serve a changed zip again."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from policy import load_policy
from policy.config_sources import ConfigurationReference
from runtime.config_fetch import fetch_configurations
from tests.servers.config_server import plugin_text, zip_of
from tests.servers.processes import free_port
from tests.servers.static_servers import (
    caddy_installed,
    caddy_statuses,
    nginx_installed,
    nginx_statuses,
    running_caddy,
    running_nginx,
)
from tests.servers.tls import self_signed

ROOT = Path(__file__).resolve().parents[2]
CONFIG_ID = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
"""The id the page's examples use."""
SERVED_FOLDER = "/srv/ai-configs"
HOST = "config.intra.example.org"
LOCK = 'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {{ "{}" }}'


PAGE = ROOT / "docs" / "administrators" / "fleets.md"


def _page_block(marker: str) -> str:
    """The page's unlabelled code block that contains `marker`."""
    blocks: list[str] = []
    current: list[str] | None = None
    language = ""
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if current is None:
                current, language = [], line[3:].strip()
            else:
                if not language and marker in "\n".join(current):
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    assert len(blocks) == 1, f"one code block with {marker!r} in {PAGE.name}, found {len(blocks)}"
    return blocks[0]


def _missing(installed: bool, package: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not installed and not os.environ.get("CI"),
        reason=f"{package} is not installed here (apt-get install {package}); "
        "CI installs it and always runs this test",
    )


def _serve_and_fetch(
    folder: Path,
    state: Path,
    reference: ConfigurationReference,
    statuses: Callable[[], list[int]],
    **tls: Path,
) -> None:
    """Two rounds with the zip unchanged (the second an ETag check answered 304, as the server's
    access log shows), then a changed zip: each time the copy in force is the one on the server."""

    def disabled() -> tuple[str, ...]:
        setting = load_policy(state_dir=state, use_entry_points=False).configuration.setting(
            "DataTools.DisabledToolIds"
        )
        return tuple(setting.value) if setting is not None else ()

    archive = folder / f"{CONFIG_ID}.zip"
    archive.write_bytes(zip_of({"plugin.lua": plugin_text(CONFIG_ID, LOCK.format("web_search"))}))
    (first,) = fetch_configurations([reference], state, **tls)
    assert first.state == "current", first.error
    assert first.etag, "the server sends an ETag"
    assert disabled() == ("web_search",)

    (second,) = fetch_configurations([reference], state, **tls)
    assert (second.state, second.etag, second.error) == ("current", first.etag, None)
    assert disabled() == ("web_search",)

    archive.write_bytes(
        zip_of({"plugin.lua": plugin_text(CONFIG_ID, LOCK.format("read_web_page"))})
    )
    os.utime(archive, (1_000_000_000, 1_000_000_000))  # another modification time: another ETag
    (third,) = fetch_configurations([reference], state, **tls)
    assert third.state == "current" and third.etag != first.etag, third.error
    assert disabled() == ("read_web_page",)
    assert statuses() == [200, 304, 200]  # the unchanged round downloaded nothing


@_missing(caddy_installed(), "caddy")
def test_the_fleets_page_caddy_configuration_serves_the_zips_with_etags(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    port = free_port()
    log = tmp_path / "caddy" / "access.log"
    caddyfile = (
        _page_block("file_server")
        .replace(
            f"{HOST} {{",
            f"http://127.0.0.1:{port} {{\n    log {{\n        output file {log}\n    }}",
            1,
        )
        .replace(SERVED_FOLDER, str(served))
    )
    reference = ConfigurationReference(CONFIG_ID, f"http://127.0.0.1:{port}/ai", "fleets.md")
    (tmp_path / "caddy").mkdir()
    with running_caddy(caddyfile, port, tmp_path / "caddy"):
        _serve_and_fetch(served, tmp_path / "state", reference, lambda: caddy_statuses(log))


@_missing(nginx_installed(), "nginx-light")
def test_the_fleets_page_nginx_configuration_serves_the_zips_with_etags_over_https(
    tmp_path: Path,
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (tmp_path / "tls").mkdir()
    tls = self_signed(tmp_path / "tls", ["localhost"])
    port = free_port()
    block = _page_block("server_name")
    server_block = (
        block.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;", 1)
        .replace(f"{SERVED_FOLDER}/", f"{served}/")
        .replace(f"/etc/ssl/certs/{HOST}.pem", str(tls.certfile))
        .replace(f"/etc/ssl/private/{HOST}.key", str(tls.keyfile))
    )
    assert server_block.count(str(tmp_path)) == 3, server_block
    reference = ConfigurationReference(CONFIG_ID, f"https://localhost:{port}/ai", "fleets.md")
    (tmp_path / "nginx").mkdir()
    with running_nginx(server_block, port, tmp_path / "nginx"):
        _serve_and_fetch(
            served,
            tmp_path / "state",
            reference,
            lambda: nginx_statuses(tmp_path / "nginx"),
            ca_bundle=tls.certfile,
        )
