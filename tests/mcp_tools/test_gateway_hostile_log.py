"""A hostile client of `policy mcp serve --decision-log` over real HTTP: whatever it sends,
every call is one readable line of the log, its names cannot flush the log, and text that is no
Unicode never reaches a tool or an MCP server (issue 28, classes 2 and 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from policy.decision_record import DecisionRecord
from tests.mcp_tools.test_mcp import calls_received, write_org
from tests.mcp_tools.test_mcp_gateway import running_gateway

__all__: list[str] = []

NOTE_TOOL = """
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool
from runtime.execution import ToolExecutionResult

RUNS = {runs!r}


class Note(DefinedTool):
    async def execute(self, arguments, context):
        with open(RUNS, "a", encoding="utf-8", errors="backslashreplace") as runs:
            runs.write(json.dumps(sorted(arguments)) + "\\n")
        return ToolExecutionResult(text_content="noted")


def create_tools():
    definition = ToolDefinition(
        id="note",
        implementation_key="note",
        function=ToolFunction(name="note", description_for_llm="Keep a note."),
    )
    return [Note(definition, display_name="Note")]


import json
"""


def _hostile_call(url: str, tool: str, arguments: str) -> dict[str, Any]:
    """A `tools/call` written by hand as the 2026-07-28 transport takes it: `arguments` is the
    raw JSON text of the arguments object, escapes and all."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    head = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})[:-1]
    params = (
        f'{{"name": {json.dumps(tool)}, "arguments": {arguments}, "_meta": {json.dumps(envelope)}}}'
    )
    answer = httpx.post(
        url,
        content=f'{head}, "params": {params}}}'.encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": tool,
        },
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json()["result"])


def _gateway(tmp_path: Path) -> tuple[list[object], Path, Path]:
    state = tmp_path / "server-state.json"
    state.write_text("{}", encoding="utf-8")
    org = write_org(tmp_path / "org", state)
    runs = tmp_path / "runs.jsonl"
    tools = tmp_path / "note.py"
    tools.write_text(NOTE_TOOL.format(runs=str(runs)), encoding="utf-8")
    log = tmp_path / "decisions.jsonl"
    arguments: list[object] = [
        "--org", org, "--provider", "OpenAI", "--tools-file", tools, "--decision-log", log,
    ]  # fmt: skip
    return arguments, log, runs


def _records(log: Path) -> list[DecisionRecord]:
    text = log.read_bytes().decode("utf-8")
    return [DecisionRecord.model_validate_json(line) for line in text.splitlines()]


NOT_UNICODE = "holds a lone surrogate (such as \\ud800), which is no Unicode text"


def test_a_lone_surrogate_in_a_call_is_refused_and_recorded_escaped(tmp_path: Path) -> None:
    arguments, log, runs = _gateway(tmp_path)
    with running_gateway(*arguments) as (url, stderr):
        in_value = _hostile_call(url, "note", '{"text": "\\ud800"}')
        in_name = _hostile_call(url, "note", '{"text": "x", "\\udfff": "x"}')
        denied = _hostile_call(url, "tickets__delete_ticket", '{"id": "\\ud800"}')
        plain = _hostile_call(url, "note", '{"text": "plain"}')
        assert not plain.get("isError"), plain
    assert in_value["isError"], in_value
    assert f"Argument 'text' {NOT_UNICODE}" in in_value["content"][0]["text"]
    assert in_name["isError"], in_name
    assert f"The argument name '\\udfff' {NOT_UNICODE}" in in_name["content"][0]["text"]
    assert denied["isError"], denied
    assert runs.read_text(encoding="utf-8").splitlines() == ['["text"]'], "the tool ran once"

    first, second, third, fourth = _records(log)
    (call,) = first.calls
    assert (call.tool_id, call.status) == ("note", "ERROR")
    assert call.arguments == {"text": "\\ud800"}, "escaped, not lost"
    assert NOT_UNICODE in (call.status_message or "")
    (call,) = second.calls
    assert call.status == "ERROR"
    assert call.arguments == {"text": "x", "\\udfff": "x"}
    (call,) = third.calls
    assert (call.tool_id, call.status) == ("tickets__delete_ticket", "BLOCKED")
    assert call.arguments == {"id": "\\ud800"}, "a denied tool, traced by its definition"
    assert [c.arguments for c in fourth.calls] == [{"text": "plain"}]
    assert "Logging error" not in "".join(stderr)


def test_a_lone_surrogate_never_reaches_an_mcp_server(tmp_path: Path) -> None:
    """An MCP server's session cannot carry a lone surrogate (the SDK client fails to encode it
    and the session drops, ending the server process): one hostile call restarted the server
    every other client relies on. It is refused before the server is sent anything."""
    arguments, log, _ = _gateway(tmp_path)
    state = tmp_path / "server-state.json"
    started = Path(f"{state}.pid")
    search = "tickets__search_tickets"
    with running_gateway(*arguments) as (url, _stderr):
        served = _hostile_call(url, search, '{"query": "printer"}')
        assert not served.get("isError"), served
        server = started.read_text(encoding="utf-8")
        in_value = _hostile_call(url, search, '{"query": "printer \\ud800"}')
        in_name = _hostile_call(url, search, '{"query": "printer", "\\udbff": "x"}')
        after = _hostile_call(url, search, '{"query": "printer"}')
        assert not after.get("isError"), after
        assert started.read_text(encoding="utf-8") == server, "the same server process served"

    assert in_value["isError"], in_value
    assert f"Argument 'query' {NOT_UNICODE}" in in_value["content"][0]["text"]
    assert in_name["isError"], in_name
    assert f"The argument name '\\udbff' {NOT_UNICODE}" in in_name["content"][0]["text"]
    assert [c["arguments"] for c in calls_received(state)] == [{"query": "printer"}] * 2
    records = _records(log)
    assert [r.calls[0].status for r in records] == ["SUCCESS", "ERROR", "ERROR", "SUCCESS"]
    assert records[1].calls[0].arguments == {"query": "printer \\ud800"}


def test_megabytes_of_argument_names_cannot_rotate_earlier_records_out(tmp_path: Path) -> None:
    """Calls the policy refuses, each carrying megabytes of argument names (three huge ones, or
    180,000 short ones; the SDK takes up to 4 MiB a request), against the default log (10 MB,
    then FILE.1 …): four such calls rolled the kept record out of the file."""
    arguments, log, _ = _gateway(tmp_path)
    long_names = json.dumps({letter * 1_100_000: "x" for letter in "abc"})
    many_names = json.dumps({f"n{i:07d}": "" for i in range(180_000)})
    with running_gateway(*arguments) as (url, _stderr):
        kept = _hostile_call(url, "note", '{"text": "the record to keep"}')
        assert not kept.get("isError"), kept
        for hostile in (long_names, many_names, long_names, long_names):
            refused = _hostile_call(url, "tickets__delete_ticket", hostile)
            assert refused["isError"], refused

    assert not Path(f"{log}.1").exists(), "nothing rotated"
    first, *refused_records = _records(log)
    assert [c.arguments for c in first.calls] == [{"text": "the record to keep"}]
    assert len(refused_records) == 4
    assert all(len(line) < 20_000 for line in log.read_bytes().splitlines()), "bounded"
    (call,) = refused_records[0].calls
    assert [name[:3] for name in call.arguments] == ["aaa", "bbb", "ccc"]
    assert all(n.endswith("… [1099744 more characters]") for n in call.arguments), call
    (call,) = refused_records[1].calls
    assert len(call.arguments) == 25, "24 shown, the rest counted"
    assert call.arguments["…"] == "179976 more arguments not shown"
