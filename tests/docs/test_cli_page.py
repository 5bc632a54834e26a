"""The `policy` command's page says of its shared options what the commands do: the commands it
names for `--offline` and `--tools-file` are those that take the option, the environment variable
it names is the one the option reads, and the formats it lists are the choices of `--format`.
"""

from __future__ import annotations

import re

import click
import pytest

from tests.e2e._kit import ROOT
from tests.policy._cli_tree import commands

PAGE = ROOT / "docs" / "administrators" / "cli.md"
_ROW = re.compile(r"^\| `(-f`, `)?(--[a-z-]+)([^`]*)`( \([^)]*\))? \| (.*) \| (.*) \|$", re.M)


def _options_table() -> dict[str, tuple[str, str, str]]:
    """Each row of "Options every configuration command takes": option → (its parenthesis, its
    meaning, its default)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Options every configuration command takes", 1)[1].split("\n## ", 1)[0]
    return {
        match.group(2): (match.group(4) or "", match.group(5), match.group(6))
        for match in _ROW.finditer(section)
    }


def _with_option(option: str) -> dict[str, click.Parameter]:
    """Every command (its words after `policy`) that takes `option`, with the option."""
    found = {}
    for shown in commands():
        for parameter in shown.command.params:
            if option in parameter.opts:
                found[" ".join(shown.path[1:])] = parameter
    return found


def _named(parenthesis: str) -> set[str]:
    """The commands a row names, a group's name standing for its subcommands that take it."""
    return set(re.findall(r"`([a-z][a-z ]*)`", parenthesis))


ROWS = _options_table()


def test_the_page_lists_the_shared_options() -> None:
    assert {"--org", "--local", "--user-settings", "--state-dir", "--format"} <= ROWS.keys()
    assert {"--offline", "--tools-file"} <= ROWS.keys()


@pytest.mark.parametrize("option", ["--offline", "--tools-file"])
def test_the_commands_named_for_an_option_are_those_that_take_it(option: str) -> None:
    taking = set(_with_option(option))
    named = _named(ROWS[option][0])
    covered = {command for command in taking if command in named or command.split()[0] in named}
    assert covered == taking, f"{option}: the page leaves out {sorted(taking - covered)}"
    assert named <= taking | {command.split()[0] for command in taking}, f"{option}: too many"


@pytest.mark.parametrize("option", ["--org", "--local", "--user-settings", "--state-dir"])
def test_the_variable_named_for_an_option_is_the_one_it_reads(option: str) -> None:
    variables = {parameter.envvar for parameter in _with_option(option).values()}
    assert len(variables) == 1
    (variable,) = variables
    assert f"`{variable}`" in ROWS[option][2]


def test_the_formats_named_are_the_choices_of_format() -> None:
    meaning = ROWS["--format"][1]
    for command, parameter in _with_option("--format").items():
        assert isinstance(parameter.type, click.Choice)
        choices = "\\|".join(str(choice) for choice in parameter.type.choices)
        if choices != "table\\|json\\|yaml":
            assert f"`policy {command}`: `{choices}`" in meaning, command
