"""Who searches a chat's data sources and semantic_search's offer."""

from __future__ import annotations

from policy.builtin import (
    SEMANTIC_SEARCH,
    OfferedDataSource,
    builtin_tools,
)
from policy.configuration import ManagedSetting, PolicyConfiguration, ProviderConfig, UserSettings
from policy.decide.registry import ToolRegistry
from policy.provenance import Origin, SourceLocation
from policy.tools import RequestExtras
from policy.vocabulary import (
    Component,
    DataSourceRetrievalMode,
    ProviderKind,
    ToolOfferBlockReason,
)

R = ToolOfferBlockReason
SEMANTIC = DataSourceRetrievalMode.SEMANTIC_SEARCH
EVERY = DataSourceRetrievalMode.EVERY_MESSAGE
ORG = Origin("org", "Organization", SourceLocation("org/plugin.lua", 1))
CAPABLE = ProviderConfig("oa", "OpenAI", ProviderKind.OPEN_AI, "gpt-4o")
INCAPABLE = ProviderConfig(
    "oa", "OpenAI", ProviderKind.OPEN_AI, "gpt-4o", capability_overrides={"FunctionCalling": False}
)
SOURCES = (
    OfferedDataSource("b", "Handbook", "local folder", 10, 9, num=2),
    OfferedDataSource("a", "Wiki export", "external data source", 5, 19, "x" * 600, num=2),
    OfferedDataSource("z", "Empty", "local file", 0, 0, num=1),
)


def _registry(*settings: ManagedSetting) -> ToolRegistry:
    return ToolRegistry(
        builtin_tools(),
        PolicyConfiguration(settings={s.key: s for s in settings}),
        UserSettings(),
        secret_reader=lambda t, f: None,
    )


def test_the_user_may_want_every_message_searched() -> None:
    result = _registry().retrieval_mode(EVERY, CAPABLE, Component.CHAT)
    assert (result.mode, result.fallback_reason) == (EVERY, R.NONE)


def test_a_model_which_can_use_tools_searches_itself() -> None:
    result = _registry().retrieval_mode(SEMANTIC, CAPABLE, Component.CHAT)
    assert (result.mode, result.fallback_reason) == (SEMANTIC, R.NONE)


def test_a_model_without_tools_gets_every_message_searched_whatever_the_user_prefers() -> None:
    for preferred in (SEMANTIC, EVERY):
        result = _registry().retrieval_mode(preferred, INCAPABLE, Component.CHAT)
        assert (result.mode, result.fallback_reason) == (EVERY, R.MODEL_CANNOT_USE_TOOLS)


def test_switching_the_tool_off_gets_every_message_searched() -> None:
    registry = _registry(ManagedSetting("DataTools.DisabledToolIds", (SEMANTIC_SEARCH,), True, ORG))
    result = registry.retrieval_mode(SEMANTIC, CAPABLE, Component.CHAT)
    assert (result.mode, result.fallback_reason) == (EVERY, R.TOOL_SWITCHED_OFF)


def test_switching_all_tools_off_gets_every_message_searched() -> None:
    registry = _registry(ManagedSetting("DataTools.EnableTools", False, True, ORG))
    assert registry.retrieval_mode(SEMANTIC, CAPABLE).fallback_reason is R.TOOLS_SWITCHED_OFF


def test_outside_the_chat_every_message_is_searched() -> None:
    result = _registry().retrieval_mode(SEMANTIC, CAPABLE, Component.REWRITE_ASSISTANT)
    assert (result.mode, result.fallback_reason) == (EVERY, R.NOT_AVAILABLE_HERE)


def test_a_raised_confidence_requirement_gets_every_message_searched() -> None:
    table = ManagedSetting(
        "DataTools.MinimumProviderConfidenceByToolId", {SEMANTIC_SEARCH: "HIGH"}, True, ORG
    )
    result = _registry(table).retrieval_mode(SEMANTIC, CAPABLE)
    assert (result.mode, result.fallback_reason) == (EVERY, R.PROVIDER_CONFIDENCE_TOO_LOW)


def test_the_organizations_preselected_mode() -> None:
    assert _registry().preselected_retrieval_mode()[0] is SEMANTIC
    setting = ManagedSetting(
        "DataChat.PreselectedDataSourcesRetrievalMode", "every_message", True, ORG
    )
    mode, evidence = _registry(setting).preselected_retrieval_mode()
    assert mode is EVERY and evidence.origin == ORG


async def test_a_chat_is_offered_the_tool_without_selecting_it() -> None:
    runnable = await _registry().runnable_tools(
        [], CAPABLE, Component.CHAT, extras=RequestExtras(data_sources=SOURCES)
    )
    assert runnable.tool_ids == (SEMANTIC_SEARCH,)
    function = runnable.definitions[0].function
    assert function.name == SEMANTIC_SEARCH
    lines = function.description_for_llm.splitlines()
    assert lines[-2].startswith("- id=a, name='Wiki export', type=external data source")
    assert lines[-2].endswith("x" * 500 + "...'")
    assert (
        lines[-1] == "- id=b, name='Handbook', type=local folder, results per page=10, last page=9"
    )
    assert function.parameters["properties"]["data_source_ids"]["items"]["enum"] == ["a", "b"]


async def test_an_assistant_is_never_offered_the_tool() -> None:
    runnable = await _registry().runnable_tools(
        [SEMANTIC_SEARCH],
        CAPABLE,
        Component.CODING_ASSISTANT,
        extras=RequestExtras(data_sources=SOURCES),
    )
    assert runnable.tools == ()


async def test_a_chat_which_searches_with_every_message_is_not_offered_the_tool() -> None:
    registry = _registry()
    runnable = await registry.runnable_tools(
        [],
        CAPABLE,
        Component.CHAT,
        retrieval_mode=EVERY,
        extras=RequestExtras(data_sources=SOURCES),
    )
    assert runnable.tools == ()
    assert registry.offer_decision(SEMANTIC_SEARCH, CAPABLE).reason is R.NONE


async def test_a_chat_without_data_sources_is_not_offered_the_tool() -> None:
    runnable = await _registry().runnable_tools([], CAPABLE, Component.CHAT)
    assert runnable.tools == ()
