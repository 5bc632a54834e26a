"""Every `policy` command line the site and the README show is one the CLI accepts: a command
that exists, options that exist, values its choices and types take (`--help` lines aside).

The lines are those a reader copies: in a ```bash, ```sh, ```shell or unlabelled block, a line
that runs `policy` (at its start, after `VAR=value`, `&&`, `;` or `$(`), continued by a trailing
`\\`, its `# comment` dropped; in any other block but ```console, a `$ policy` line. The
```console blocks are run whole by tests/e2e/test_readme_examples.py and their output compared;
the rest are parsed here by the real command tree with each command's own work left out, so a
server is not started and nothing is fetched. Whether the files a line names exist is the
reader's: a path only has to be a path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from tests.e2e._pages import name, pages
from tests.policy._cli_tree import commands, parse, parsing_only

_SHELL_BLOCKS = {"bash", "sh", "shell", ""}
_RUNS_POLICY = re.compile(
    r"(?:^|&&|;|\$\()\s*((?:[A-Z_]+=(?:\"[^\"]*\"|'[^']*'|\S+)\s+)*policy [a-z-].*)$"
)
"""`policy ...` with its `VAR=value` prefix, where a shell line runs it."""


@dataclass(frozen=True)
class _Line:
    page: str
    number: int
    text: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.number}"


def _command_lines(page: Path) -> list[_Line]:
    found: list[_Line] = []
    block: str | None = None
    pending = ""
    start = 0
    for number, text in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = text.strip()
        if block is None:
            if stripped.startswith("```"):
                block = stripped[3:].strip()
            continue
        if stripped.startswith("```"):
            block, pending = None, ""
            continue
        if block == "console" or block.startswith("{"):
            continue
        if not pending:
            start = number
        pending = f"{pending} {stripped}".strip()
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        line, pending = pending, ""
        if block not in _SHELL_BLOCKS and not line.startswith("$ policy "):
            continue
        match = _RUNS_POLICY.search(re.sub(r"\s+#.*$", "", line.removeprefix("$ ")))
        if match and not line.startswith("#") and "--help" not in match.group(1).split():
            found.append(_Line(name(page), start, match.group(1)))
    return found


_LINES = [line for page in pages() for line in _command_lines(page)]
"""(A `--help` line is left out: `--help` ends the parse before the rest of the line is read.)"""


def test_the_pages_show_command_lines_beyond_the_generated_examples() -> None:
    assert len({line.page for line in _LINES}) >= 5
    assert any(line.text.startswith("policy completion bash") for line in _LINES)
    assert any(line.text.startswith("TOOLPOLICY_SERVE_TOKEN=") for line in _LINES)


@pytest.fixture
def any_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Paths are taken as written: the files a line names are the reader's."""
    for shown in commands():
        for param in shown.command.params:
            if isinstance(param.type, click.Path):
                monkeypatch.setattr(param.type, "exists", False)
    monkeypatch.chdir(tmp_path)
    for variable in list(os.environ):
        if variable.startswith("TOOLPOLICY_"):
            monkeypatch.delenv(variable)


@pytest.mark.parametrize("line", _LINES, ids=[line.where for line in _LINES])
def test_a_command_line_the_site_shows_is_one_the_cli_accepts(
    line: _Line, any_path: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = parsing_only(monkeypatch)
    try:
        parse(line.text, monkeypatch)
    except click.ClickException as problem:
        pytest.fail(f"{line.where}: `{line.text}`: {problem.format_message()}")
    assert ran, f"{line.where}: `{line.text}` names a group, not a command"


def test_a_wrong_line_would_be_caught(any_path: None, monkeypatch: pytest.MonkeyPatch) -> None:
    parsing_only(monkeypatch)
    with pytest.raises(click.UsageError, match="No such option"):
        parse("policy explain --all --org org --chat-hold PRIVATE_DATA", monkeypatch)
    with pytest.raises(click.UsageError, match="No such command"):
        parse("policy mcp lists --org org", monkeypatch)
    with pytest.raises(click.BadParameter):
        parse("policy explain --all --org org --component CHATS", monkeypatch)
