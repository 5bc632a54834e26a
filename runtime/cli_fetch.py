"""`policy fetch` and `policy status`: configurations from a configuration server, and their state.

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` imports none of it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from policy._runtime_seam import examples, format_option

if TYPE_CHECKING:
    from policy._runtime_seam import ConfigurationReferences

_STATE_DIR = click.option(
    "--state-dir",
    "state_dir",
    envvar="TOOLPOLICY_STATE_DIR",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where fetched configurations and their status are kept (every other command reads "
    "the fetched copies from it). [env: TOOLPOLICY_STATE_DIR]",
)
_FORMAT_OPTION = format_option("table", "json", "yaml")


def _render(statuses: list[dict[str, Any]], output_format: str) -> str:
    document = {"configurations": statuses}
    if output_format in ("json", "yaml"):
        from policy._runtime_seam import render_document

        return render_document(document, output_format)
    if not statuses:
        return "no configurations fetched"
    from policy._runtime_seam import render_table

    rows = [
        [
            s["id"],
            s["server_url"],
            s["state"],
            s["etag"] or "",
            s["last_attempt"] or "",
            s["last_success"] or "",
            s["error"] or "",
        ]
        for s in statuses
    ]
    headers = ["id", "server", "state", "etag", "last attempt", "last success", "error"]
    return render_table(headers, rows)


_CONFIG_SERVERS = click.option(
    "--config-server",
    "config_servers",
    multiple=True,
    metavar="ID@URL",
    help="A configuration to fetch (repeatable). Without it: TOOLPOLICY_CONFIG_SERVERS, then AI "
    "Studio's policy files, then its MINDWORK_AI_STUDIO_ENTERPRISE_* variables.",
)


def _references(config_servers: tuple[str, ...]) -> ConfigurationReferences:
    """The configurations the sources name; their warnings (and the secret file's) on stderr."""
    from policy._runtime_seam import (
        configuration_references,
        finding_line,
        policy_directories,
        secret_from_policy_files,
        terminal_safe,
    )

    try:
        found = configuration_references(config_servers)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="'--config-server'") from None
    _, secret_findings = secret_from_policy_files(policy_directories(os.environ))
    for finding in (*found.findings, *secret_findings):
        click.echo(finding_line(finding, "warning"), err=True)
    for reference in found.references:
        if reference.plain_http_warning is not None:
            click.echo(f"warning: {terminal_safe(reference.plain_http_warning)}", err=True)
    return found


@click.command(epilog=examples("policy fetch"))
@_STATE_DIR
@_CONFIG_SERVERS
@click.option(
    "--ca-bundle",
    envvar="TOOLPOLICY_CA_BUNDLE",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A PEM file of extra root certificates (an intranet CA); verification stays on. "
    "[env: TOOLPOLICY_CA_BUNDLE]",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds one configuration's download may take in all: connecting, every redirect and "
    "reading the archive (a server that trickles its answer is cut off).",
)
@_FORMAT_OPTION
def fetch(
    state_dir: Path,
    config_servers: tuple[str, ...],
    ca_bundle: Path | None,
    timeout: float,
    output_format: str,
) -> None:
    """Fetch every configuration once from its server into --state-dir.

    A configuration that cannot be fetched or does not validate keeps its last-known-good copy.
    A configuration the sources no longer name is withdrawn, unless a source could not be read
    whole (then nothing is withdrawn). Exit 1 when any configuration failed (or --state-dir
    cannot be written), 2 when none is configured (every copy in force is kept).
    """
    from runtime.config_fetch import CaBundleError, fetch_configurations

    found = _references(config_servers)
    if not found.references:
        click.echo(
            "error: no configuration to fetch; pass --config-server ID@URL or set "
            "TOOLPOLICY_CONFIG_SERVERS (every copy in force is kept)",
            err=True,
        )
        sys.exit(2)
    refused = found.withdrawal_refused
    if refused is not None:
        click.echo(f"warning: nothing is withdrawn: {refused}", err=True)
    try:
        statuses = fetch_configurations(
            found.references,
            state_dir,
            ca_bundle=ca_bundle,
            timeout=timeout,
            withdraw=refused is None,
        )
    except CaBundleError as error:
        raise click.BadParameter(str(error), param_hint="'--ca-bundle'") from None
    except OSError as error:
        reason = error.strerror or type(error).__name__
        click.echo(
            f"error: --state-dir {state_dir} cannot be written ({reason}); every copy in force "
            "is kept",
            err=True,
        )
        sys.exit(1)
    click.echo(_render([s.document() for s in statuses], output_format))
    if any(s.error for s in statuses):
        sys.exit(1)


@click.command(epilog=examples("policy status"))
@_STATE_DIR
@_CONFIG_SERVERS
@_FORMAT_OPTION
def status(state_dir: Path, config_servers: tuple[str, ...], output_format: str) -> None:
    """Show, per configuration, its server, state, ETag, last attempt and success, and error.

    Lists what the fetch rounds recorded in --state-dir and every configuration the sources name
    that no round has fetched yet (state "never fetched"). Exit 0 when every configuration is
    current, 1 when one is not (last-known-good or never fetched) or the status file is damaged,
    for monitoring.
    """
    from policy._runtime_seam import STATE_CURRENT, terminal_safe
    from runtime.config_fetch import delivery_report

    references = _references(config_servers).references
    statuses, problem = delivery_report(state_dir, references, others=True)
    if problem is not None:
        click.echo(
            f"error: {terminal_safe(problem)}; the statuses it held are unknown (the copies in "
            "force are kept), the next policy fetch writes it anew",
            err=True,
        )
    click.echo(_render([s.document() for s in statuses], output_format))
    if problem is not None or any(s.state != STATE_CURRENT for s in statuses):
        sys.exit(1)
