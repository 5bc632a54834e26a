"""`policy chat`: a real conversation through the policy and the runtime, from the terminal.

The same call an app makes (`ChatRuntime.respond`) per line the user types; the answer streams
to stdout, tool calls and notices go to stderr (or everything as JSON lines with --format json).
Attached to the `policy` command lazily (policy/cli.py), so `policy --help` never imports this.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from policy import Component
from policy._runtime_seam import (
    ConfigurationSources,
    complete_tool_ids,
    component_option,
    configuration_options,
    decision_log_option,
    examples,
    format_option,
    load_cli_policy,
    offline_option,
    provider_option,
    provider_with_errors_shown,
    terminal_json,
    terminal_safe,
    terminal_text,
    tools_file_option,
    unknown_tool_error,
)

if TYPE_CHECKING:
    from policy import Policy, ProviderConfig
    from runtime.approvals import Approval, PendingApproval
    from runtime.chat import Chat
    from runtime.mcp import McpSessions
    from runtime.messages import ChatMessage
    from runtime.providers.hosts import WireApi
    from runtime.session import ResponseEvent, ToolsOffered

_API_KEY_ENV = "TOOLPOLICY_API_KEY"
_QUIT = frozenset({"exit", "quit", ":q"})
_STOP_NOTES = {
    "max_tokens": "the output limit was reached, so the answer is cut",
    "content_filter": "the provider's content filter stopped it",
    "refusal": "the model refused",
    "paused": "the provider paused the turn and it did not finish",
    "approval_required": "a call waits for a person's approval",
}
_NO_TERMINAL_NOTE = (
    "No one could be asked: policy chat ran without a terminal and without --approve or --deny."
)


@click.command(epilog=examples("policy chat"))
@click.argument("message", required=False)
@configuration_options
@provider_option("A configured provider, by id or name (InstanceName).")
@click.option(
    "--base-url",
    envvar="TOOLPOLICY_BASE_URL",
    help="Send the provider's requests here instead (a gateway, a local server), e.g. "
    "http://localhost:8000/v1. [env: TOOLPOLICY_BASE_URL]",
)
@click.option(
    "--wire-api",
    type=click.Choice(["chat_completions", "responses"], case_sensitive=False),
    help="For a host that speaks both OpenAI APIs (OpenAI itself): which one to use. "
    "[default: the host's own, Responses for OpenAI]",
)
@click.option(
    "--tool",
    "tool_ids",
    multiple=True,
    shell_complete=complete_tool_ids,
    help="Select a tool (repeatable). Without it, the component's default selection.",
)
@tools_file_option
@component_option(help="The part of the app the conversation happens in.")
@click.option("--system", "system_prompt", default="", help="The system prompt.")
@click.option(
    "--chat-id",
    help="Continue this chat's requirements (what earlier tool results demanded). "
    "Default: a new chat.",
)
@click.option(
    "--chat-db",
    envvar="TOOLPOLICY_CHAT_DB",
    help="Where chat requirements are kept: a SQLite file, or postgresql://… to share them "
    "across instances. [env: TOOLPOLICY_CHAT_DB, default: a SQLite file in the user's data "
    "folder]",
)
@click.option(
    "--approve/--deny",
    "approve",
    default=None,
    help="Answer every call that needs a person's approval (DataTools.RequireApprovalToolIds, "
    "an MCP server's RequireApproval) with yes or no, for scripts. [default: ask on the "
    "terminal; without one, deny]",
)
@format_option(
    "text",
    "json",
    help="text: the answer on stdout, tool calls on stderr. json: one JSON object per event.",
)
@decision_log_option("answer")
@offline_option
def chat(
    message: str | None,
    sources: ConfigurationSources,
    provider_id: str | None,
    base_url: str | None,
    wire_api: str | None,
    tool_ids: tuple[str, ...],
    tools_files: tuple[Path, ...],
    component: str,
    system_prompt: str,
    chat_id: str | None,
    chat_db: str | None,
    approve: bool | None,
    output_format: str,
    decision_log: Path | None,
    offline: bool,
) -> None:
    """Chat with a configured provider under the organization's tool policy.

    With MESSAGE, answer that one message; without, read one message per line from stdin until
    end of input (or "exit"). The API key comes from TOOLPOLICY_API_KEY, else the host's own
    variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...); it is never taken from the command line.

    A call that needs a person's approval is asked about on the terminal (`Allow TOOL
    {ARGUMENTS}? [y/N]`); --approve or --deny answers for scripts; without a terminal and
    without either, the call is denied and stderr says why.

    Exit codes: 0 answered, 1 refused or failed (the reason on stderr), 2 usage, 130 Ctrl+C.
    """
    from runtime.approvals import ApprovalError
    from runtime.chat import ChatRequirementError, ChatStoreError
    from runtime.loop import InvalidToolCallingResponse
    from runtime.providers.errors import ProviderError

    policy = load_cli_policy(*sources, tools_files, offline=offline)
    provider = chosen_provider(
        policy, provider_id, base_url, before=lambda: _require_known_tools(policy, tool_ids)
    )
    from runtime.mcp_listing import sessions_for

    mcp = sessions_for(policy, sources.state_dir, offline=offline)
    selection = tool_ids or None
    if chat_id is not None and not chat_id.strip():
        raise click.BadParameter("a chat id must not be blank.", param_hint="--chat-id")
    json_lines = output_format.lower() == "json"
    try:
        conversation = _open_chat(chat_id, chat_db)
        if not json_lines:
            shown = terminal_safe(provider.name or provider.id)
            click.echo(f"chat {terminal_safe(conversation.id)} with {shown}", err=True)
        lines = [message] if message is not None else _typed_lines()
        asyncio.run(
            _converse(
                policy,
                conversation,
                provider,
                lines,
                component=Component(component.upper()),
                selection=selection,
                system_prompt=system_prompt,
                json_lines=json_lines,
                decision_log=decision_log,
                wire_api=_wire_api(wire_api),
                mcp=mcp,
                approve=approve,
            )
        )
    except (
        ChatRequirementError,
        ProviderError,
        InvalidToolCallingResponse,
        ChatStoreError,
        ApprovalError,
    ) as error:
        raise click.ClickException(str(error)) from None
    except KeyboardInterrupt:
        click.echo("", err=True)
        sys.exit(130)


def _wire_api(given: str | None) -> WireApi | None:
    if given is None:
        return None
    return "responses" if given.lower() == "responses" else "chat_completions"


def _require_known_tools(policy: Policy, tool_ids: Sequence[str]) -> None:
    """A `--tool` id no installed tool or collection has is a usage error, with a near miss."""
    registry = policy.registry
    for tool_id in tool_ids:
        if not registry.is_known(tool_id):
            raise unknown_tool_error(policy, tool_id, sorted(registry.tool_ids), "--tool")


def chosen_provider(
    policy: Policy,
    provider_id: str | None,
    base_url: str | None,
    before: Callable[[], None] | None = None,
) -> ProviderConfig:
    """The provider `--provider` names (or the only one), at `--base-url` when given; the
    policy's errors are shown on stderr with it (`provider_with_errors_shown`, which runs
    `before` first)."""
    provider = provider_with_errors_shown(policy, provider_id, before)
    if base_url:
        provider = dataclasses.replace(provider, hostname=base_url.strip())
    return provider


def _open_chat(chat_id: str | None, chat_db: str | None) -> Chat:
    from runtime.chat import Chat, open_chat_store

    return Chat.open(chat_id or str(uuid.uuid4()), open_chat_store(chat_db))


def _typed_lines() -> Iterator[str]:
    """One message per line of stdin; a prompt only when a person is typing."""
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            click.echo("you> ", nl=False, err=True)
        line = sys.stdin.readline()
        if not line:
            return
        text = line.strip()
        if text.lower() in _QUIT:
            return
        if text:
            yield text


async def _converse(
    policy: Policy,
    chat: Chat,
    provider: ProviderConfig,
    lines: Iterable[str],
    *,
    component: Component,
    selection: tuple[str, ...] | None,
    system_prompt: str,
    json_lines: bool,
    decision_log: Path | None = None,
    wire_api: WireApi | None = None,
    mcp: McpSessions | None = None,
    approve: bool | None = None,
) -> None:
    from runtime.decision_log import JsonLinesSink
    from runtime.loop import FinalAnswer
    from runtime.messages import ChatMessage, Role, StopReason
    from runtime.providers import create_client
    from runtime.session import ChatRuntime, ToolsOffered

    sink = JsonLinesSink(decision_log) if decision_log is not None else None
    assistant = ChatRuntime(policy, decision_log=sink, mcp=mcp)
    history: list[ChatMessage] = []
    requested = frozenset(policy.registry.expand_selection(selection or ()))
    client = create_client(provider, _api_key(provider), wire_api=wire_api)
    try:
        for line in lines:
            history.append(ChatMessage(Role.USER, line))
            answer = ""
            approvals = None
            while True:
                final = None
                async for event in assistant.respond(
                    chat,
                    provider,
                    list(history),
                    component=component,
                    selected_tool_ids=selection,
                    system_prompt=system_prompt,
                    client=client,
                    approvals=approvals,
                ):
                    if isinstance(event, ToolsOffered):
                        if approvals is not None:
                            continue
                        if selection:
                            event = _with_refused(
                                event, assistant.policy, selection, provider, component
                            )
                    _show(event, json_lines, requested)
                    if isinstance(event, FinalAnswer):
                        answer += event.text
                        final = event
                if final is None or final.stop_reason is not StopReason.APPROVAL_REQUIRED:
                    break
                approvals = {p.call_id: _answer(p, approve) for p in final.pending_approvals}
            history.append(ChatMessage(Role.ASSISTANT, answer))
    finally:
        await client.aclose()
        await assistant.aclose()


def _answer(pending: PendingApproval, approve: bool | None) -> Approval:
    """A person's answer: --approve/--deny, else asked on the terminal, else denied (nobody
    could be asked)."""
    from runtime.approvals import Approval

    asked = f"{pending.tool_id} {pending.arguments_text}"
    if approve is not None:
        flag = "--approve" if approve else "--deny"
        click.echo(
            f"[{terminal_safe(asked)}: {'approved' if approve else 'denied'} by {flag}]", err=True
        )
        return Approval(
            approve,
            by=f"{_user()} ({flag})",
            note="" if approve else f"denied by {flag}",
            arguments_sha256=pending.arguments_sha256,
        )
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        click.echo(
            f"[{terminal_safe(asked)} needs approval ({terminal_safe(pending.reason)}); denied: "
            "there is no terminal to ask on — pass --approve or --deny]",
            err=True,
        )
        return Approval(False, by="policy chat", note=_NO_TERMINAL_NOTE)
    click.echo(f"[{terminal_safe(pending.reason)}]", err=True)
    click.echo(f"Allow {terminal_safe(asked)}? [y/N] ", nl=False, err=True)
    approved = sys.stdin.readline().strip().lower() in ("y", "yes")
    return Approval(
        approved,
        by=_user(),
        note="" if approved else "denied on the terminal",
        arguments_sha256=pending.arguments_sha256,
    )


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown user"


def _with_refused(
    offered: ToolsOffered,
    policy: Policy,
    selection: Sequence[str],
    provider: ProviderConfig,
    component: Component,
) -> ToolsOffered:
    """The offer plus, for each requested tool the policy refused, the check that refused it
    (the runtime's `left_out` only names tools that passed the checks)."""
    from runtime.session import ToolsOffered

    named = {tool_id for tool_id, _ in offered.left_out}
    refused = []
    for tool_id in policy.registry.expand_selection(selection):
        if tool_id in offered.tool_ids or tool_id in named:
            continue
        decision = policy.offer_decision(tool_id, provider, component)
        if not decision.offered:
            refused.append((tool_id, f"{decision.reason.value}: {decision.message}"))
    if not refused:
        return offered
    return ToolsOffered(offered.tool_ids, (*offered.left_out, *refused))


def _api_key(provider: ProviderConfig) -> str | None:
    """TOOLPOLICY_API_KEY, else None (the client then uses the organization's key or the host's variable)."""
    import os

    from runtime.providers import host_profile_for

    given = os.environ.get(_API_KEY_ENV, "").strip()
    profile = host_profile_for(provider)
    if given or not profile.requires_api_key or provider.api_key is not None:
        return given or None
    if not profile.api_key_env or not os.environ.get(profile.api_key_env, "").strip():
        also = f" or {profile.api_key_env}" if profile.api_key_env else ""
        raise click.ClickException(
            f"provider '{provider.name or provider.id}' ({profile.name}) needs an API key: set "
            f"{_API_KEY_ENV}{also}."
        )
    return None


def _show(event: ResponseEvent, json_lines: bool, requested: frozenset[str] = frozenset()) -> None:
    """One event on the terminal; `requested` are the `--tool` ids whose absence is explained.
    The answer keeps its line breaks; every other character that is not printable, and every
    control character in tool names, arguments, results, sources, is shown escaped
    (`policy.terminal`): a model or a page cannot move the cursor or fake a line."""
    if json_lines:
        click.echo(terminal_json(_event_document(event)))
        return
    from runtime.loop import (
        FinalAnswer,
        TextDeltaEvent,
        ToolCallFinished,
        ToolCallStarted,
        ToolRoundStarted,
    )
    from runtime.messages import StopReason
    from runtime.session import ToolsOffered

    if isinstance(event, TextDeltaEvent):
        click.echo(terminal_text(event.text), nl=False)
        sys.stdout.flush()
    elif isinstance(event, ToolRoundStarted):
        click.echo(f"\n[{terminal_safe(event.status_line)}]", err=True)
    elif isinstance(event, ToolsOffered):
        offered = ", ".join(terminal_safe(t) for t in event.tool_ids) or "none"
        click.echo(f"[tools offered: {offered}]", err=True)
        for tool_id, why in event.left_out:
            if tool_id in requested:
                click.echo(
                    f"[not offered: {terminal_safe(tool_id)}: {terminal_safe(why)}]",
                    err=True,
                )
    elif isinstance(event, ToolCallStarted):
        shown = ", ".join(
            f"{terminal_safe(k)}={terminal_safe(v)}" for k, v in event.arguments.items()
        )
        click.echo(f"\n[tool {terminal_safe(event.display_name)}({shown})]", err=True)
    elif isinstance(event, ToolCallFinished):
        trace = event.trace
        detail = f": {terminal_safe(trace.status_message)}" if trace.status_message else ""
        name = terminal_safe(trace.tool_name)
        click.echo(f"[tool {name}: {trace.status.value}{detail}]", err=True)
        for seen in event.outcome.injections if event.outcome else ():
            click.echo(
                f"[prompt injection removed from {terminal_safe(seen.source)}: "
                f"{seen.removed} passage(s), rules {terminal_safe(', '.join(seen.rule_ids))}; "
                "the chat now holds INJECTION_SEEN]",
                err=True,
            )
    elif isinstance(event, FinalAnswer):
        click.echo("")
        for source in event.sources:
            click.echo(f"  source: {terminal_safe(source.title)} <{terminal_safe(source.url)}>")
        if event.interrupted:
            click.echo("[the answer was interrupted]", err=True)
        elif event.stop_reason is StopReason.APPROVAL_REQUIRED:
            waiting = len(event.pending_approvals)
            click.echo(f"[{waiting} call(s) wait for a person's approval]", err=True)
        elif event.stop_reason is not StopReason.COMPLETED:
            click.echo(f"[the answer ended early: {_STOP_NOTES[event.stop_reason]}]", err=True)


def _event_document(event: ResponseEvent) -> dict[str, Any]:
    """One event as plain JSON data (what --format json prints per line)."""
    from runtime.loop import (
        FinalAnswer,
        TextDeltaEvent,
        ToolCallFinished,
        ToolCallStarted,
        ToolRoundStarted,
    )
    from runtime.session import ToolsOffered

    if isinstance(event, ToolsOffered):
        return {
            "event": "tools_offered",
            "tool_ids": list(event.tool_ids),
            "left_out": [{"tool_id": t, "why": w} for t, w in event.left_out],
        }
    if isinstance(event, TextDeltaEvent):
        return {"event": "text", "text": event.text}
    if isinstance(event, ToolRoundStarted):
        return {
            "event": "tool_round_started",
            "call_ids": list(event.call_ids),
            "tools": list(event.tool_names),
            "status_line": event.status_line,
        }
    if isinstance(event, ToolCallStarted):
        return {
            "event": "tool_call_started",
            "call_id": event.call_id,
            "tool": event.tool_name,
            "arguments": dict(event.arguments),
        }
    if isinstance(event, ToolCallFinished):
        trace = event.trace
        return {
            "event": "tool_call_finished",
            "call_id": trace.call_id,
            "tool": trace.tool_id,
            "status": trace.status.value,
            "status_message": trace.status_message,
            "injections": [
                {
                    "source_kind": seen.source_kind,
                    "source": seen.source,
                    "rules": list(seen.rule_ids),
                    "removed": seen.removed,
                }
                for seen in (event.outcome.injections if event.outcome else ())
            ],
        }
    if isinstance(event, FinalAnswer):
        return {
            "event": "final_answer",
            "text": event.text,
            "sources": [{"title": s.title, "url": s.url} for s in event.sources],
            "input_tokens": event.usage.input_tokens,
            "interrupted": event.interrupted,
            "stop_reason": event.stop_reason.value,
            "pending_approvals": [
                {
                    "call_id": p.call_id,
                    "tool": p.tool_id,
                    "arguments": dict(p.arguments),
                    "reason": p.reason,
                }
                for p in event.pending_approvals
            ],
        }
    raise TypeError(f"unknown event {type(event).__name__}")
