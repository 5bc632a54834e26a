"""The Quickstart (docs/quickstart.md) run as a reader runs it, and the dev provider it starts.

The page's ```bash blocks are read and every command in them is run in order in a temporary
folder holding a copy of examples/, with the home and data folders inside it, no network and no
API key; a ```text block right after a ```bash block is what its last command prints (a `...`
line: any lines). Two commands are not run as written: the install (CI's fresh virtual
environment, .ci/run, is the one these tests run in) and the dev provider, which is started with
`--port 0` so that tests running at once never collide on its port; the chats find it in
TOOLPOLICY_BASE_URL, which `policy chat --base-url` reads. So the page and this test cannot
drift: a command the page shows that fails, or prints something else, fails the test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from runtime.dev_provider import DEFAULT_PORT
from tests.e2e._kit import ROOT
from tests.e2e._pages import matches_shown
from tests.servers.cli_runner import CliRun, run_policy
from tests.servers.processes import stop

PAGE = ROOT / "docs" / "quickstart.md"
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


@dataclass(frozen=True)
class _Step:
    line: int
    command: str
    shown: tuple[str, ...] = ()


_INSTALL = ("python3 -m venv .venv && . .venv/bin/activate", "pip install -e .")
_DEV_PROVIDER = "python -m runtime.dev_provider"


def _steps() -> list[_Step]:
    """Every command of the page's ```bash blocks in order, each block's last one with the
    ```text block that follows it."""
    steps: list[_Step] = []
    fence = ""
    after_commands = False
    for number, text in enumerate(PAGE.read_text(encoding="utf-8").splitlines(), start=1):
        if not fence and text.startswith("```"):
            fence = text.strip()
            if fence != "```text":
                after_commands = False
        elif fence and text.strip() == "```":
            after_commands = fence == "```bash"
            fence = ""
        elif fence == "```bash" and text.strip():
            steps.append(_Step(number, text.strip()))
        elif fence == "```text" and after_commands:
            last = steps[-1]
            steps[-1] = _Step(last.line, last.command, (*last.shown, text))
        elif not fence and text.strip():
            after_commands = False
    return steps


def _run_the_page(folder: Path) -> list[str]:
    """Each step run in `folder`; what was run, as the page writes it."""
    shutil.copytree(ROOT / "examples", folder / "examples")
    environment = _environment() | {
        "HOME": str(folder / "home"),
        "XDG_DATA_HOME": str(folder / "data"),
        "XDG_CONFIG_HOME": str(folder / "config"),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        "PYTHONUNBUFFERED": "1",  # stdout and stderr in the order they were written
    }
    ran: list[str] = []
    dev_provider: subprocess.Popen[str] | None = None
    try:
        for step in _steps():
            where = f"docs/quickstart.md:{step.line}: {step.command}"
            if step.command in _INSTALL:
                continue
            if step.command == _DEV_PROVIDER:
                dev_provider = subprocess.Popen(
                    ["bash", "-c", f"exec {step.command} --port 0"],
                    stderr=subprocess.PIPE,
                    text=True,
                    cwd=folder,
                    env=environment,
                )
                assert dev_provider.stderr is not None
                banner = [dev_provider.stderr.readline(), dev_provider.stderr.readline()]
                address = banner[1].strip().rsplit(" ", 1)[-1]
                port = address.removeprefix("http://127.0.0.1:").split("/", 1)[0]
                printed = "".join(banner).replace(f":{port}/", f":{DEFAULT_PORT}/")
                environment["TOOLPOLICY_BASE_URL"] = address
            else:
                done = subprocess.run(
                    ["bash", "-c", step.command],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    cwd=folder,
                    env=environment,
                    timeout=300,  # a guard against a hang, not a timing bound
                    check=False,
                )
                printed = done.stdout
                assert done.returncode == 0, f"{where}\nexited {done.returncode}:\n{printed}"
            assert "Traceback" not in printed, f"{where}\n{printed}"
            if step.shown:
                shown = matches_shown(step.shown, printed.splitlines())
                assert shown, f"{where}\nnow prints:\n{printed}"
            ran.append(step.command)
    finally:
        if dev_provider is not None:
            stop(dev_provider)  # type: ignore[arg-type]
    return ran


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    steps = _steps()
    assert [s.command for s in steps if s.command in _INSTALL] == list(_INSTALL)
    ran = _run_the_page(tmp_path)
    assert [c.split()[:2] for c in ran if c.startswith("policy ")] == [
        ["policy", "check"],
        ["policy", "explain"],
        ["policy", "explain"],
        ["policy", "chat"],
        ["policy", "chat"],
        ["policy", "chat"],
    ]
    assert ran.index(_DEV_PROVIDER) < ran.index(next(c for c in ran if "policy chat" in c))
    assert (tmp_path / "my-org" / "plugin.lua").read_bytes() == (
        QUICKSTART / "plugin.lua"
    ).read_bytes()


def test_every_command_of_the_quickstart_shows_what_it_prints() -> None:
    """A reader compares: each block's last command is followed by its output (the install and
    the copy print nothing)."""
    quiet = {*_INSTALL, "mkdir my-org", "cp examples/quickstart/plugin.lua my-org/plugin.lua"}
    unshown = [s.command for s in _steps() if not s.shown and s.command not in quiet]
    assert unshown == []


def test_the_plugin_the_page_shows_is_the_one_it_copies() -> None:
    shown = PAGE.read_text(encoding="utf-8").split("```lua\n", 1)[1].split("```", 1)[0]
    assert shown.startswith("CONFIG = {}\n")
    assert shown in (QUICKSTART / "plugin.lua").read_text(encoding="utf-8")
