"""The executor: one call in, one outcome out — with the right status, trace and demands."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from policy.definitions import is_valid_function_name
from policy.provider_facts import ProviderFacts
from policy.tools import RequestExtras
from policy.vocabulary import (
    ConfidenceLevel,
    DataSecurity,
    OutboundDataRestriction,
    ProviderKind,
    ToolOutboundData,
)
from runtime.arguments import ArgumentReader
from runtime.chat import Chat, MemoryChatStore
from runtime.execution import (
    ToolExecutionBlocked,
    ToolExecutionContext,
    ToolExecutionResult,
    ToolServices,
)
from runtime.executor import (
    ToolCallOutcome,
    ToolExecutor,
    TraceStatus,
    invalid_call_outcome,
)
from runtime.loop import LoopContext
from runtime.messages import RequestedCall, Source, SourceOrigin
from runtime.web.guard import PromptInjectionGuard
from runtime.web.injection_filter import StructuralInjectionFilter
from tests.runtime._scripted_adapter import EchoTool

DEMANDING = ToolExecutionResult(
    text_content="secret plans",
    sources=(Source("Plan", "https://wiki.example/plan", SourceOrigin.TOOL),),
    required_provider_confidence=ConfidenceLevel.HIGH,
    required_data_security=DataSecurity.SELF_HOSTED,
    required_outbound_data_restriction=OutboundDataRestriction.ONLY_LINKS_FROM_CHAT,
)


def _chat() -> Chat:
    return Chat.open("chat-1", MemoryChatStore())


async def _run(
    tool: EchoTool | None,
    arguments: str = "{}",
    *,
    name: str | None = None,
    chat: Chat | None = None,
    executor: ToolExecutor | None = None,
    given: frozenset[str] = frozenset(),
    call_id: str = "call-1",
) -> ToolCallOutcome:
    runnable = [tool.runnable()] if tool else []
    call = RequestedCall(
        call_id, name or (tool.definition.function.name if tool else "x"), arguments
    )
    return await (executor or ToolExecutor()).execute(
        call,
        runnable,
        order=3,
        chat=chat or _chat(),
        provider=ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.MEDIUM),
        given_web_addresses=given,
    )


def _raise(error: BaseException) -> Any:
    def respond(_arguments: Any) -> Any:
        raise error

    return respond


async def test_a_successful_call_reaches_the_model_and_the_trace() -> None:
    tool = EchoTool("lookup", lambda a: ToolExecutionResult(json_content={"hit": a["q"]}))
    outcome = await _run(tool, '{"q": "Größe <&>", "n": 2}')
    assert outcome.content == '{"hit":"Größe <&>"}'
    trace = outcome.trace
    assert (trace.order, trace.tool_id, trace.tool_name, trace.call_id) == (
        3,
        "lookup",
        "Lookup",
        "call-1",
    )
    assert trace.status is TraceStatus.SUCCESS and trace.was_executed
    assert trace.arguments == {"q": "Größe <&>", "n": "2"}
    assert trace.result == ""
    assert trace.json_result == {"hit": "Größe <&>"}


async def test_what_a_result_demands_reaches_the_loop() -> None:
    outcome = await _run(EchoTool("wiki", lambda _a: DEMANDING))
    assert outcome.required_provider_confidence is ConfidenceLevel.HIGH
    assert outcome.required_data_security is DataSecurity.SELF_HOSTED
    assert (
        outcome.required_outbound_data_restriction is OutboundDataRestriction.ONLY_LINKS_FROM_CHAT
    )
    assert outcome.sources == DEMANDING.sources
    assert outcome.trace.result == "secret plans"


async def test_the_tool_sees_the_chat_of_the_call() -> None:
    chat = _chat()
    chat.require_outbound_data_restriction(OutboundDataRestriction.ONLY_LINKS_FROM_CHAT, "inbox")
    chat.add_known_web_addresses(["https://known.example/"])
    tool = EchoTool("t", enforces=True, outbound_data=ToolOutboundData.MODEL_CHOSEN_ADDRESSES)
    guard = PromptInjectionGuard(StructuralInjectionFilter())
    executor = ToolExecutor(
        settings_for=lambda tool_id: {"owner": tool_id}, services=ToolServices(guard=guard)
    )
    await _run(tool, chat=chat, executor=executor, given=frozenset({"https://given.example/"}))
    context = tool.contexts[0]
    assert context.services.chat is chat
    assert context.services.guard is guard
    assert context.chat_id == "chat-1"
    assert context.outbound_restriction is OutboundDataRestriction.ONLY_LINKS_FROM_CHAT
    assert context.given_web_addresses == {"https://given.example/", "https://known.example/"}
    assert context.settings == {"owner": "t"}
    assert context.provider == ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.MEDIUM)
    assert context.call_id == "call-1"
    assert context.offered_tool_names == {tool.definition.function.name}


@pytest.mark.parametrize("blank", ["", "  \n"])
async def test_a_call_with_blank_arguments_runs_with_none(blank: str) -> None:
    tool = EchoTool("clock", lambda a: ToolExecutionResult(json_content={"given": a}))
    outcome = await _run(tool, blank)
    assert outcome.trace.status is TraceStatus.SUCCESS
    assert outcome.content == '{"given":{}}'


async def test_arguments_that_are_no_object_fail_without_running() -> None:
    ran: list[Any] = []
    tool = EchoTool("clock", lambda a: ran.append(a) or ToolExecutionResult(text_content="x"))
    outcome = await _run(tool, "[1]")
    assert outcome.trace.status is TraceStatus.ERROR and not ran
    assert outcome.content == "Tool execution failed: The arguments must be a JSON object."


async def test_an_unknown_tool_is_blocked_and_named() -> None:
    outcome = await _run(None, '{"a": 1}', name="delete_everything")
    assert outcome.content == "Tool 'delete_everything' is not available."
    trace = outcome.trace
    assert trace.status is TraceStatus.BLOCKED and not trace.was_executed
    assert trace.tool_id == trace.tool_name == "delete_everything"
    assert trace.status_message == "Tool is not available in the current context."
    assert trace.result == outcome.content
    assert trace.arguments == {"a": "*****"}  # nobody knows which of its arguments are secret


async def test_the_name_must_match_exactly() -> None:
    outcome = await _run(EchoTool("lookup"), name="Lookup")
    assert outcome.trace.status is TraceStatus.BLOCKED


async def test_a_blocked_call_demands_nothing() -> None:
    tool = EchoTool("wiki", _raise(ToolExecutionBlocked("Only HIGH providers may read the wiki.")))
    outcome = await _run(tool)
    assert outcome.content == "Only HIGH providers may read the wiki."
    assert outcome.trace.status is TraceStatus.BLOCKED
    assert outcome.trace.status_message == outcome.trace.result == outcome.content
    _assert_demands_nothing(outcome)


async def test_a_failed_call_demands_nothing() -> None:
    outcome = await _run(EchoTool("wiki", _raise(RuntimeError("the wiki answered 502"))))
    assert outcome.content == "Tool execution failed: the wiki answered 502"
    assert outcome.trace.status is TraceStatus.ERROR
    assert outcome.trace.status_message == outcome.trace.result == outcome.content
    _assert_demands_nothing(outcome)


async def test_settings_which_cannot_be_loaded_fail_the_call_only() -> None:
    def broken(_tool_id: str) -> dict[str, str]:
        raise LookupError("the secret store is locked")

    tool = EchoTool("t")
    outcome = await _run(tool, executor=ToolExecutor(settings_for=broken))
    assert outcome.content == "Tool execution failed: the secret store is locked"
    assert outcome.trace.status is TraceStatus.ERROR
    assert tool.arguments == []


async def test_a_tool_which_returns_no_result_fails() -> None:
    outcome = await _run(EchoTool("t", lambda _a: "plain text"))
    assert outcome.trace.status is TraceStatus.ERROR
    assert outcome.content == "Tool execution failed: the tool returned str, not a result"


async def test_an_argument_refusal_reaches_the_model_as_a_failure() -> None:
    def respond(arguments: Any) -> ToolExecutionResult:
        ArgumentReader(arguments).optional_positive_int("page", "to get the first page")
        return ToolExecutionResult(text_content="never")

    outcome = await _run(EchoTool("search", respond), '{"page": 0}')
    assert outcome.content == (
        "Tool execution failed: Argument 'page' must be a positive integer, but was 0. "
        "Leave it out to get the first page."
    )
    assert outcome.trace.status is TraceStatus.ERROR


@pytest.mark.parametrize("arguments", ["", "   "])
async def test_blank_arguments_count_as_an_empty_object(arguments: str) -> None:
    tool = EchoTool("t")
    outcome = await _run(tool, arguments)
    assert outcome.trace.status is TraceStatus.SUCCESS
    assert tool.arguments == [{}]


@pytest.mark.parametrize("arguments", ["[1]", "{broken", '"text"'])
async def test_arguments_which_are_no_object_fail_without_running_the_tool(arguments: str) -> None:
    tool = EchoTool("t")
    outcome = await _run(tool, arguments)
    assert outcome.trace.status is TraceStatus.ERROR
    assert outcome.content.startswith("Tool execution failed: ")
    assert not outcome.trace.was_executed
    assert tool.arguments == []


async def test_a_lone_surrogate_is_refused_before_the_tool_runs_and_ids_are_logged_bounded(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A provider's call id is the provider's text: a log line shows at most 256 characters."""
    caplog.set_level(logging.DEBUG)
    tool = EchoTool("t")
    outcome = await _run(tool, '{"q": ["ok", "\\ud800"]}', call_id="c" * 100_000)
    assert tool.arguments == []
    assert (outcome.trace.status, outcome.trace.was_executed) == (TraceStatus.ERROR, False)
    assert outcome.content.startswith("Tool execution failed: Argument 'q' holds a lone surrogate")
    assert outcome.trace.arguments == {"q": '["ok", "\\ud800"]'}, "escaped in the trace"
    assert [len(r.getMessage()) < 400 for r in caplog.records] == [True, True]


