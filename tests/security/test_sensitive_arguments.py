"""A sensitive argument (search_confluence's query) is masked in the trace, refusals included.

The model wrote the value and may read it back in the refusal it corrects itself from; the trace
is what a user or an administrator sees, and there the value stays masked as in `arguments`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pytest

from policy.redaction import MASK
from policy.vocabulary import ConfidenceLevel
from runtime.execution import ToolExecutionResult
from runtime.executor import ToolExecutor, TraceStatus
from runtime.tools.search_confluence import create_tool
from tests.runtime._scripted_adapter import EchoTool
from tests.security._chat import executor_call

WIKI = {"baseUrl": "https://wiki.corp.test/wiki/"}


@pytest.mark.parametrize(
    "query",
    [["salary list of Bob"], {"q": "salary list of Bob"}, 4711, "salary list of Bob\x07"],
)
async def test_a_refused_sensitive_argument_is_masked_in_the_trace(
    query: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    outcome = await executor_call(
        ToolExecutor(settings_for=lambda _tool_id: WIKI),
        create_tool(),
        {"query": query},
        confidence=ConfidenceLevel.HIGH,
    )
    trace = outcome.trace
    assert trace.status is TraceStatus.ERROR
    assert trace.arguments == {"query": MASK}
    for shown in (trace.status_message, trace.result):
        assert "salary" not in shown and "4711" not in shown
    assert "query" in trace.status_message
    assert "salary" not in "\n".join(r.getMessage() for r in caplog.records)


async def test_a_failure_quoting_a_sensitive_argument_is_masked_in_trace_and_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def fail(arguments: Mapping[str, Any]) -> ToolExecutionResult:
        raise RuntimeError(f"the index has no entry for {arguments['query']}")

    caplog.set_level(logging.DEBUG)
    tool = EchoTool("lookup", fail, sensitive=frozenset({"query"}))
    outcome = await executor_call(ToolExecutor(), tool, {"query": "salary list of Bob"})
    assert "salary list of Bob" in outcome.content
    assert "salary" not in outcome.trace.status_message + outcome.trace.result
    assert MASK in outcome.trace.status_message
    assert "salary" not in "\n".join(r.getMessage() for r in caplog.records)
