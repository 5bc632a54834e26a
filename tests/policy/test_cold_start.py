"""Cold start of the `policy` command: no process it does not need, no module it does not use.

The commands run in a real interpreter with an audit hook (`tests/servers/cli_probe.py`) that
records every attempt to start a program (subprocess, exec, spawn, system) and every fork, with the
modules that asked. The Lua sandbox's worker is the one fork a command that loads plugins makes by design
(it is what enforces a plugin's wall clock); nothing may start a program.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.servers.cli_probe import ProbeReport, probe_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "organization"
SELF_HOSTED = "79cb8e25-0940-4280-964a-0a57c61d6ee7"


def _run(*args: str, env: dict[str, str] | None = None) -> ProbeReport:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment.pop("PYTHON_KEYRING_BACKEND", None)
    environment.update(env or {})
    report = probe_cli(args, env=environment, cwd=ROOT)
    assert "Traceback" not in report.stderr, report.stderr
    return report


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("check", "--org", str(EXAMPLES)),
        ("check", "--org", str(EXAMPLES), "--format", "json"),
        ("explain", "read_web_page", "--org", str(EXAMPLES), "--provider", SELF_HOSTED),
        ("settings", "read_web_page", "--org", str(EXAMPLES)),
        ("schema",),
        ("template",),
    ],
    ids=lambda args: " ".join(a for a in args if not a.startswith("/")),
)
def test_a_command_that_reads_no_secret_starts_no_program(args: tuple[str, ...]) -> None:
    report = _run(*args)
    assert report.programs_started == []
    assert report.other_forks == []
    assert "keyring" not in report.modules


_ONE_KEY_KEYRING = """\
from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError, PasswordSetError


class Keyring(KeyringBackend):
    priority = 1

    def get_password(self, service, username):
        if (service, username) == ("tool::web_search", "tavily.apiKey"):
            return "tvly-canary-7f3a"
        return None

    def set_password(self, service, username, password):
        raise PasswordSetError("read only")

    def delete_password(self, service, username):
        raise PasswordDeleteError("read only")
