"""No character from a plugin, a host or a model acts on the terminal: every text, table, JSON and
YAML output of the `policy` command shows CR, LF, ESC, BEL, DEL, C1 controls and bidirectional
overrides escaped, so a value can neither set the window title, clear the screen, nor print a line
that passes for `policy check`'s verdict. Runs of the console script's `main`
(`tests.servers.cli_runner`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from policy.secrets import generate_secret
from tests.security._hostile_org import (
    EXAMPLES,
    FAKE_VERDICT,
    HOSTILE,
    ROOT,
    VLLM,
    chat_arguments,
    hostile_organization,
    run_policy,
)
from tests.servers.cli_runner import CliRun
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply, running_provider_server

CLOCK_TOOL = ROOT / "examples" / "clock_tool.py"
FORMATS = ("table", "json", "yaml")


@pytest.fixture(scope="module")
def secret() -> str:
    return generate_secret()


@pytest.fixture(scope="module")
def organization(tmp_path_factory: pytest.TempPathFactory, secret: str) -> Path:
    return hostile_organization(tmp_path_factory.mktemp("hostile"), secret)


def policy(*args: str | Path, secret: str) -> CliRun:
    return run_policy(*args, secret=secret)


def assert_terminal_safe(done: CliRun, label: str, *, answer_on_stdout: bool = False) -> None:
    """No raw control character anywhere; no value starts a line of its own (but a model's
    answer, on `policy chat`'s stdout, keeps its line breaks)."""
    for stream, output in (("stdout", done.stdout), ("stderr", done.stderr)):
        raw = sorted({c for c in output if not (c.isprintable() or c == "\n")})
        assert raw == [], f"{label} {stream}: {raw!r}"
        if answer_on_stdout and stream == "stdout":
            continue
        for line in output.splitlines():
            assert not line.lstrip(" -").startswith(FAKE_VERDICT), f"{label} {stream}: {line!r}"
    assert "Traceback" not in done.stderr, done.stderr


def test_the_hostile_text_is_what_the_plugins_hold(organization: Path, secret: str) -> None:
    done = policy(
        "settings", "web_search", "--org", organization, "--format", "json", secret=secret
    )
    values = {s["field"]: s["value"] for s in json.loads(done.stdout)["settings"]}
    assert values["defaultLanguage"] == f"all{HOSTILE}"


REPORTS = [
    ("check",),
    ("explain", "web_search", "--provider", VLLM),
    ("explain", "--all"),
    ("settings", "web_search"),
    ("settings", "keys"),
    ("tools",),
    ("diff", "--against-org", str(EXAMPLES)),
    ("export", "web_search", "--mode", "DEFAULT"),
]


@pytest.mark.parametrize("output_format", FORMATS)
@pytest.mark.parametrize("command", REPORTS, ids=lambda c: " ".join(c[:2]))
def test_every_report_escapes_control_characters(
    organization: Path, secret: str, command: tuple[str, ...], output_format: str
) -> None:
    done = policy(*command, "--org", organization, "--format", output_format, secret=secret)
    assert done.returncode in (0, 1), done.stderr
    assert_terminal_safe(done, f"{' '.join(command)} --format {output_format}")
    if command[0] != "diff":  # the hostile provider's decisions do not change
        assert "pwned" in done.stdout + done.stderr, "the hostile value is shown, escaped"


def test_usage_errors_quoting_a_plugin_value_are_escaped(organization: Path, secret: str) -> None:
    done = policy(
        "explain", "web_search", "--org", organization, "--provider", "nope", secret=secret
    )
    assert done.returncode == 2
    assert "pwned" in done.stderr and "\\x1b" in done.stderr
    assert_terminal_safe(done, "usage error")


@pytest.mark.parametrize("output_format", FORMATS)
def test_policy_status_escapes_what_a_server_sent(
    tmp_path: Path, secret: str, output_format: str
) -> None:
    from policy.config_sources import DeliveryStatus, write_statuses

    recorded = DeliveryStatus(
        "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9",
        "https://config.example.org/ai",
        "last-known-good",
        etag='"v1"',  # an ETag is printable ASCII or the record is refused as damaged
        last_attempt=f"2026-12-03T10:00:00+00:00{HOSTILE}",
        error=f"the server said: {HOSTILE}",
    )
    write_statuses(tmp_path, [recorded])
    done = policy("status", "--state-dir", tmp_path, "--format", output_format, secret=secret)
    assert done.returncode == 1, done.stderr  # not current
    assert_terminal_safe(done, f"status --format {output_format}")
    assert done.stdout.count("pwned") == 2


@pytest.mark.parametrize("output_format", ["table", "json"])
def test_policy_mcp_list_escapes_what_an_mcp_server_names(
    tmp_path: Path, secret: str, output_format: str
) -> None:
    from tests.mcp_tools.test_mcp import write_org

    state = tmp_path / "server-state.json"
    state.write_text(json.dumps({"hostile_name": f"evil{HOSTILE}"}), encoding="utf-8")
    org = write_org(tmp_path / "org", state)
    done = policy(
        "mcp", "list", "--org", org, "--state-dir", tmp_path / "state", "--format", output_format,
        secret=secret,
    )  # fmt: skip
    assert_terminal_safe(done, f"mcp list --format {output_format}")
    assert "pwned" in done.stdout, done.stdout + done.stderr


@pytest.fixture(scope="module")
def provider() -> Iterator[ProviderServer]:
    with running_provider_server() as server:
        yield server


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_policy_chat_escapes_the_answer_tool_arguments_and_results(
    organization: Path,
    secret: str,
    provider: ProviderServer,
    tmp_path: Path,
    output_format: str,
) -> None:
    provider.reset()
    provider.queue(
        Reply(
            [
                *chat_text(f"Let me look{HOSTILE}"),
                chat_call(0, "call_1", "calculator", json.dumps({"expression": f"1+{HOSTILE}"})),
                chat_call(1, "call_2", "evil_tool", json.dumps({f"k{HOSTILE}": "v"})),
            ]
        ),
        Reply(chat_text(f"Done.\nSecond line{HOSTILE}")),
    )
    log = tmp_path / "decisions.jsonl"
    arguments = chat_arguments(
        organization, provider.base_url, CLOCK_TOOL, "calculator", tmp_path, output_format
    )
    done = policy(*arguments, secret=secret)
    assert done.returncode == 0, done.stderr
    assert_terminal_safe(done, f"chat --format {output_format}", answer_on_stdout=True)
    assert done.stdout.count("pwned") >= 2 and "Second line" in done.stdout
    if output_format == "text":
        assert "Done.\nSecond line" in done.stdout, "the answer keeps its own line breaks"
        assert "[tool evil_tool(k\\r\\nok: 0 error(s)" in done.stderr
        assert "[tool Calculator(expression=1+\\r\\nok: 0 error(s)" in done.stderr

    # A decision log is input too: one whose tool id was tampered with.
    log.write_text(log.read_text().replace("calculator", json.dumps(f"calc{HOSTILE}")[1:-1]))
    summary = policy("log", "summary", log, secret=secret)
    assert summary.returncode == 0, summary.stderr
    assert_terminal_safe(summary, "log summary")
    assert "pwned" in summary.stdout, summary.stdout


def test_a_pin_fragment_keeps_hostile_names_and_errors_inside_comments_and_strings() -> None:
    from policy.lua_sandbox import run_plugin_source
    from policy.mcp import (
        McpServerConfig,
        McpServerListing,
        McpToolListing,
        McpTransport,
        pin_fragment,
    )

    injected = '\nCONFIG["SETTINGS"]["DataTools.EnableTools"] = false --'
    with pytest.raises(ValueError, match="is not valid"):  # a server's Name cannot carry code
        McpServerConfig(id="a", name=f"tickets{injected}{HOSTILE}", transport=McpTransport.STDIO)
    servers = [
        McpServerConfig(id="a", name="tickets", transport=McpTransport.STDIO),
        McpServerConfig(id="b", name="down", transport=McpTransport.STDIO),
    ]
    listings = {
        "a": McpServerListing("a", "tickets", (McpToolListing(name=f"search{HOSTILE}\u0000"),)),
        "b": McpServerListing("b", "down", error=f"refused{injected}{HOSTILE}"),
    }
    fragment = pin_fragment(servers, listings)
    assert not [c for c in fragment if not (c.isprintable() or c == "\n")]
    assert all(line.startswith(("--", '["Pins"]', "    [", "},")) for line in fragment.splitlines())
    pins = fragment.replace('["Pins"] = {', "PINS = {").replace("\n},", "\n}")
    result = run_plugin_source(f"CONFIG = {{}}\n{pins}", "pins.lua", None)
    assert list(result.globals["PINS"].entries) == [f"search{HOSTILE}\u0000"], "read back exactly"
    assert dict(result.globals["CONFIG"].entries) == {}, "no name or error became code"


def test_an_mcp_servers_stderr_is_shown_as_its_escaped_log_lines_with_its_secret_masked(
    tmp_path: Path, secret: str
) -> None:
    from policy.secrets import encrypt
    from tests.mcp_tools.test_mcp import write_org

    token = "tk-Stderr/Canary+42"
    state = tmp_path / "server-state.json"
    state.write_text(
        json.dumps({"stderr": f"starting{HOSTILE}\ntoken=$TICKET_TOKEN\n"}), encoding="utf-8"
    )
    env = f'  ["Env"] = {{ ["TICKET_TOKEN"] = "{encrypt(token, secret)}" }},\n'
    org = write_org(tmp_path / "org", state, extra=env)
    done = policy("mcp", "list", "--org", org, "--format", "json", secret=secret)
    assert done.returncode == 0, done.stderr
    assert_terminal_safe(done, "mcp list with a server writing to stderr")
    lines = [line for line in done.stderr.splitlines() if line.startswith("MCP server tickets: ")]
    assert lines == [
        "MCP server tickets: starting",
        f"MCP server tickets: {FAKE_VERDICT}\\x1b]0;pwned\\x07\\x1b[2J\\x7f\\x9b31m\\u202eevil",
        "MCP server tickets: token=*****",
    ], done.stderr
    assert token not in done.stderr and json.loads(done.stdout)["servers"]
