"""Colour on a terminal only: `policy check` and `explain` mark errors, warnings and verdicts
in colour when they write to a terminal (a real pseudo-terminal here), never into a pipe, never
with NO_COLOR set, and a plugin's own escape characters stay escaped either way."""

from __future__ import annotations

import os
import pty
import re
import subprocess
from pathlib import Path

import pytest

from tests.policy.test_cli import POLICY, PROVIDERS, ROOT, run, write_plugin

RED, GREEN, YELLOW, RESET = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[0m"
OURS = re.compile(
    r"\x1b\[(?:31|32|33)m(?:error|warning|failed|ok|NOT OFFERED|OFFERED|FAIL|pass)\x1b\[0m"
)
ORGANIZATION = ROOT / "examples" / "organization"
SELF_HOSTED = "79cb8e25-0940-4280-964a-0a57c61d6ee7"


def _on_a_terminal(*args: str | Path, env: dict[str, str] | None = None) -> str:
    """The command's stdout and stderr as a terminal shows them (both on one pseudo-terminal)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment.pop("NO_COLOR", None)
    environment["TERM"] = "xterm-256color"
    environment.update(env or {})
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [POLICY, *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env=environment,
        cwd=ROOT,
    )
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closes when the command exits (EIO)
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert process.wait(timeout=120) in (0, 1)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    folder = tmp_path / "org"
    write_plugin(
        folder,
        PROVIDERS
        + 'CONFIG["SETTINGS"] = {}\n'
        + 'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web\\27[32mok" }\n'
        + 'CONFIG["SETTINGS"]["DataTools.DisabledToolIds.AllowUserOverride"] = true\n'
        + 'CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = '
        + '{ ["web_search.maxResults"] = "500" }\n',
    )
    return folder


def test_check_marks_errors_and_warnings_on_a_terminal(hostile: Path) -> None:
    shown = _on_a_terminal("check", "--org", hostile)
    assert f"{RED}error{RESET} [invalid-tool-setting]: " in shown
    assert f"{YELLOW}warning{RESET} [" in shown
    assert f"{RED}failed{RESET}: 2 error(s)" in shown
    assert "web\\x1b[32mok" in shown
    assert "\x1b" not in OURS.sub("", shown), shown


def test_explain_marks_the_verdict_and_each_check_on_a_terminal() -> None:
    shown = _on_a_terminal(
        "explain", "read_web_page", "--org", ORGANIZATION, "--provider", SELF_HOSTED
    )
    assert f"  {GREEN}OFFERED{RESET}" in shown or f"  {RED}NOT OFFERED{RESET}: " in shown
    assert f"[{GREEN}pass{RESET}] TOOLS_SWITCHED_OFF" in shown
    assert "\x1b" not in OURS.sub("", shown)


@pytest.mark.parametrize("no_color", ["1", "true", "0"])
def test_no_color_keeps_a_terminal_plain(hostile: Path, no_color: str) -> None:
    shown = _on_a_terminal("check", "--org", hostile, env={"NO_COLOR": no_color})
    assert "failed: 2 error(s)" in shown
    assert "\x1b" not in shown


def test_a_dumb_terminal_stays_plain(hostile: Path) -> None:
    assert "\x1b" not in _on_a_terminal("check", "--org", hostile, env={"TERM": "dumb"})


def test_a_pipe_gets_no_colour(hostile: Path) -> None:
    done = run("check", "--org", hostile)
    assert done.returncode == 1
    assert "failed: 2 error(s)" in done.stdout
    assert "\x1b" not in done.stdout + done.stderr
