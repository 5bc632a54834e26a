"""How the `policy` command reports a failure: once, as text or — with `--format json` — as one
JSON object with a stable `code`, and never with a traceback unless `--debug` asks for one.

The code says what kind of failure it is, so a script can branch on it instead of parsing the
message: click's usage errors by their kind, every `ToolPolicyError` by its class's `code`, and
anything else as `unexpected`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

_USAGE_EXIT = 2
FAILURE_EXIT = 1

_CODE_UNEXPECTED = "unexpected"
_CODE_ABORTED = "aborted"


class CodedUsageError(click.BadParameter):
    """A bad argument with a stable code (`unknown-tool`, `unknown-provider`, ...)."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        param_hint: str | None = None,
        param: click.Parameter | None = None,
        ctx: click.Context | None = None,
    ) -> None:
        super().__init__(message, ctx=ctx, param=param, param_hint=param_hint)
        self.code = code


def _error_code(error: BaseException) -> str:
    """The stable code of a failure; a click error that wraps one of ours keeps ours."""
    from policy.errors import ToolPolicyError

    own = getattr(error, "code", None)
    if isinstance(error, CodedUsageError | ToolPolicyError) and isinstance(own, str):
        return own
    if isinstance(error, click.ClickException):
        wrapped = error.__cause__ or error.__context__
        if isinstance(wrapped, ToolPolicyError):
            return wrapped.code
    if isinstance(error, click.NoSuchOption):
        return "unknown-option"
    if isinstance(error, click.MissingParameter):
        return "missing-argument"
    if isinstance(error, click.BadParameter):
        return "invalid-value"
    if isinstance(error, click.UsageError):
        return "usage"
    if isinstance(error, click.ClickException):
        return "failed"
    return _CODE_UNEXPECTED


def _wants_json(arguments: Sequence[str]) -> bool:
    """Whether the command line asks for JSON output (`--format json`, `-f json`,
    `--format=json`), read before click has parsed it, since a usage error stops parsing."""
    for index, argument in enumerate(arguments):
        if argument == "--":
            return False
        if argument in ("--format", "-f") and index + 1 < len(arguments):
            if arguments[index + 1].lower() == "json":
                return True
        elif argument.lower() in ("--format=json", "-fjson"):
            return True
    return False


def report(
    error: BaseException,
    arguments: Sequence[str],
    message: str,
    exit_code: int,
    *,
    stderr: Any = None,
) -> NoReturn:
    """Print the failure once — as JSON on stdout when JSON was asked for (control characters
    escaped by JSON), else on `stderr` — and exit."""
    if _wants_json(arguments):
        document = {"error": {"code": _error_code(error), "message": message, "exit": exit_code}}
        click.echo(json.dumps(document, ensure_ascii=False))
    elif isinstance(error, click.ClickException):
        error.show(file=stderr)
    else:
        click.echo(f"Error: {message}", err=True)
    sys.exit(exit_code)
