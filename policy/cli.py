"""The `policy` command: thin over the library — parse arguments, ask the library, print.

Nothing heavy is imported at module level, so `policy --help` starts fast; each command imports
what it needs, and a command that loads the policy imports what renders it only afterwards, so
the Lua sandbox's worker is forked from a process without pydantic yet. Exit codes: 0 ok, 1 findings / blocked with --fail / errors, 2 usage. No traceback
reaches the user unless `--debug` (or TOOLPOLICY_DEBUG=1) asks for one.

Other packages attach commands lazily: `register_lazy_command("chat", "runtime.cli_chat:chat",
"Chat with ...")` names a click command by import path and gives the line `policy --help` shows
for it; the module is imported only when the command is invoked (or, without that line, when it
is listed), and the command is left out when its module is not installed.
"""

from __future__ import annotations

import gc

_COLLECTION_HELD = __name__ == "__main__"
"""`python -m policy.cli` (and the console script, `policy._entry`): the cyclic collector is
held from before the command's modules load, and `main` lets it run again for a lazily attached
command; a short-lived report command would only have it walk the modules' objects."""
if _COLLECTION_HELD:
    gc.disable()

import functools  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any, TypeVar  # noqa: E402

import click  # noqa: E402

from policy.cli_options import (  # noqa: E402
    COMPONENTS,
    SHELLS,
    ConfigurationSources,
    NameChoice,
    command_line_provider,
    complete_tool_ids,
    completion_script,
    component_option,
    configured_provider,
    decision_logs_since,
    examples,
    format_option,
    load_cli_policy,
    offline_option,
    provider_option,
    since_option,
    skipped_providers,
    tools_file_option,
    unknown_tool_error,
)
from policy.vocabulary import PROVIDER_KIND_NAMES, Component, ProviderKind  # noqa: E402

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import Finding, ProviderConfig
    from policy.flow import ChatHoldings

F = TypeVar("F", bound=Callable[..., Any])
_Result = TypeVar("_Result")

_LAZY_COMMANDS: dict[str, str] = {
    "chat": "runtime.cli_chat:chat",
    "fetch": "runtime.cli_fetch:fetch",
    "status": "runtime.cli_fetch:status",
    "mcp": "runtime.cli_mcp:mcp",
    "serve": "runtime.cli_serve:serve",
    "replay": "runtime.cli_replay:replay",
}
_LAZY_SUMMARIES: dict[str, str] = {
    "chat": "Chat with a configured provider under the organization's tool policy.",
    "fetch": "Fetch every configuration once from its server into --state-dir.",
    "status": "Show, per configuration, its server, state, ETag, last attempt and success, and "
    "error.",
    "mcp": "MCP servers: list their tools and pins, print pins, serve the governed tools.",
    "serve": "The administrator's read-only web page: status, effective settings, every "
    "decision, a what-if simulation and a diff against a candidate configuration.",
    "replay": "Re-decide every request of decision LOG(s) under the configuration given by "
    "--org / --local and print what would flip: tools newly offered or left out (both reasons), "
    "calls that would now be blocked, requests whose provider the chat would now refuse (or "
    "allow).",
}
"""The first paragraph of each lazy command's docstring, so that `policy --help` imports none."""


def register_lazy_command(name: str, target: str, summary: str = "") -> None:
    """Attach `module:attribute` (a click command) as `policy NAME`, imported on first use.

    `summary` is the line `policy --help` shows (the first paragraph of the command's help);
    without one, listing the commands imports the module to read it.
    """
    _LAZY_COMMANDS[name] = target
    if summary:
        _LAZY_SUMMARIES[name] = summary
    else:
        _LAZY_SUMMARIES.pop(name, None)


class _PolicyGroup(click.Group):
    """A group that also offers the lazily attached commands whose modules are installed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [name for name, target in _LAZY_COMMANDS.items() if _module_exists(target)]
        return sorted({*super().list_commands(ctx), *lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None or cmd_name not in _LAZY_COMMANDS:
            return command
        module_name, _, attribute = _LAZY_COMMANDS[cmd_name].partition(":")
        if not _module_exists(_LAZY_COMMANDS[cmd_name]):
            return None
        try:
            loaded = getattr(importlib.import_module(module_name), attribute, None)
        except Exception as error:  # a broken extension must not take the other commands down
            click.echo(f"warning: command '{cmd_name}' is unavailable: {error}", err=True)
            return None
        return loaded if isinstance(loaded, click.Command) else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's listing, with a lazy command's registered summary instead of importing it,
        and each command's first sentence whole (wrapped, never cut off)."""
        commands: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            summary = _LAZY_SUMMARIES.get(name)
            listed = (
                click.Command(name, help=summary)
                if summary is not None and name in _LAZY_COMMANDS and name not in self.commands
                else self.get_command(ctx, name)
            )
            if listed is not None and not listed.hidden:
                commands.append((name, listed))
        if commands:
            with formatter.section("Commands"):
                formatter.write_dl(
                    [(n, c.get_short_help_str(limit=_WHOLE_SENTENCE)) for n, c in commands]
                )


_WHOLE_SENTENCE = 1000
"""A summary limit no first sentence reaches, so `policy --help` shows each one whole."""


def _module_exists(target: str) -> bool:
    module_name = target.partition(":")[0]
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


class _DefaultSubcommandGroup(click.Group):
    """`policy settings TOOL_ID` shows; `policy settings set ...` writes."""

    default_command = "show"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


# --- shared options ---------------------------------------------------------------------------


_COMPONENTS = COMPONENTS
_PROVIDER_KIND = NameChoice("provider kind", list(PROVIDER_KIND_NAMES))


class _PluginPath(click.Path):
    """A plugin path; from a path-list variable, empty entries (`a::b`, a trailing `:`) are
    skipped, as a shell that appends with `$TOOLPOLICY_ORG:new` leaves them."""

    def split_envvar_value(self, rv: str) -> Sequence[str]:
        return [entry for entry in super().split_envvar_value(rv) if entry]