async def test_sensitive_arguments_are_masked_and_never_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    tool = EchoTool("mail", sensitive=frozenset({"recipient"}))
    outcome = await _run(tool, '{"recipient": "boss@example.com", "subject": "Hi", "n": [1]}')
    assert outcome.trace.arguments == {"recipient": "*****", "subject": "Hi", "n": "[1]"}
    assert "boss@example.com" not in caplog.text
    assert "call-1" in caplog.text


async def test_cancellation_is_never_turned_into_a_result() -> None:
    with pytest.raises(asyncio.CancelledError):
        await _run(EchoTool("t", _raise(asyncio.CancelledError())))


async def test_a_call_which_goes_too_far_is_turned_down_before_the_tool_runs() -> None:
    chat = _chat()
    chat.require_outbound_data_restriction(OutboundDataRestriction.ONLY_LINKS_FROM_CHAT, "mb-1")
    tool = EchoTool("search", outbound_data=ToolOutboundData.THIRD_PARTY_QUERIES)
    executor = ToolExecutor(mailbox_name=lambda mailbox_id: {"mb-1": "Legal inbox"}.get(mailbox_id))
    outcome = await _run(tool, chat=chat, executor=executor)
    assert outcome.trace.status is TraceStatus.BLOCKED
    assert not outcome.trace.was_executed
    assert tool.arguments == []
    assert "'Legal inbox'" in outcome.content
    assert "only links from the chat" in outcome.content
    _assert_demands_nothing(outcome)


