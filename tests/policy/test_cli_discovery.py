"""Tool discovery: entry points of group `toolpolicy.tools`, loaded lazily, built-ins as fallback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from policy.builtin import builtin_tools
from policy.discovery import ENTRY_POINT_GROUP, discover_tools

BUILTIN_IDS = {tool.definition.id for tool in builtin_tools()}

ACME_MODULE = """\
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool
from policy.vocabulary import ConfidenceLevel


def _tool(tool_id):
    return DefinedTool(
        ToolDefinition(
            id=tool_id,
            implementation_key=tool_id,
            minimum_provider_confidence=ConfidenceLevel.MEDIUM,
            function=ToolFunction(name=tool_id, description_for_llm="Searches ACME."),
        ),
        display_name="ACME search",
    )


def create_tool():
    return _tool("acme_search")


def create_duplicate():
    return _tool("acme_search")


def create_broken():
    raise RuntimeError("the ACME licence server is down")


def create_nothing():
    return 42
"""

ENTRY_POINTS = f"""\
[{ENTRY_POINT_GROUP}]
acme_search = acme_tools:create_tool
acme_zz_duplicate = acme_tools:create_duplicate
acme_broken = acme_tools:create_broken
acme_nothing = acme_tools:create_nothing
"""


@pytest.fixture
def acme_package(tmp_path: Path) -> Path:
    """A third-party tool distribution, installed the way pip lays one out (module + dist-info)."""
    (tmp_path / "acme_tools.py").write_text(ACME_MODULE, encoding="utf-8")
    info = tmp_path / "acme_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-tools\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    return tmp_path


def test_without_entry_points_the_builtins_stand_alone() -> None:
    found = discover_tools(use_entry_points=False)
    assert set(found.ids) == BUILTIN_IDS
    assert found.findings == ()


def test_the_builtins_are_always_there() -> None:
    assert set(discover_tools().ids) >= BUILTIN_IDS


def test_a_third_party_tool_package_is_found(
    acme_package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(acme_package))
    found = discover_tools()
    assert "acme_search" in found.ids
    assert found.ids.count("acme_search") == 1
    assert set(found.ids) >= BUILTIN_IDS
    messages = {f.code: [] for f in found.findings}
    for finding in found.findings:
        messages[finding.code].append(finding.message)
    failed = " ".join(messages["tool-entry-point-failed"])
    assert "acme_broken" in failed and "licence server is down" in failed
    assert "acme_nothing" in failed and "not a tool" in failed
    assert any("acme_zz_duplicate" in m for m in messages["duplicate-tool-id"])
    assert all(f.severity.value == "warning" for f in found.findings)


def test_a_distribution_on_the_path_twice_counts_once_as_the_standard_library_counts_it(
    acme_package: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the first copy of a distribution on the path counts, even when it announces no
    tool and a later copy does (an older install shadowing a newer one), and a distribution
    that names the group only in a comment announces nothing: the entry points found are the
    ones `importlib.metadata.entry_points(group=...)` returns."""
    from importlib.metadata import entry_points

    shadowing = tmp_path_factory.mktemp("shadowing")
    info = shadowing / "Acme.Tools-0.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: Acme.Tools\nVersion: 0.9\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nacme = acme_tools:main\n")
    mention = shadowing / "mentions-1.0.dist-info"
    mention.mkdir()
    (mention / "METADATA").write_text("Metadata-Version: 2.1\nName: mentions\nVersion: 1.0\n")
    (mention / "entry_points.txt").write_text(f"# not {ENTRY_POINT_GROUP}\n[other]\nx = y:z\n")
    monkeypatch.syspath_prepend(str(acme_package))
    monkeypatch.syspath_prepend(str(shadowing))
    found = discover_tools()
    assert "acme_search" not in found.ids
    assert not any("acme" in f.message for f in found.findings)
    monkeypatch.syspath_prepend(str(acme_package))
    again = discover_tools()
    assert "acme_search" in again.ids
    announced = {(e.name, e.value) for e in entry_points(group=ENTRY_POINT_GROUP)}
    assert ("acme_search", "acme_tools:create_tool") in announced