def _plugin_option(flag: str, variable: str, help: str) -> Callable[[F], F]:
    """A repeatable plugin path option, defaulting to the path list in `variable`."""
    return click.option(
        flag,
        flag.removeprefix("--"),
        multiple=True,
        envvar=variable,
        type=_PluginPath(exists=True, path_type=Path),
        help=help,
    )


def configuration_options(function: Callable[..., _Result]) -> Callable[..., _Result]:
    """--org, --local, --user-settings and --state-dir, with their environment defaults, handed
    to the command as one `sources: ConfigurationSources`.

    Public so that every command that loads a configuration (`policy chat` too) reads it alike.
    """

    @functools.wraps(function)
    def command(
        *args: Any,
        org: tuple[Path, ...],
        local: tuple[Path, ...],
        user_settings: Path | None,
        state_dir: Path | None,
        **kwargs: Any,
    ) -> _Result:
        sources = ConfigurationSources(org, local, user_settings, state_dir)
        return function(*args, sources=sources, **kwargs)

    options = [
        _plugin_option(
            "--org",
            "TOOLPOLICY_ORG",
            "Organization plugin: a plugin.lua, a plugin folder or a folder of plugin "
            "folders. Repeatable. [env: TOOLPOLICY_ORG, separated by the path separator]",
        ),
        _plugin_option(
            "--local",
            "TOOLPOLICY_LOCAL",
            "Local plugin (never overrides what the organization manages). Repeatable. "
            "[env: TOOLPOLICY_LOCAL]",
        ),
        click.option(
            "--user-settings",
            "user_settings",
            envvar="TOOLPOLICY_USER_SETTINGS",
            type=click.Path(dir_okay=False, path_type=Path),
            help="The user's settings YAML file (a missing file means no user settings). "
            "[env: TOOLPOLICY_USER_SETTINGS]",
        ),
        click.option(
            "--state-dir",
            "state_dir",
            envvar="TOOLPOLICY_STATE_DIR",
            type=click.Path(file_okay=False, path_type=Path),
            help="Where last-known-good copies of organization plugins are kept, and the "
            "configurations `policy fetch` put in force, which load first (stateless without). "
            "[env: TOOLPOLICY_STATE_DIR]",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def require_token_beyond_loopback(host: str, token: str | None, variable: str) -> None:
    """A server command's rule: a `--host` other machines can reach needs `--token` (or its
    environment `variable`). Public so that every serving command refuses alike."""
    from policy.hosts import is_loopback_host

    if not is_loopback_host(host) and not token:
        raise click.BadParameter(
            f"'{host}' is reachable from other machines; set --token (or {variable}), "
            "or listen on 127.0.0.1",
            param_hint="--host",
        )


def _configuration_options(function: Callable[..., _Result]) -> Callable[..., _Result]:
    """The configuration options and --format, which every `policy` report command takes."""
    return configuration_options(_format_option(function))


_format_option = format_option("table", "json", "yaml")


def _load(
    sources: ConfigurationSources, tools_files: Sequence[Path] = (), *, offline: bool = False
) -> Policy:
    return load_cli_policy(*sources, tools_files, executable_tools=False, offline=offline)


def _echo_listing_notes(*policies: Policy) -> None:
    """On stderr, each MCP server whose tools were not listed live just now, and why: a
    command's answer never hides that it rests on a cached listing or on none."""
    from policy.terminal import terminal_safe

    shown = set()
    for policy in policies:
        for server in policy.configuration.mcp_servers:
            listing = policy.mcp_listings.get(server.id)
            status = listing.status if listing is not None else "not listed"
            line = f"note: MCP server {terminal_safe(server.name)}: {terminal_safe(status)}"
            if (listing is None or listing.from_cache or not listing.ok) and line not in shown:
                shown.add(line)
                click.echo(line, err=True)


def _component(name: str) -> Component:
    return Component(name.upper())


def _echo_findings_to_stderr(findings: Sequence[Finding]) -> None:
    from policy.terminal import colour_allowed, coloured

    colour = colour_allowed(sys.stderr)
    for finding in findings:
        line = finding_line(finding)
        click.echo(coloured(line) if colour else line, err=True)


def finding_line(finding: Finding, severity: str | None = None, *, with_code: bool = False) -> str:
    """A finding as one line of text: `file:line: severity [code]: message`, every part of it
    `terminal_safe` (a plugin's value cannot start a line of its own or move the cursor)."""
    from policy.terminal import terminal_safe

    where = f"{terminal_safe(finding.location)}: " if finding.location is not None else ""
    code = f" [{terminal_safe(finding.code)}]" if with_code and finding.code else ""
    return f"{where}{severity or finding.severity.value}{code}: {terminal_safe(finding.message)}"


def provider_with_errors_shown(
    policy: Policy, provider_id: str | None, before: Callable[[], None] | None = None
) -> ProviderConfig:
    """The provider the command line names (`command_line_provider`), and the policy's errors on
    stderr: all of them once one is chosen; otherwise all but the skipped provider entries, which
    the usage error names, so each is said once. `before`: the command's own usage checks that
    come first (e.g. its tool ids), each refusal after every error."""
    try:
        if before is not None:
            before()
    except click.UsageError:
        _echo_errors(policy.errors)
        raise
    try:
        provider = command_line_provider(policy, provider_id)
    except click.UsageError:
        named = {
            (entry.location, entry.message)
            for entry in policy.configuration.skipped_entries("LLM_PROVIDERS")
        }
        _echo_errors([f for f in policy.errors if (f.location, f.message) not in named])
        raise
    _echo_errors(policy.errors)
    return provider


def _echo_errors(findings: Sequence[Finding]) -> None:
    for finding in findings:
        click.echo(finding_line(finding, "error"), err=True)


def _print(text: str) -> None:
    """Every line the command prints goes here: its values were made `terminal_safe` by the
    renderer; what is left of control characters other than the layout's own is escaped."""
    from policy.terminal import colour_allowed, coloured, terminal_text

    safe = terminal_text(text)
    click.echo(coloured(safe) if colour_allowed(sys.stdout) else safe)


# --- the group --------------------------------------------------------------------------------


@click.group(
    cls=_PolicyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=examples("policy"),
)
@click.option(
    "--debug",
    is_flag=True,
    envvar="TOOLPOLICY_DEBUG",
    help="Show a traceback when something unexpected goes wrong.",
)
@click.version_option(package_name="toolpolicy", prog_name="policy")
def cli(debug: bool) -> None:
    """Check, explain and compare the tool policy of an organization's AI apps.

    Start with `policy explain --org examples/organization --all`.
    """


# --- check ------------------------------------------------------------------------------------


@cli.command(epilog=examples("policy check"))
@_configuration_options
@tools_file_option
@click.option("--strict", is_flag=True, help="Exit 1 on warnings too.")
@offline_option
def check(
    sources: ConfigurationSources,
    output_format: str,
    tools_files: tuple[Path, ...],
    strict: bool,
    offline: bool,
) -> None:
    """Load every plugin and the user settings; report errors and warnings with file:line.

    Exit 1 when there are errors (or, with --strict, warnings).
    """
    from policy.configuration import Finding, Severity
    from policy.user_settings import UserSettingsError, load_user_settings

    findings: list[Finding] = []
    try:
        load_user_settings(sources.user_settings)
    except UserSettingsError as error:
        findings.append(Finding(Severity.ERROR, "user-settings", error.message, error.location))
        sources = sources._replace(
            user_settings=None
        )  # the plugins still load (once) and are checked
    policy = _load(sources, tools_files=tools_files, offline=offline)
    from policy.lint import check_findings

    findings.extend(check_findings(policy))
    errors = [f for f in findings if f.severity is Severity.ERROR]
    warnings = [f for f in findings if f.severity is not Severity.ERROR]
    servers: list[dict[str, Any]] = []
    if policy.configuration.mcp_servers:
        from policy.explain import mcp_servers_document

        servers = mcp_servers_document(policy)
    if output_format == "table":
        for finding in [*errors, *warnings]:
            _print(finding_line(finding, with_code=True))
        from policy.terminal import terminal_safe

        for server in servers:
            _print(
                f"MCP server {terminal_safe(server['name'])}: {terminal_safe(server['listing'])}"
            )
        failed = bool(errors) or (strict and bool(warnings))
        strict_note = " (--strict: warnings count as errors)" if strict and warnings else ""
        _print(
            f"{'failed' if failed else 'ok'}: {len(errors)} error(s), "
            f"{len(warnings)} warning(s){strict_note}"
        )
    else:
        from policy.explain import render_document

        document = {
            "ok": not errors and not (strict and warnings),
            "errors": [_finding_document(f) for f in errors],
            "warnings": [_finding_document(f) for f in warnings],
            "mcp_servers": servers,
        }
        _print(render_document(document, output_format))
    if errors or (strict and warnings):
        sys.exit(1)


def _finding_document(finding: Finding) -> dict[str, Any]:
    return {
        "file": finding.location.file if finding.location else None,
        "line": finding.location.line if finding.location else None,
        "code": finding.code,
        "message": finding.message,
    }


# --- explain ----------------------------------------------------------------------------------


@cli.command(epilog=examples("policy explain"))
@click.argument("tool_id", required=False, shell_complete=complete_tool_ids)
@_configuration_options
@provider_option()
@click.option(
    "--provider-kind",
    type=_PROVIDER_KIND,
    help="Decide for any provider of this kind instead of a configured one.",
)
@click.option("--model", help="The model, with --provider-kind (decides tool-calling capability).")
@component_option(help="The part of the app.")
@tools_file_option
@click.option("--all", "show_all", is_flag=True, help="Every tool × every configured provider.")
@click.option(
    "--fail", is_flag=True, help="Exit 1 when the tool (or any, with --all) is not offered."
)
@click.option(
    "--chat-holds",
    metavar="EFFECTS",
    help="What if the chat holds these (UNTRUSTED_CONTENT and/or PRIVATE_DATA, comma-separated): "
    "the FLOW_RULE check decides with them.",
)
@click.option("--chat-id", help="Decide with what this stored chat holds (FLOW_RULE's evidence).")
@click.option(
    "--chat-db",
    metavar="LOCATION",
    help="The chat store --chat-id is read from: a SQLite file or a postgresql:// address "
    "(default: $TOOLPOLICY_CHAT_DB, else the user's chats.sqlite3).",
)
@click.option(
    "--as",
    "as_subject",
    metavar="SUBJECT",
    help="Decide for this signed-in person (their `sub`): a what-if of the gateway's per-person "
    "policy, with the configurations of --groups.",
)
@click.option(
    "--groups",
    metavar="GROUPS",
    help="The person's groups, comma-separated: DataGateway.ConfigurationsByGroup picks their "
    "configurations (which ones applied, and why, is shown).",
)
@offline_option
def explain(
    tool_id: str | None,
    sources: ConfigurationSources,
    output_format: str,
    provider_id: str | None,
    provider_kind: str | None,
    model: str | None,
    component: str,
    tools_files: tuple[Path, ...],
    show_all: bool,
    fail: bool,
    chat_holds: str | None,
    chat_id: str | None,
    chat_db: str | None,
    as_subject: str | None,
    groups: str | None,
    offline: bool,
) -> None:
    """Why TOOL_ID is (not) offered: every check in order, with its evidence.

    With --all: the matrix of every tool × every configured provider for one component, and
    every MCP server with where its tools come from (listed live, cached at, not listed).
    With --as/--groups: decided for that person, after which configurations applied and why.
    """
    if provider_id and provider_kind:
        raise click.UsageError("use either --provider or --provider-kind, not both")
    if model and not provider_kind:
        raise click.UsageError("--model only goes with --provider-kind")
    if show_all == (tool_id is not None):
        raise click.UsageError("name one TOOL_ID, or use --all for the matrix")
    holdings = _chat_holdings(chat_holds, chat_id, chat_db)
    policy = _load(sources, tools_files=tools_files, offline=offline)
    policy, applied = _as_caller(policy, as_subject, groups, output_format, offline=offline)
    from policy.explain import (
        build_matrix,
        decision_document,
        decision_text,
        injection_filter_document,
        matrix_report,
        matrix_table,
        mcp_servers_table,
        ordered_tool_ids,
        render_document,
        render_table,
        skipped_entries_text,
        skipped_entry_findings,
    )
    from policy.vocabulary import ToolOfferBlockReason

    shown = skipped_entry_findings(policy.configuration)  # said once: with the answer below
    _echo_findings_to_stderr([f for f in policy.errors if (f.location, f.message) not in shown])
    skipped = skipped_entries_text(policy.configuration)
    chosen_component = _component(component)
    if show_all:
        providers = _matrix_providers(policy, provider_id, provider_kind, model)
        matrix = build_matrix(
            policy.registry, ordered_tool_ids(policy), providers, chosen_component, holdings
        )
        if output_format == "table":
            header, rows = matrix_table(matrix)
            held = "" if holdings is None else f" if the chat held {_held_text(holdings)}"
            _print(f"Tools offered in {chosen_component.value}{held}:\n")
            _print(render_table(header, rows))
            if matrix.context_tool_ids:
                _print(
                    "\n(context): offers itself when the chat gives it something to do "
                    "(e.g. data sources); never selected."
                )
            if policy.configuration.mcp_servers:
                _print("\nMCP servers (their tools are rows above when listed):\n")
                _print(render_table(*mcp_servers_table(policy)))
            _print(f"\nPrompt-injection filter: {injection_filter_document(policy)['summary']}")
            if skipped:
                _print(f"\n{skipped}")
        else:
            report = {**applied, **matrix_report(policy, matrix)}
            _print(render_document(report, output_format))
        blocked = any(d.reason is not ToolOfferBlockReason.NONE for d in matrix.decisions.values())
    else:
        assert tool_id is not None
        _require_known_tool(policy, tool_id)
        provider = _single_provider(policy, provider_id, provider_kind, model)
        decision = policy.offer_decision(tool_id, provider, chosen_component, holdings=holdings)
        if output_format == "table":
            _print(decision_text(decision, provider.name))
            if skipped:
                _print(f"\n{skipped}")
        else:
            _print(render_document({**applied, **decision_document(decision)}, output_format))
        blocked = decision.reason is not ToolOfferBlockReason.NONE
    if fail and blocked:
        sys.exit(1)
    if any(f.code == "broken-organization-plugin" for f in policy.errors):
        sys.exit(1)


def _as_caller(
    policy: Policy,
    as_subject: str | None,
    groups: str | None,
    output_format: str,
    *,
    offline: bool = False,
) -> tuple[Policy, dict[str, Any]]:
    """The policy `--as`/`--groups` name (without them: a person in no group's, as a request
    without a caller is decided), and for a document the caller and the configurations that
    applied; for a table those are printed here. A group's own MCP server entries are listed
    as the serving runtime lists them (`people_with_own_listings`)."""
    from policy.cli_options import people_with_own_listings
    from policy.people import what_if_caller

    if as_subject is None and groups is None:
        everyone = people_with_own_listings(policy, offline=offline)
        note = everyone.without_caller_note()
        if note is None:
            return policy, {}
        if output_format == "table":
            from policy.terminal import terminal_safe

            _print(f"{terminal_safe(note)}.\n")
        return everyone.for_caller(None), {"decided_for": note}
    if as_subject is not None and not as_subject.strip():
        raise click.BadParameter("name the person's subject (their `sub`)", param_hint="--as")
    caller = what_if_caller(as_subject or "", groups or "")
    if caller is None:
        raise click.BadParameter("name at least one group", param_hint="--groups")
    people = people_with_own_listings(policy, offline=offline)
    document = people.caller_document(caller)
    if output_format == "table":
        shown = ", ".join(sorted(caller.groups)) or "none"
        lines = [f"Decided as {caller.subject} (groups: {shown}). Configurations:"]
        lines += [
            f"  {'applies ' if a.applies else 'left out'}  {a.name} ({a.id}): {a.why}"
            for a in people.applied(caller)
        ]
        unknown = sorted(g for g in caller.groups if g not in people.groups.by_group)
        if unknown:
            lines.append(
                f"  (no configuration of their own for {', '.join(unknown)}: "
                "DataGateway.ConfigurationsByGroup does not name them)"
            )
        _print("\n".join(lines) + "\n")
    return people.for_caller(caller), document


def _chat_holdings(
    chat_holds: str | None, chat_id: str | None, chat_db: str | None
) -> ChatHoldings | None:
    """What `--chat-holds` supposes or the chat `--chat-id` holds (None: neither given)."""
    if chat_holds is None and chat_id is None:
        if chat_db is not None:
            raise click.UsageError("--chat-db only goes with --chat-id")
        return None
    if chat_holds is not None and chat_id is not None:
        raise click.UsageError("use either --chat-holds or --chat-id, not both")
    from policy.flow import ChatHoldings, parse_held_effects

    if chat_holds is not None:
        try:
            return ChatHoldings.what_if(parse_held_effects(chat_holds))
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--chat-holds") from error
    assert chat_id is not None
    from policy.terminal import terminal_text

    chat = importlib.import_module("runtime.chat")  # the runtime's store, named by path
    record = chat.open_chat_store(chat_db).load(chat_id)
    if record is None:
        raise click.BadParameter(
            f"no chat {terminal_text(chat_id)} in the chat store; give the id of a chat that "
            "has run (and --chat-db when it is not the default store)",
            param_hint="--chat-id",
        )
    held: ChatHoldings = chat.flow_holdings(record.holdings)
    return held


def _held_text(holdings: ChatHoldings) -> str:
    from policy.explain import held_names

    return " and ".join(held_names(holdings)) or "nothing"


def _require_known_tool(policy: Policy, tool_id: str) -> None:
    if tool_id not in policy.tool_ids:
        raise unknown_tool_error(policy, tool_id, policy.tool_ids, "TOOL_ID")


_BY_KIND = "--provider-kind KIND [--model MODEL]"


def _single_provider(
    policy: Policy, provider_id: str | None, provider_kind: str | None, model: str | None
) -> ProviderConfig:
    from policy.explain import kind_provider

    if provider_kind:
        return kind_provider(ProviderKind(provider_kind.upper()), model or "")
    return command_line_provider(policy, provider_id, _BY_KIND)


def _matrix_providers(
    policy: Policy, provider_id: str | None, provider_kind: str | None, model: str | None
) -> list[ProviderConfig]:
    from policy.explain import kind_provider

    if provider_kind:
        return [kind_provider(ProviderKind(provider_kind.upper()), model or "")]
    if provider_id:
        return [configured_provider(policy, provider_id, _BY_KIND)]
    if not policy.providers:
        raise click.UsageError(
            'the configuration has no providers (CONFIG["LLM_PROVIDERS"]); '
            f"use {_BY_KIND}{skipped_providers(policy)}"
        )
    return list(policy.providers)


# --- settings ---------------------------------------------------------------------------------


@cli.group(
    cls=_DefaultSubcommandGroup,
    epilog=examples("policy settings"),
)
def settings() -> None:
    """Show a tool's settings (`policy settings TOOL_ID`) or save one (`policy settings set`);
    `policy settings keys` shows the configuration keys."""


@settings.command(
    "show",
    epilog=examples("policy settings show"),
)
@click.argument("tool_id", shell_complete=complete_tool_ids)
@_configuration_options
@tools_file_option
@offline_option
def _settings_show(
    tool_id: str,
    sources: ConfigurationSources,
    output_format: str,
    tools_files: tuple[Path, ...],
    offline: bool,
) -> None:
    """Every field of TOOL_ID: value (secrets masked), source, locked, origin."""
    from policy.explain import render_document, render_table, settings_document
    from policy.terminal import terminal_safe

    policy = _load(sources, tools_files=tools_files, offline=offline)
    _echo_findings_to_stderr(policy.errors)
    _echo_listing_notes(policy)
    _require_known_tool(policy, tool_id)
    document = settings_document(policy, tool_id)
    if output_format == "table":
        rows = [
            [
                s["field"],
                _shown_value(s["value"]) + (" (INVALID)" if "problem" in s else ""),
                s["source"],
                "yes" if s["locked"] else "no",
                _origin_text(s["origin"]),
            ]
            for s in document["settings"]
        ]
        _print(f"Settings of {terminal_safe(tool_id)}:\n")
        _print(render_table(["field", "value", "source", "locked", "origin"], rows))
        for s in document["settings"]:
            if "problem" in s:
                _print(f"\ninvalid: {terminal_safe(s['problem'])}")
    else:
        _print(render_document(document, output_format))


def _shown_value(value: Any) -> str:
    if value is None:
        return "-"
    return str(value) if value != "" else '""'


def _origin_text(origin: Any) -> str:
    if not origin:
        return "-"
    where = f"{origin['file']}:{origin['line']}" if origin.get("line") else origin.get("file", "")
    return f"{origin['plugin']} ({where})" if origin.get("plugin") else where


@settings.command(
    "keys",
    epilog=examples("policy settings keys"),
)
@_configuration_options
def settings_keys(
    sources: ConfigurationSources,
    output_format: str,
) -> None:
    """Every configuration key toolpolicy acts on (DataTools.*, DataConfidence.*, ...): value
    (secrets masked), locked or an editable default, origin, and the values it beat."""
    from policy.explain import render_document, render_table, settings_keys_document

    policy = _load(sources, offline=True)  # keys name no MCP tool
    _echo_findings_to_stderr(policy.errors)
    keys = settings_keys_document(policy)
    if output_format != "table":
        _print(render_document({"keys": keys}, output_format))
        return
    rows = [
        [
            k["key"],
            f"- (default {_shown_value(k['default'])})"
            if k["value"] is None
            else _shown_value(k["value"]),
            "-" if k["value"] is None else ("locked" if k["locked"] else "editable default"),
            _origin_text(k["origin"]),
            "; ".join(
                f"{_shown_value(b['value'])} ({_origin_text(b['origin'])})" for b in k["beaten"]
            )
            or "-",
        ]
        for k in keys
    ]
    _print(render_table(["key", "value", "locked", "origin", "values it beat"], rows))


@settings.command(
    "set",
    epilog=examples("policy settings set"),
)
@click.argument("tool_id", shell_complete=complete_tool_ids)
@click.argument("field")
@click.argument("value")
@_configuration_options
@tools_file_option
@offline_option
def settings_set(
    tool_id: str,
    field: str,
    value: str,
    sources: ConfigurationSources,
    output_format: str,
    tools_files: tuple[Path, ...],
    offline: bool,
) -> None:
    """Save VALUE for TOOL_ID's FIELD in the user settings file (comments are kept).

    Refused for a field the organization locked, and for a value outside the field's choices.
    """
    from policy.explain import settable_field_problem
    from policy.user_settings import save_tool_setting

    user_settings = sources.user_settings
    if user_settings is None:
        raise click.UsageError(
            "name the user settings file with --user-settings FILE (or TOOLPOLICY_USER_SETTINGS)"
        )
    policy = _load(sources, tools_files=tools_files, offline=offline)
    _echo_findings_to_stderr(policy.errors)
    _echo_listing_notes(policy)
    _require_known_tool(policy, tool_id)
    problem = settable_field_problem(policy, tool_id, field, value)
    if problem is not None:
        usage, message = problem
        if usage:
            raise click.BadParameter(message, param_hint=usage)
        raise click.ClickException(message)
    save_tool_setting(user_settings, tool_id, field, value, policy.configuration)
    from policy.terminal import terminal_safe

    shown = ".".join(terminal_safe(part) for part in (tool_id, field))
    _print(f"saved {shown} = '{terminal_safe(value)}' in {terminal_safe(user_settings)}")


# --- tools ------------------------------------------------------------------------------------


@cli.command(epilog=examples("policy tools"))
@_configuration_options
@component_option(default=None, help="Only the tools selectable in this component.")
@tools_file_option
@offline_option
def tools(
    sources: ConfigurationSources,
    output_format: str,
    component: str | None,
    tools_files: tuple[Path, ...],
    offline: bool,
) -> None:
    """The tool catalog with its state: active, configured, minimum confidence and its source;
    then every MCP server with where its tools come from (listed live, cached at, not listed)."""
    from policy.cli_options import people_with_own_listings
    from policy.explain import (
        mcp_servers_document,
        mcp_servers_table,
        render_document,
        render_table,
        tools_document,
    )

    loaded = _load(sources, tools_files=tools_files, offline=offline)
    everyone = people_with_own_listings(loaded, offline=offline)
    policy = everyone.for_caller(None)
    _echo_findings_to_stderr(policy.errors)
    note = everyone.without_caller_note()
    chosen = _component(component) if component else None
    document = {**tools_document(policy, chosen), "mcp_servers": mcp_servers_document(policy)}
    if note is not None:
        document["decided_for"] = note
    if output_format == "table":
        if note is not None:
            from policy.terminal import terminal_safe

            _print(f"{terminal_safe(note)}.\n")
        rows = [
            [
                t["id"],
                t["name"],
                t["activation"],
                "yes" if t["active"] else "no",
                "yes" if t["configured"] else f"no: {t['configuration_message']}",
                t["minimum_confidence"],
                t["minimum_confidence_set_at"] or t["minimum_confidence_source"],
            ]
            for t in document["tools"]
        ]
        header = ["id", "name", "activation", "active", "configured", "minimum", "set at"]
        _print(render_table(header, rows))
        if policy.configuration.mcp_servers:
            _print("\nMCP servers (their tools are rows above when listed):\n")
            _print(render_table(*mcp_servers_table(policy)))
    else:
        _print(render_document(document, output_format))


# --- diff -------------------------------------------------------------------------------------


@cli.command(epilog=examples("policy diff"))
@_configuration_options
@click.option(
    "--against-org",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Organization plugins of the NEW configuration (repeatable).",
)
@click.option(
    "--against-local",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Local plugins of the NEW configuration (repeatable; default: the same as --local).",
)
@click.option(
    "--against-user-settings",
    type=click.Path(dir_okay=False, path_type=Path),
    help="User settings of the NEW side (default: the same as --user-settings).",
)
@component_option(
    multiple=True, help="Only these components (repeatable; default: every component)."
)
@click.option("--fail", is_flag=True, help="Exit 1 when any decision changes.")
@offline_option
def diff(
    sources: ConfigurationSources,
    output_format: str,
    against_org: tuple[Path, ...],
    against_local: tuple[Path, ...],
    against_user_settings: Path | None,
    components: tuple[str, ...],
    fail: bool,
    offline: bool,
) -> None:
    """Every (tool, provider, component) decision that changes from --org to --against-org.

    Both sides use the same user settings unless --against-user-settings names other ones;
    providers are those of either side.
    """
    from policy.explain import (
        diff_document,
        diff_policies,
        diff_table,
        render_document,
        render_table,
    )

    if not against_org and not against_local and against_user_settings is None:
        raise click.UsageError(
            "name the new side with --against-org, --against-local or --against-user-settings"
        )
    old = _load(sources, offline=offline)
    if not against_org and not against_local and sources.state_dir is None:
        from policy.user_settings import load_user_settings

        # The same plugins on both sides: they run once, and only the user settings differ.
        new = old.with_user_settings(load_user_settings(against_user_settings))
    else:
        from policy.explain import load_candidate

        new = load_candidate(
            against_org or sources.org,
            against_local or sources.local,
            against_user_settings or sources.user_settings,
            sources.state_dir,
            executable_tools=False,
        )
        from policy.cli_options import with_current_mcp_listings

        new = with_current_mcp_listings(new, sources.state_dir, offline=offline, known=old)
    _echo_findings_to_stderr(old.errors)
    _echo_findings_to_stderr([f for f in new.errors if f not in old.errors])
    _echo_listing_notes(old, new)
    changes = diff_policies(old, new, [_component(c) for c in components])
    if output_format == "table":
        if changes:
            header, rows = diff_table(changes)
            _print(render_table(header, rows))
        else:
            _print("no decision changes")
    else:
        _print(render_document(diff_document(changes), output_format))
    if fail and changes:
        sys.exit(1)


# --- schema, template, encrypt ----------------------------------------------------------------


@cli.command(epilog=examples("policy schema"))
@click.option(
    "--decision-log",
    "decision_log",
    is_flag=True,
    help="The schema of a decision-log line (policy chat --decision-log) instead.",
)
def schema(decision_log: bool) -> None:
    """The JSON Schema of the CONFIG keys toolpolicy understands (for editors and CI)."""
    import json

    if decision_log:
        from policy.decision_record import decision_log_schema

        _print(json.dumps(decision_log_schema(), indent=2, ensure_ascii=False))
        return
    from policy.config_schema import configuration_schema

    _print(json.dumps(configuration_schema(), indent=2, ensure_ascii=False))


@cli.group(epilog=examples("policy log"))
def log() -> None:
    """Read a decision log (policy chat --decision-log)."""


@log.command(epilog=examples("policy log summary"))
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@since_option
@click.option(
    "--by",
    "by",
    type=click.Choice(["subject"]),
    default=None,
    help="Count per signed-in person (as the records name them: DataGateway.RecordSubject).",
)
@_format_option
def summary(paths: tuple[Path, ...], since: str | None, by: str | None, output_format: str) -> None:
    """Counts over a decision log (a file and its rotated copies FILE.1 …): decisions per
    configuration revision and provider, refusals, left-out reasons, calls per status and tool,
    the most frequent blocked calls; with --by subject, all of that per person."""
    from policy.decision_summary import summary_rows, summary_rows_by_subject
    from policy.explain import render_document, render_table

    records = decision_logs_since(paths, since)
    if by == "subject":
        people = summary_rows_by_subject(records)
        if output_format == "table":
            _print(render_table(("subject", "what", "value", "count"), people))
        else:
            document = [{"subject": p, "what": w, "value": v, "count": n} for p, w, v, n in people]
            _print(render_document(document, output_format))
        return
    rows = summary_rows(records)
    if output_format == "table":
        _print(render_table(("what", "value", "count"), rows))
    else:
        document = [{"what": w, "value": v, "count": n} for w, v, n in rows]
        _print(render_document(document, output_format))


@cli.command(epilog=examples("policy template"))
def template() -> None:
    """The reference plugin.lua, generated from the tool definitions and the settings keys."""
    from policy.template import reference_plugin

    click.echo(reference_plugin(), nl=False)


@cli.command(epilog=examples("policy encrypt"))
def encrypt() -> None:
    """Encrypt stdin into an ENC:v1: value with the configured secret.

    The secret comes from TOOLPOLICY_CONFIG_ENCRYPTION_SECRET, else AI Studio's policy file
    config_encryption_secret.yaml, else AI Studio's variable. One trailing newline of the input is
    dropped.
    """
    from policy import secrets

    secret = secrets.configured_secret()
    if not secret:
        raise click.ClickException(
            "no encryption secret configured: set one of "
            f"{secrets.SECRET_SOURCES} to the base64 of 32 bytes"
        )
    text = sys.stdin.read()
    if text.endswith("\n"):
        text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
    if not text:
        raise click.ClickException("nothing to encrypt: stdin was empty")
    _print(secrets.encrypt(text, secret))


# --- export -----------------------------------------------------------------------------------


@cli.command(
    "export",
    epilog=examples("policy export"),
)
@click.argument(
    "tool_ids", nargs=-1, required=True, metavar="TOOL_ID...", shell_complete=complete_tool_ids
)
@_configuration_options
@click.option(
    "--mode",
    type=NameChoice("mode", ["LOCKED", "DEFAULT"]),
    required=True,
    help="LOCKED: DataTools.LockedToolSettings (users cannot change the values). DEFAULT: "
    "DataTools.DefaultToolSettings (pre-filled; a value the user saves wins).",
)
@click.option(
    "--area",
    "areas",
    multiple=True,
    metavar="TOOL_ID/GROUP",
    help="Only this setting group (repeatable; TOOL_ID/ is the ungrouped settings). "
    "Default: every area.",
)
@click.option(
    "--include-secrets",
    is_flag=True,
    help="Also export secrets from the keyring, encrypted (ENC:v1:) with "
    "TOOLPOLICY_CONFIG_ENCRYPTION_SECRET and always locked.",
)
@click.option(
    "--minimum-confidence",
    "minimum_confidence",
    is_flag=True,
    help="Also export the effective minimum provider confidence under the collection id.",
)
@offline_option
def _export_command(
    tool_ids: tuple[str, ...],
    sources: ConfigurationSources,
    output_format: str,
    mode: str,
    areas: tuple[str, ...],
    include_secrets: bool,
    minimum_confidence: bool,
    offline: bool,
) -> None:
    """Print the settings of tools or collections as a plugin.lua fragment.

    Values are what this setup resolves to (organization value or your own), never a tool's
    built-in default. Exit 1, with nothing on stdout, when secrets cannot be encrypted.
    """
    from policy.explain import render_document
    from policy.export import ExportError, SecretExportError, build_export

    policy = _load(sources, offline=offline)
    _echo_findings_to_stderr(policy.errors)
    _echo_listing_notes(policy)
    try:
        exported = build_export(
            policy,
            tool_ids,
            mode,
            areas or None,
            include_secrets=include_secrets,
            include_minimum_confidence=minimum_confidence,
        )
    except SecretExportError as error:
        raise click.ClickException(error.message) from None
    except ExportError as error:
        raise click.BadParameter(error.message, param_hint=error.argument or None) from None
    if output_format == "table":
        click.echo(exported.lua, nl=False)
    else:
        _print(render_document(exported.document(), output_format))


# --- entry point ------------------------------------------------------------------------------


# --- completion -------------------------------------------------------------------------------


@cli.command(epilog=examples("policy completion"))
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish).

    It completes commands, options, tool ids, providers, provider kinds and components. Load it
    in your shell's start file: bash `eval "$(policy completion bash)"`, zsh `eval "$(policy
    completion zsh)"`, fish `policy completion fish | source`.
    """
    click.echo(completion_script(cli, shell))


class _TerminalSafeStream:
    """A text stream that escapes what must not reach the terminal raw (`terminal_text`): where
    click prints its own usage errors, whose messages may quote a plugin's value."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from policy.terminal import terminal_text

        return int(self._stream.write(terminal_text(text)))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._stream, "isatty", lambda: False)())