async def test_a_mailbox_removed_since_is_not_named() -> None:
    chat = _chat()
    chat.require_outbound_data_restriction(OutboundDataRestriction.ONLY_CONFIGURED_SERVICES, "gone")
    tool = EchoTool("read", outbound_data=ToolOutboundData.MODEL_CHOSEN_ADDRESSES)
    outcome = await _run(tool, chat=chat)
    assert "removed since" in outcome.content
    assert "gone" not in outcome.content
    assert "only configured services" in outcome.content


@pytest.mark.parametrize(
    ("data", "enforces", "runs"),
    [
        (ToolOutboundData.NONE, False, True),
        (ToolOutboundData.CONFIGURED_SERVICE, False, True),
        (ToolOutboundData.THIRD_PARTY_QUERIES, False, False),
        (ToolOutboundData.MODEL_CHOSEN_ADDRESSES, False, False),
        (ToolOutboundData.MODEL_CHOSEN_ADDRESSES, True, True),
    ],
)
async def test_a_restricted_chat_runs_only_contained_tools(
    data: ToolOutboundData, enforces: bool, runs: bool
) -> None:
    chat = _chat()
    chat.require_outbound_data_restriction(OutboundDataRestriction.ONLY_LINKS_FROM_CHAT, "mb")
    outcome = await _run(EchoTool("t", outbound_data=data, enforces=enforces), chat=chat)
    assert (outcome.trace.status is TraceStatus.SUCCESS) is runs


