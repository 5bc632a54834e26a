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
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import click

from policy.cli_examples import EXAMPLES
from policy.vocabulary import COMPONENT_NAMES, Component

if TYPE_CHECKING:
    from policy import Policy
    from policy.cli_errors import CodedUsageError
    from policy.configuration import ProviderConfig
    from policy.decision_record import DecisionRecord
    from policy.mcp import McpServerConfig, McpServerListing
    from policy.people import PeoplePolicies
    from policy.tools import Tool

F = TypeVar("F", bound=Callable[..., Any])


class ConfigurationSources(NamedTuple):
    """Where a command's configuration comes from (--org, --local, --user-settings,
    --state-dir): one value a command hands on whole, `load_cli_policy(*sources, ...)`."""

    org: tuple[Path, ...]
    local: tuple[Path, ...]
    user_settings: Path | None
    state_dir: Path | None


_TOOLS_FACTORY = "create_tools"
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
        from policy.cli_errors import CodedUsageError

        hint = did_you_mean(wanted, self.names)
        raise CodedUsageError(
            f"'{value}' is not a {self.name}{hint or '.'} Valid: {', '.join(self.names)}",
            code=f"unknown-{self.name.replace(' ', '-')}",
            param=param,
            ctx=ctx,
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


EXAMPLES_HEADING = "Examples (from the repository root):"


def examples(command: str) -> str:
    """The `--help` epilog of `command` (`policy settings set`): its lines from
    `policy.cli_examples.EXAMPLES`, kept as written (a paragraph that starts with `\\b` is not
    rewrapped by click)."""
    lines = EXAMPLES[command]
    return "\b\n" + EXAMPLES_HEADING + "\n" + "\n".join(f"  {line}" for line in lines)


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


def decision_log_option(record_per: str, note: str = "") -> Callable[[F], F]:
    """`--decision-log FILE` as `decision_log`: one decision record per `record_per` (a
    `JsonLinesSink` with its defaults, which the help states)."""
    return click.option(
        "--decision-log",
        "decision_log",
        type=click.Path(dir_okay=False, path_type=Path),
        help=f"Append one decision record per {record_per} to this JSON Lines file (rolls over at "
        f"10 MB, 5 backups){note}. Schema: policy schema --decision-log.",
    )


def tools_file_option(function: F) -> F:
    """`--tools-file FILE` (repeatable), as `tools_files`: the app's own tools next to the
    installed ones."""
    return click.option(
        "--tools-file",
        "tools_files",
        multiple=True,
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help=f"A Python file whose {_TOOLS_FACTORY}() returns the app's own tools, registered "
        "next to the installed ones. Repeatable.",
    )(function)


def provider_option(help: str = "A configured provider, by id or name.") -> Callable[[F], F]:
    """`--provider` as `provider_id`, completed from the configured providers; the command
    resolves it with `command_line_provider`."""
    return click.option("--provider", "provider_id", help=help, shell_complete=_complete_providers)


def offline_option(function: F) -> F:
    """`--offline` as `offline`: MCP tools only from the listings cached in --state-dir."""
    return click.option(
        "--offline",
        is_flag=True,
        help="Ask no MCP server for its tools: use only the listings cached in --state-dir (a "
        "server without one is shown as not listed). Without it, a server whose cached listing "
        "is older than 5 minutes is asked live.",
    )(function)


def since_option(function: F) -> F:
    """`--since WHEN` as `since`, for the commands that read a decision log (read with
    `decision_logs_since`)."""
    return click.option(
        "--since",
        help="Only records from then on: a duration back from now (30m, 24h, 7d, 2w) or an ISO "
        "8601 date or time (UTC unless it names its offset).",
    )(function)


def decision_logs_since(paths: Sequence[Path], since: str | None) -> list[DecisionRecord]:
    """The records of decision logs (a file and its rotated copies) from `--since` on; a log
    that cannot be read or a `--since` that is no time is the command's error (exit 1)."""
    from policy.decision_summary import DecisionLogError, parse_since, read_decision_logs

    try:
        start = parse_since(since) if since is not None else None
        return read_decision_logs(paths, start)
    except DecisionLogError as error:
        raise click.ClickException(str(error)) from None


MCP_LISTER = "runtime.mcp_listing:list_servers"
"""The runtime's listing code, named by import path as the lazy commands are: the policy library
never lists, and a command without MCP servers never imports it."""


def load_cli_policy(
    org: Sequence[Path],
    local: Sequence[Path],
    user_settings: Path | None,
    state_dir: Path | None,
    tools_files: Sequence[Path] = (),
    *,
    listing_dir: Path | None = None,
    executable_tools: bool = True,
    offline: bool = False,
    known_listings: Policy | None = None,
) -> Policy:
    """The policy a command works on: the configuration, the installed tools and those of every
    `--tools-file` (a file that cannot give its tools is a usage error naming it), and the tools
    of its MCP servers as the runtime would see them (`with_current_mcp_listings`)."""
    from policy import load_policy

    policy = load_policy(
        org,
        local,
        user_settings,
        state_dir=state_dir,
        mcp_listing_dir=listing_dir,
        extra_tools=tools_from_files(tools_files),
        executable_tools=executable_tools,
    )
    return with_current_mcp_listings(
        policy, listing_dir or state_dir, offline=offline, known=known_listings
    )


def with_current_mcp_listings(
    policy: Policy, state_dir: Path | None, *, offline: bool = False, known: Policy | None = None
) -> Policy:
    """`policy` over MCP listings as they are now: a server's fresh cached listing, else asked
    live (and cached in `state_dir`), else its stale cache, else a `not listed` row; `offline`
    keeps the cache `load_policy` read. `known` is another policy this command loaded: its
    listings of the same servers (same entry) are used again, not listed twice."""
    servers = policy.configuration.mcp_servers
    if not servers or offline:
        return policy
    reused = {}
    if known is not None:
        same = known.configuration.mcp_servers
        reused = {
            s.id: known.mcp_listings[s.id]
            for s in servers
            if s in same and s.id in known.mcp_listings
        }
    module, _, name = MCP_LISTER.partition(":")
    lister = getattr(importlib.import_module(module), name)
    return policy.with_mcp_listings(lister(servers, state_dir=state_dir, known=reused))


def people_with_own_listings(policy: Policy, *, offline: bool = False) -> PeoplePolicies:
    """`policy`'s `PeoplePolicies` with each group's own MCP server entry (another connection
    than the entry in force for everyone) listed live, as a serving runtime lists it
    (`own_entry_listings`). `offline` lists none: such an entry then shows as not listed,
    saying why."""
    from policy.people import PeoplePolicies

    people = PeoplePolicies(policy)
    listed = own_entry_listings(people, offline=offline)
    if not listed:
        return people
    return PeoplePolicies(policy, {entry.connection: listing for entry, listing in listed})


def own_entry_listings(
    people: PeoplePolicies, *, offline: bool = False
) -> tuple[tuple[McpServerConfig, McpServerListing], ...]:
    """Each group's own MCP server entry of `people` (`PeoplePolicies.own_entries`) with its
    listing, asked live on its own: never from or into the state directory, which keeps the
    listing of everyone's entry. `offline` lists none."""
    entries = () if offline else people.own_entries()
    if not entries:
        return ()
    module, _, name = MCP_LISTER.partition(":")
    lister = getattr(importlib.import_module(module), name)
    return tuple((e, lister([e], state_dir=None)[e.id]) for e in entries)


def _unknown_tool_note(policy: Policy, tool_id: str) -> str:
    """What to add when `tool_id` names no tool: for an MCP tool id, what its server listed (or
    why it is not listed); else where an app's own tools come from."""
    from policy.mcp import TOOL_ID_SEPARATOR

    for server in policy.configuration.mcp_servers:
        if not tool_id.startswith(server.name + TOOL_ID_SEPARATOR):
            continue
        listing = policy.mcp_listings.get(server.id)
        if listing is None or not listing.ok:
            why = listing.error if listing is not None else "not listed"
            return f"MCP server {server.name} is not listed ({why}), so its tools are unknown"
        return f"MCP server {server.name} lists no such tool ({listing.status})"
    return "an app's own tools: add --tools-file FILE"


def unknown_tool_error(
    policy: Policy, tool_id: str, known: Sequence[str], param_hint: str
) -> CodedUsageError:
    """The usage error for a `tool_id` that is not among the `known` ids: the near miss, every
    known id, and where the tool would come from (`_unknown_tool_note`)."""
    from policy.cli_errors import CodedUsageError
    from policy.suggest import did_you_mean

    return CodedUsageError(
        f"unknown tool '{tool_id}'{did_you_mean(tool_id, known) or '.'} "
        f"Known tools: {', '.join(sorted(known)) or '(none installed)'} "
        f"({_unknown_tool_note(policy, tool_id)})",
        code="unknown-tool",
        param_hint=param_hint,
    )


def configured_provider(policy: Policy, provider_id: str, other_way: str = "") -> ProviderConfig:
    """The provider `--provider` names, by id or name; an unknown one is a usage error that
    names the configured ones and every skipped provider entry (and `other_way` to name a
    provider when none is configured)."""
    from policy.errors import UnknownProviderError

    try:
        return policy.provider(provider_id)
    except UnknownProviderError as error:
        hint = f" (use {other_way})" if other_way and not policy.providers else ""
        raise click.BadParameter(
            f"{error}{hint}{skipped_providers(policy)}", param_hint="--provider"
        ) from None


def command_line_provider(
    policy: Policy, provider_id: str | None, other_way: str = ""
) -> ProviderConfig:
    """`--provider`'s provider, else the only one configured; with several (or none) a usage
    error listing them, the skipped entries and `other_way` to name a provider."""
    if provider_id:
        return configured_provider(policy, provider_id, other_way)
    if len(policy.providers) == 1:
        return policy.providers[0]
    listed = [f"{p.id} ({p.name}, {p.kind.value})" for p in policy.providers]
    ways = f"--provider ID or {other_way}" if other_way else "--provider ID"
    none = f"none (use {other_way})" if other_way else "none"
    raise click.UsageError(
        f"choose a provider with {ways}. Configured providers: "
        f"{', '.join(listed) or none}{skipped_providers(policy)}"
    )


def skipped_providers(policy: Policy) -> str:
    """What is missing is named: each skipped provider entry with file:line and why."""
    from policy.terminal import terminal_safe

    entries = policy.configuration.skipped_entries("LLM_PROVIDERS")
    if not entries:
        return ""
    return ". Skipped, not in force: " + "; ".join(terminal_safe(str(e)) for e in entries)


def tools_from_files(paths: Sequence[Path]) -> list[Tool]:
    """The tools each file's `create_tools()` returns, in order."""
    return [tool for path in paths for tool in _tools_from_file(path)]


def _tools_file_error(message: str, param_hint: str) -> click.BadParameter:
    from policy.cli_errors import CodedUsageError

    return CodedUsageError(message, code="tools-file", param_hint=param_hint)


def _tools_from_file(path: Path) -> list[Tool]:
    from policy.tools import Tool

    spec = importlib.util.spec_from_file_location(f"_toolpolicy_tools_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise _tools_file_error(f"'{path}' is not a Python file.", param_hint="--tools-file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise _tools_file_error(
            f"'{path}' failed to import: {type(error).__name__}: {error}",
            param_hint="--tools-file",
        ) from None
    factory = getattr(module, _TOOLS_FACTORY, None)
    if not callable(factory):
        raise _tools_file_error(
            f"'{path}' defines no {_TOOLS_FACTORY}() returning its tools.",
            param_hint="--tools-file",
        )
    try:
        made = list(factory())
    except Exception as error:
        raise _tools_file_error(
            f"{_TOOLS_FACTORY}() in '{path}' failed: {type(error).__name__}: {error}",
            param_hint="--tools-file",
        ) from None
    wrong = [type(t).__name__ for t in made if not isinstance(t, Tool)]
    if wrong:
        raise _tools_file_error(
            f"{_TOOLS_FACTORY}() in '{path}' returned objects that are no tools: "
            f"{', '.join(wrong)}.",
            param_hint="--tools-file",
        )
    return made


# --- shell completion -------------------------------------------------------------------------


def _completion_policy(ctx: click.Context) -> Policy | None:
    """The policy the command line so far names (its --org/--local/--tools-file, else the
    environment's); None when it cannot be loaded, since completion never fails loudly."""
    import os

    root = ctx.find_root()
    params = {**root.params, **ctx.params}
    org = params.get("org") or [
        p for p in os.environ.get("TOOLPOLICY_ORG", "").split(os.pathsep) if p
    ]
    local = params.get("local") or ()
    try:
        return load_cli_policy(
            org, local, None, params.get("state_dir"), params.get("tools_files") or ()
        )
    except Exception:
        return None


def complete_tool_ids(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Tool and collection ids of the configuration on the command line."""
    from click.shell_completion import CompletionItem

    policy = _completion_policy(ctx)
    if policy is None:
        return []
    return [CompletionItem(i) for i in sorted(policy.tool_ids) if i.startswith(incomplete)]


def _complete_providers(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Configured providers by name (and id), with the other as help."""
    from click.shell_completion import CompletionItem

    policy = _completion_policy(ctx)
    if policy is None:
        return []
    items = []
    for provider in policy.providers:
        for value, other in ((provider.name, provider.id), (provider.id, provider.name)):
            if value and value.casefold().startswith(incomplete.casefold()):
                items.append(CompletionItem(value, help=f"{other} ({provider.kind.value})"))
    return items


SHELLS = ("bash", "zsh", "fish")


def completion_script(command: click.Command, shell: str, program: str = "policy") -> str:
    """The script that teaches `shell` to complete `program` (click's own completion)."""
    from click.shell_completion import get_completion_class

    completion = get_completion_class(shell)
    if completion is None:  # pragma: no cover - SHELLS lists only shells click supports
        raise click.BadParameter(f"unsupported shell '{shell}'", param_hint="SHELL")
    variable = f"_{program.replace('-', '_').upper()}_COMPLETE"
    return completion(command, {}, program, variable).source()
