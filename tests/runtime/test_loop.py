"""The shared loop, driven by a scripted adapter and real tools through the real executor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from policy.vocabulary import ConfidenceLevel, DataSecurity, OutboundDataRestriction
from runtime.adapters.base import ToolCallingAdapter
from runtime.chat import Chat, ChatRequirementError, MemoryChatStore
from runtime.execution import ToolExecutionBlocked, ToolExecutionResult
from runtime.executor import TraceStatus
from runtime.loop import (
    NO_ANSWER,
    FinalAnswer,
    InvalidToolCallingResponse,
    LoopContext,
    LoopEvent,
    LoopLimits,
    SequentialToolCallingLoop,
    TextDeltaEvent,
    ToolCallFinished,
    ToolCallingLoop,
    ToolCallStarted,
    web_addresses_given_in,
)
from runtime.messages import Round, RoundCompleted, Source, SourceOrigin, StopReason, Usage
from tests.runtime._scripted_adapter import (
    EchoTool,
    ScriptedAdapter,
    call,
    completed,
    loop_context,
    text,
)

NO_FINAL_ANSWER = (
    "The model did not return a final answer after completing the available tool calls."
)
NO_ANSWER_AFTER_CALL = "The model completed the tool call but did not return a final answer."


_context = loop_context


async def _run(
    adapter: ScriptedAdapter, context: LoopContext, limits: LoopLimits | None = None
) -> list[LoopEvent]:
    return [event async for event in SequentialToolCallingLoop(limits).run(adapter, context)]


def _shown(events: Sequence[LoopEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDeltaEvent))


def _final(events: Sequence[LoopEvent]) -> FinalAnswer:
    assert isinstance(events[-1], FinalAnswer)
    assert sum(isinstance(e, FinalAnswer) for e in events) == 1
    return events[-1]


def _traces(events: Sequence[LoopEvent]) -> list[Any]:
    return [e.trace for e in events if isinstance(e, ToolCallFinished)]


# -- text ------------------------------------------------------------------------------------------


async def test_a_plain_answer_streams_and_ends() -> None:
    adapter = ScriptedAdapter([[text("Hello"), text(" there"), completed("Hello there")]])
    events = await _run(adapter, _context(EchoTool("lookup")))
    assert _shown(events) == "Hello there"
    final = _final(events)
    assert final.text == "Hello there" and not final.interrupted
    assert adapter.requests == [(None, True)]


async def test_a_preamble_reaches_the_user_although_its_round_only_called_a_tool() -> None:
    adapter = ScriptedAdapter(
        [
            [text("Let me look that up."), completed("Let me look that up.", call("c1", "lookup"))],
            [text("Found it."), completed("Found it.")],
        ]
    )
    events = await _run(adapter, _context(EchoTool("lookup")))
    assert isinstance(events[0], TextDeltaEvent) and events[0].text == "Let me look that up."
    assert _final(events).text == "Let me look that up.\n\nFound it."


async def test_every_text_is_written_exactly_once() -> None:
    adapter = ScriptedAdapter([[text("Once"), completed("Once")]])
    events = await _run(adapter, _context())
    assert _shown(events) == "Once"
    assert _final(events).text == "Once"


async def test_only_a_round_which_speaks_gets_a_separator() -> None:
    adapter = ScriptedAdapter(
        [
            [text("First."), completed("First.", call("c1", "lookup"))],
            [text("  "), completed("", call("c2", "lookup"))],
            [text("Second."), completed("Second.")],
        ]
    )
    events = await _run(adapter, _context(EchoTool("lookup")))
    assert _final(events).text == "First.  \n\nSecond."


async def test_a_first_round_which_speaks_gets_no_separator() -> None:
    adapter = ScriptedAdapter(
        [[completed("", call("c1", "lookup"))], [text("Answer."), completed("Answer.")]]
    )
    assert _final(await _run(adapter, _context(EchoTool("lookup")))).text == "Answer."


# -- endings ---------------------------------------------------------------------------------------


async def test_the_no_answer_message_only_appears_when_the_round_said_nothing() -> None:
    silent = ScriptedAdapter([[completed("", call("c1", "lookup"))], [completed("")]])
    events = await _run(silent, _context(EchoTool("lookup")))
    assert _final(events).text == NO_ANSWER_AFTER_CALL

    speaking = ScriptedAdapter(
        [[completed("", call("c1", "lookup"))], [text("Done."), completed("Done.")]]
    )
    assert (
        NO_ANSWER_AFTER_CALL not in _final(await _run(speaking, _context(EchoTool("lookup")))).text
    )


async def test_text_only_in_the_completed_round_counts_as_an_answer() -> None:
    adapter = ScriptedAdapter([[completed("", call("c1", "lookup"))], [completed("Quiet answer")]])
    events = await _run(adapter, _context(EchoTool("lookup")))
    assert NO_ANSWER_AFTER_CALL not in _final(events).text


async def test_a_first_round_without_text_or_calls_is_an_invalid_response() -> None:
    adapter = ScriptedAdapter([[completed("")]])
    with pytest.raises(InvalidToolCallingResponse, match="'Company OpenAI' returned an invalid"):
        await _run(adapter, _context(EchoTool("lookup")))


async def test_an_empty_reply_without_tools_offered_is_no_tool_calling_error() -> None:
    """No tool was sent, so an empty answer says so plainly instead of blaming tool calling."""
    adapter = ScriptedAdapter([[completed("")]])
    final = _final(await _run(adapter, _context()))
    assert final.text == NO_ANSWER
    assert not final.interrupted


async def test_a_round_which_never_completes_ends_quietly() -> None:
    adapter = ScriptedAdapter([[text("Partial ans")]])
    events = await _run(adapter, _context())
    final = _final(events)
    assert final.text == "Partial ans"
    assert final.interrupted


async def test_a_cancelled_stream_stops_the_loop_where_it_is() -> None:
    adapter = ScriptedAdapter(
        [[text("Looking."), completed("Looking.", call("c1", "lookup"))], [text("Half")]]
    )
    events = await _run(adapter, _context(EchoTool("lookup")))
    final = _final(events)
    assert final.text == "Looking.\n\nHalf"
    assert final.interrupted
    assert len(adapter.requests) == 2


async def test_cancelling_the_task_stops_the_tool_and_the_loop() -> None:
    started = asyncio.Event()

    class SlowTool(EchoTool):
        async def execute(self, arguments: Any, context: Any) -> ToolExecutionResult:
            started.set()
            await asyncio.sleep(3600)
            raise AssertionError("never reached")

    adapter = ScriptedAdapter([[completed("", call("c1", "slow"))], [completed("unused")]])
    task = asyncio.create_task(_run(adapter, _context(SlowTool("slow"))))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(adapter.requests) == 1
    assert adapter.results == []


async def test_a_call_without_an_id_ends_the_conversation() -> None:
    adapter = ScriptedAdapter(
        [
            [
                text("Trying."),
                completed(
                    "Trying.",
                    call("", "lookup"),
                    sources=(Source("S", "https://s.example/", SourceOrigin.LLM),),
                ),
            ],
            [completed("never asked")],
        ]
    )
    tool = EchoTool("lookup")
    events = await _run(adapter, _context(tool))
    final = _final(events)
    assert final.text == "Trying.\n\nThe tool call was invalid."
    assert [s.url for s in final.sources] == ["https://s.example/"]
    (trace,) = _traces(events)
    assert trace.status is TraceStatus.ERROR and trace.call_id == ""
    assert len(adapter.requests) == 1
    assert tool.arguments == []
    assert ("turn",) not in adapter.log


# -- recording -------------------------------------------------------------------------------------


async def test_the_models_turn_is_recorded_once_per_round_and_before_its_results() -> None:
    adapter = ScriptedAdapter(
        [
            [completed("", call("call-1", "lookup"), call("call-2", "lookup"))],
            [text("Both."), completed("Both.")],
        ]
    )
    await _run(adapter, _context(EchoTool("lookup")))
    kinds = [(entry[0], entry[1] if entry[0] == "result" else None) for entry in adapter.log]
    assert kinds == [
        ("round", None),
        ("turn", None),
        ("result", "call-1"),
        ("result", "call-2"),
        ("round", None),
    ]


async def test_several_calls_run_one_after_another() -> None:
    running: list[str] = []
    overlaps: list[bool] = []

    class Tracking(EchoTool):
        async def execute(self, arguments: Any, context: Any) -> ToolExecutionResult:
            overlaps.append(bool(running))
            running.append(context.call_id)
            await asyncio.sleep(0)
            running.remove(context.call_id)
            return ToolExecutionResult(text_content=context.call_id)

    adapter = ScriptedAdapter(
        [[completed("", *(call(f"c{i}", "t") for i in range(3)))], [completed("ok")]]
    )
    events = await _run(adapter, _context(Tracking("t")))
    assert overlaps == [False, False, False]
    assert [t.order for t in _traces(events)] == [1, 2, 3]


async def test_calls_are_announced_with_masked_arguments_then_traced() -> None:
    tool = EchoTool("mail", display_name="Mail", sensitive=frozenset({"to"}))
    adapter = ScriptedAdapter(
        [
            [completed("", call("c1", "mail", '{"to": "boss@example.com", "n": 1}'))],
            [completed("ok")],
        ]
    )
    events = await _run(adapter, _context(tool))
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert started == ToolCallStarted("c1", "mail", "Mail", {"to": "*****", "n": "1"}, round=1)
    assert events.index(started) < events.index(
        next(e for e in events if isinstance(e, ToolCallFinished))
    )


async def test_an_invalid_call_is_answered_as_an_error_and_counted() -> None:
    adapter = ScriptedAdapter(
        [[completed("", call("c1", "lookup", "{bad", valid=False))], [completed("Sorry.")]]
    )
    tool = EchoTool("lookup")
    events = await _run(adapter, _context(tool))
    assert adapter.results == [("result", "c1", "The tool call was invalid.", True)]
    (trace,) = _traces(events)
    assert (trace.tool_name, trace.order, trace.status) == (
        "Invalid tool call",
        1,
        TraceStatus.ERROR,
    )
    assert tool.arguments == []


async def test_blocked_and_failed_calls_count_as_errors_toward_the_model() -> None:
    def refuse(_arguments: Any) -> ToolExecutionResult:
        raise ToolExecutionBlocked("Not for this provider.")

    adapter = ScriptedAdapter(
        [[completed("", call("c1", "wiki"), call("c2", "unknown_tool"))], [completed("ok")]]
    )
    await _run(adapter, _context(EchoTool("wiki", refuse)))
    assert adapter.results == [
        ("result", "c1", "Not for this provider.", True),
        ("result", "c2", "Tool 'unknown_tool' is not available.", True),
    ]


# -- limits ----------------------------------------------------------------------------------------


def _calls_round(start: int, count: int) -> list[Any]:
    return [completed("", *(call(f"c{start + i}", "lookup") for i in range(count)))]


async def test_after_15_calls_the_next_round_offers_no_tools_and_asks_for_the_answer() -> None:
    rounds = [_calls_round(i, 1) for i in range(15)]
    rounds.append([text("Summary."), completed("Summary.", call("c99", "lookup"))])
    adapter = ScriptedAdapter(rounds)
    tool = EchoTool("lookup")
    events = await _run(adapter, _context(tool))
    instruction, include_tools = adapter.requests[-1]
    assert include_tools is False
    assert instruction is not None and "maximum of 15 tool calls has been reached" in instruction
    assert all(include for _, include in adapter.requests[:-1])
    assert len(tool.arguments) == 15
    assert _final(events).text.endswith("Summary.")
    assert NO_FINAL_ANSWER not in _final(events).text


async def test_the_limit_message_only_appears_when_the_last_round_said_nothing() -> None:
    rounds = [_calls_round(0, 15), [completed("")]]
    events = await _run(ScriptedAdapter(rounds), _context(EchoTool("lookup")))
    assert _final(events).text == NO_FINAL_ANSWER


async def test_the_limit_is_checked_again_for_every_call_of_a_round() -> None:
    adapter = ScriptedAdapter([_calls_round(0, 4), [completed("Answer.")]])
    tool = EchoTool("lookup")
    events = await _run(adapter, _context(tool), LoopLimits(max_tool_calls=2))
    assert len(tool.arguments) == 2
    assert [t.order for t in _traces(events)] == [1, 2]
    over = adapter.results[2:]
    assert [entry[1] for entry in over] == ["c2", "c3"]
    assert all("maximum of 2 tool calls" in entry[2] and entry[3] is False for entry in over)
    assert adapter.requests[-1][1] is False


async def test_the_character_budget_wins_over_the_call_count() -> None:
    big = EchoTool("big", lambda _a: ToolExecutionResult(text_content="x" * 50))
    adapter = ScriptedAdapter([_calls_round(0, 2), [completed("Answer.")]])
    adapter.rounds[0] = [completed("", call("c0", "big"), call("c1", "big"))]
    await _run(adapter, _context(big), LoopLimits(max_tool_calls=1, max_tool_result_characters=40))
    instruction = adapter.requests[-1][0]
    assert instruction is not None
    assert instruction.startswith("The maximum total of 40 characters across tool call results")


def test_limits_must_allow_something() -> None:
    with pytest.raises(ValueError, match="max_tool_calls=0"):
        LoopLimits(max_tool_calls=0)


# -- sources and usage -----------------------------------------------------------------------------


async def test_the_sources_arrive_although_the_final_text_no_longer_does() -> None:
    page = Source("Page", "https://page.example/", SourceOrigin.TOOL)
    cited = Source("Cited", "https://cited.example/", SourceOrigin.LLM)
    tool = EchoTool("read", lambda _a: ToolExecutionResult(text_content="page", sources=(page,)))
    adapter = ScriptedAdapter(
        [
            [completed("", call("c1", "read"), call("c2", "read"), sources=(cited,))],
            [text("Answer", sources=(cited,)), completed("Answer", sources=(cited,))],
        ]
    )
    events = await _run(adapter, _context(tool))
    assert _final(events).sources == (cited, page)


async def test_only_the_first_rounds_usage_reaches_the_answer() -> None:
    adapter = ScriptedAdapter(
        [
            [text("", usage=Usage(1200, None)), completed("", call("c1", "lookup"))],
            [
                text("Answer", usage=Usage(9800, 40)),
                text("", usage=Usage(9800, 45)),
                completed("Answer"),
            ],
        ]
    )
    events = await _run(adapter, _context(EchoTool("lookup")))
    assert _final(events).usage == Usage(1200, None)
    assert _final(events).text == "Answer"


async def test_a_later_rounds_usage_leaves_its_text_and_nothing_else() -> None:
    adapter = ScriptedAdapter(
        [
            [completed("", call("c1", "lookup"))],
            [text("Kept", usage=Usage(9800, 3)), text("", usage=Usage(9800, 9)), completed("Kept")],
        ]
    )
    events = await _run(adapter, _context(EchoTool("lookup")))
    assert [e.text for e in events if isinstance(e, TextDeltaEvent)] == ["Kept"]
    assert not _final(events).usage.is_known


# -- the chat --------------------------------------------------------------------------------------


async def test_what_a_result_demands_tightens_the_chat() -> None:
    demanding = ToolExecutionResult(
        text_content="data",
        required_provider_confidence=ConfidenceLevel.MEDIUM,
        required_data_security=DataSecurity.ALLOW_ANY,
        required_outbound_data_restriction=OutboundDataRestriction.ONLY_LINKS_FROM_CHAT,
    )
    chat = Chat.open("c", MemoryChatStore())
    adapter = ScriptedAdapter([[completed("", call("c1", "mail"))], [completed("ok")]])
    await _run(adapter, _context(EchoTool("mail", lambda _a: demanding), chat=chat))
    assert chat.required_provider_confidence is ConfidenceLevel.MEDIUM
    assert chat.required_data_security is DataSecurity.ALLOW_ANY
    assert chat.outbound_restriction is OutboundDataRestriction.ONLY_LINKS_FROM_CHAT


async def test_a_requirement_the_provider_no_longer_meets_stops_the_next_request() -> None:
    confidential = ToolExecutionResult(
        text_content="internal", required_provider_confidence=ConfidenceLevel.HIGH
    )
    adapter = ScriptedAdapter([[completed("", call("c1", "wiki"))], [completed("leak")]])
    context = _context(EchoTool("wiki", lambda _a: confidential), confidence=ConfidenceLevel.MEDIUM)
    with pytest.raises(ChatRequirementError, match="HIGH"):
        await _run(adapter, context)
    assert len(adapter.requests) == 1


async def test_a_provider_below_the_chat_requirement_gets_no_request_at_all() -> None:
    chat = Chat.open("c", MemoryChatStore())
    chat.require_data_security(DataSecurity.SELF_HOSTED)
    adapter = ScriptedAdapter([[completed("never")]])
    with pytest.raises(ChatRequirementError, match="self-hosted"):
        await _run(adapter, _context(chat=chat))
    assert adapter.requests == []


async def test_what_a_tool_returned_is_known_to_the_chat_afterwards() -> None:
    chat = Chat.open("c", MemoryChatStore())

    def respond(arguments: Any) -> ToolExecutionResult:
        return ToolExecutionResult(text_content="See https://found.example/report for details.")

    tool = EchoTool("search", respond)
    adapter = ScriptedAdapter(
        [
            [completed("", call("c1", "search", '{"query": "report"}'))],
            [completed("", call("c2", "search", '{"query": "again"}'))],
            [completed("Done.")],
        ]
    )
    context = _context(tool, chat=chat)
    await _run(adapter, context)
    seen = [c.given_web_addresses for c in tool.contexts]
    assert "https://found.example/report" in chat.known_web_addresses
    assert "https://found.example/report" not in seen[0]
    assert "https://found.example/report" in seen[1]


def test_the_addresses_given_at_the_start_are_read_from_the_prompt_and_messages() -> None:
    given = web_addresses_given_in(
        "Use https://Docs.Example.com/a.", "and <https://b.example/x#top>"
    )
    assert given == {"https://docs.example.com/a", "https://b.example/x"}


async def test_another_loop_drives_the_same_adapter() -> None:
    class TextOnlyLoop:
        """A stand-in harness: one round without tools, its text as the answer."""

        async def run(
            self, adapter: ToolCallingAdapter, context: LoopContext
        ) -> AsyncIterator[LoopEvent]:
            shown = []
            async for event in adapter.execute_round("Answer briefly.", False):
                if not isinstance(event, RoundCompleted):
                    shown.append(event.content)
                    yield TextDeltaEvent(event.content)
            yield FinalAnswer("".join(shown), (), Usage())

    loop: ToolCallingLoop = TextOnlyLoop()
    adapter = ScriptedAdapter([[text("Short."), completed("Short.")]])
    events = [event async for event in loop.run(adapter, _context())]
    assert _final(events).text == "Short."
    assert adapter.requests == [("Answer briefly.", False)]


@pytest.mark.parametrize(
    "stop", [StopReason.MAX_TOKENS, StopReason.CONTENT_FILTER, StopReason.REFUSAL]
)
async def test_an_empty_first_round_that_stopped_early_is_no_tool_calling_error(
    stop: StopReason,
) -> None:
    """Tools were offered, but the provider said why it stopped (a reasoning model that spent its
    output limit thinking, a filter, a refusal): the answer says so, the stop reason is kept."""
    adapter = ScriptedAdapter([[RoundCompleted(Round("", (), (), Usage(), stop))]])
    final = _final(await _run(adapter, _context(EchoTool("lookup"))))
    assert (final.text, final.stop_reason, final.interrupted) == (NO_ANSWER, stop, False)
