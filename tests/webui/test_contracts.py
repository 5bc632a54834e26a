"""Every route of `policy serve` through Starlette's test client, and every JSON twin under
/api/ equal to what the `policy` command prints with `--format json` for the same configuration
(run as a subprocess, as an administrator runs it)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
from collections.abc import Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from policy import Policy, load_policy
from policy.explain import diff_policies
from policy.web import CONTENT_SECURITY_POLICY, ConfigurationPaths, build_app
from runtime import PolicyWatcher, ReloadResult
from tests.servers.cli_runner import run_policy
from tests.webui.conftest import SECRET, fetched_in_force, hostile_organization, web_app
from tests.webui.test_serve import BAD_MAX_RESULTS, DISABLE_WEB_SEARCH

LINT_ERROR = '\nCONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "no_such_tool" }\n'
FLOW_BLOCK = 'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"\n'
HOLDS = "UNTRUSTED_CONTENT,PRIVATE_DATA"
CHECK_FINDING_KEYS = ("file", "line", "code", "message")
OPENAI = """CONFIG["LLM_PROVIDERS"] = {}
CONFIG["LLM_PROVIDERS"][1] = { ["Id"] = "11111111-1111-4111-8111-111111111111",
  ["InstanceName"] = "OpenAI", ["UsedLLMProvider"] = "OPEN_AI", ["Host"] = "NONE",
  ["Hostname"] = "", ["Model"] = { ["Id"] = "gpt-4.1", ["DisplayName"] = "GPT" } }"""


@pytest.fixture(scope="module")
def organization(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The hostile example organization with a lint error (a tool id that names no tool)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        folder = hostile_organization(tmp_path_factory.mktemp("contracts"), monkeypatch)
        department = folder / "department" / "plugin.lua"
        department.write_text(department.read_text() + LINT_ERROR + FLOW_BLOCK)
        yield folder


@pytest.fixture(scope="module")
def user_settings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("user") / "settings.yaml"
    path.write_text("tools:\n  settings:\n    web_search:\n      defaultLanguage: de-DE\n")
    return path


@pytest.fixture(scope="module")
def app(organization: Path, user_settings: Path) -> Starlette:
    return web_app(ConfigurationPaths(org=(organization,), user_settings=user_settings))


@pytest.fixture(scope="module")
def client(app: Starlette) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1:8765") as test_client:
        yield test_client


def _cli(arguments: Sequence[str]) -> Any:
    return _cli_all([arguments])[0]


def _cli_all(calls: Sequence[Sequence[str]]) -> list[Any]:
    """What `policy ... --format json` prints for each call."""
    documents = []
    for arguments in calls:
        done = run_policy([*arguments, "--format", "json"])
        assert done.stdout, (arguments, done.stderr)
        documents.append(json.loads(done.stdout))
    return documents


def _configuration(organization: Path, user_settings: Path) -> list[str]:
    return ["--org", str(organization), "--user-settings", str(user_settings)]


# --- every route --------------------------------------------------------------------------------

GET_PAGES = {
    "/": "Status",
    "/settings": "Effective settings",
    "/decisions": "Tools offered in CHAT",
    "/simulate": "Simulate a decision",
    "/diff": "Which decisions flip",
}


def _requests(provider_id: str) -> dict[tuple[str, str], tuple[dict[str, Any], int, str]]:
    """Per route and method: the request, the status it answers with, the media type."""
    decision = {"tool": "web_search", "provider": provider_id, "component": "CHAT"}
    simulate = {"provider_kind": "OPEN_AI", "model": "gpt-4o"}
    diff = {"plugin_lua": DISABLE_WEB_SEARCH, "component": ["CHAT"]}
    html, api = "text/html", "application/json"
    return {
        **{(path, "GET"): ({}, 200, html) for path in GET_PAGES},
        ("/api/status", "GET"): ({}, 200, api),
        ("/api/settings", "GET"): ({"params": {"unset": "1"}}, 200, api),
        ("/api/decisions", "GET"): ({"params": {"component": "WRITER"}}, 200, api),
        ("/decision", "GET"): ({"params": decision}, 200, html),
        ("/api/decision", "GET"): ({"params": decision}, 200, api),
        ("/simulate", "POST"): ({"data": simulate}, 200, html),
        ("/api/simulate", "POST"): ({"json": simulate}, 200, api),
        ("/diff", "POST"): ({"data": diff}, 200, html),
        ("/api/diff", "POST"): ({"json": diff}, 200, api),
        ("/reload", "POST"): ({}, 303, ""),
        ("/api/reload", "POST"): ({}, 200, api),
        ("/style.css", "GET"): ({}, 200, "text/css"),
    }


def _routes(app: Starlette) -> set[tuple[str, str]]:
    return {
        (route.path, method)
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }


def test_every_route_answers_through_the_test_client(
    app: Starlette, client: TestClient, organization: Path
) -> None:
    requests = _requests(load_policy([organization]).providers[0].id)
    assert set(requests) == _routes(app), "a route without a request here is untested"
    for (path, method), (arguments, status, media_type) in requests.items():
        response = client.request(method, path, follow_redirects=False, **arguments)
        assert response.status_code == status, (method, path, response.text[:300])
        assert response.headers.get("content-type", "").startswith(media_type), (method, path)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert SECRET not in response.text, (method, path)
        if path in GET_PAGES:
            assert f"<h1>{GET_PAGES[path]}</h1>" in response.text
    assert client.post("/reload", follow_redirects=False).headers["location"] == "/"


def test_every_route_needs_the_token_when_one_is_set(organization: Path) -> None:
    paths = ConfigurationPaths(org=(organization,))
    app = web_app(paths, token="t0ken-for-every-route")
    requests = _requests(load_policy([organization]).providers[0].id)
    with TestClient(app, base_url="http://192.0.2.10:8765") as client:
        for (path, method), (arguments, status, _) in requests.items():
            refused = client.request(method, path, follow_redirects=False, **arguments)
            assert refused.status_code == 401, (method, path)
            assert refused.json() == {"error": "a valid token is required"}
            wrong = {"Authorization": "Bearer t0ken-for-every-rout"}
            assert client.request(method, path, headers=wrong, **arguments).status_code == 401
            right = {"Authorization": "Bearer t0ken-for-every-route"}
            answered = client.request(
                method, path, headers=right, follow_redirects=False, **arguments
            )
            assert answered.status_code == status, (method, path)


class _Addresses(HTMLParser):
    """Every address a page makes the browser load or send to (href, src, action, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src", "action", "srcset", "poster", "data") and value:
                self.found.append(value)
            if name == "style" and value and "url(" in value:
                self.found.append(value)


def test_the_pages_load_nothing_from_another_host(client: TestClient) -> None:
    """Works offline: no CDN, no font or script from elsewhere; every address is this server's."""
    for path in GET_PAGES:
        parser = _Addresses()
        parser.feed(client.get(path).text)
        assert parser.found, path
        for address in parser.found:
            assert address.startswith("/") and not address.startswith("//"), (path, address)
    stylesheet = client.get("/style.css").text
    assert "url(" not in stylesheet and "@import" not in stylesheet
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY
    assert re.search(r"default-src 'none'", CONTENT_SECURITY_POLICY)


# --- each JSON twin is the command's --format json ------------------------------------------------


def test_the_matrix_is_explain_all(
    client: TestClient, organization: Path, user_settings: Path
) -> None:
    components = ("CHAT", "APP_SETTINGS", "WRITER")
    configuration = _configuration(organization, user_settings)
    expected = _cli_all(
        [["explain", "--all", *configuration, "--component", c] for c in components]
    )
    for component, cli in zip(components, expected, strict=True):
        assert client.get("/api/decisions", params={"component": component}).json() == cli


def test_each_decision_is_explain(
    client: TestClient, organization: Path, user_settings: Path
) -> None:
    matrix = client.get("/api/decisions").json()
    cells = [(d["tool"], d["provider"]["id"]) for d in matrix["decisions"]]
    assert len(cells) == len(matrix["tools"]) * len(matrix["providers"]) > 1
    configuration = _configuration(organization, user_settings)
    expected = _cli_all(
        [["explain", tool, *configuration, "--provider", provider] for tool, provider in cells]
    )
    for (tool, provider), cli in zip(cells, expected, strict=True):
        asked = {"tool": tool, "provider": provider, "component": "CHAT"}
        assert client.get("/api/decision", params=asked).json() == cli, (tool, provider)


def test_each_tools_settings_are_policy_settings(
    client: TestClient, organization: Path, user_settings: Path
) -> None:
    tools = [t["tool"] for t in client.get("/api/settings", params={"unset": "1"}).json()["tools"]]
    assert "web_search" in tools
    configuration = _configuration(organization, user_settings)
    expected = _cli_all([["settings", tool, *configuration] for tool in tools])
    for tool, cli in zip(tools, expected, strict=True):
        [shown] = client.get("/api/settings", params={"tool": tool, "unset": "1"}).json()["tools"]
        assert shown == cli, tool


def test_the_status_findings_are_policy_check(
    client: TestClient, organization: Path, user_settings: Path
) -> None:
    status = client.get("/api/status").json()
    checked = _cli(["check", *_configuration(organization, user_settings)])
    for part in ("errors", "warnings"):
        shown = [{key: f[key] for key in CHECK_FINDING_KEYS} for f in status[part]]
        assert shown == checked[part], part
    assert any("no_such_tool" in e["message"] and e["line"] for e in status["errors"])


def test_simulate_is_explain_all_for_one_provider(
    client: TestClient, organization: Path, user_settings: Path, tmp_path: Path
) -> None:
    other_settings = tmp_path / "other.yaml"
    other_settings.write_text(BAD_MAX_RESULTS)
    configured = load_policy([organization]).providers[0].id
    configuration = _configuration(organization, user_settings)
    asked = [
        {"provider_kind": "SELF_HOSTED", "model": "tiny-model", "component": "WRITER"},
        {"provider": configured, "component": "CHAT"},
    ]
    expected = _cli_all(
        [
            ["explain", "--all", "--org", str(organization), "--user-settings",
             str(other_settings), "--provider-kind", "SELF_HOSTED", "--model", "tiny-model",
             "--component", "WRITER"],
            ["explain", "--all", *configuration, "--provider", configured],
        ]
    )  # fmt: skip
    with_file = client.post(
        "/api/simulate", json={**asked[0], "user_settings_file": str(other_settings)}
    )
    assert with_file.json() == expected[0]
    assert client.post("/api/simulate", json=asked[1]).json() == expected[1]


def test_the_what_if_on_what_the_chat_holds_is_explain_chat_holds(
    client: TestClient, organization: Path, user_settings: Path
) -> None:
    """The matrix, one decision and the simulate form take `chat_holds` (checkbox values or one
    comma-separated text) and answer what `explain --chat-holds` prints; FLOW_RULE flips."""
    configuration = _configuration(organization, user_settings)
    provider = load_policy([organization]).providers[0].id
    expected = _cli_all(
        [
            ["explain", "--all", *configuration, "--chat-holds", HOLDS],
            ["explain", "web_search", *configuration, "--provider", provider,
             "--chat-holds", HOLDS],
            ["explain", "--all", *configuration, "--provider", provider, "--chat-holds", HOLDS],
        ]
    )  # fmt: skip
    matrix = client.get("/api/decisions", params={"chat_holds": HOLDS}).json()
    assert matrix == expected[0]
    assert matrix["chat_holds"] == ["UNTRUSTED_CONTENT", "PRIVATE_DATA"]
    checked = [("chat_holds", "UNTRUSTED_CONTENT"), ("chat_holds", "PRIVATE_DATA")]
    assert client.get("/api/decisions", params=checked).json() == matrix
    conflicts = {
        (d["tool"], d["provider"]["id"])
        for d in matrix["decisions"]
        if d["reason"] == "FLOW_CONFLICT"
    }
    assert ("web_search", provider) in conflicts
    plain = client.get("/api/decisions").json()
    assert "chat_holds" not in plain
    assert all(d["reason"] != "FLOW_CONFLICT" for d in plain["decisions"])
    asked = {"tool": "web_search", "provider": provider, "component": "CHAT", "chat_holds": HOLDS}
    decision = client.get("/api/decision", params=asked).json()
    assert decision == expected[1]
    [flow] = [c for c in decision["checks"] if c["check"] == "FLOW_CONFLICT"]
    assert not flow["passed"]
    assert any(e["value"].startswith("PRIVATE_DATA from what-if") for e in flow["evidence"])
    simulated = client.post("/api/simulate", json={"provider": provider, "chat_holds": HOLDS})
    assert simulated.json() == expected[2]
    for bad in (
        client.get("/api/decisions", params={"chat_holds": "SENDS_OUT"}),
        client.get("/api/decision", params={**asked, "chat_holds": "SENDS_OUT"}),
        client.post("/api/simulate", json={"provider": provider, "chat_holds": ["SENDS_OUT"]}),
    ):
        assert bad.status_code == 400, bad.text
        assert bad.json()["field"] == "chat_holds"
        assert '"SENDS_OUT" is not an effect a chat can hold' in bad.json()["error"]


def test_diff_is_policy_diff(
    client: TestClient, organization: Path, user_settings: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "only").mkdir(parents=True)
    (other / "only" / "plugin.lua").write_text(DISABLE_WEB_SEARCH)
    other_settings = tmp_path / "other.yaml"
    other_settings.write_text(BAD_MAX_RESULTS)
    configuration = _configuration(organization, user_settings)
    expected = _cli_all(
        [
            ["diff", *configuration, "--against-org", str(other)],
            ["diff", *configuration, "--against-user-settings", str(other_settings),
             "--component", "CHAT"],
        ]
    )  # fmt: skip
    against_org = client.post("/api/diff", json={"org": str(other)}).json()
    against_user = client.post(
        "/api/diff", json={"user_settings_file": str(other_settings), "component": ["CHAT"]}
    ).json()
    for answer, cli in zip((against_org, against_user), expected, strict=True):
        assert answer.pop("candidate_errors") == []
        assert answer == cli
    assert against_org["changed"] > 0 and against_user["changed"] > 0


def test_a_fetched_configuration_stays_in_force_in_policy_diff_as_on_the_page(
    tmp_path: Path, organization: Path
) -> None:
    """The configurations `policy fetch` put in force load first on both sides of a diff, in
    the command as on the page: the same organization plugins are no change."""
    state = tmp_path / "state"
    fetched_in_force(state, DISABLE_WEB_SEARCH)
    copy = tmp_path / "copy"
    shutil.copytree(organization, copy)
    cli = _cli(["diff", "--org", str(organization), "--state-dir", str(state), "--against-org",
                str(copy)])  # fmt: skip
    assert cli == {"changed": 0, "changes": []}
    paths = ConfigurationPaths(org=(organization,), state_dir=state)
    with TestClient(web_app(paths), base_url="http://127.0.0.1") as client:
        answer = client.post("/api/diff", json={"org": str(copy)}).json()
    assert answer == {**cli, "candidate_errors": []}


# --- status and settings: every part the issue names ---------------------------------------------


def test_status_lists_every_plugin_in_merge_order_with_origin_priority_and_file(
    organization: Path, tmp_path: Path
) -> None:
    local = tmp_path / "local" / "mine"
    local.mkdir(parents=True)
    (local / "plugin.lua").write_text(
        DISABLE_WEB_SEARCH.replace("5d1c8f0e", "7a3e0b21").replace("PRIORITY = 500", "")
    )
    paths = ConfigurationPaths(org=(organization,), local=(local.parent,))
    with TestClient(web_app(paths), base_url="http://localhost") as client:
        status = client.get("/api/status").json()
        page = client.get("/").text
    applied = load_policy([organization], [local.parent]).configuration.applied_plugins
    assert [(p["id"], p["origin"], p["priority"], p["file"]) for p in status["plugins"]] == [
        (p.id, p.origin.value, p.priority, p.path) for p in applied
    ]
    assert [p["origin"] for p in status["plugins"]] == ["organization", "organization", "local"]
    assert status["sources"]["local"] == [str(local.parent)]
    assert page.index("base configuration") < page.index("Research department")
    assert page.index("Research department") < page.index("Candidate: no web search")
    assert page.count("<td>local</td>") == 1 and str(local / "plugin.lua") in page


def test_the_settings_page_lists_every_key_and_field_with_file_and_line(
    client: TestClient, organization: Path
) -> None:
    from policy.config.settings import TOOLPOLICY_KEYS

    document = client.get("/api/settings", params={"unset": "1"}).json()
    assert [row["key"] for row in document["keys"]] == [k.name for k in TOOLPOLICY_KEYS]
    policy = load_policy([organization])
    assert [t["tool"] for t in document["tools"]] == sorted(policy.tool_ids)
    page = client.get("/settings", params={"unset": "1"}).text
    rows = [*document["keys"], *(row for t in document["tools"] for row in t["settings"])]
    set_by_a_plugin = [row for row in rows if row["origin"] and row["origin"].get("plugin")]
    assert len(set_by_a_plugin) > 5
    for row in set_by_a_plugin:
        origin = row["origin"]
        assert isinstance(origin["line"], int) and origin["line"] > 0, row
        assert f"{origin['file']}:{origin['line']}" in page, row
    for key in TOOLPOLICY_KEYS:
        assert f"<code>{key.name}</code>" in page
    assert "locked" in page and "editable default" in page and "editable" in page


def _files(*folders: Path) -> dict[str, bytes]:
    return {
        str(path): path.read_bytes()
        for folder in folders
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def test_simulate_and_diff_write_nothing(organization: Path, tmp_path: Path) -> None:
    """Neither the configuration, the user settings file nor the state directory changes,
    whatever the what-if (pasted settings, another settings file, a pasted plugin, other
    organization plugins)."""
    state = tmp_path / "state"
    settings = tmp_path / "user" / "settings.yaml"
    settings.parent.mkdir()
    settings.write_text("tools:\n  settings:\n    web_search:\n      defaultLanguage: de-DE\n")
    other_settings = tmp_path / "other.yaml"
    other_settings.write_text(BAD_MAX_RESULTS)
    paths = ConfigurationPaths(org=(organization,), user_settings=settings, state_dir=state)
    with TestClient(web_app(paths), base_url="http://127.0.0.1") as client:
        before = _files(organization, settings.parent, state, tmp_path)
        provider = client.get("/api/status").json()["providers"][0]["id"]
        asked: list[tuple[str, dict[str, Any]]] = [
            ("/api/simulate", {"provider": provider, "user_settings_yaml": BAD_MAX_RESULTS}),
            (
                "/api/simulate",
                {"provider_kind": "OPEN_AI", "user_settings_file": str(other_settings)},
            ),
            ("/simulate", {"provider_kind": "ANTHROPIC", "model": "claude", "component": "WRITER"}),
            ("/api/diff", {"plugin_lua": DISABLE_WEB_SEARCH}),
            ("/api/diff", {"org": str(organization), "user_settings_yaml": BAD_MAX_RESULTS}),
            ("/diff", {"plugin_lua": DISABLE_WEB_SEARCH, "component": "CHAT"}),
        ]
        for path, form in asked:
            sent = {"json": form} if path.startswith("/api/") else {"data": form}
            assert client.post(path, **sent).status_code == 200, (path, form)
        after = _files(organization, settings.parent, state, tmp_path)
    assert after == before


def test_the_decision_page_names_its_provider(client: TestClient, organization: Path) -> None:
    """The heading names the provider as the matrix does (a hostile name as text); the id is
    shown next to its kind and model."""
    provider = next(p for p in load_policy([organization]).providers if "script" in p.name)
    asked = {"tool": "web_search", "provider": provider.id, "component": "CHAT"}
    page = client.get("/decision", params=asked).text
    heading = page[page.index("<h1>") : page.index("</h1>")]
    assert heading.endswith(
        "with &lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    )
    assert f"<code>{provider.id}</code>" in page


@pytest.mark.parametrize(
    ("path", "asked", "field", "words"),
    [
        (
            "/api/simulate",
            {"provider_kind": "OPEN_AI", "user_settings_yaml": "tools: " + "[" * 5000},
            "user_settings_yaml",
            "pasted user settings:1: YAML nested too deeply: more than 100 levels",
        ),
        (
            "/api/simulate",
            {"provider_kind": "OPEN_AI", "user_settings_file": "~no-such-user-a13/s.yaml"},
            "user_settings_file",
            "'~no-such-user-a13/s.yaml': no such user",
        ),
        ("/api/diff", {"org": "~no-such-user-a13/plugins"}, "org", "no such user"),
    ],
)
def test_a_what_if_that_cannot_be_read_is_a_400_naming_the_field(
    client: TestClient, path: str, asked: dict[str, str], field: str, words: str
) -> None:
    answer = client.post(path, json=asked)
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == field and words in answer.json()["error"]
    page = client.post(path.removeprefix("/api"), data=asked)
    assert page.status_code == 400 and words.split(": ")[-1] in page.text


class _BreakingSource:
    """The policy source of `policy serve`, with a defect switched on: reading the policy fails."""

    def __init__(self, watcher: PolicyWatcher) -> None:
        self._watcher = watcher
        self.broken = False

    @property
    def policy(self) -> Policy:
        if self.broken:
            raise RuntimeError("a defect while reading the policy")
        return self._watcher.policy

    @property
    def revision(self) -> str:
        return self._watcher.revision

    @property
    def last_change(self) -> ReloadResult | None:
        return self._watcher.last_change

    async def reload(self) -> ReloadResult:
        return await self._watcher.reload()

    async def run(self, stop: asyncio.Event | None = None) -> None:
        await self._watcher.run(stop)

    async def aclose(self) -> None:
        await self._watcher.aclose()


def test_an_unexpected_failure_is_one_clear_answer_without_a_traceback(
    organization: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = ConfigurationPaths(org=(organization,))
    source = _BreakingSource(PolicyWatcher(paths.load, watch=paths.watched()))
    app = build_app(source, paths, watch=False)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/api/status").status_code == 200
        source.broken = True
        with caplog.at_level(logging.ERROR):
            answer = client.get("/api/status")
            page = client.get("/settings")
    assert answer.status_code == 500
    assert answer.json() == {
        "error": "unexpected failure (RuntimeError); the terminal running policy serve says more"
    }
    assert page.status_code == 500 and "unexpected failure (RuntimeError)" in page.text
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "Traceback" not in page.text and "a defect" not in page.text
    [record] = [r for r in caplog.records if "/settings" in r.getMessage()]
    assert "RuntimeError: a defect while reading the policy" in record.getMessage()
    assert record.exc_info is None, "no traceback without --debug"


CLOCK = Path(__file__).resolve().parents[2] / "examples" / "clock_tool.py"


def test_an_apps_own_tools_file_is_on_every_page_like_in_explain(
    organization: Path, tmp_path: Path
) -> None:
    """`policy serve --tools-file` as every deciding command: the app's own tools are decided,
    shown, compared in a diff like the others, and a changed tools file is a new configuration."""
    tools_file = tmp_path / "clock_tool.py"
    shutil.copy(CLOCK, tools_file)
    paths = ConfigurationPaths(org=(organization,), tools_files=(tools_file,))
    assert tools_file in paths.watched()
    expected = _cli(
        ["explain", "--all", "--org", str(organization), "--tools-file", str(tools_file)]
    )
    with TestClient(web_app(paths), base_url="http://127.0.0.1") as client:
        matrix = client.get("/api/decisions").json()
        assert matrix == expected and {"current_time", "calculator"} <= set(matrix["tools"])
        assert client.get("/api/status").json()["sources"]["tools_files"] == [str(tools_file)]
        assert str(tools_file) in client.get("/").text
        assert "current_time" in client.get("/settings", params={"unset": "1"}).text
        unchanged = client.post("/api/diff", json={"org": str(organization)}).json()
        assert unchanged == {"changed": 0, "changes": [], "candidate_errors": []}


def test_serve_refuses_a_tools_file_that_gives_no_tools(organization: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken_tools.py"
    broken.write_text("raise ValueError('not today')\n")
    result = run_policy(
        ["serve", "--org", str(organization), "--tools-file", str(broken), "--port", "0"]
    )
    assert result.returncode == 2
    assert str(broken) in result.stderr and "not today" in result.stderr
    assert "--tools-file" in result.stderr and "Traceback" not in result.stderr


def test_the_configuration_keys_are_policy_settings_keys(
    client: TestClient, organization: Path, user_settings: Path
) -> None:
    """The settings page's configuration keys have their command too (`policy settings keys`):
    the same rows, set or not, secrets masked."""
    configuration = _configuration(organization, user_settings)
    cli = _cli(["settings", "keys", *configuration])
    assert client.get("/api/settings", params={"unset": "1"}).json()["keys"] == cli["keys"]
    table = run_policy(["settings", "keys", *configuration])
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    disabled = next(line for line in lines if line.startswith("DataTools.DisabledToolIds"))
    assert (
        "no_such_tool" in disabled and "locked" in disabled and "department/plugin.lua:" in disabled
    )
    assert "DataTools.AllowLocalMcpServers" in table.stdout and SECRET not in table.stdout
    assert "*****" in table.stdout


def test_the_matrix_marks_the_tools_that_offer_themselves_from_context(
    client: TestClient,
) -> None:
    """As `policy explain --all` marks them "(context)": semantic_search is never selected, it
    offers itself when the chat gives it data sources."""
    matrix = client.get("/api/decisions").json()
    assert matrix["context_tools"] == ["semantic_search"]
    page = client.get("/decisions").text
    assert "<th>semantic_search <small>(context)</small></th>" in page
    assert "<th>web_search</th>" in page and 'id="context-note"' in page


def test_an_unknown_address_or_method_is_answered_in_kind(client: TestClient) -> None:
    """Under /api/ a JSON error naming what is valid, elsewhere the error page."""
    missing = client.get("/api/nope")
    assert missing.status_code == 404
    assert missing.json()["error"].startswith("no page /api/nope; the JSON twins: /api/status")
    page = client.get("/nope")
    assert page.status_code == 404 and "<h1>Not found</h1>" in page.text
    assert "no page /nope" in page.text
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    wrong = client.post("/api/status")
    assert wrong.status_code == 405 and wrong.json() == {"error": "POST /api/status: use GET"}
    assert client.get("/api/reload").json() == {"error": "GET /api/reload: use POST"}
    assert "GET /reload: use POST" in client.get("/reload").text


def test_local_plugins_stay_on_the_new_side_of_policy_diff_as_on_the_page(
    tmp_path: Path,
) -> None:
    """What `policy diff` leaves out stays as on the old side (Checking and explaining, in
    docs/administrators): with --against-org only, the local plugins are on both sides, as on the
    page's Diff."""
    organization = tmp_path / "org" / "only"
    organization.mkdir(parents=True)
    (organization / "plugin.lua").write_text(
        DISABLE_WEB_SEARCH.replace(
            'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_search" }', OPENAI
        )
    )
    local = tmp_path / "local" / "mine"
    local.mkdir(parents=True)
    (local / "plugin.lua").write_text(DISABLE_WEB_SEARCH.replace("5d1c8f0e", "7a3e0b21"))
    assert diff_policies(
        load_policy([organization]), load_policy([organization], [local.parent])
    ), "the local plugin changes decisions"
    copy = tmp_path / "copy"
    shutil.copytree(organization.parent, copy)
    cli = _cli(["diff", "--org", str(organization.parent), "--local", str(local.parent),
                "--against-org", str(copy)])  # fmt: skip
    assert cli == {"changed": 0, "changes": []}
    paths = ConfigurationPaths(org=(organization.parent,), local=(local.parent,))
    with TestClient(web_app(paths), base_url="http://127.0.0.1") as client:
        answer = client.post("/api/diff", json={"org": str(copy)}).json()
    assert answer == {**cli, "candidate_errors": []}