def _log_to_stderr(debug: bool) -> Callable[[], None]:
    """Warnings go to stderr as before (Python's last-resort handler did that), but each record
    as one `terminal_safe` line. A record with an exception (`_log.exception` in the planner,
    the catalog, the watcher, the gateway, a library) names it on that line, `(RuntimeError:
    boom)`; its traceback follows only with --debug. An exception that ends a background thread
    is such a record too, instead of Python's traceback.

    A command that logs nothing never imports `logging` (`policy._log`): the handler is then
    installed the moment anything first imports it, before it can write a record. Returns what
    to call when the command is done (the wait for that import ends with it)."""
    import threading

    if not debug:
        threading.excepthook = _log_thread_failure
    if "logging" in sys.modules:
        _install_stderr_handler(debug)
        return _nothing_to_undo
    waiting = _OnFirstImport("logging", functools.partial(_install_stderr_handler, debug))
    sys.meta_path.insert(0, waiting)
    return waiting.stop


def _nothing_to_undo() -> None:
    return None


class _OnFirstImport:
    """A `sys.meta_path` finder that runs `then` right after module `name` is first executed,
    and otherwise finds nothing (the usual finders find the module)."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self._name, self._then = name, then

    def stop(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self._name:
            return None
        self.stop()
        spec = importlib.util.find_spec(fullname)  # as the import would have found it
        if spec is not None and spec.loader is not None:
            execute, then = spec.loader.exec_module, self._then

            def exec_module(module: Any) -> None:
                execute(module)
                then()

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _install_stderr_handler(debug: bool) -> None:
    import logging

    from policy.redaction import masked_as_in_logs
    from policy.terminal import terminal_safe, terminal_text

    class TerminalSafeFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            line = terminal_safe(record.getMessage())
            if not record.exc_info:
                return line
            if debug:
                return line + "\n" + terminal_text(self.formatException(record.exc_info))
            error = record.exc_info[1]
            named = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            return f"{line} ({terminal_safe(masked_as_in_logs(named))})"

    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setLevel(logging.WARNING)
        handler.setFormatter(TerminalSafeFormatter())
        root.addHandler(handler)


def _log_thread_failure(failure: Any) -> None:
    """`threading.excepthook` of the command without --debug: one log line, no traceback."""
    import logging

    if failure.exc_type is SystemExit:
        return
    name = failure.thread.name if failure.thread is not None else "?"
    logging.getLogger("policy").error(
        "a background thread (%s) failed",
        name,
        exc_info=(failure.exc_type, failure.exc_value, failure.exc_traceback),
    )


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: a failure is printed once (JSON with a stable `code` under
    `--format json`), usage errors exit 2, others 1; only `--debug` shows a traceback.

    Every message printed here (usage errors, failures, log warnings) is escaped for the
    terminal (`policy.terminal`)."""
    arguments = _debug_first(list(sys.argv[1:] if argv is None else argv))
    own = _own_command(arguments)
    if own:
        _without_pydantic_plugins()
        _without_cyclic_collection()
    elif _COLLECTION_HELD:
        gc.enable()
    done_logging = _log_to_stderr(_debugging(arguments))
    try:
        _run(arguments)
    finally:
        done_logging()
        if own:
            _nothing_left_to_collect()


