"""The conventions every `policy` command keeps: `--debug` anywhere, JSON errors with a stable
code, shell completion of commands, tool ids, providers, kinds and components."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.policy.test_cli import ROOT, run
from tests.servers.cli_runner import run_policy

ORGANIZATION = ROOT / "examples" / "organization"


def _error(*args: str | Path) -> tuple[int, dict[str, object], str]:
    done = run(*args)
    assert "Traceback" not in done.stdout + done.stderr
    document = json.loads(done.stdout)
    assert set(document) == {"error"}, document
    return done.returncode, document["error"], done.stderr


@pytest.mark.parametrize(
    ("args", "code", "exit_code"),
    [
        (["explain", "web_serch", "--org", ORGANIZATION], "unknown-tool", 2),
        (
            ["explain", "web_search", "--org", ORGANIZATION, "--provider", "nobody"],
            "unknown-provider",
            2,
        ),
        (["tools", "--org", ORGANIZATION, "--component", "chta"], "unknown-component", 2),
        (["explain", "--all", "--provider-kind", "OPENAI"], "unknown-provider-kind", 2),
        (["check", "--org", ORGANIZATION, "--no-such-option"], "unknown-option", 2),
        (["settings", "set", "web_search", "--org", ORGANIZATION], "missing-argument", 2),
        (["chat", "Hi", "--org", ORGANIZATION, "--tool", "calculatr"], "unknown-tool", 2),
        (["tools", "--org", ORGANIZATION, "--tools-file", ROOT / "README.md"], "tools-file", 2),
    ],
)
def test_an_error_under_format_json_is_one_json_object_with_a_stable_code(
    args: list[str | Path], code: str, exit_code: int
) -> None:
    returncode, error, stderr = _error(*args, "--format", "json")
    assert returncode == exit_code
    assert error["code"] == code
    assert error["exit"] == exit_code
    assert isinstance(error["message"], str) and error["message"]
    assert "Usage:" not in stderr and "Error:" not in stderr


def test_an_error_of_ours_keeps_its_class_code_and_is_printed_once(tmp_path: Path) -> None:
    broken = tmp_path / "settings.yaml"
    broken.write_text("tools: [unclosed\n", encoding="utf-8")
    returncode, error, _ = _error(
        "chat", "Hi", "--org", ORGANIZATION, "--user-settings", broken, "-f", "json"
    )
    assert (returncode, error["code"]) == (1, "user-settings")
    text = run("chat", "Hi", "--org", ORGANIZATION, "--user-settings", broken)
    lines = [line for line in text.stderr.splitlines() if line.strip()]
    assert text.returncode == 1
    assert len(lines) == 1 and lines[0].startswith("Error: ") and str(broken) in lines[0]


def test_debug_is_accepted_after_the_subcommand_too() -> None:
    before = run("--debug", "check", "--org", ORGANIZATION)
    after = run("check", "--org", ORGANIZATION, "--debug")
    assert before.returncode == after.returncode == 0, after.stderr
    assert before.stdout == after.stdout
    assert "No such option" not in after.stderr


def _completions(*words: str, installed: bool = False) -> list[str]:
    """What bash completion offers (`installed`: asking the installed script, as bash does)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment.update(
        COMP_WORDS=" ".join(["policy", *words]),
        COMP_CWORD=str(len(words)),
        _POLICY_COMPLETE="bash_complete",
    )
    done = run_policy([], env=environment, cwd=ROOT, installed=installed)
    assert done.returncode == 0, done.stderr
    return [line.partition(",")[2] for line in done.stdout.splitlines()]


def test_completion_offers_commands_tool_ids_providers_kinds_and_components() -> None:
    assert {"check", "completion", "explain", "chat"} <= set(_completions("", installed=True))
    assert _completions("explain", "--org", str(ORGANIZATION), "web") == ["web_search"]
    assert _completions("explain", "--org", str(ORGANIZATION), "--provider", "Ex") == [
        "Example Corp vLLM"
    ]
    assert _completions("explain", "--provider-kind", "SELF") == ["SELF_HOSTED"]
    assert _completions("tools", "--component", "cha") == ["CHAT"]
    assert _completions("chat", "--org", str(ORGANIZATION), "--tool", "read") == ["read_web_page"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_bash_completion_script_loads_in_bash() -> None:
    script = run("completion", "bash")
    assert script.returncode == 0
    loaded = subprocess.run(
        ["bash", "--norc", "-c", f"{script.stdout}\ncomplete -p policy"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert loaded.returncode == 0, loaded.stderr
    assert "_policy_completion" in loaded.stdout
    for shell in ("zsh", "fish"):
        other = run("completion", shell)
        assert other.returncode == 0 and "policy" in other.stdout
    wrong = run("completion", "tcsh")
    assert wrong.returncode == 2 and "'tcsh' is not one of" in wrong.stderr


def test_the_command_summaries_are_not_cut_off() -> None:
    done = run("--help")
    assert done.returncode == 0
    listed = done.stdout.split("Commands:", 1)[1]
    assert "..." not in listed, listed
    assert "completion" in listed and "explain" in listed