async def test_an_address_the_model_wrote_into_the_call_is_no_address_the_tool_returned() -> None:
    content = (
        "Found https://Docs.Example.com/Guide and https://other.example/page "
        "and https://third.example/x."
    )
    tool = EchoTool("semantic_search", lambda _a: ToolExecutionResult(text_content=content))
    outcome = await _run(tool, json.dumps({"query": "see HTTPS://DOCS.EXAMPLE.COM/Guide please"}))
    assert outcome.returned_web_addresses == (
        "https://other.example/page",
        "https://third.example/x",
    )


async def test_a_failed_call_returns_no_addresses() -> None:
    outcome = await _run(EchoTool("t", _raise(ValueError("see https://evil.example/"))))
    assert outcome.returned_web_addresses == ()


def test_an_invalid_call_demands_nothing_and_says_so() -> None:
    outcome = invalid_call_outcome("call-9", 4)
    assert outcome.content == "The tool call was invalid."
    assert outcome.trace.tool_name == "Invalid tool call"
    assert (outcome.trace.order, outcome.trace.call_id) == (4, "call-9")
    assert outcome.trace.status is TraceStatus.ERROR
    assert outcome.trace.status_message == outcome.trace.result == outcome.content
    _assert_demands_nothing(outcome)


def _assert_demands_nothing(outcome: ToolCallOutcome) -> None:
    assert outcome.required_provider_confidence is ConfidenceLevel.NONE
    assert outcome.required_data_security is DataSecurity.NOT_SPECIFIED
    assert outcome.required_outbound_data_restriction is None
    assert outcome.sources == ()
    assert outcome.returned_web_addresses == ()


# -- names and argument JSON -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["web_search", "read-web-page_2", "a", "A" * 64])
def test_a_function_name_follows_the_rule_of_the_providers(name: str) -> None:
    assert is_valid_function_name(name)


@pytest.mark.parametrize(
    "name", ["", " web_search", "web search", "1,2,3,4", "größe", "web_search\n", None]
)
def test_a_function_name_outside_the_rule_is_refused(name: str | None) -> None:
    assert not is_valid_function_name(name)


def test_a_function_name_has_at_most_64_characters() -> None:
    assert is_valid_function_name("a" * 64)
    assert not is_valid_function_name("a" * 65)


# -- ToolExecutionResult -----------------------------------------------------------------------------


def test_text_reaches_the_model_as_written() -> None:
    result = ToolExecutionResult(json_content={"t": "Größe <b> & 'x' 日本"})
    assert result.to_model_content() == '{"t":"Größe <b> & \'x\' 日本"}'


def test_the_result_stays_valid_json() -> None:
    value = {"t": 'say "hi"\nback\\slash'}
    content = ToolExecutionResult(json_content=value).to_model_content()
    assert json.loads(content) == value
    assert '\\"hi\\"' in content and "\\n" in content and "\\\\" in content


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
async def test_a_result_json_cannot_hold_fails_instead_of_reaching_the_model(number: float) -> None:
    tool = EchoTool("t", lambda _a: ToolExecutionResult(json_content={"ratio": number}))
    outcome = await _run(tool)
    assert outcome.trace.status is TraceStatus.ERROR
    assert outcome.content.startswith(
        "Tool execution failed: the tool's result cannot be written as JSON: "
    )
    assert "NaN" not in outcome.content and "Infinity" not in outcome.content
    _assert_demands_nothing(outcome)


