"""`--help` of every `policy` command ends with one or two examples, all from one source
(`policy.cli_examples.EXAMPLES`), and every example is a valid command line of the command it is
shown for: each is parsed by the real command tree (options, arguments, choices, paths), only the
command's own work is left out."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from policy.cli import cli
from policy.cli_examples import EXAMPLES
from policy.cli_options import EXAMPLES_HEADING

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class _Shown:
    path: tuple[str, ...]
    command: click.Command


def _commands(command: click.Command, path: tuple[str, ...]) -> Iterator[_Shown]:
    yield _Shown(path, command)
    if isinstance(command, click.Group):
        context = click.Context(command, info_name=path[-1])
        for name in command.list_commands(context):
            child = command.get_command(context, name)
            assert child is not None, name
            yield from _commands(child, (*path, name))


COMMANDS = list(_commands(cli, ("policy",)))


def _examples(shown: _Shown) -> list[str]:
    """The example lines of a command's `--help`, as the user reads them."""
    result = CliRunner().invoke(cli, [*shown.path[1:], "--help"], prog_name="policy")
    assert result.exit_code == 0, result.output
    _, heading, after = result.output.partition(EXAMPLES_HEADING)
    assert heading, f"{' '.join(shown.path)} --help shows no examples"
    return [line.strip() for line in after.splitlines() if line.strip()]


def _command_words(line: str) -> tuple[dict[str, str], list[str]]:
    """A shell line's `VAR=value` prefix and the words of its `policy` command, up to the first
    pipe, redirection or closing parenthesis."""
    start = line.index("policy ")
    before = line[:start].split()
    environment = dict(w.split("=", 1) for w in before if re.fullmatch(r"[A-Z_]+=\S+", w))
    lexer = shlex.shlex(line[start:], posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for word in lexer:
        if word and all(c in "();<>|&" for c in word):
            break
        words.append(word)
    return environment, words


def test_the_one_source_has_examples_for_every_command_and_no_other() -> None:
    commands = {" ".join(c.path) for c in COMMANDS}
    assert sorted(commands - EXAMPLES.keys()) == []
    assert sorted(EXAMPLES.keys() - commands) == []


@pytest.mark.parametrize("shown", COMMANDS, ids=[" ".join(c.path) for c in COMMANDS])
def test_every_command_shows_one_or_two_examples_of_itself(shown: _Shown) -> None:
    lines = _examples(shown)
    assert lines == list(EXAMPLES[" ".join(shown.path)])
    assert 1 <= len(lines) <= 2, lines
    for line in lines:
        _, words = _command_words(line)
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


def _leaves(command: click.Command, path: tuple[str, ...]) -> Iterator[_Shown]:
    for shown in _commands(command, path):
        if not isinstance(shown.command, click.Group):
            yield shown


@pytest.mark.parametrize("shown", COMMANDS, ids=[" ".join(c.path) for c in COMMANDS])
def test_every_example_is_a_valid_command_line(
    shown: _Shown, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[tuple[str, ...]] = []
    for leaf in _leaves(cli, ("policy",)):
        monkeypatch.setattr(
            leaf.command, "callback", lambda *_, _path=leaf.path, **__: ran.append(_path)
        )
    for line in _examples(shown):
        environment, words = _command_words(line)
        with monkeypatch.context() as scoped:
            for name, value in environment.items():
                scoped.setenv(name, value)
            cli.main(words[1:], prog_name="policy", standalone_mode=False)
        assert ran[-1][: len(shown.path)] == shown.path, (line, ran[-1])
    assert len(ran) == len(_examples(shown))


def test_a_wrong_example_would_be_caught(workspace: Path) -> None:
    with pytest.raises(click.UsageError, match="No such option"):
        cli.main(["check", "--orgs", "examples/organization"], standalone_mode=False)
