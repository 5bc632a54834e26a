"""The README's "Try it without an account": the dev provider run as a program, `policy chat`
against it with examples/quickstart — a chat, a tool call and its approval — with no network and
no API key."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.e2e._kit import ROOT
from tests.servers.cli_runner import CliRun, run_policy
from tests.servers.processes import stop

README = ROOT / "README.md"
QUICKSTART = ROOT / "examples" / "quickstart"
CLOCK_TOOL = ROOT / "examples" / "clock_tool.py"
CALL = 'call calculator {"expression": "6 * 7"}'


def _environment() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLPOLICY_") and "API_KEY" not in k
    }


def _dev_provider(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "runtime.dev_provider", *arguments],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_environment(),
    )


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    """The dev provider's address, as its banner names it."""
    process = _dev_provider("--port", "0")
    try:
        assert process.stderr is not None
        banner = process.stderr.readline()
        assert banner.strip() == "toolpolicy dev provider: a scripted stand-in, not a model."
        address = process.stderr.readline().strip()
        shown = "Chat Completions, Responses and Messages at "
        assert address.startswith(f"{shown}http://127.0.0.1:")
        yield address.removeprefix(shown)
    finally:
        stop(process)  # type: ignore[arg-type]


def _chat(base_url: str, tmp_path: os.PathLike[str], message: str, *flags: str) -> CliRun:
    return run_policy(
        [
            "chat",
            "--org",
            str(QUICKSTART),
            "--tools-file",
            str(CLOCK_TOOL),
            "--tool",
            "calculator",
            "--base-url",
            base_url,
            "--chat-db",
            f"{tmp_path}/chats.sqlite3",
            message,
            *flags,
        ],
        env=_environment(),
        cwd=ROOT,
        input="",
        installed=True,
    )


def test_a_message_is_answered_with_the_tools_offered(
    base_url: str, tmp_path: os.PathLike[str]
) -> None:
    done = _chat(base_url, tmp_path, "Hello")
    assert done.returncode == 0, done.stderr
    assert "with Dev provider (stand-in)" in done.stderr
    assert "[tools offered: calculator]" in done.stderr
    assert 'You wrote: "Hello".' in done.stdout and "not a model" in done.stdout


def test_an_approved_call_runs_and_its_result_is_answered(
    base_url: str, tmp_path: os.PathLike[str]
) -> None:
    done = _chat(base_url, tmp_path, CALL, "--approve")
    assert done.returncode == 0, done.stderr
    assert "wait for a person's approval" in done.stderr
    assert '[calculator {"expression": "6 * 7"}: approved by --approve]' in done.stderr
    assert done.stdout.strip() == 'calculator answered: {"expression":"6 * 7","result":42}'


def test_a_denied_call_does_not_run(base_url: str, tmp_path: os.PathLike[str]) -> None:
    done = _chat(base_url, tmp_path, CALL, "--deny")
    assert done.returncode == 0, done.stderr
    assert "denied by --deny" in done.stderr
    assert done.stdout.strip().startswith(
        "calculator answered: The user did not approve this call."
    )
    assert '"result":42' not in done.stdout


def test_a_port_in_use_is_named_with_what_to_do() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = _dev_provider("--port", str(port))
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in stderr
    assert "pass --port with a free port (0: any free port)" in stderr
    assert "Traceback" not in stderr


def _readme_chats() -> list[list[str]]:
    """The `policy chat` command lines of the README's "Try it without an account"."""
    section = README.read_text(encoding="utf-8").split("## Try it without an account", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("policy chat")]


def test_the_readme_chats_run_against_the_dev_provider(
    base_url: str, tmp_path: os.PathLike[str]
) -> None:
    chats = _readme_chats()
    assert len(chats) == 2
    answers = []
    for arguments in chats:
        done = run_policy(
            [*arguments, "--base-url", base_url, "--chat-db", f"{tmp_path}/chats.sqlite3"],
            env=_environment(),
            cwd=ROOT,
            input="",
            installed=True,
        )
        assert done.returncode == 0, done.stderr
        answers.append(done.stdout.strip())
    assert answers[0].startswith('You wrote: "Hello".')
    assert answers[1].startswith("calculator answered: The user did not approve this call.")
