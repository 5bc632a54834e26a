"""`policy serve`: every page and its JSON twin over real HTTP on loopback; escaping, secrets, CSP,
the token, reload, and the CLI's refusal of a non-loopback host without a token."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from policy import load_policy
from policy.explain import build_matrix, decision_document, matrix_document, settings_document
from policy.vocabulary import Component
from policy.web import CONTENT_SECURITY_POLICY, build_app
from tests.servers.loopback import RunningApp, running_app
from tests.webui.conftest import SECRET, hostile_organization


@pytest.fixture
def organization(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return hostile_organization(tmp_path, monkeypatch)


@pytest.fixture
def served(organization: Path) -> Iterator[RunningApp]:
    with running_app(build_app(lambda: load_policy([organization]))) as app:
        yield app


def test_every_page_answers_with_the_csp_and_no_secret(served: RunningApp) -> None:
    for path in ("/", "/settings", "/decisions", "/decisions?component=APP_SETTINGS"):
        response = httpx.get(served.url(path))
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert "script-src" not in CONTENT_SECURITY_POLICY  # default-src 'none' forbids scripts
        assert SECRET not in response.text, path
    for path in ("/api/status", "/api/settings", "/api/decisions"):
        response = httpx.get(served.url(path))
        assert response.status_code == 200, path
        assert SECRET not in response.text, path


def test_hostile_plugin_text_is_shown_as_text(served: RunningApp) -> None:
    for path in ("/", "/decisions"):
        page = httpx.get(served.url(path)).text
        assert "<script>" not in page and "<img src=x" not in page, path
        assert "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in page, path


def test_json_twins_are_the_cli_contracts(served: RunningApp, organization: Path) -> None:
    policy = load_policy([organization])

    tool_ids = httpx.get(served.url("/api/decisions")).json()["tools"]
    matrix = build_matrix(policy.registry, tool_ids, policy.providers, Component.CHAT)
    assert httpx.get(served.url("/api/decisions")).json() == matrix_document(matrix)
    settings = httpx.get(served.url("/api/settings")).json()["tools"]
    assert settings == [settings_document(policy, t) for t in sorted(policy.tool_ids)]
    masked = {
        row["field"]: row["value"]
        for tool in settings
        if tool["tool"] == "web_search"
        for row in tool["settings"]
    }
    assert masked["tavily.apiKey"] == "*****"
    provider = policy.providers[1]
    answer = httpx.get(
        served.url("/api/decision"),
        params={"tool": "web_search", "provider": provider.id, "component": "CHAT"},
    ).json()
    expected = decision_document(policy.offer_decision("web_search", provider))
    assert answer == expected


def test_a_matrix_cell_links_to_its_checks_with_evidence(served: RunningApp) -> None:
    page = httpx.get(served.url("/decisions")).text
    start = page.index('href="/decision?') + len('href="')
    link = page[start : page.index('"', start)].replace("&amp;", "&")
    decision = httpx.get(served.url(link))
    assert decision.status_code == 200
    assert '<ol id="checks">' in decision.text
    assert 'class="evidence"' in decision.text


def test_unknown_names_are_404_with_what_was_wrong(served: RunningApp) -> None:
    response = httpx.get(served.url("/api/decision"), params={"tool": "nope", "provider": "x"})
    assert response.status_code == 404
    assert response.json() == {"error": "unknown tool 'nope'"}
    response = httpx.get(served.url("/decisions"), params={"component": "<b>BOGUS</b>"})
    assert response.status_code == 404
    assert "CHAT" in response.text and "<b>" not in response.text


def test_reload_reads_the_changed_files(served: RunningApp, organization: Path) -> None:
    base = organization / "base" / "plugin.lua"
    base.write_text(
        base.read_text().replace('NAME = "Example Corp - base', 'NAME = "Renamed - base')
    )
    assert "Renamed - base" not in httpx.get(served.url("/")).text
    assert httpx.post(served.url("/api/reload")).json() == {"reloaded": True}
    assert "Renamed - base" in httpx.get(served.url("/")).text


def test_a_token_guards_every_request(organization: Path) -> None:
    app = build_app(lambda: load_policy([organization]), token="s3cret-token")
    with running_app(app) as served:
        assert httpx.get(served.url("/api/status")).status_code == 401
        assert httpx.get(served.url("/"), params={"token": "wrong"}).status_code == 401
        headers = {"Authorization": "Bearer s3cret-token"}
        assert httpx.get(served.url("/api/status"), headers=headers).status_code == 200
        with httpx.Client() as browser:
            first = browser.get(served.url("/"), params={"token": "s3cret-token"})
            assert first.status_code == 200
            assert browser.get(served.url("/settings")).status_code == 200  # the cookie


def test_serve_refuses_a_non_loopback_host_without_a_token(organization: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "policy.cli",
            "serve",
            "--org",
            str(organization),
            "--host",
            "0.0.0.0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--host" in result.stderr and "--token" in result.stderr
    assert "Traceback" not in result.stderr
