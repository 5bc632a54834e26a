"""Benchmark: cold start of the `policy` command against its floor and a peer. Prints figures.

    .venv/bin/python bench/cold_start.py [--runs 15]

Each command runs as a fresh process, interleaved with the others, `--runs` times; the figures
are the median wall time and the median CPU time (user + system of the process and its
children), which a machine busy with other work inflates far less. The floor is `python -c pass` (the same interpreter, so site and the
editable install count on both sides); the peer for `--help` is a minimal click app with the
same commands and help lines, written to a temporary file. Target: `policy --help` ≤ 1.3× the
peer.

A second floor shows what any command that decides must import while the tool definitions are
public pydantic models: click and `policy.definitions` (pydantic and the five definition models
built, without pydantic plugins, as the `policy` command runs), and nothing else. Targets, in
instructions: `check` on examples/organization ≤ 1.25× that floor, `explain --all` ≤ 1.4×.

`policy mcp list` (examples/organization with examples/mcp: one stdio server, the example
ticket server, started and listed) is stated against the floor of the `mcp` SDK itself,
`python -c "import mcp"`: any module of the SDK runs its package's `__init__`, which imports the
client, the server, pydantic and starlette. Target: ≤ 1.3× that floor in instructions (the
server the command starts is another program, which callgrind does not follow; the time figures
count its CPU as the command's child, which the floor has no share of).

Child processes are counted per command with an audit hook (`sys.addaudithook`: every fork and
every program started, with the module that asked) and, when `strace` is installed, with
`strace -f` (every execve and every process clone). The Lua sandbox worker is the one fork a
command that loads plugins makes by design. `explain --all` on examples/organization reads no
secret (web_search has a SearXNG address there, so whether the keyring holds an API key cannot
change a decision, and the matrix shows no evidence); it is also timed with keyring's backend
named by PYTHON_KEYRING_BACKEND, which would skip keyring's backend detection if it read one.

Every command runs with bytecode caches, as an installed package has them: the caches go to a
scratch folder (`PYTHONPYCACHEPREFIX`, written by the warm-up run) whatever
PYTHONDONTWRITEBYTECODE says, so compiling the editable checkout's sources is not counted.

With `--instructions` (and valgrind installed), each command also runs once under callgrind and
the bench prints the instructions it executed, its forked Lua worker's own included (the counters
are dumped and zeroed just before every fork): a figure that, unlike time, does not move with the
load of a shared machine. It misses what the kernel does for the process (page faults, fork).

This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers.cli_probe import probe_cli  # noqa: E402

EXAMPLES = ROOT / "examples" / "organization"
PYTHON = sys.executable
KEYRING_NAMED = {"PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
MODELS_FLOOR = "click + tool-definition models"
TARGETS = {"policy check": 1.25, "policy explain --all": 1.4}
"""Each deciding command's target, in instructions, as a multiple of the click + models floor."""
UNDER_VALGRIND = {"TOOLPOLICY_PLUGIN_WALL_SECONDS": "600"}
"""The Lua worker runs some fifty times slower under valgrind: with the default wall-clock cap,
the CPU backstop it sets itself from the cap could end it before valgrind wrote its counters, and
the count then lacked the worker's work in some runs and not in others."""
MCP_FLOOR = "import mcp (the MCP SDK)"
MCP_LIST = "policy mcp list"


def _peer_parameters(command: Any) -> list[str]:
    """click decorators declaring the same arguments and options (plain types, no callbacks)."""
    import click

    lines = []
    for param in command.params:
        if isinstance(param, click.Argument):
            lines.append(
                f"@click.argument({param.name!r}, nargs={param.nargs}, required={param.required})"
            )
        elif isinstance(param, click.Option) and param.name not in ("help", "version"):
            secondary = "/".join(param.secondary_opts)
            declared = [*param.opts] if not secondary else [f"{param.opts[0]}/{secondary}"]
            lines.append(
                f"@click.option({', '.join(map(repr, declared))}, {param.name!r}, "
                f"is_flag={param.is_flag}, multiple={param.multiple}, help={param.help!r})"
            )
    return lines


