"""`--tools-file`, `--component` and `--format` are one option each, shared by every command that
takes them: an administrator explains, checks and lists an app's own tools like the built-in
ones, and a typo is answered alike everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.policy.test_cli import ROOT, run, write_plugin
from tests.servers.cli_runner import run_policy

CLOCK = ROOT / "examples" / "clock_tool.py"
ORGANIZATION = ROOT / "examples" / "organization"
VLLM = "Example Corp vLLM"


@pytest.fixture
def zone_default(tmp_path: Path) -> Path:
    folder = tmp_path / "org"
    write_plugin(
        folder,
        'CONFIG = {}\nCONFIG["SETTINGS"] = {}\n'
        'CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = '
        '{ ["current_time.defaultTimeZone"] = "Europe/Berlin" }\n',
    )
    return folder


def test_explain_decides_about_a_tool_of_a_tools_file() -> None:
    without = run("explain", "current_time", "--org", ORGANIZATION, "--provider", VLLM)
    assert without.returncode == 2
    assert "unknown tool 'current_time'" in without.stderr
    assert "--tools-file" in without.stderr

    done = run(
        "explain", "current_time", "--org", ORGANIZATION, "--provider", VLLM,
        "--tools-file", CLOCK, "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    decision = json.loads(done.stdout)
    assert decision["tool"] == "current_time"
    assert decision["offered"] is True

    matrix = run("explain", "--all", "--org", ORGANIZATION, "--tools-file", CLOCK)
    assert matrix.returncode == 0, matrix.stderr
    assert "calculator" in matrix.stdout and "current_time" in matrix.stdout


def test_tools_lists_the_tools_of_every_tools_file() -> None:
    done = run("tools", "--org", ORGANIZATION, "--tools-file", CLOCK, "--format", "json")
    assert done.returncode == 0, done.stderr
    ids = [tool["id"] for tool in json.loads(done.stdout)["tools"]]
    assert {"calculator", "current_time", "web_search"} <= set(ids)
    assert "current_time" not in run("tools", "--org", ORGANIZATION).stdout


def test_check_knows_the_settings_of_an_app_tool(zone_default: Path) -> None:
    without = run("check", "--org", zone_default)
    assert "[unknown-tool-id]" in without.stdout
    assert "'current_time'" in without.stdout

    done = run("check", "--org", zone_default, "--tools-file", CLOCK)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "unknown-tool-id" not in done.stdout
    assert "ok: 0 error(s), 0 warning(s)" in done.stdout


def test_a_tools_file_that_gives_no_tools_is_a_usage_error_for_every_command(
    tmp_path: Path,
) -> None:
    no_factory = tmp_path / "no_factory.py"
    no_factory.write_text("X = 1\n", encoding="utf-8")
    broken = tmp_path / "broken.py"
    broken.write_text("def create_tools():\n    raise RuntimeError('no database')\n")
    for command in (["check"], ["tools"], ["explain", "--all"]):
        done = run(*command, "--org", ORGANIZATION, "--tools-file", no_factory)
        assert done.returncode == 2, (command, done.stderr)
        assert "defines no create_tools()" in done.stderr
        assert "Traceback" not in done.stderr
        failed = run(*command, "--org", ORGANIZATION, "--tools-file", broken)
        assert failed.returncode == 2, (command, failed.stderr)
        assert "create_tools() in" in failed.stderr and "RuntimeError: no database" in failed.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["explain", "--all"],
        ["tools"],
        ["diff", "--against-org", str(ORGANIZATION)],
        ["chat", "Hi", "--provider", VLLM],
    ],
)
def test_every_component_option_suggests_the_name_that_was_meant(command: list[str]) -> None:
    done = run(*command, "--org", ORGANIZATION, "--component", "chta")
    assert done.returncode == 2
    assert "'chta' is not a component; did you mean \"CHAT\"?" in done.stderr


def test_an_unknown_provider_is_answered_with_the_near_miss_by_every_command() -> None:
    for command in (["explain", "web_search"], ["chat", "Hi"]):
        done = run(*command, "--org", ORGANIZATION, "--provider", "Example Corp vLMM")
        assert done.returncode == 2, done.stderr
        assert (
            "no configured provider 'Example Corp vLMM'; did you mean \"Example Corp vLLM\"?"
            in (done.stderr)
        )
        assert "Traceback" not in done.stderr


def test_settings_show_and_set_reach_an_app_tool(tmp_path: Path) -> None:
    user = tmp_path / "user.yaml"
    shown = run("settings", "current_time", "--org", ORGANIZATION, "--tools-file", CLOCK)
    assert shown.returncode == 0, shown.stderr
    assert "defaultTimeZone" in shown.stdout and "UTC" in shown.stdout
    saved = run(
        "settings", "set", "current_time", "defaultTimeZone", "Europe/Berlin",
        "--org", ORGANIZATION, "--user-settings", user, "--tools-file", CLOCK,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert "current_time" in user.read_text(encoding="utf-8")


UNSURE_TOOL = """
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool


class LicensedLookup(DefinedTool):
    def is_available(self):
        raise RuntimeError("license server 10.0.0.7 unreachable")


def create_tools():
    definition = ToolDefinition(
        id="licensed_lookup",
        implementation_key="licensed_lookup",
        function=ToolFunction(name="licensed_lookup", description_for_llm="Look it up."),
    )
    return [LicensedLookup(definition, display_name="Licensed lookup")]
"""


def test_a_tool_whose_is_available_raises_is_one_line_and_a_traceback_only_with_debug(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "unsure.py"
    tools.write_text(UNSURE_TOOL, encoding="utf-8")
    arguments = ("explain", "licensed_lookup", "--org", ORGANIZATION, "--provider", VLLM)
    done = run(*arguments, "--tools-file", tools)
    assert done.returncode == 0, done.stderr
    assert "NOT OFFERED" in done.stdout
    assert "Traceback" not in done.stderr and 'File "' not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "licensed_lookup" in line]
    assert "is_available" in line
    assert line.endswith("(RuntimeError: license server 10.0.0.7 unreachable)"), line

    debugged = run_policy(["--debug", *map(str, arguments), "--tools-file", str(tools)], cwd=ROOT)
    assert debugged.returncode == 0, debugged.stderr
    assert "Traceback (most recent call last)" in debugged.stderr
    assert "in is_available" in debugged.stderr


def test_a_fresh_process_that_logs_late_still_writes_one_terminal_safe_line(
    tmp_path: Path,
) -> None:
    """The report commands import `logging` only when something first logs (here the catalog,
    for the tool whose is_available raises): the command's stderr handler is installed at that
    import, so the record is still one line naming the error, without a traceback."""
    from tests.policy.test_cli import installed

    tools = tmp_path / "unsure.py"
    tools.write_text(UNSURE_TOOL, encoding="utf-8")
    arguments = ("explain", "licensed_lookup", "--org", ORGANIZATION, "--provider", VLLM)
    done = installed(*arguments, "--tools-file", tools)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and 'File "' not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if "licensed_lookup" in line]
    assert line.endswith("(RuntimeError: license server 10.0.0.7 unreachable)"), line