async def test_the_mailbox_a_result_names_is_named_in_later_refusals() -> None:
    from runtime.loop import _apply_demands

    mailbox_result = ToolExecutionResult(
        text_content="mail",
        required_outbound_data_restriction=OutboundDataRestriction.ONLY_LINKS_FROM_CHAT,
        outbound_data_source_id="mb-7",
    )
    chat = _chat()
    outcome = await _run(EchoTool("read_mail", lambda _a: mailbox_result), chat=chat)
    assert outcome.outbound_data_source_id == "mb-7"
    _apply_demands(
        LoopContext(
            chat,
            [],
            ToolExecutor(),
            provider=ProviderFacts(ProviderKind.SELF_HOSTED, ConfidenceLevel.HIGH),
        ),
        outcome,
    )
    assert chat.outbound_mailbox_id == "mb-7"
    search = EchoTool("search", outbound_data=ToolOutboundData.THIRD_PARTY_QUERIES)
    executor = ToolExecutor(mailbox_name=lambda mailbox_id: {"mb-7": "HR inbox"}.get(mailbox_id))
    refused = await _run(search, chat=chat, executor=executor)
    assert refused.trace.status is TraceStatus.BLOCKED and "'HR inbox'" in refused.content


async def test_the_tool_learns_whether_the_organization_trusts_the_provider() -> None:
    tool = EchoTool("t")
    call = RequestedCall("call-1", "t", "{}")
    for trusted in (False, True):
        await ToolExecutor().execute(
            call,
            [tool.runnable()],
            order=1,
            chat=_chat(),
            provider=ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.MEDIUM, trusted),
        )
    assert [c.provider.trusted for c in tool.contexts] == [False, True]


@pytest.mark.parametrize(
    ("services", "named"),
    [
        ({"guard": None}, "not dict"),
        (
            PromptInjectionGuard(StructuralInjectionFilter()),
            "runtime.web.guard.PromptInjectionGuard",
        ),
    ],
)
def test_services_that_are_not_tool_services_are_refused_naming_the_type(
    services: object, named: str
) -> None:
    from policy import load_policy
    from runtime.session import ChatRuntime

    with pytest.raises(
        TypeError, match=rf"ToolExecutor: services must be a runtime\.ToolServices.*{named}"
    ):
        ToolExecutor(services=services)  # type: ignore[arg-type]
    policy = load_policy(org=["examples/organization"])
    with pytest.raises(
        TypeError, match=rf"ChatRuntime: services must be a runtime\.ToolServices.*{named}"
    ):
        ChatRuntime(policy, services=services)  # type: ignore[arg-type]


def test_tool_services_and_none_are_accepted() -> None:
    guard = PromptInjectionGuard(StructuralInjectionFilter())
    assert ToolExecutor(services=ToolServices(guard=guard))._services.guard is guard
    assert ToolExecutor(services=None)._services == ToolServices()


async def test_the_provider_given_as_before_reaches_the_tool_as_provider_facts() -> None:
    """provider_kind=, provider_confidence= and provider_trusted= (the spelling before
    ProviderFacts) still work for the executor, the tool's context and the loop's context."""
    tool = EchoTool("t")
    await ToolExecutor().execute(
        RequestedCall("call-1", "t", "{}"),
        [tool.runnable()],
        order=1,
        provider_kind=ProviderKind.OPEN_AI,
        provider_confidence=ConfidenceLevel.LOW,
        chat=_chat(),
        provider_trusted=True,
    )
    [context] = tool.contexts
    assert context.provider == ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.LOW, True)
    assert (context.provider_kind, context.provider_confidence, context.provider_trusted) == (
        ProviderKind.OPEN_AI,
        ConfidenceLevel.LOW,
        True,
    )
    loop = LoopContext(
        _chat(),
        [],
        ToolExecutor(),
        provider_kind=ProviderKind.SELF_HOSTED,
        provider_confidence=ConfidenceLevel.HIGH,
    )
    assert loop.provider == ProviderFacts(ProviderKind.SELF_HOSTED, ConfidenceLevel.HIGH)


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"provider_kind": ProviderKind.OPEN_AI},
        {
            "provider": ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.LOW),
            "provider_confidence": ConfidenceLevel.HIGH,
        },
        {
            "provider": ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.LOW),
            "provider_trusted": True,
        },
    ],
)
def test_a_provider_given_both_ways_or_not_at_all_is_refused_naming_the_receiver(
    given: dict[str, Any],
) -> None:
    tool = EchoTool("t")
    with pytest.raises(TypeError, match="ToolExecutionContext: give the provider as provider="):
        ToolExecutionContext(tool.definition, "c", {}, **given)
    with pytest.raises(TypeError, match="LoopContext: give the provider"):
        LoopContext(_chat(), [], ToolExecutor(), **given)


