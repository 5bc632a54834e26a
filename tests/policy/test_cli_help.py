"""`--help` of every `policy` command ends with one or two examples, all from one source
(`policy.cli_examples.EXAMPLES`), the site's page of the command (docs/administrators/cli.md)
shows the same lines for every command, and every example, in `--help` or on the page, is a
valid command line of the command it is shown for: each is parsed by the real command tree
(options, arguments, choices, paths), only the command's own work is left out."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from policy._page_parts import marks, shown_part
from policy.cli import cli
from policy.cli_examples import EXAMPLES, PAGE, examples_part
from policy.cli_options import EXAMPLES_HEADING
from tests.policy._cli_tree import Shown, command_words, commands, parse, parsing_only

ROOT = Path(__file__).resolve().parents[2]


COMMANDS = list(commands())


def _examples(shown: Shown) -> list[str]:
    """The example lines of a command's `--help`, as the user reads them."""
    result = CliRunner().invoke(cli, [*shown.path[1:], "--help"], prog_name="policy")
    assert result.exit_code == 0, result.output
    _, heading, after = result.output.partition(EXAMPLES_HEADING)
    assert heading, f"{' '.join(shown.path)} --help shows no examples"
    return [line.strip() for line in after.splitlines() if line.strip()]


def _page_examples() -> dict[str, list[str]]:
    """The site's examples, command → its lines, as the page shows them between its marks."""
    part = shown_part((ROOT / PAGE).read_text(encoding="utf-8"), "policy.cli_examples")
    assert part is not None, f"{PAGE} has no examples part"
    shown: dict[str, list[str]] = {}
    command = None
    inside = False
    for line in part.splitlines():
        heading = re.fullmatch(r"### `(policy[a-z ]*)`", line)
        if heading:
            command = heading.group(1)
            shown[command] = []
        elif line.startswith("```"):
            inside = not inside
        elif inside and command is not None and line.strip():
            shown[command].append(line.strip())
    return shown


def test_the_one_source_has_examples_for_every_command_and_no_other() -> None:
    names = {c.name for c in COMMANDS}
    assert sorted(names - EXAMPLES.keys()) == []
    assert sorted(EXAMPLES.keys() - names) == []


@pytest.mark.parametrize("shown", COMMANDS, ids=[c.name for c in COMMANDS])
def test_every_command_shows_one_or_two_examples_of_itself(shown: Shown) -> None:
    lines = _examples(shown)
    assert lines == list(EXAMPLES[" ".join(shown.path)])
    assert 1 <= len(lines) <= 2, lines
    for line in lines:
        _, words = command_words(line)
        assert words[: len(shown.path)] == list(shown.path), line


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder like the repository root, with the files the examples name."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "candidate").mkdir()
    (tmp_path / "candidate" / "organization").symlink_to(ROOT / "examples" / "organization")
    for name in ("decisions.jsonl", "decisions.jsonl.1"):
        (tmp_path / name).write_text("")
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("TOOLPOLICY_"):
            monkeypatch.delenv(name)
    return tmp_path


@pytest.mark.parametrize("shown", COMMANDS, ids=[c.name for c in COMMANDS])
def test_every_example_is_a_valid_command_line(
    shown: Shown, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = parsing_only(monkeypatch)
    lines = list(dict.fromkeys([*_examples(shown), *_page_examples()[" ".join(shown.path)]]))
    lines = [line for line in lines if "--help" not in line.split()]
    for line in lines:
        parse(line, monkeypatch)
        assert ran[-1][: len(shown.path)] == shown.path, (line, ran[-1])
    assert len(ran) == len(lines)


def test_a_wrong_example_would_be_caught(workspace: Path) -> None:
    with pytest.raises(click.UsageError, match="No such option"):
        cli.main(["check", "--orgs", "examples/organization"], standalone_mode=False)


def test_the_site_shows_the_examples_of_the_one_source() -> None:
    assert (ROOT / PAGE).read_text(encoding="utf-8").count(marks("policy.cli_examples")[0]) == 1
    assert shown_part((ROOT / PAGE).read_text(encoding="utf-8"), "policy.cli_examples") == (
        examples_part()
    ), f"{PAGE} is stale: run python -m policy.cli_examples"


def test_the_site_shows_examples_for_every_command_and_no_other() -> None:
    shown = _page_examples()
    commands = [" ".join(c.path) for c in COMMANDS]
    assert sorted(shown) == sorted(commands)
    for command, lines in shown.items():
        assert 1 <= len(lines) <= 2, (command, lines)