def _run(arguments: list[str]) -> None:
    from policy.cli_errors import FAILURE_EXIT, report
    from policy.terminal import terminal_safe

    try:
        code = cli.main(args=arguments, prog_name="policy", standalone_mode=False)
    except click.ClickException as error:
        vars(error)["message"] = terminal_safe(
            error.message
        )  # click types it Final; it is ours to print
        report(
            error,
            arguments,
            error.format_message(),
            error.exit_code,
            stderr=_TerminalSafeStream(sys.stderr),
        )
    except click.Abort as error:
        report(error, arguments, "Aborted!", FAILURE_EXIT)
    except Exception as error:
        if _debugging(arguments):
            raise
        from policy.errors import ToolPolicyError

        if isinstance(error, ToolPolicyError):
            report(error, arguments, terminal_safe(error), FAILURE_EXIT)
        report(
            error,
            arguments,
            f"unexpected failure ({type(error).__name__}: {terminal_safe(error)}). "
            "Run again with --debug to see where it happened.",
            FAILURE_EXIT,
        )
    if isinstance(code, int) and not isinstance(code, bool) and code:
        sys.exit(code)


_PYDANTIC_PLUGINS_VARIABLE = "PYDANTIC_DISABLE_PLUGINS"


def _own_command(arguments: Sequence[str]) -> bool:
    """Whether the command line runs one of the `policy` command's own commands (the report
    commands: short-lived, no server), not a lazily attached one (`policy chat`, `serve`, ...:
    the runtime's), which keeps Python's and pydantic's defaults."""
    command = next((a for a in arguments if not a.startswith("-")), None)
    return command not in _LAZY_COMMANDS


