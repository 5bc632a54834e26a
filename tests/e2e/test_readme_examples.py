"""The `policy` examples of the README and of the docs site print what the command prints today.

Every `$ policy ...` line in a ```console block is run as a subprocess from the repository root;
its output (stdout and stderr together) must match the lines shown under it, where a line that is
just `...` stands for any number of lines. A settings file under `~/` is replaced by a fresh file
in a temporary folder, so running the examples never touches the home directory; a `--state-dir`
folder is one temporary folder shared by all examples of a page, in its order (so `policy mcp list`
can leave the listing that `policy explain` reads), never a folder in the repository; the page says
so itself with `$ STATE=$(mktemp -d)` and `--state-dir "$STATE"`, the one other `$` line allowed.
Each page of the site (`tests.e2e._pages.pages()`) has a state folder of its own, as a reader who
follows that page has.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e._kit import ROOT
from tests.e2e._pages import README, matches_shown, name, pages
from tests.servers.cli_runner import run_policy

_HOME_SETTINGS = "~/.config/toolpolicy/settings.yaml"
_SHOWN_HOME_SETTINGS = "/home/me/.config/toolpolicy/settings.yaml"
_STATE = "STATE"
"""`$ STATE=$(mktemp -d)` in the README: `"$STATE"` is then the shared temporary state folder."""


@dataclass(frozen=True)
class _Example:
    page: str
    line: int
    command: str
    shown: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _examples(page: Path) -> list[_Example]:
    examples: list[_Example] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    inside = False
    for number, text in enumerate(lines, start=1):
        if text.strip() == "```console":
            inside = True
        elif text.strip() == "```":
            inside = False
        elif inside and text.startswith("$ policy "):
            examples.append(_Example(name(page), number, text[2:], ()))
        elif inside and text.startswith("$ "):
            assert text == f"$ {_STATE}=$(mktemp -d)", f"{name(page)}:{number}: not run: {text}"
            examples.append(
                _Example(name(page), number, "", ())
            )  # what follows is no example's output
        elif inside and examples:
            last = examples[-1]
            examples[-1] = _Example(last.page, last.line, last.command, (*last.shown, text))
    return examples


_EXAMPLES = [example for page in pages() for example in _examples(page) if example.command]


def test_the_checking_and_explaining_page_shows_policy_examples() -> None:
    page = ROOT / "docs/administrators/checking-and-explaining.md"
    commands = {example.command.split()[1] for example in _examples(page) if example.command}
    assert {"explain", "check", "settings", "tools", "diff"} <= commands


@pytest.fixture(scope="module")
def state_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("page-states")


def _arguments(command: str, settings_file: Path, state_dir: Path) -> list[str]:
    given = shlex.split(command)[1:]
    arguments = []
    for index, argument in enumerate(given):
        if argument == _HOME_SETTINGS:
            argument = str(settings_file)
        elif argument == f"${_STATE}":
            argument = str(state_dir)
        elif index > 0 and given[index - 1] == "--state-dir":
            argument = str(state_dir / argument)
        arguments.append(argument)
    return arguments


@pytest.mark.parametrize("example", _EXAMPLES, ids=[e.where for e in _EXAMPLES])
def test_a_readme_example_prints_what_is_shown(
    example: _Example, tmp_path: Path, state_dirs: Path
) -> None:
    shared_state_dir = state_dirs / example.page.replace("/", "_")
    shared_state_dir.mkdir(exist_ok=True)
    settings_file = tmp_path / "settings.yaml"
    arguments = _arguments(example.command, settings_file, shared_state_dir)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    done = run_policy(arguments, env=environment, cwd=ROOT)
    printed = (
        (done.stdout + done.stderr)
        .replace(str(settings_file), _SHOWN_HOME_SETTINGS)
        .replace(f"{shared_state_dir}/", "")
        .replace(str(shared_state_dir), f"${_STATE}")
    )
    assert "Traceback" not in printed
    assert matches_shown(example.shown, printed.splitlines()), (
        f"{example.where}: `{example.command}` now prints:\n{printed}"
    )


def _heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors: lower case, punctuation dropped, each space a hyphen."""
    outside_code = re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)
    headings = re.findall(r"^#+ (.*)$", outside_code, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_link_within_the_readme_names_a_heading_and_linked_files_exist() -> None:
    text = README.read_text(encoding="utf-8")
    anchors = _heading_anchors(text)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith("#"):
            assert target[1:] in anchors, target
        elif not re.match(r"[a-z]+:", target):
            file, _, heading = target.partition("#")
            assert (ROOT / file).exists(), target
            if heading and file.endswith(".md"):
                linked = (ROOT / file).read_text(encoding="utf-8")
                assert heading in _heading_anchors(linked), target


def test_the_ellipsis_matcher_needs_every_shown_line() -> None:
    assert matches_shown(("a", "...", "d"), ["a", "b", "c", "d"])
    assert matches_shown(("a", "...", "b"), ["a", "b"])
    assert not matches_shown(("a", "...", "d"), ["a", "b", "c"])
    assert not matches_shown(("a", "b"), ["a", "b", "c"])
    assert not matches_shown(("a", "x"), ["a", "b"])
