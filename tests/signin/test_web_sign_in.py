"""`policy serve` signs people in at the organization's identity provider (a real oidc-provider
on 127.0.0.1): a browser is sent through the OpenID Connect authorization-code flow with PKCE and
comes back with a signed, HttpOnly session cookie; an API client presents a bearer token or is
told where to get one; a session cookie that was altered, or a callback that was not started
here, signs nobody in."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

from policy.secrets import generate_secret
from tests.mcp_tools.test_mcp import HEADER
from tests.servers.oidc_provider import GATEWAY_CLIENT, oidc_provider, sign_in_lua
from tests.servers.processes import free_port

ROOT = Path(__file__).resolve().parents[2]


def _org(folder: Path, issuer: str, secret: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    settings = sign_in_lua(issuer, secret)
    (folder / "plugin.lua").write_text(HEADER + settings, encoding="utf-8")
    return folder


@contextmanager
def _policy_serve(org: Path, port: int) -> Iterator[tuple[str, list[str]]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "policy.cli", "serve", "--org", str(org), "--port", str(port)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=ROOT, env=os.environ,
    )  # fmt: skip
    lines: list[str] = []
    started: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if line.startswith("policy serve: "):
                started.put(line.split()[2])

    threading.Thread(target=read, daemon=True).start()
    try:
        try:
            url = started.get(timeout=60)
        except queue.Empty:
            raise AssertionError(f"policy serve did not start: {''.join(lines)}") from None
        yield url.rstrip("/"), lines
    finally:
        process.terminate()
        process.wait(timeout=20)


def _sign_in(browser: httpx.Client, start: str, person: str) -> httpx.Response:
    """Follow the sign-in as a browser does, entering `person` at the provider's login form and
    confirming its consent page; the answer of the callback."""
    response = browser.get(start)
    for _ in range(20):
        if response.status_code in (302, 303):
            location = urljoin(str(response.url), response.headers["location"])
            if urlsplit(location).path == "/signin/callback":
                return browser.get(location)
            response = browser.get(location)
        elif response.status_code == 200 and "/interaction/" in str(response.url):
            prompt = "login" if 'name="login"' in response.text else "consent"
            form = {"prompt": prompt, "login": person, "password": "any"}
            response = browser.post(str(response.url), data=form)
        else:
            raise AssertionError((response.status_code, str(response.url), response.text[:300]))
    raise AssertionError("the sign-in did not come back")


def test_a_browser_signs_in_at_the_identity_provider_and_keeps_a_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = generate_secret()
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", secret)
    port = free_port()
    callback = f"http://127.0.0.1:{port}/signin/callback"
    with oidc_provider(tmp_path / "idp", redirect_uris=[callback]) as idp:
        org = _org(tmp_path / "org", idp.issuer, secret)
        with _policy_serve(org, port) as (url, log), httpx.Client(timeout=30) as browser:
            first = browser.get(f"{url}/settings")
            assert first.status_code == 303
            assert first.headers["location"] == "/signin?next=%2Fsettings"

            api = browser.get(f"{url}/api/status")
            assert api.status_code == 401
            assert (
                f'resource_metadata="{url}/.well-known/oauth-protected-resource"'
                in (api.headers["www-authenticate"])
            )
            metadata = browser.get(f"{url}/.well-known/oauth-protected-resource").json()
            assert metadata["authorization_servers"] == [idp.issuer]

            started = browser.get(f"{url}/signin?next=/settings")
            authorize = parse_qs(urlsplit(started.headers["location"]).query)
            assert authorize["code_challenge_method"] == ["S256"]
            assert authorize["client_id"] == [GATEWAY_CLIENT[0]]
            assert "code_verifier" not in authorize

            back = _sign_in(browser, f"{url}/signin?next=/settings", "alice")
            assert back.status_code == 303, back.text
            assert back.headers["location"] == "/settings"
            cookie = next(
                c
                for c in back.headers.get_list("set-cookie")
                if c.startswith("toolpolicy_session=")
            )
            assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
            page = browser.get(f"{url}/settings")
            assert page.status_code == 200 and "<html" in page.text.lower()
            assert browser.get(f"{url}/api/status").status_code == 200

            session = browser.cookies["toolpolicy_session"]
            head, body, signature = session.split(".")
            forged = f"{head}.{body}.{signature[:-4]}AAAA"
            with httpx.Client(timeout=30, cookies={"toolpolicy_session": forged}) as other:
                assert other.get(f"{url}/settings").status_code == 303

            assert (
                httpx.get(
                    f"{url}/api/status",
                    headers={"Authorization": f"Bearer {idp.token('bob')}"},
                    timeout=30,
                ).status_code
                == 200
            )

            assert browser.get(f"{url}/signout").status_code == 303
            assert browser.get(f"{url}/settings").status_code == 303

            stray = httpx.get(f"{url}/signin/callback?code=abc&state=xyz", timeout=30)
            assert stray.status_code == 400
        logged = "".join(log)
        assert session not in logged


def test_a_client_secret_the_server_cannot_decrypt_refuses_the_sign_in_saying_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DataGateway.ClientSecret encrypted under another secret than the server's: the callback
    signs nobody in and says which setting to fix, and no traceback reaches the log."""
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", generate_secret())
    port = free_port()
    callback = f"http://127.0.0.1:{port}/signin/callback"
    with oidc_provider(tmp_path / "idp", redirect_uris=[callback]) as idp:
        org = _org(tmp_path / "org", idp.issuer, generate_secret())
        with _policy_serve(org, port) as (url, log), httpx.Client(timeout=30) as browser:
            back = _sign_in(browser, f"{url}/signin?next=/settings", "alice")
            assert back.status_code == 401, back.text
            assert "DataGateway.ClientSecret cannot be decrypted" in back.text
            assert "toolpolicy_session" not in browser.cookies
        logged = "".join(log)
    assert "Traceback" not in logged, logged
    assert "DataGateway.ClientSecret cannot be decrypted" in logged
