"""The `policy` console script: `policy.cli.main`, with Python's cyclic garbage collector held
while the command's modules load (`policy.cli` lets it run again for a lazily attached command,
and keeps it off for its own short-lived ones, as `python -m policy.cli` does)."""

from __future__ import annotations

import gc


def main() -> None:
    gc.disable()
    from policy import cli

    cli._COLLECTION_HELD = True
    cli.main()
