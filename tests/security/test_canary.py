"""The canary: a secret planted everywhere a secret lives, grepped for in every spelling in every
CLI output format, every log line at DEBUG, every event and trace, and the decision log.

It sits in an `ENC:v1:` locked API key, as the password of an address setting and of an
allowedPrivateHosts entry, as the secret setting of a tool that echoes it in every spelling (in
its result, its sources and its error), and a second canary is the provider key, which the host
echoes in a response header and in an error body. Real subprocess runs of the installed command,
with the root logger at DEBUG (httpx and httpcore included).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from policy.secrets import encrypt, generate_secret
from tests.security._hostile_org import (
    CANARY,
    EXAMPLES,
    VLLM,
    chat_arguments,
    hostile_organization,
    run_policy,
)
from tests.security._spellings import leaked_spellings, spellings_of
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply, running_provider_server

TOOL_FILE = Path(__file__).with_name("canary_tool.py")
PROVIDER_CANARY = "pk-Canary/Key+77=zz~Q"


@pytest.fixture(scope="module")
def secret() -> str:
    return generate_secret()


@pytest.fixture(scope="module")
def organization(tmp_path_factory: pytest.TempPathFactory, secret: str) -> Path:
    folder = hostile_organization(tmp_path_factory.mktemp("canary"), secret)
    department = folder / "department" / "plugin.lua"
    department.write_text(
        department.read_text()
        + 'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"]["vault_lookup.token"] = "'
        + encrypt(CANARY, secret)
        + '"\n'
    )
    return folder


def run(*args: str | Path, secret: str, env: dict[str, str] | None = None) -> str:
    """stdout and stderr (with every DEBUG log line) of one `policy` run."""
    done = run_policy(*args, secret=secret, env=env, debug_logging=True)
    assert "Traceback" not in done.stderr, done.stderr
    return f"{done.stdout}\n{done.stderr}"


def assert_no_canary(output: str, label: str) -> None:
    for canary in (CANARY, PROVIDER_CANARY):
        assert leaked_spellings(canary, output) == [], f"{label}: {output}"


REPORTS = [
    ("check",),
    ("explain", "web_search", "--provider", VLLM),
    ("explain", "read_web_page", "--provider", VLLM),
    ("explain", "--all"),
    ("settings", "web_search"),
    ("settings", "read_web_page"),
    ("settings", "keys"),
    ("tools",),
    ("diff", "--against-org", str(EXAMPLES)),
    ("export", "web_search", "read_web_page", "--mode", "LOCKED"),
    ("export", "web_search", "read_web_page", "--mode", "DEFAULT"),
]


@pytest.mark.parametrize("output_format", ["table", "json", "yaml"])
@pytest.mark.parametrize("command", REPORTS, ids=lambda c: " ".join(c[:2]))
def test_no_report_shows_the_canary(
    organization: Path, secret: str, command: tuple[str, ...], output_format: str
) -> None:
    output = run(*command, "--org", organization, "--format", output_format, secret=secret)
    if command[0] == "settings":
        assert "*****" in output, "the secret is there, masked"
    assert_no_canary(output, f"{' '.join(command)} --format {output_format}")


@pytest.fixture(scope="module")
def provider() -> Iterator[ProviderServer]:
    with running_provider_server() as server:
        yield server


def _chat(
    organization: Path, secret: str, provider: ProviderServer, tmp_path: Path, output_format: str
) -> str:
    arguments = chat_arguments(
        organization, provider.base_url, TOOL_FILE, "vault_lookup", tmp_path, output_format
    )
    return run(*arguments, secret=secret, env={"TOOLPOLICY_API_KEY": PROVIDER_CANARY})


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_no_event_trace_log_or_decision_record_of_a_chat_shows_the_canary(
    organization: Path, secret: str, provider: ProviderServer, tmp_path: Path, output_format: str
) -> None:
    echoed = " ".join(spellings_of(PROVIDER_CANARY).values())
    provider.reset()
    provider.queue(
        Reply(
            [
                chat_call(0, "call_1", "vault_lookup", '{"query": "q3"}'),
                chat_call(1, "call_2", "vault_lookup", '{"query": "fail"}'),
            ],
            headers={"x-request-echo": echoed},
        ),
        Reply(chat_text("Done."), headers={"x-request-echo": echoed}),
    )
    output = _chat(organization, secret, provider, tmp_path, output_format)
    assert "Done." in output and "*****" in output
    assert "receive_response_headers" in output, "httpcore's DEBUG lines were captured"
    sent = provider.requests[0].headers["authorization"]
    assert sent == f"Bearer {PROVIDER_CANARY}", "the key did travel, in its header only"
    model_read = json.dumps(provider.bodies[1]["messages"][-2:])
    assert_no_canary(model_read, "what the model read")
    assert_no_canary(output, f"chat --format {output_format}")
    log = tmp_path / "decisions.jsonl"
    assert_no_canary(log.read_text(), "decision log")
    for view in (("log", "summary", log), ("replay", log, "--org", organization)):
        shown = run(*view, "--format", output_format.replace("text", "table"), secret=secret)
        assert_no_canary(shown, " ".join(map(str, view[:2])))


def test_a_host_echoing_the_key_in_its_error_shows_no_canary(
    organization: Path, secret: str, provider: ProviderServer, tmp_path: Path
) -> None:
    echoed = " ".join(spellings_of(PROVIDER_CANARY).values())
    provider.reset()
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {echoed}"[:280]}})
    provider.queue(Reply(status=401, body=body, headers={"x-key": echoed}))
    output = _chat(organization, secret, provider, tmp_path, "text")
    assert "refused the credentials" in output
    assert_no_canary(output, "refused credentials")
    provider.queue(Reply(body="<html/>", content_type=f"text/html; key={PROVIDER_CANARY}"))
    output = _chat(organization, secret, provider, tmp_path, "json")
    assert "instead of a server-sent event stream" in output
    assert_no_canary(output, "content type")
