"""The runtime reaches the policy through two doors only: `policy` and `policy._runtime_seam`.

Every other `from policy.<module> import` in `runtime/` would be one more place that breaks when
the policy's insides move; the seam is the one list of what the runtime knows about them.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import policy
import policy._runtime_seam as seam

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"
DOORS = {"policy", "policy._runtime_seam"}


def _policy_imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "policy":
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "policy"]
    return found


def test_runtime_imports_the_policy_only_through_its_two_doors() -> None:
    strays = [
        f"runtime/{path.relative_to(RUNTIME)}:{line}: {module}"
        for path in sorted(RUNTIME.rglob("*.py"))
        for line, module in _policy_imports(path)
        if module not in DOORS
    ]
    assert not strays, "import these from policy or policy._runtime_seam:\n" + "\n".join(strays)


def test_every_seam_name_is_the_defining_modules_object_and_not_public() -> None:
    for name in seam.__all__:
        value = getattr(seam, name)
        home = seam._DEFINED_IN.get(name, "policy._lazy")
        assert getattr(importlib.import_module(home), name) is value
        assert name not in policy.__all__ or getattr(policy, name) is not value, (
            f"{name} is public: import it from policy"
        )


def test_importing_the_seam_loads_none_of_what_it_names() -> None:
    code = (
        "import sys, policy\n"
        "before = set(sys.modules)\n"
        "import policy._runtime_seam as seam\n"
        "print(sorted(set(seam._DEFINED_IN.values()) & set(sys.modules) - before))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"
