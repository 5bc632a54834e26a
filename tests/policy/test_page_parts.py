"""`python -m WRITER [PAGE ...]` writes the part of a site page that WRITER owns (every command's
examples, the tool-calling table, the confidence table) and nothing else of the page; a page
without the part's marks is refused, and then no page named is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from policy import capabilities, cli_examples, confidence_page
from policy._page_parts import marks

ROOT = Path(__file__).resolve().parents[2]

_WRITERS = [
    ("policy.cli_examples", cli_examples.PAGE, "policy check --org", "policy chek --org"),
    ("policy.capabilities", capabilities.PAGE, "`gpt-4.1`", "`gpt-4.2`"),
    ("policy.confidence_page", confidence_page.PAGE, "| VERY_LOW |", "| LOW |"),
]


def _write(writer: str, *pages: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", writer, *map(str, pages)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("writer", "page", "shown", "stale"), _WRITERS, ids=[w[0] for w in _WRITERS]
)
def test_a_writer_rewrites_its_stale_part_and_nothing_else(
    writer: str, page: str, shown: str, stale: str, tmp_path: Path
) -> None:
    current = (ROOT / page).read_text(encoding="utf-8")
    assert current.count(shown) >= 1
    copy = tmp_path / "page.md"
    copy.write_text(current.replace(shown, stale), encoding="utf-8")
    done = _write(writer, copy)
    assert (done.returncode, done.stderr) == (0, "")
    assert copy.read_text(encoding="utf-8") == current


def test_a_page_without_the_marks_is_refused_and_no_page_is_written(tmp_path: Path) -> None:
    marked = tmp_path / "cli.md"
    stale = (
        (ROOT / cli_examples.PAGE)
        .read_text(encoding="utf-8")
        .replace("policy check", "policy chek")
    )
    marked.write_text(stale, encoding="utf-8")
    unmarked = tmp_path / "other.md"
    unmarked.write_text("# Another page\n", encoding="utf-8")
    done = _write("policy.cli_examples", marked, unmarked)
    assert done.returncode == 2
    assert f"Error: {unmarked}: expected the line " in done.stderr
    assert marks("policy.cli_examples")[1] in done.stderr
    assert "Traceback" not in done.stderr
    assert marked.read_text(encoding="utf-8") == stale
    assert unmarked.read_text(encoding="utf-8") == "# Another page\n"


def test_a_missing_page_is_named(tmp_path: Path) -> None:
    done = _write("policy.capabilities", tmp_path / "nowhere.md")
    assert done.returncode == 2
    assert f"Error: {tmp_path / 'nowhere.md'}: no such file" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_part_whose_marks_are_out_of_order_is_refused(tmp_path: Path) -> None:
    begin, end = marks("policy.capabilities")
    page = tmp_path / "page.md"
    page.write_text(f"# Page\n\n{end}\n\n{begin}\n", encoding="utf-8")
    done = _write("policy.capabilities", page)
    assert done.returncode == 2
    assert "(found 1 and 1)" in done.stderr
    assert page.read_text(encoding="utf-8") == f"# Page\n\n{end}\n\n{begin}\n"
