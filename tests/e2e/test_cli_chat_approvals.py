"""`policy chat` and a call that needs a person's approval: asked on a real terminal (a
pseudo-terminal here: y runs it, anything else denies it), answered by --approve / --deny for
scripts, and denied — saying why — when there is no terminal and no flag."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from tests.e2e._kit import ORGANIZATION, ROOT
from tests.servers.cli_runner import CliRun, installed_policy, run_policy
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply

CLOCK_TOOL = ROOT / "examples" / "clock_tool.py"
APPROVALS = ROOT / "examples" / "approvals"
PROMPT = 'Allow calculator {"expression": "6 * 7"}? [y/N] '
DENIED = "The user did not approve this call."


def _environment() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLPOLICY_") and "API_KEY" not in k
    }


def _arguments(server: ProviderServer, tmp_path: Path) -> list[str]:
    server.queue(
        Reply([chat_call(0, "call_1", "calculator", '{"expression": "6 * 7"}')]),
        Reply(chat_text("Done.")),
    )
    return [
        "chat",
        "--org",
        str(ORGANIZATION),
        "--local",
        str(APPROVALS),
        "What is 6 * 7?",
        "--provider",
        "Example Corp vLLM",
        "--base-url",
        server.base_url,
        "--tools-file",
        str(CLOCK_TOOL),
        "--tool",
        "calculator",
        "--chat-db",
        str(tmp_path / "chats.sqlite3"),
    ]


def _chat(server: ProviderServer, tmp_path: Path, *flags: str) -> CliRun:
    arguments = [*_arguments(server, tmp_path), *flags]
    return run_policy(arguments, env=_environment(), cwd=ROOT, input="")


def _tool_result(server: ProviderServer) -> str:
    message = server.bodies[-1]["messages"][-1]
    assert message["role"] == "tool" and message["tool_call_id"] == "call_1"
    return str(message["content"])


def test_without_a_terminal_and_without_a_flag_the_call_is_denied_saying_why(
    server: ProviderServer, tmp_path: Path
) -> None:
    done = _chat(server, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "calculator" in done.stderr and "needs approval" in done.stderr
    assert "no terminal to ask on — pass --approve or --deny" in done.stderr
    assert "DataTools.RequireApprovalToolIds" in done.stderr
    assert _tool_result(server).startswith(DENIED)
    assert "without a terminal and without --approve or --deny" in _tool_result(server)


def test_approve_runs_the_call(server: ProviderServer, tmp_path: Path) -> None:
    done = _chat(server, tmp_path, "--approve")
    assert done.returncode == 0, done.stderr
    assert "approved by --approve" in done.stderr
    assert '"result":42' in _tool_result(server)
    assert "Done." in done.stdout


def test_deny_refuses_the_call(server: ProviderServer, tmp_path: Path) -> None:
    done = _chat(server, tmp_path, "--deny")
    assert done.returncode == 0, done.stderr
    assert _tool_result(server) == f"{DENIED} Note from the user: denied by --deny"


def _on_a_terminal(arguments: list[str], typed: bytes) -> str:
    """The installed command on a pseudo-terminal (stdin, stdout and stderr), `typed` once the
    question is on the screen; everything the terminal showed."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [installed_policy(), *arguments],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**_environment(), "NO_COLOR": "1"},
        cwd=ROOT,
    )
    os.close(follower)
    shown = b""
    answered = False
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closes when the command exits (EIO)
            break
        if not data:
            break
        shown += data
        if not answered and b"[y/N] " in shown:
            os.write(leader, typed)
            answered = True
    os.close(leader)
    assert process.wait(timeout=120) == 0, shown
    return shown.decode("utf-8").replace("\r\n", "\n")


def test_on_a_terminal_y_approves_the_call(server: ProviderServer, tmp_path: Path) -> None:
    shown = _on_a_terminal(_arguments(server, tmp_path), b"y\n")
    assert PROMPT in shown
    assert '"result":42' in _tool_result(server)


def test_on_a_terminal_anything_else_denies_the_call(
    server: ProviderServer, tmp_path: Path
) -> None:
    shown = _on_a_terminal(_arguments(server, tmp_path), b"\n")
    assert PROMPT in shown
    assert _tool_result(server) == f"{DENIED} Note from the user: denied on the terminal"