class _OwnService:
    """A tool's own services object, as an app's tool would declare one."""


class _Sessions:
    """Stands for `McpSessions` (given by the keyword of earlier versions)."""


def test_a_tool_finds_its_own_services_by_class_and_the_earlier_keywords_land_there() -> None:
    mine, other, sessions = _OwnService(), _OwnService(), _Sessions()
    services = ToolServices(
        wiki_base_url="https://wiki.example/",
        mcp_sessions=sessions,
        tool_services=[mine],
    )
    assert services.of(_OwnService) is mine
    assert services.of(_Sessions) is sessions
    assert services.request_extras == RequestExtras(wiki_base_url="https://wiki.example/")
    assert ToolServices().of(_OwnService) is None
    assert services.with_defaults(other).of(_OwnService) is mine
    assert ToolServices().with_defaults(other).of(_OwnService) is other
    given = RequestExtras(wiki_base_url="https://given.example/")
    assert ToolServices(wiki_base_url="https://w/", request_extras=given).request_extras == given


async def test_a_tool_sees_the_configured_wiki_and_the_one_an_app_gave_wins() -> None:
    """ChatRuntime hands every tool what the tools' settings tell each other (search_confluence's
    wiki, which read_web_page may read under a strict restriction) as `services.request_extras`;
    a wiki the app gave, in the earlier keyword too, stays."""
    from policy import load_policy
    from policy.builtin import builtin_tools
    from runtime.session import ChatRuntime

    tool = EchoTool("t", effects=())  # declared: the example organization's flow rule is on
    policy = load_policy(org=["examples/organization"], tools=[*builtin_tools(), tool])
    given = (
        (None, "https://wiki.research.example.org/"),
        (ToolServices(wiki_base_url="https://notes.example/"), "https://notes.example/"),
    )
    for services, wiki in given:
        await (
            ChatRuntime(policy, services=services)
            .executor()
            .execute(
                RequestedCall("call-1", "t", "{}"),
                [tool.runnable()],
                order=1,
                chat=_chat(),
                provider=ProviderFacts(ProviderKind.SELF_HOSTED, ConfidenceLevel.HIGH),
            )
        )
        assert tool.contexts[-1].services.request_extras.wiki_base_url == wiki


def test_indexed_runnable_finds_what_a_scan_finds_and_runs_the_same() -> None:
    """The gateway's view indexes its tools once (a call's lookups then do not grow with the
    number of tools): the index answers as the scan of a plain sequence does — the first tool
    of a name, None for an unknown one — and a call runs and sees the same offered names."""
    from runtime.executor import IndexedRunnable, find_runnable

    first, second, other = EchoTool("a", display_name="First"), EchoTool("a"), EchoTool("b")
    pairs = [t.runnable() for t in (first, second, other)]
    indexed = IndexedRunnable(pairs)
    assert list(indexed) == pairs
    for name in ("a", "b", "missing"):
        assert find_runnable(indexed, name) == find_runnable(pairs, name)
    assert find_runnable(indexed, "a") == first.runnable()

    async def run(runnable: Any) -> Any:
        call = RequestedCall("c1", "b", json.dumps({"q": "x"}))
        return await ToolExecutor().execute(
            call,
            runnable,
            order=1,
            chat=_chat(),
            provider=ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.MEDIUM),
        )

    plain, fast = asyncio.run(run(pairs)), asyncio.run(run(indexed))
    assert (fast.content, fast.trace.status) == (plain.content, plain.trace.status)
    assert (
        other.contexts[0].offered_tool_names == other.contexts[1].offered_tool_names == {"a", "b"}
    )
