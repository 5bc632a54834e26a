"""Issue 31: the gateway's p99 over an MCP server of 1,000 tools was the cyclic collector walking
the policy in force (~200,000 objects) every few `tools/list` answers. The gateway sets the
policy in force aside from the collector once per change, and a change frees what was set
aside before."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.mcp_gateway import McpGateway
from runtime.session import ChatRuntime
from tests.e2e._kit import VLLM_ID
from tests.e2e.test_flow_rule import _AppTool, _policy
from tests.e2e.test_hostile_decision_log import _until


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    """What the gateway froze goes back to the collector after the test."""
    yield
    gc.unfreeze()


def _collected(value: object) -> bool:
    """Whether the cyclic collector's generations hold `value` (frozen objects are outside)."""
    return any(candidate is value for candidate in gc.get_objects())


class _Cycle:
    def __init__(self) -> None:
        self.itself = self


async def test_the_policy_in_force_is_set_aside_and_a_change_frees_what_was(
    tmp_path: Path,
) -> None:
    first = ChatRuntime(_policy(tmp_path / "first", "OFF", _AppTool("read_hr", (), "x")))
    in_force = [first]
    gateway = McpGateway(lambda: in_force[0], VLLM_ID, change_poll_seconds=0.05)
    garbage = _Cycle()
    gone = weakref.ref(garbage)
    stop = asyncio.Event()
    watching = asyncio.create_task(gateway.watch_changes(stop))
    try:
        registry = first.policy.registry
        await _until(lambda: not _collected(registry))
        del garbage  # a cycle set aside with the policy: only a collection frees it

        second = ChatRuntime(_policy(tmp_path / "second", "OFF", _AppTool("fetch", (), "y")))
        in_force[0] = second
        await _until(lambda: not _collected(second.policy.registry))
        assert gone() is None, "the change's collection freed the cycle set aside before"
    finally:
        stop.set()
        await watching
        await first.aclose()


async def test_a_replaced_policy_is_freed_once_the_requests_on_it_ended(tmp_path: Path) -> None:
    """The gateway keeps no runtime it no longer serves: after a reload, once a request was
    answered from the new policy, nothing of the gateway's holds the old one."""
    from mcp import Client

    first = ChatRuntime(_policy(tmp_path / "first", "OFF", _AppTool("read_hr", (), "x")))
    in_force = [first]
    gateway = McpGateway(lambda: in_force[0], VLLM_ID)
    replaced = weakref.ref(first.policy.registry)
    async with Client(gateway.server) as client:
        assert "read_hr" in {t.name for t in (await client.list_tools()).tools}
        assert "read_hr" in {t.name for t in (await client.list_tools()).tools}
        in_force[0] = ChatRuntime(_policy(tmp_path / "second", "OFF", _AppTool("fetch", (), "y")))
        await first.aclose()
        del first
        assert "fetch" in {t.name for t in (await client.list_tools()).tools}
        gc.collect()
        assert replaced() is None, "the gateway still holds the replaced policy"
        await in_force[0].aclose()