def _peer_command(name: str, command: Any, parent: str, counter: list[int]) -> str:
    import click

    counter[0] += 1
    function = f"command_{counter[0]}"
    kind = "group" if isinstance(command, click.Group) else "command"
    source = "\n".join(
        [
            f"@{parent}.{kind}({name!r}, help={command.help!r})",
            *_peer_parameters(command),
            f"def {function}(**_: object) -> None:\n    pass\n",
        ]
    )
    if isinstance(command, click.Group):
        for child_name, child in command.commands.items():
            source += "\n\n" + _peer_command(child_name, child, function, counter)
    return source


def _peer_app(directory: Path) -> Path:
    """A click app with policy's commands (names, help, arguments and options; lazily attached
    commands as their help line only, as `policy --help` sees them), and nothing behind them."""
    from click import Context

    from policy.cli import _LAZY_SUMMARIES, cli

    context = Context(cli, info_name="policy")
    counter = [0]
    commands = []
    for name in cli.list_commands(context):
        summary = _LAZY_SUMMARIES.get(name)
        if summary is not None and name not in cli.commands:
            counter[0] += 1
            commands.append(
                f"@cli.command({name!r}, help={summary!r})\n"
                f"def command_{counter[0]}() -> None:\n    pass\n"
            )
            continue
        command = cli.get_command(context, name)
        if command is not None:
            commands.append(_peer_command(name, command, "cli", counter))
    source = (
        "import click\n\n\n"
        '@click.group(context_settings={"help_option_names": ["-h", "--help"]})\n'
        '@click.option("--debug", is_flag=True, help="Show a traceback.")\n'
        '@click.version_option("0", prog_name="policy")\n'
        f"def cli(debug: bool) -> None:\n    {cli.help!r}\n\n\n"
        + "\n\n".join(commands)
        + '\n\nif __name__ == "__main__":\n    cli()\n'
    )
    path = directory / "peer_cli.py"
    path.write_text(source, encoding="utf-8")
    return path


def _time_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU is user + system time of the process and its
    children (`getrusage(RUSAGE_CHILDREN)`), which a busy machine inflates far less than wall."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _children_by_hook(args: list[str], env: dict[str, str]) -> str:
    """Programs started and forks (the Lua sandbox worker's apart), as audit events report them."""
    report = probe_cli(args, env=env, cwd=ROOT)
    return (
        f"programs started: {len(report.programs_started)}, other forks: "
        f"{len(report.other_forks)}, Lua sandbox worker forks: {report.sandbox_forks}"
    )


