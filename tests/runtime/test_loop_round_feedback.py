"""What the loop tells an app beyond text: the round's calls before they run, why the answer
ended, a paused turn continued, and the texts really sent for token counting."""

from __future__ import annotations

from policy.vocabulary import ProviderKind
from runtime.loop import (
    MAX_PAUSED_CONTINUATIONS,
    FinalAnswer,
    LoopContext,
    LoopEvent,
    SequentialToolCallingLoop,
    TextDeltaEvent,
    ToolCallStarted,
    ToolRoundStarted,
)
from runtime.messages import Round, RoundCompleted, StopReason, Usage
from tests.runtime._scripted_adapter import (
    EchoTool,
    ScriptedAdapter,
    call,
    completed,
    loop_context,
    text,
)


def _context(*tools: EchoTool) -> LoopContext:
    return loop_context(
        *tools,
        provider_kind=ProviderKind.ANTHROPIC,
        provider_name="Company Claude",
        model="claude-test",
    )


async def _run(adapter: ScriptedAdapter, context: LoopContext) -> list[LoopEvent]:
    return [event async for event in SequentialToolCallingLoop().run(adapter, context)]


def _ended(text_output: str, stop: StopReason) -> RoundCompleted:
    return RoundCompleted(Round(text_output, (), (), Usage(), stop))


async def test_a_round_of_several_calls_is_announced_once_before_the_first_runs() -> None:
    search = EchoTool("web_search", display_name="Web search")
    read = EchoTool("read_web_page", display_name="Read web page")
    adapter = ScriptedAdapter(
        [
            [
                completed(
                    "",
                    call("c1", "web_search"),
                    call("c2", "read_web_page"),
                    call("c3", "web_search"),
                )
            ],
            [completed("done")],
        ]
    )
    events = await _run(adapter, _context(search, read))
    rounds = [e for e in events if isinstance(e, ToolRoundStarted)]
    assert len(rounds) == 1
    started = rounds[0]
    assert started.call_ids == ("c1", "c2", "c3")
    assert started.tool_names == ("web_search", "read_web_page", "web_search")
    assert started.status_line == "Using tools: Web search, Read web page"
    first_call = next(e for e in events if isinstance(e, ToolCallStarted))
    assert events.index(started) < events.index(first_call)


async def test_a_single_call_and_an_unknown_tool_read_plainly() -> None:
    adapter = ScriptedAdapter([[completed("", call("c1", "nowhere"))], [completed("ok")]])
    events = await _run(adapter, _context(EchoTool("t")))
    started = next(e for e in events if isinstance(e, ToolRoundStarted))
    assert started.status_line == "Using tool: nowhere"


async def test_a_round_without_calls_announces_nothing() -> None:
    events = await _run(ScriptedAdapter([[text("Hi"), completed("Hi")]]), _context(EchoTool("t")))
    assert not any(isinstance(e, ToolRoundStarted) for e in events)


async def test_a_cut_answer_says_so_in_the_final_answer() -> None:
    for stop in (StopReason.MAX_TOKENS, StopReason.CONTENT_FILTER, StopReason.REFUSAL):
        adapter = ScriptedAdapter([[text("Partial"), _ended("Partial", stop)]])
        events = await _run(adapter, _context(EchoTool("t")))
        final = events[-1]
        assert isinstance(final, FinalAnswer)
        assert (final.text, final.stop_reason, final.interrupted) == ("Partial", stop, False)


async def test_a_complete_answer_is_completed() -> None:
    events = await _run(ScriptedAdapter([[text("Hi"), completed("Hi")]]), _context())
    assert isinstance(events[-1], FinalAnswer)
    assert events[-1].stop_reason is StopReason.COMPLETED


async def test_a_paused_turn_is_sent_back_and_continued_as_one_answer() -> None:
    adapter = ScriptedAdapter(
        [
            [text("Searching. "), _ended("Searching. ", StopReason.PAUSED)],
            [text("Found it."), _ended("Found it.", StopReason.COMPLETED)],
        ]
    )
    events = await _run(adapter, _context(EchoTool("t")))
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert final.stop_reason is StopReason.COMPLETED
    assert "".join(e.text for e in events if isinstance(e, TextDeltaEvent)) == final.text
    assert final.text == "Searching. \n\nFound it."
    assert [entry[0] for entry in adapter.log] == ["round", "turn", "round"]
    assert adapter.requests[1] == (None, True)


async def test_a_turn_that_keeps_pausing_ends_as_paused() -> None:
    rounds = [
        [text(f"step {n} "), _ended(f"step {n} ", StopReason.PAUSED)]
        for n in range(MAX_PAUSED_CONTINUATIONS + 1)
    ]
    adapter = ScriptedAdapter(rounds)
    events = await _run(adapter, _context())
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert final.stop_reason is StopReason.PAUSED
    assert sum(entry[0] == "round" for entry in adapter.log) == MAX_PAUSED_CONTINUATIONS + 1
    assert not adapter.rounds


async def test_the_final_answer_carries_the_texts_recorded_for_later_rounds() -> None:
    adapter = ScriptedAdapter([[completed("", call("c1", "t", '{"q": 1}'))], [completed("ok")]])
    events = await _run(adapter, _context(EchoTool("t")))
    final = events[-1]
    assert isinstance(final, FinalAnswer)
    assert final.request_texts == tuple(adapter.recorded_request_texts)
    assert any("result" in t and "c1" in t for t in final.request_texts)
