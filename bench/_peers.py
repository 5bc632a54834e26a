"""The virtual environments benchmark peers live in (never project dependencies).

Each is made under bench/.peers/ on first use and filled with `pip install`; when that fails,
the benchmark says why and measures what it can without the peers.
"""

from __future__ import annotations

import json
import os
import subprocess
import venv
from collections.abc import Mapping, Sequence
from pathlib import Path


def peer_python(
    directory: Path,
    packages: Sequence[str],
    probe: str,
    env: Mapping[str, str] | None = None,
) -> tuple[Path | None, str]:
    """The environment's Python, made and filled on first use; (None, why) when that fails.

    `probe` is Python code that runs without error once the packages are installed.
    """
    python = directory / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    try:
        if not python.exists():
            print(f"Creating {directory} and installing {', '.join(packages)} ...")
            venv.create(directory, with_pip=True)
        check = subprocess.run(
            [str(python), "-c", probe], capture_output=True, env=dict(env) if env else None
        )
        if check.returncode != 0:
            subprocess.run(
                [str(python), "-m", "pip", "install", "-q", *packages],
                check=True,
                capture_output=True,
                text=True,
            )
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        return (
            None,
            f"installing {', '.join(packages)} into {directory} failed: {detail.strip()[-400:]}",
        )
    return python, ""


def run_peer_script(
    python: Path,
    arguments: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
) -> dict[str, float] | str:
    """Run `python ARGUMENTS` and read the figures it prints as its last JSON line; a run that
    fails gives the reason (the tail of its output) instead."""
    done = subprocess.run(
        [str(python), *arguments],
        capture_output=True,
        text=True,
        env=dict(env) if env else None,
        timeout=timeout,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return f"failed: {(done.stderr or done.stdout).strip()[-400:]}"
    figures: dict[str, float] = json.loads(lines[-1])
    return figures