"""


def _installed_distribution(folder: Path, module: str, source: str, entry_point: str) -> str:
    """`module` installed in `folder` the way a real package is: a distribution (dist-info)
    announcing `entry_point` ("[group]\\nname = target"). Returns the PYTHONPATH to find it."""
    (folder / f"{module}.py").write_text(source, encoding="utf-8")
    dist = folder / f"{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 1.0\n",
        encoding="utf-8",
    )
    (dist / "entry_points.txt").write_text(f"{entry_point}\n", encoding="utf-8")
    return os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])


def _installed_keyring_backend(folder: Path) -> dict[str, str]:
    """A keyring backend installed the way a real one is (a distribution announcing it in the
    `keyring.backends` entry point group), so keyring has to detect it: nothing names it."""
    entry_point = "[keyring.backends]\none_key = one_key_keyring"
    return {
        "PYTHONPATH": _installed_distribution(
            folder, "one_key_keyring", _ONE_KEY_KEYRING, entry_point
        )
    }


def test_a_command_that_shows_a_secret_reads_the_keyring_without_starting_a_program(
    tmp_path: Path,
) -> None:
    """Where a secret's place is shown (settings, a decision's evidence), the keyring is read;
    keyring's backend detection then starts no program (its macOS bindings, which probe for
    libraries with ldconfig/gcc/ld, are not imported elsewhere) and still finds the backend.
    The matrix of `explain --all` shows no evidence, and the example's tools are configured
    whatever the keyring holds (web_search has a SearXNG address): it reads no secret."""
    env = _installed_keyring_backend(tmp_path)
    report = _run("settings", "web_search", "--org", str(EXAMPLES), "--format", "json", env=env)
    assert report.programs_started == []
    assert report.other_forks == []
    fields = {s["field"]: s for s in json.loads(report.stdout)["settings"]}
    assert fields["tavily.apiKey"]["source"] == "USER"
    assert fields["staan.apiKey"]["source"] == "UNSET"
    assert "tvly-canary-7f3a" not in report.stdout + report.stderr

    matrix = _run("explain", "--org", str(EXAMPLES), "--all", env=env)
    assert "keyring" not in matrix.modules
    assert matrix.programs_started == []

    shown = _run("explain", "--org", str(EXAMPLES), "--all", "--format", "json", env=env)
    assert "keyring" in shown.modules
    assert shown.programs_started == []
    assert shown.other_forks == []
    evidence = [
        e
        for d in json.loads(shown.stdout)["decisions"]
        if d["tool"] == "web_search"
        for c in d["checks"]
        for e in c["evidence"]
        if e["key"] == "web_search.tavily.apiKey"
    ]
    assert evidence and all(
        (e["value"], e["source"]) == ("*****", "user keyring") for e in evidence
    ), evidence
    assert "tvly-canary-7f3a" not in shown.stdout + shown.stderr


def test_keyring_detects_the_same_backend_as_on_its_own(tmp_path: Path) -> None:
    env = {**os.environ, **_installed_keyring_backend(tmp_path)}
    env.pop("PYTHON_KEYRING_BACKEND", None)
    chosen = []
    for setup in ("", "from policy.resolve import default_secret_reader as read; read('a', 'b')"):
        done = subprocess.run(
            [sys.executable, "-c", f"{setup}\nimport keyring\nprint(keyring.get_keyring())"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env=env,
        )
        chosen.append(done.stdout.strip())
    assert chosen[0] == chosen[1]
    assert chosen[0].startswith("one_key_keyring.Keyring")


def test_help_imports_no_lazily_attached_command() -> None:
    report = _run("--help")
    unused = {
        "runtime.cli_chat",
        "runtime.cli_fetch",
        "runtime.cli_mcp",
        "asyncio",
        "json",
        "pydantic",
        "lupa",
        "httpx",
        "keyring",
        "policy.decide.registry",
    }
    assert sorted(unused & report.modules) == []
    assert report.started == ()


def test_help_lists_the_lazy_commands_with_their_own_help() -> None:
    from policy import cli

    done = subprocess.run(
        [sys.executable, "-m", "policy.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    for name, target in cli._LAZY_COMMANDS.items():
        module, _, attribute = target.partition(":")
        command = getattr(__import__(module, fromlist=[attribute]), attribute)
        summary = cli._LAZY_SUMMARIES[name]
        for limit in (45, 200):
            assert click.Command(name, help=summary).get_short_help_str(limit) == (
                command.get_short_help_str(limit)
            ), name
        assert f"  {name} " in done.stdout


@pytest.mark.parametrize(
    "args",
    [("check", "--org", str(EXAMPLES)), ("explain", "--org", str(EXAMPLES), "--all")],
    ids=["check", "explain --all"],
)
def test_the_lua_worker_is_forked_before_the_tool_definitions_are_imported(
    args: tuple[str, ...],
) -> None:
    """The plugins load first, so the sandbox's worker is forked from a process that has not
    imported pydantic and the tool-definition models yet: less to copy at the fork and after."""
    report = _run(*args)
    assert report.sandbox_forks == 1
    loaded = report.loaded_at_sandbox_fork
    assert "lupa.lua54" in loaded
    assert sorted(m for m in loaded if m.split(".")[0] == "pydantic") == []
    assert "policy.definitions" not in loaded
    assert "pydantic" in report.modules


def test_check_imports_no_rendering_module_for_its_table() -> None:
    """`policy check` prints finding lines; the decision renderers (and tabulate) stay unloaded."""
    report = _run("check", "--org", str(EXAMPLES))
    assert "ok: 0 error(s)" in report.stdout
    assert sorted({"policy.explain", "tabulate", "yaml"} & report.modules) == []


def test_decision_commands_import_no_runtime_tool_module() -> None:
    report = _run("explain", "--org", str(EXAMPLES), "--all", "--format", "json")
    assert sorted(m for m in report.modules if m.startswith("runtime.tools")) == []


def test_without_mcp_servers_no_command_imports_the_mcp_sdk_or_the_listing() -> None:
    """The report commands list MCP servers live, but only when the configuration has some."""
    for command in (("explain", "--all"), ("tools",), ("check",)):
        report = _run(*command, "--org", str(EXAMPLES))
        loaded = {"mcp", "runtime.mcp", "runtime.mcp_listing"} & report.modules
        assert sorted(loaded) == [], command


def test_the_keyring_is_read_when_a_tool_setting_needs_a_secret(tmp_path: Path) -> None:
    """A command that does look at a secret still reads the user's keyring (through keyring's
    own backend configuration, here a backend module named by PYTHON_KEYRING_BACKEND)."""
    (tmp_path / "one_key_keyring.py").write_text(_ONE_KEY_KEYRING, encoding="utf-8")
    env = {
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "PYTHON_KEYRING_BACKEND": "one_key_keyring.Keyring",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "policy.cli",
            "settings",
            "web_search",
            "--org",
            str(EXAMPLES),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, **env},
    )
    fields = {s["field"]: s for s in json.loads(done.stdout)["settings"]}
    assert fields["tavily.apiKey"]["source"] == "USER"
    assert fields["tavily.apiKey"]["value"] == "*****"
    assert fields["staan.apiKey"]["source"] == "UNSET"
    assert "tvly-canary-7f3a" not in done.stdout + done.stderr


def test_deciding_without_the_runtime_gives_the_same_tools_and_decisions() -> None:
    """`executable=False` hands out the policy-side halves of the built-ins; the runtime's tools
    subclass them and add only what running needs, so no decision can differ."""
    from policy import Component, load_policy
    from policy.discovery import discover_tools
    from policy.explain import decision_document

    running = {t.definition.id: t for t in discover_tools().tools}
    deciding = {t.definition.id: t for t in discover_tools(executable=False).tools}
    assert running.keys() == deciding.keys()
    for tool_id, executable in running.items():
        policy_side = deciding[tool_id]
        assert isinstance(executable, type(policy_side)), tool_id
        assert executable.definition == policy_side.definition
        added = {
            name
            for klass in type(executable).__mro__
            if not isinstance(policy_side, klass)
            for name in vars(klass)
            if not name.startswith("__")
        }
        assert added <= {
            "execute",
            "sensitive_trace_argument_names",
            "returns_untrusted_external_content",
        }, (tool_id, added)

    full = load_policy(org=[EXAMPLES])
    light = load_policy(org=[EXAMPLES], executable_tools=False)
    for provider in full.providers:
        for tool_id in full.tool_ids:
            for component in (Component.CHAT, Component.REWRITE_ASSISTANT):
                assert decision_document(
                    full.offer_decision(tool_id, provider, component)
                ) == decision_document(light.offer_decision(tool_id, provider, component))


_PYDANTIC_PLUGIN = """\
import os
from pathlib import Path