def _without_cyclic_collection() -> None:
    """The report commands run without Python's cyclic garbage collector.

    They are short-lived and what they allocate is freed by reference counting or lives until
    they exit (modules, classes, the tool-definition models), so each collection would only
    walk those objects again. Only the console script does this, for its own process (the test
    runner restores the collector after running `main` in its own process)."""
    gc.disable()


def _nothing_left_to_collect() -> None:
    """At exit Python collects once more over every object; the report commands' objects are
    frozen (`gc.freeze`) instead, as they are about to be freed with the process."""
    gc.freeze()


def _without_pydantic_plugins() -> None:
    """Run toolpolicy's own commands without pydantic plugins, unless the environment says
    otherwise (`PYDANTIC_DISABLE_PLUGINS` already set, even empty, is left as it is).

    pydantic looks for plugins by reading the entry points of every installed distribution
    when the first model is built; the report commands build only the tool-definition models
    and validate nothing a plugin (tracing, say) should observe, so the scan is pure start-up
    cost. A lazily attached command (`policy chat`, `serve`, ...: the runtime's) keeps
    pydantic's default. Only the console script does this, for its own process: the variable is
    inherited by the Lua worker (a fork) and by nothing else these commands start; an app that
    calls `cli.main` in its own process is left alone."""
    os.environ.setdefault(_PYDANTIC_PLUGINS_VARIABLE, "__all__")


def _debug_first(arguments: list[str]) -> list[str]:
    """`--debug` anywhere before a `--` moves to the front, where the group option lives, so
    `policy check --debug` works like `policy --debug check`."""
    end = arguments.index("--") if "--" in arguments else len(arguments)
    if "--debug" not in arguments[:end]:
        return arguments
    rest = [a for i, a in enumerate(arguments) if not (a == "--debug" and i < end)]
    return ["--debug", *rest]


def _debugging(arguments: Sequence[str]) -> bool:
    return "--debug" in arguments or os.environ.get("TOOLPOLICY_DEBUG", "").strip().lower() not in (
        "",
        "0",
        "false",
        "no",
        "off",
    )


if __name__ == "__main__":
    main()
