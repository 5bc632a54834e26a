"""The options several `policy` commands share, written once: `--format`, `--component` and
`--tools-file`, and the one way a command loads the policy with the app's own tools.

`policy/cli.py`, `runtime/cli_chat.py` and `runtime/cli_mcp.py` all take them from here, so a
component is spelled, validated and suggested alike everywhere. Importing this module costs only
click: the policy and the tools files load when a command runs.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from policy.vocabulary import COMPONENT_NAMES, Component

if TYPE_CHECKING:
    from policy import Policy
    from policy.tools import Tool

F = TypeVar("F", bound=Callable[..., Any])

TOOLS_FACTORY = "create_tools"
"""The function a `--tools-file` defines: it returns the app's own tools."""


class NameChoice(click.ParamType[str, Any]):
    """An enum member name in any case; a wrong one is answered with the canonical spellings."""

    def __init__(self, label: str, names: Sequence[str]) -> None:
        self.name = label
        self.names = tuple(names)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return self.name.upper().replace(" ", "_")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from policy.suggest import did_you_mean

        wanted = str(value).strip().upper()
        if wanted in self.names:
            return wanted
        hint = did_you_mean(wanted, self.names)
        self.fail(
            f"'{value}' is not a {self.name}{hint or '.'} Valid: {', '.join(self.names)}",
            param,
            ctx,
        )

    def shell_complete(
        self, ctx: click.Context, param: click.Parameter, incomplete: str
    ) -> list[click.shell_completion.CompletionItem]:
        from click.shell_completion import CompletionItem

        wanted = incomplete.upper()
        return [CompletionItem(name) for name in self.names if name.startswith(wanted)]


COMPONENTS = tuple(Component(name) for name in COMPONENT_NAMES)
"""The components a tool can be offered in (NONE is no part of an app)."""
COMPONENT = NameChoice("component", COMPONENT_NAMES)


def component_option(
    *, default: str | None = Component.CHAT.value, multiple: bool = False, help: str
) -> Callable[[F], F]:
    """`--component NAME` (any case, did-you-mean on a typo); the value is the canonical name."""
    return click.option(
        "--component",
        "components" if multiple else "component",
        type=COMPONENT,
        default=() if multiple else default,
        multiple=multiple,
        show_default=default is not None and not multiple,
        help=help,
    )


def format_option(*choices: str, help: str = "Output format.") -> Callable[[F], F]:
    """`--format` / `-f` over `choices` (the first is the default), as `output_format`."""
    return click.option(
        "--format",
        "-f",
        "output_format",
        type=click.Choice(choices, case_sensitive=False),
        default=choices[0],
        show_default=True,
        help=help,
    )


def tools_file_option(function: F) -> F:
    """`--tools-file FILE` (repeatable), as `tools_files`: the app's own tools next to the
    installed ones."""
    return click.option(
        "--tools-file",
        "tools_files",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help=f"A Python file whose {TOOLS_FACTORY}() returns the app's own tools, registered "
        "next to the installed ones. Repeatable.",
    )(function)


def load_cli_policy(
    org: Sequence[Path],
    local: Sequence[Path],
    user_settings: Path | None,
    state_dir: Path | None,
    tools_files: Sequence[Path] = (),
    *,
    listing_dir: Path | None = None,
    executable_tools: bool = True,
) -> Policy:
    """The policy a command works on: the configuration, the installed tools and those of every
    `--tools-file` (a file that cannot give its tools is a usage error naming it)."""
    from policy import load_policy

    return load_policy(
        org,
        local,
        user_settings,
        state_dir=state_dir,
        mcp_listing_dir=listing_dir,
        extra_tools=tools_from_files(tools_files),
        executable_tools=executable_tools,
    )


def tools_from_files(paths: Sequence[Path]) -> list[Tool]:
    """The tools each file's `create_tools()` returns, in order."""
    return [tool for path in paths for tool in _tools_from_file(path)]


def _tools_from_file(path: Path) -> list[Tool]:
    from policy.tools import Tool

    spec = importlib.util.spec_from_file_location(f"_toolpolicy_tools_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise click.BadParameter(f"'{path}' is not a Python file.", param_hint="--tools-file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise click.BadParameter(
            f"'{path}' failed to import: {type(error).__name__}: {error}",
            param_hint="--tools-file",
        ) from None
    factory = getattr(module, TOOLS_FACTORY, None)
    if not callable(factory):
        raise click.BadParameter(
            f"'{path}' defines no {TOOLS_FACTORY}() returning its tools.", param_hint="--tools-file"
        )
    try:
        made = list(factory())
    except Exception as error:
        raise click.BadParameter(
            f"{TOOLS_FACTORY}() in '{path}' failed: {type(error).__name__}: {error}",
            param_hint="--tools-file",
        ) from None
    wrong = [type(t).__name__ for t in made if not isinstance(t, Tool)]
    if wrong:
        raise click.BadParameter(
            f"{TOOLS_FACTORY}() in '{path}' returned objects that are no tools: "
            f"{', '.join(wrong)}.",
            param_hint="--tools-file",
        )
    return made
