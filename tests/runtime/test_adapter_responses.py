"""Responses adapter and its stream accumulator, over real HTTP and SSE on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.adapters.responses import ResponsesAccumulator, ResponsesAdapter
from runtime.messages import SourceOrigin
from runtime.providers import OPENAI_RESPONSES, ProviderUnavailable
from tests.servers.provider_scripts import (
    responses_call,
    responses_completed,
    responses_item_done,
    responses_message,
    responses_text,
)
from tests.servers.provider_server import ProviderServer, Reply
from tests.servers.provider_testkit import (
    adapter_for,
    run_round,
)

# Written the way the API writes it: spacing, escapes and key order we would never produce.
REASONING_ITEM = (
    '{ "id" : "rs_1", "type": "reasoning", "summary": [],'
    ' "encrypted_content": "gAAAA\\u002b\\/x==", "note": "\\u00e9t\\u00e9" }'
)


def _adapter(server: ProviderServer, **options: Any) -> ResponsesAdapter:
    return adapter_for(ResponsesAdapter, OPENAI_RESPONSES, server.base_url, "gpt-test", **options)


def _completed_raw(items_json: list[str], input_tokens: int | None = None) -> str:
    usage = f',"usage":{{"input_tokens":{input_tokens},"output_tokens":3}}' if input_tokens else ""
    return (
        '{"type":"response.completed","response":{"id":"resp_1","output":['
        + ",".join(items_json)
        + "]"
        + usage
        + "}}"
    )


# -- adapter -------------------------------------------------------------------------------------


async def test_every_round_passes_on_what_its_request_cost(server: ProviderServer) -> None:
    call = responses_call("call_1", "web_search", '{"query":"x"}')
    server.queue(
        Reply([responses_completed([call], input_tokens=1200)]),
        Reply([*responses_text("Done."), responses_completed([responses_message("Done.")], 9800)]),
    )
    adapter = _adapter(server)
    first = await run_round(adapter)
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "result")
    second = await run_round(adapter)
    assert first.usages == [1200] and second.usages == [9800]
    assert second.text == "Done."
    assert second.round is not None and second.round.text_output == "Done."


async def test_a_round_with_a_hosted_web_search_passes_on_nothing_but_its_text(
    server: ProviderServer,
) -> None:
    hosted = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    server.queue(
        Reply(
            [
                *responses_text("Found."),
                responses_completed([hosted, responses_message("Found.")], 4300),
            ]
        )
    )
    outcome = await run_round(_adapter(server))
    assert outcome.usages == []
    assert outcome.text == "Found."
    assert outcome.round is not None and not outcome.round.usage.is_known


async def test_the_request_is_stateless_and_offers_the_flat_tools(server: ProviderServer) -> None:
    server.queue(Reply([responses_completed([responses_message("Hi")])]))
    await run_round(_adapter(server, extra_body={"reasoning": {"effort": "low"}, "store": True}))
    request = server.requests[0]
    body = request.json
    assert request.path == "/v1/responses"
    assert body["store"] is False and body["stream"] is True
    assert body["reasoning"] == {"effort": "low"}
    assert body["tools"] == [
        {
            "type": "function",
            "name": "web_search",
            "description": "Search the web.",
            "parameters": body["tools"][0]["parameters"],
            "strict": True,
        }
    ]
    assert body["tools"][0]["parameters"]["required"] == ["query", "page"]
    assert "parallel_tool_calls" not in body and "tool_choice" not in body
    assert body["input"][0] == {"role": "system", "content": "You are helpful."}


async def test_a_final_round_sends_an_empty_tool_list_and_the_instruction(
    server: ProviderServer,
) -> None:
    server.queue(Reply([responses_completed([responses_message("Hi")])]))
    await run_round(_adapter(server), "Answer now.", include_tools=False)
    body = server.bodies[0]
    assert body["tools"] == []
    assert body["input"][0]["content"] == "You are helpful.\n\nAnswer now."


async def test_a_hosted_tool_named_like_a_local_function_is_dropped(
    server: ProviderServer,
) -> None:
    server.queue(Reply([responses_completed([responses_message("Hi")])]))
    extras = {
        "tools": [
            {"type": "web_search"},
            {"type": "code_interpreter", "container": {"type": "auto"}},
        ]
    }
    await run_round(_adapter(server, extra_body=extras))
    types = [t["type"] for t in server.bodies[0]["tools"]]
    assert types == ["code_interpreter", "function"]


async def test_the_reasoning_item_goes_back_word_for_word(server: ProviderServer) -> None:
    call_json = '{"type":"function_call","id":"fc_1","call_id":"call_1","name":"web_search","arguments":"{\\"query\\":\\"x\\"}"}'
    server.queue(
        Reply([_completed_raw([REASONING_ITEM, call_json], 50)]),
        Reply([responses_completed([responses_message("ok")])]),
    )
    adapter = _adapter(server)
    outcome = await run_round(adapter)
    assert outcome.round is not None
    assert outcome.round.calls[0].call_id == "call_1"
    adapter.record_assistant_turn()
    adapter.record_tool_result("call_1", "result", is_error=True)
    await run_round(adapter)
    sent = server.requests[1].body.decode()
    assert REASONING_ITEM + "," + call_json in sent
    assert server.bodies[1]["input"][-1] == {
        "type": "function_call_output",
        "call_id": "call_1",
        "output": "result",
    }
    assert adapter.recorded_request_texts == (REASONING_ITEM, call_json, "result")


async def test_a_call_without_call_id_is_passed_on_with_an_empty_id(
    server: ProviderServer,
) -> None:
    server.queue(Reply([responses_completed([responses_call(None, "web_search", "{}")])]))
    outcome = await run_round(_adapter(server))
    assert outcome.round is not None
    (call,) = outcome.round.calls
    assert call.call_id == "" and call.is_valid


async def test_invalid_calls_are_carried_through(server: ProviderServer) -> None:
    calls = [responses_call("a", "", "{}"), responses_call("b", "web_search", "[1]")]
    server.queue(Reply([responses_completed(calls)]))
    outcome = await run_round(_adapter(server))
    assert outcome.round is not None
    assert [(c.call_id, c.is_valid) for c in outcome.round.calls] == [("a", False), ("b", False)]


async def test_a_failed_response_is_a_provider_error(server: ProviderServer) -> None:
    failed = {
        "type": "response.failed",
        "response": {"error": {"code": "server_error", "message": "The model crashed."}},
    }
    server.queue(Reply([*responses_text("Par"), failed]))
    with pytest.raises(ProviderUnavailable, match=r"The model crashed\. \(code server_error\)"):
        await run_round(_adapter(server))


async def test_an_error_event_names_its_code(server: ProviderServer) -> None:
    error = {
        "type": "error",
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model.",
        "param": "input",
        "sequence_number": 2,
    }
    server.queue(Reply([*responses_text("Par"), error]))
    with pytest.raises(ProviderUnavailable) as caught:
        await run_round(_adapter(server))
    assert str(caught.value).endswith(
        "Your input exceeds the context window of this model. (code context_length_exceeded)"
    )


async def test_a_stream_cut_off_before_anything_is_a_failed_round(server: ProviderServer) -> None:
    server.queue(Reply(responses_text("Hal")))
    outcome = await run_round(_adapter(server))
    assert outcome.text == "Hal" and outcome.round is None


# -- accumulator ---------------------------------------------------------------------------------


def _feed(accumulator: ResponsesAccumulator, *events: object) -> list[object]:
    return [accumulator.feed(e if isinstance(e, str) else json.dumps(e)) for e in events]


def test_the_completed_event_carries_the_whole_round() -> None:
    accumulator = ResponsesAccumulator()
    items = [responses_message("Hello"), responses_call("c", "web_search", '{"query":"q"}')]
    _feed(accumulator, responses_completed(items, 10))
    response = accumulator.build()
    assert response is not None
    assert [o.item["type"] for o in response.output] == ["message", "function_call"]


def test_the_text_is_shown_while_it_is_being_written() -> None:
    deltas = _feed(ResponsesAccumulator(), *responses_text("Hel", "lo"))
    assert [d.content for d in deltas] == ["Hel", "lo"]  # type: ignore[attr-defined]


def test_an_announced_source_travels_with_its_line() -> None:
    annotation = {
        "type": "response.output_text.annotation.added",
        "annotation": {"type": "url_citation", "title": "Docs", "url": "https://docs.python.org"},
    }
    (delta,) = _feed(ResponsesAccumulator(), annotation)
    assert delta is not None
    assert [(s.title, s.url, s.origin) for s in delta.sources] == [  # type: ignore[attr-defined]
        ("Docs", "https://docs.python.org", SourceOrigin.LLM)
    ]


def test_sources_of_the_round_are_its_url_citations_with_title_and_url() -> None:
    from runtime.adapters.responses import round_of

    annotations = [
        {"type": "url_citation", "title": "A", "url": "https://a.example"},
        {"type": "url_citation", "title": " ", "url": "https://b.example"},
        {"type": "file_citation", "file_id": "f"},
    ]
    accumulator = ResponsesAccumulator()
    _feed(accumulator, responses_completed([responses_message("x", annotations)]))
    response = accumulator.build()
    assert response is not None
    assert [s.url for s in round_of(response).sources] == ["https://a.example"]


def test_a_refusal_counts_as_text() -> None:
    from runtime.adapters.responses import round_of

    refusal = {"type": "message", "content": [{"type": "refusal", "refusal": "I can't."}]}
    accumulator = ResponsesAccumulator()
    _feed(accumulator, responses_completed([refusal]))
    response = accumulator.build()
    assert response is not None and round_of(response).text_output == "I can't."


def test_a_gateway_without_a_completed_event_still_gets_a_round() -> None:
    accumulator = ResponsesAccumulator()
    _feed(
        accumulator,
        responses_item_done(1, responses_call("c", "web_search", "{}")),
        responses_item_done(0, responses_message("Hi")),
    )
    response = accumulator.build()
    assert response is not None
    assert [o.item["type"] for o in response.output] == ["message", "function_call"]


def test_the_completed_event_wins_over_the_collected_items() -> None:
    accumulator = ResponsesAccumulator()
    _feed(
        accumulator,
        responses_item_done(0, responses_message("draft")),
        responses_completed([responses_message("final")]),
    )
    response = accumulator.build()
    assert response is not None
    assert response.output[0].item["content"][0]["text"] == "final"


def test_the_completed_event_states_what_the_request_cost() -> None:
    accumulator = ResponsesAccumulator()
    (delta,) = _feed(accumulator, responses_completed([responses_message("x")], 2679))
    assert delta is not None and delta.usage.input_tokens == 2679  # type: ignore[attr-defined]
    response = accumulator.build()
    assert response is not None and response.usage.input_tokens == 2679


def test_a_round_put_back_together_from_its_items_states_no_cost() -> None:
    accumulator = ResponsesAccumulator()
    _feed(accumulator, responses_item_done(0, responses_message("x")))
    response = accumulator.build()
    assert response is not None and not response.usage.is_known


def test_a_done_item_keeps_its_raw_text() -> None:
    accumulator = ResponsesAccumulator()
    accumulator.feed(
        '{"type":"response.output_item.done","output_index":0,"item":' + REASONING_ITEM + "}"
    )
    response = accumulator.build()
    assert response is not None and response.output[0].raw_json == REASONING_ITEM


def test_a_stream_which_said_nothing_is_a_failed_round() -> None:
    accumulator = ResponsesAccumulator()
    _feed(accumulator, "garbage", '{"type":"response.created"}', *responses_text("x"))
    assert accumulator.build() is None
