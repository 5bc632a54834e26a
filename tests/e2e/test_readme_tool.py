"""The site's example tool (docs/developers/tools.md) is examples/clock_tool.py's `current_time`,
word for word, and runs."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.e2e._kit import ROOT

_MARK = "# examples/clock_tool.py: the current_time tool"
_PAGE = ROOT / "docs" / "developers" / "tools.md"


def _page_tool() -> str:
    text = _PAGE.read_text(encoding="utf-8")
    start = text.index(_MARK)
    return text[start : text.index("```", start)]


def _definitions(source: str) -> dict[str, str]:
    """Every top-level function, class and constant, by name, as its syntax tree."""
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = ast.dump(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = ast.dump(node)
    return found


def test_the_page_tool_is_the_example_file_word_for_word() -> None:
    shown = _definitions(_page_tool())
    example = _definitions((ROOT / "examples" / "clock_tool.py").read_text(encoding="utf-8"))
    defined = {name for name in shown if name not in {"policy", "decision"}}
    assert {"CurrentTimeTool", "_time_zone", "CURRENT_TIME"} <= defined
    for name in sorted(defined):
        assert shown[name] == example.get(name), f"the page's {name} differs from the example's"


def test_the_page_tool_runs_and_is_offered() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _page_tool()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "NONE"