def _children_by_strace(args: list[str], env: dict[str, str], scratch: Path) -> str:
    if shutil.which("strace") is None:
        return "strace not installed"
    trace = scratch / "strace.txt"
    subprocess.run(
        [
            *("strace", "-f", "-qq", "-e", "trace=execve,fork,vfork,clone,clone3"),
            *("-o", str(trace), PYTHON, "-m", "policy.cli", *args),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    lines = trace.read_text().splitlines()
    execs = (
        sum(
            1
            for line in lines
            if ("execve(" in line or "execve resumed" in line) and line.rstrip().endswith("= 0")
        )
        - 1
    )
    clones = sum(
        1
        for line in lines
        if any(f"{call}(" in line for call in ("fork", "vfork", "clone", "clone3"))
        and "CLONE_THREAD" not in line
        and "resumed" not in line
    )
    return f"{execs} program(s) executed, {clones} process(es) created"


def _instructions(command: list[str], env: dict[str, str], scratch: Path) -> int:
    """Instructions one run executes, its forked children's own work included: callgrind dumps
    and zeroes the counters just before each fork, so a child's file counts only the child (the
    Lua worker given the time valgrind needs, `UNDER_VALGRIND`)."""
    out = scratch / "callgrind"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    subprocess.run(
        [
            *("valgrind", "--tool=callgrind", "--dump-before=fork"),
            f"--callgrind-out-file={out}/cg.%p",
            *command,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**env, **UNDER_VALGRIND},
        cwd=ROOT,
    )
    return sum(
        int(line.split()[1])
        for dump in out.iterdir()
        for line in dump.read_text().splitlines()
        if line.startswith("summary:")
    )


def _print_instructions(
    commands: dict[str, tuple[list[str], dict[str, str]]], scratch: Path
) -> None:
    if shutil.which("valgrind") is None:
        print("instructions: valgrind not installed\n")
        return
    counts = {
        label: _instructions(command, env, scratch) for label, (command, env) in commands.items()
    }
    floor, models = counts["python -c pass"], counts[MODELS_FLOOR]
    print("cold start, instructions executed (callgrind, one run each; millions):")
    for label, count in counts.items():
        print(f"  {label:<38} {count / 1e6:7.0f}   {count / floor:5.1f}x python -c pass")
    for label, target in TARGETS.items():
        print(
            f"  ratio {label} / {MODELS_FLOOR}: {counts[label] / models:.2f}x   "
            f"(target <= {target}x)"
        )
    print(
        f"  ratio {MCP_LIST} / {MCP_FLOOR}: {counts[MCP_LIST] / counts[MCP_FLOOR]:.2f}x   "
        "(target <= 1.3x)"
    )
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="also count each command's instructions under valgrind's callgrind (slow, exact)",
    )
    arguments = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    env.pop("PYTHON_KEYRING_BACKEND", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    org = ["--org", str(EXAMPLES)]
    policy_args = {
        "policy --help": ["--help"],
        "policy check": ["check", *org],
        "policy explain --all": ["explain", *org, "--all"],
        MCP_LIST: ["mcp", "list", *org, "--org", str(ROOT / "examples" / "mcp")],
    }
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
        named = {**env, **KEYRING_NAMED}
        peer = _peer_app(scratch)
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([PYTHON, "-c", "pass"], env),
            "click peer --help": ([PYTHON, str(peer), "--help"], env),
            MODELS_FLOOR: (
                [PYTHON, "-c", "import click, policy.definitions"],
                {**env, "PYDANTIC_DISABLE_PLUGINS": "__all__"},
            ),
            MCP_FLOOR: ([PYTHON, "-c", "import mcp"], env),
            **{
                label: ([PYTHON, "-m", "policy.cli", *args], env)
                for label, args in policy_args.items()
            },
            "policy explain --all (keyring named)": (
                [PYTHON, "-m", "policy.cli", "explain", *org, "--all"],
                named,
            ),
        }
        for command, command_env in commands.values():  # warm the bytecode caches
            _time_once(command, command_env)
        wall: dict[str, list[float]] = {label: [] for label in commands}
        cpu: dict[str, list[float]] = {label: [] for label in commands}
        for _ in range(arguments.runs):
            for label, (command, command_env) in commands.items():
                run_wall, run_cpu = _time_once(command, command_env)
                wall[label].append(run_wall)
                cpu[label].append(run_cpu)
        for name, figures in (("wall time", wall), ("CPU time", cpu)):
            median = {label: statistics.median(runs) * 1000 for label, runs in figures.items()}
            floor, peer_help = median["python -c pass"], median["click peer --help"]
            print(f"cold start, {name}, median of {arguments.runs} runs (ms):")
            for label, value in median.items():
                print(f"  {label:<38} {value:7.1f}   {value / floor:5.1f}x python -c pass")
            print(
                f"  ratio policy --help / click peer --help: "
                f"{median['policy --help'] / peer_help:.2f}x   (target <= 1.3x)"
            )
            for label in TARGETS:
                print(
                    f"  ratio {label} / {MODELS_FLOOR}: {median[label] / median[MODELS_FLOOR]:.2f}x"
                )
            print(
                f"  ratio {MCP_LIST} / {MCP_FLOOR}: {median[MCP_LIST] / median[MCP_FLOOR]:.2f}x"
                "   (its child, the example server, counted on the command's side)"
            )
            keyring_cost = (
                median["policy explain --all"] - median["policy explain --all (keyring named)"]
            )
            print(f"  keyring backend detection in explain: {keyring_cost:+.0f} ms\n")
        if arguments.instructions:
            _print_instructions(commands, scratch)
        print("child processes per command (audit hook | strace -f):")
        cases = [
            *policy_args.items(),
            ("policy explain --all (keyring named)", ["explain", *org, "--all"]),
        ]
        for label, args in cases:
            command_env = named if "keyring named" in label else env
            hooked = _children_by_hook(args, command_env)
            traced = _children_by_strace(args, command_env, scratch)
            print(f"  {label:<38} {hooked} | {traced}")
    print(
        textwrap.fill(
            "A command reads the keyring only where a secret's place is shown or the keyring "
            "alone can tell whether a tool is configured (keyring's backend detection then "
            "starts no program: its macOS bindings are not imported elsewhere); check, --help, "
            "schema, template and explain --all on examples/organization read no secret.",
            width=100,
        )
    )


if __name__ == "__main__":
    main()
