"""The flow rule through a real `respond` against the loopback provider (issue 24): what reached
the model is held by the chat (an empty result brings nothing), and under BLOCK each call is
checked again before it runs, so a result earlier in the same response can stop a later call."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from policy import Effect, load_policy
from policy.decision_record import DecisionRecord
from policy.definitions import ToolDefinition, ToolFunction
from policy.tools import DefinedTool
from policy.vocabulary import ToolOutboundData
from runtime import Chat, ChatMessage, ChatRuntime, Role
from runtime.chat import SqliteChatStore
from runtime.execution import ToolExecutionContext, ToolExecutionResult
from runtime.executor import TraceStatus
from runtime.loop import ToolCallFinished
from runtime.messages import Source
from tests.e2e._kit import ORGANIZATION, VLLM_ID, client, organization_provider
from tests.policy.test_plugins import write_plugin
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply


class _AppTool(DefinedTool):
    """An app's tool with declared effects that answers `text` citing `url`."""

    def __init__(self, tool_id: str, effects: tuple[str, ...], text: str, url: str = "") -> None:
        super().__init__(
            ToolDefinition(
                id=tool_id,
                implementation_key=tool_id,
                effects=effects,
                function=ToolFunction(name=tool_id, description_for_llm=f"{tool_id}."),
            ),
            outbound_data=ToolOutboundData.NONE,
        )
        self.text, self.url = text, url
        self.runs = 0

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        self.runs += 1
        sources = (Source(self.definition.id, self.url),) if self.url else ()
        return ToolExecutionResult(text_content=self.text, sources=sources)


def _policy(tmp_path: Path, rule: str, *tools: _AppTool) -> Any:
    settings = f'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "{rule}"'
    rule_plugin = write_plugin(tmp_path / "rule", settings, PRIORITY="200")  # over the example's
    policy = load_policy(org=[ORGANIZATION, rule_plugin.parent], tools=tools)
    assert not policy.errors, policy.errors
    return policy


async def _respond(
    policy: Any, chat: Chat, server: ProviderServer, *calls: str, decision_log: Any = None
) -> list[Any]:
    server.queue(
        Reply([chat_call(i, f"call_{name}", name, "{}") for i, name in enumerate(calls)]),
        Reply(chat_text("Done.")),
    )
    vllm = organization_provider(policy, VLLM_ID, server)
    events: list[Any] = []
    runtime = ChatRuntime(policy, decision_log=decision_log)
    async with client(vllm) as provider_client, runtime:
        async for event in runtime.respond(
            chat,
            vllm,
            [ChatMessage(Role.USER, "Go.")],
            selected_tool_ids=list(dict.fromkeys(calls)),
            client=provider_client,
        ):
            events.append(event)
    return [e.outcome for e in events if isinstance(e, ToolCallFinished)]


async def test_what_reached_the_model_is_held_and_an_empty_result_brings_nothing(
    chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/a?k=v"
    )
    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "   ")
    policy = _policy(tmp_path, "OFF", page, hr)

    await _respond(policy, chat, server, "fetch_page", "read_hr")

    held = chat.flow_holdings
    assert held.effects == {Effect.UNTRUSTED_CONTENT}  # read_hr's empty result brought nothing
    (untrusted,) = held.brought(Effect.UNTRUSTED_CONTENT)
    assert (untrusted.tool_id, untrusted.call_id) == ("fetch_page", "call_fetch_page")
    assert untrusted.source.startswith("https://x.example/a") and "k=v" not in untrusted.source
    stored = Chat.open(chat.id, SqliteChatStore(tmp_path / "chats.sqlite3"))
    assert stored.flow_holdings == held


async def test_under_block_the_second_call_is_checked_again_after_the_first_result(
    chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    policy = _policy(tmp_path, "BLOCK", hr, page)
    assert policy.registry.flow_conflict("fetch_page", chat.flow_holdings) is None  # offered

    first, second = await _respond(policy, chat, server, "read_hr", "fetch_page")

    assert first.trace.status is TraceStatus.SUCCESS
    assert second.trace.status is TraceStatus.BLOCKED and page.runs == 0
    assert "DataTools.FlowRule BLOCK" in second.content
    assert "PRIVATE_DATA from read_hr (read_hr, call call_read_hr)" in second.content
    assert "injected text could make it carry private data out" in second.content
    assert chat.flow_holdings.effects == {Effect.PRIVATE_DATA}


async def test_under_off_the_same_calls_both_run(
    chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    policy = _policy(tmp_path, "OFF", hr, page)

    first, second = await _respond(policy, chat, server, "read_hr", "fetch_page")

    assert (first.trace.status, second.trace.status) == (TraceStatus.SUCCESS, TraceStatus.SUCCESS)
    assert chat.flow_holdings.effects == {Effect.PRIVATE_DATA, Effect.UNTRUSTED_CONTENT}


async def test_under_block_a_tool_in_conflict_with_what_the_chat_holds_is_not_offered(
    chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    policy = _policy(tmp_path, "BLOCK", hr, page)
    await _respond(policy, chat, server, "read_hr")
    server.requests.clear()

    await _respond(policy, chat, server, "read_hr", "fetch_page")

    offered = [tool["function"]["name"] for tool in server.bodies[0]["tools"]]
    assert "read_hr" in offered and "fetch_page" not in offered


async def test_the_decision_log_records_what_the_flow_rule_refused_and_why(
    chat: Chat, server: ProviderServer, tmp_path: Path
) -> None:
    """A call refused before it runs is a BLOCKED call naming the rule and what the chat held; a
    tool not offered afterwards is left out with reason FLOW_CONFLICT, the rule and what brought
    the holding; `policy log summary` counts it."""
    from runtime.decision_log import CallbackSink, JsonLinesSink
    from tests.servers.cli_runner import run_policy

    hr = _AppTool("read_hr", ("PRIVATE_DATA",), "Salaries: Ann 5000.")
    page = _AppTool(
        "fetch_page", ("UNTRUSTED_CONTENT", "SENDS_OUT"), "A page.", "https://x.example/"
    )
    policy = _policy(tmp_path, "BLOCK", hr, page)
    kept: list[Any] = []
    await _respond(
        policy, chat, server, "read_hr", "fetch_page", decision_log=CallbackSink(kept.append)
    )
    log = tmp_path / "decisions.jsonl"
    await _respond(policy, chat, server, "read_hr", "fetch_page", decision_log=JsonLinesSink(log))

    refused = kept[0].calls[1]
    assert (refused.tool_id, refused.status) == ("fetch_page", "BLOCKED")
    assert "DataTools.FlowRule BLOCK" in refused.status_message
    assert "PRIVATE_DATA from read_hr" in refused.status_message
    left_out = {entry.tool_id: entry for entry in kept[0].left_out}
    assert "fetch_page" not in left_out, "offered when the response started"
    second = DecisionRecord.model_validate_json(log.read_text(encoding="utf-8").splitlines()[0])
    (entry,) = [e for e in second.left_out if e.tool_id == "fetch_page"]
    assert (entry.reason, entry.check) == ("FLOW_CONFLICT", "FLOW_RULE")
    assert "DataTools.FlowRule is BLOCK" in entry.detail
    assert any(
        "PRIVATE_DATA from read_hr (read_hr, call call_read_hr)" in e for e in entry.evidence
    )
    summary = run_policy(["log", "summary", str(log)], cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    assert "fetch_page: FLOW_CONFLICT" in summary.stdout
