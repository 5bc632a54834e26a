"""A module's logger that imports `logging` only when the module first logs.

Most commands log nothing, and importing `logging` (with `traceback` and `string` behind it) is
part of what they would otherwise pay at start; the `policy` command installs its stderr handler
when `logging` is first imported (`policy.cli`), so a record is never written without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import logging

__all__ = ["logger"]


class _Logger:
    """Stands for `logging.getLogger(name)`, got on the first attribute asked of it."""

    __slots__ = ("_got", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._got: Any = None

    def __getattr__(self, attribute: str) -> Any:
        got = self._got
        if got is None:
            import logging

            got = self._got = logging.getLogger(self._name)
        return getattr(got, attribute)


def logger(name: str) -> logging.Logger:
    """The logger `name` (as `logging.getLogger(name)` gives it), `logging` imported on first use;
    typed as the logger it stands for, so every call is checked as one."""
    return cast("logging.Logger", _Logger(name))
