"""Code and docs cite our own docs (README, docs/...), never outside specification files."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_OUTSIDE = re.compile(r"[a-z]-spec\b|(?<!RFC \d{4} )§\d|shared/spec|\bTools\.md\b|\bthe specs?\b")
_SUFFIXES = (".py", ".md", ".lua", ".json", ".html", ".toml", ".yaml", ".txt")


def test_no_file_cites_an_outside_specification() -> None:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    cited = [
        f"{name}:{number}: {line.strip()}"
        for name in listed
        if name.endswith(_SUFFIXES) and name != "tests/test_docs_stand_alone.py"
        for number, line in enumerate(
            (ROOT / name).read_text(encoding="utf-8", errors="replace").splitlines(), start=1
        )
        if _OUTSIDE.search(line)
    ]
    assert cited == []