Path(os.environ["PROBE_PLUGIN_MARKER"]).write_text("loaded", encoding="utf-8")


class _Plugin:
    def new_schema_validator(self, *args, **kwargs):
        return None, None, None


plugin = _Plugin()
"""


@pytest.mark.parametrize("opted_in", [False, True], ids=["default", "PYDANTIC_DISABLE_PLUGINS="])
def test_report_commands_load_no_pydantic_plugin_unless_asked(
    tmp_path: Path, opted_in: bool
) -> None:
    """pydantic finds its plugins by reading every installed distribution's entry points when the
    first model is built; the `policy` command's own commands run without them (a start-up cost
    they do not need), and an explicitly set PYDANTIC_DISABLE_PLUGINS (here empty: load them all)
    is left as the user set it."""
    entry_point = "[pydantic]\nprobe = probe_pydantic_plugin:plugin"
    marker = tmp_path / "loaded.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLPOLICY_", "PYDANTIC_"))}
    env["PYTHONPATH"] = _installed_distribution(
        tmp_path, "probe_pydantic_plugin", _PYDANTIC_PLUGIN, entry_point
    )
    env["PROBE_PLUGIN_MARKER"] = str(marker)
    if opted_in:
        env["PYDANTIC_DISABLE_PLUGINS"] = ""
    done = subprocess.run(
        [sys.executable, "-m", "policy.cli", "check", "--org", str(EXAMPLES)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert marker.exists() is opted_in


def test_a_command_that_logs_nothing_imports_no_logging() -> None:
    report = _run("check", "--org", str(EXAMPLES))
    assert "ok: 0 error(s)" in report.stdout
    assert "logging" not in report.modules


@pytest.mark.parametrize(
    ("command", "collecting"),
    [(("check", "--help"), False), (("mcp", "--help"), True)],
    ids=["own command", "lazily attached command"],
)
def test_the_console_script_holds_the_collector_only_for_its_own_commands(
    command: tuple[str, ...], collecting: bool
) -> None:
    """The console script holds Python's cyclic collector while the modules load; a lazily
    attached command (long-running: `serve`, `mcp serve`, `chat`) gets it back before it runs."""
    probe = (
        "import gc, sys\n"
        f"sys.argv = ['policy', *{list(command)!r}]\n"
        "from policy._entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(gc.isenabled())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert done.stdout.strip().splitlines()[-1] == str(collecting)
