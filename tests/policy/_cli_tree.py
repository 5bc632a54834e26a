"""The `policy` command tree as the tests that check shown command lines walk it: every command
with its path (`("policy", "settings", "set")`), the words of a shown shell line's `policy`
command, and the tree with its commands' own work left out, so a line is only parsed (options,
arguments, choices, paths) by the real commands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

import click
import pytest

from policy.cli import cli


@dataclass(frozen=True)
class Shown:
    path: tuple[str, ...]
    command: click.Command

    @property
    def name(self) -> str:
        return " ".join(self.path)


def commands(command: click.Command = cli, path: tuple[str, ...] = ("policy",)) -> Iterator[Shown]:
    """`command` and every command under it, groups too."""
    yield Shown(path, command)
    if isinstance(command, click.Group):
        context = click.Context(command, info_name=path[-1])
        for name in command.list_commands(context):
            child = command.get_command(context, name)
            assert child is not None, name
            yield from commands(child, (*path, name))


def command_words(line: str) -> tuple[dict[str, str], list[str]]:
    """A shell line's `VAR=value` prefix and the words of its `policy` command, up to the first
    pipe, redirection or closing parenthesis."""
    start = line.index("policy ")
    try:
        before = shlex.split(line[:start])
    except ValueError:  # `eval "$(policy ...)"`: what comes before is no assignment
        before = []
    environment = dict(w.split("=", 1) for w in before if re.fullmatch(r"[A-Z_]+=.*", w))
    lexer = shlex.shlex(line[start:], posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words: list[str] = []
    for word in lexer:
        if word and all(c in "();<>|&" for c in word):
            break
        words.append(word)
    return environment, words


def parsing_only(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Leave out every command's own work: a command line then only parses, and the path of the
    command it reached is appended to the list returned."""
    ran: list[tuple[str, ...]] = []
    for shown in commands():
        if not isinstance(shown.command, click.Group):
            monkeypatch.setattr(
                shown.command, "callback", lambda *_, _path=shown.path, **__: ran.append(_path)
            )
    return ran


def parse(line: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parse the `policy` command of a shell line as the real command tree would, its `VAR=value`
    prefix in the environment (commands must have been made `parsing_only`)."""
    environment, words = command_words(line)
    with monkeypatch.context() as scoped:
        for name, value in environment.items():
            scoped.setenv(name, value)
        cli.main(words[1:], prog_name="policy", standalone_mode=False)