@pytest.mark.parametrize("executable", [True, False], ids=["running", "deciding only"])
def test_a_broken_builtin_entry_point_falls_back_to_the_policy_definition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, executable: bool
) -> None:
    """Another distribution announcing a built-in's name is loaded (and its failure reported)
    even when only deciding: only toolpolicy's own entry points stand for the built-ins."""
    info = tmp_path / "shadow-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shadow\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nweb_search = no_such_module_anywhere:create_tool\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover_tools(executable=executable)
    assert set(found.ids) >= BUILTIN_IDS
    assert found.ids.count("web_search") == 1
    shadow = [f for f in found.findings if "no_such_module_anywhere" in f.message]
    assert len(shadow) == 1
    assert "policy-side built-in definition" in shadow[0].message


def test_the_cli_explains_a_third_party_tool(acme_package: Path) -> None:
    policy = Path(sys.executable).parent / "policy"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(acme_package), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    done = subprocess.run(
        [
            str(policy) if policy.exists() else "policy",
            "explain",
            "acme_search",
            "--provider-kind",
            "MISTRAL",
            "--model",
            "mistral-large-latest",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )
    assert "Traceback" not in done.stderr
    document = json.loads(done.stdout)
    assert document["tool"] == "acme_search"
    assert document["offered"] is True
    confidence = next(c for c in document["checks"] if c["check"] == "PROVIDER_CONFIDENCE_TOO_LOW")
    assert confidence["passed"] is True
    assert "MEDIUM" in confidence["detail"]


FAULTY_MODULE = """\
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool


class FaultyTool(DefinedTool):
    @property
    def display_name(self):
        raise RuntimeError("display name service unavailable")


def create_tool():
    definition = ToolDefinition(
        id="faulty", implementation_key="faulty", function=ToolFunction(name="faulty")
    )
    return FaultyTool(definition)
"""


@pytest.fixture
def faulty_package(tmp_path: Path) -> Path:
    """A third-party tool that breaks in a way nobody planned for."""
    (tmp_path / "faulty_tools.py").write_text(FAULTY_MODULE, encoding="utf-8")
    info = tmp_path / "faulty_tools-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: faulty-tools\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nfaulty = faulty_tools:create_tool\n"
    )
    return tmp_path


def _run_with(package: Path, *args: str) -> subprocess.CompletedProcess[str]:
    policy = Path(sys.executable).parent / "policy"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment["PYTHONPATH"] = str(package)
    return subprocess.run(
        [str(policy) if policy.exists() else "policy", *args],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


def test_an_unexpected_failure_shows_no_traceback_unless_debugging(faulty_package: Path) -> None:
    arguments = ("explain", "--all", "--provider-kind", "OPEN_AI", "--model", "gpt-4o")
    plain = _run_with(faulty_package, *arguments)
    assert plain.returncode == 1
    assert "Traceback" not in plain.stderr
    assert "display name service unavailable" in plain.stderr
    assert "--debug" in plain.stderr
    debugging = _run_with(faulty_package, "--debug", *arguments)
    assert debugging.returncode == 1
    assert "Traceback" in debugging.stderr


def test_a_lazily_attached_command_is_listed_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from policy import cli

    (tmp_path / "hello_ext.py").write_text(
        "import click\n\n\n@click.command()\ndef hello():\n    '''Say hello.'''\n"
        "    click.echo('hello from an extension')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "broken_ext.py").write_text("raise ImportError('half installed')\n")
    monkeypatch.setattr(cli, "_LAZY_COMMANDS", dict(cli._LAZY_COMMANDS))  # restored afterwards
    cli.register_lazy_command("hello", "hello_ext:hello")
    cli.register_lazy_command("ghost", "no_such_extension_module:ghost")
    cli.register_lazy_command("broken", "broken_ext:broken")
    runner = CliRunner()
    listing = runner.invoke(cli.cli, ["--help"])
    assert "hello" in listing.output and "Say hello." in listing.output
    assert "ghost" not in listing.output
    assert listing.exit_code == 0
    assert "broken" not in listing.stdout
    assert "command 'broken' is unavailable: half installed" in listing.stderr
    assert "Traceback" not in listing.stderr
    ran = runner.invoke(cli.cli, ["hello"])
    assert ran.exit_code == 0 and ran.output == "hello from an extension\n"
    assert runner.invoke(cli.cli, ["ghost"]).exit_code == 2
