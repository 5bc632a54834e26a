"""What every test shares."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _patient_gateway() -> None:
    """`policy mcp serve` run by a test waits for its upstream servers as long as they take to
    start on a loaded machine (the command's few seconds keep a real client's first request
    short; a test that is about that wait passes `--listing-wait` itself). A client started over
    stdio by the SDK gets few of our variables: such a test passes `--listing-wait 60`."""
    os.environ.setdefault("TOOLPOLICY_MCP_LISTING_WAIT", "60")
