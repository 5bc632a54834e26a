"""`policy replay`: a decision log re-decided under a candidate configuration (runtime.replay).

Attached to the `policy` command lazily (policy/cli.py), so `policy --help` never imports this.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from policy._runtime_seam import (
    ConfigurationSources,
    configuration_options,
    decision_logs_since,
    examples,
    format_option,
    load_cli_policy,
    people_with_own_listings,
    since_option,
    tools_file_option,
)


@click.command(epilog=examples("policy replay"))
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@configuration_options
@tools_file_option
@since_option
@format_option("table", "json", "yaml")
@click.option("--fail-on-change", is_flag=True, help="Exit 1 when anything would flip (for CI).")
def replay(
    logs: tuple[Path, ...],
    sources: ConfigurationSources,
    tools_files: tuple[Path, ...],
    since: str | None,
    output_format: str,
    fail_on_change: bool,
) -> None:
    """Re-decide every request of decision LOG(s) under the configuration given by --org /
    --local and print what would flip: tools newly offered or left out (both reasons), calls
    that would now be blocked, requests whose provider the chat would now refuse (or allow).

    `policy diff` on real traffic. Load errors of the candidate are printed on stderr and the
    replay goes on (a broken organization plugin fails closed, which the flips then show).
    Exit codes: 0 (also with changes, unless --fail-on-change), 1 changes with
    --fail-on-change or a log that cannot be read (a bad line is named by file:line), 2 usage.
    """
    from policy._runtime_seam import render_document, render_table
    from runtime.replay import replay as replay_records
    from runtime.replay import replay_table

    if not sources.org and not sources.local:
        raise click.UsageError("name the candidate configuration with --org and/or --local")
    records = decision_logs_since(logs, since)
    candidate = load_cli_policy(*sources, tools_files)
    for finding in candidate.errors:
        where = f"{finding.location}: " if finding.location is not None else ""
        click.echo(f"{where}error: {finding.message}", err=True)
    report = replay_records(records, candidate, people_with_own_listings(candidate))
    if output_format.lower() == "table":
        header, rows = replay_table(report)
        summary = (
            f"{report.decisions} decision(s) replayed: {len(report.changed)} tool flip(s), "
            f"{len(report.calls_now_blocked)} call(s) now blocked, "
            f"{len(report.providers_now_refused)} provider(s) now refused, "
            f"{len(report.providers_now_allowed)} now allowed, "
            f"{len(report.approvals_changed)} call(s) whose approval changes"
        )
        click.echo(render_table(header, rows) if rows else "nothing would change")
        click.echo(summary, err=True)
    else:
        click.echo(render_document(report.document(), output_format.lower()))
    if fail_on_change and report.has_changes:
        sys.exit(1)
