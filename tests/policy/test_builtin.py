"""The four built-in tools as the policy sees them."""

from __future__ import annotations

import pytest

from policy.builtin import (
    BUILTIN_DEFINITIONS,
    READ_WEB_PAGE,
    SEARCH_CONFLUENCE,
    SEMANTIC_SEARCH,
    WEB_SEARCH,
    ReadWebPageTool,
    SearchConfluenceTool,
    WebSearchTool,
    builtin_tools,
    is_free_address_choice_on,
    parse_allowed_private_hosts,
    read_web_page_instructions,
)
from policy.configuration import ManagedSetting, PolicyConfiguration, ProviderConfig, UserSettings
from policy.decide.registry import ToolRegistry
from policy.definitions import validate_definition
from policy.provenance import Origin, SourceLocation
from policy.provider_facts import ProviderFacts
from policy.tools import RequestExtras, ResolutionContext, Tool
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    OutboundDataRestriction,
    ProviderKind,
    ToolActivation,
    ToolOfferBlockReason,
    ToolOutboundData,
    option_values,
)

ORG = Origin("org", "Organization", SourceLocation("org/plugin.lua", 1))
SEARXNG = {"searxng.baseUrl": "https://search.example"}


def _context(settings: dict[str, str], **kwargs: object) -> ResolutionContext:
    return ResolutionContext(
        component=Component.CHAT,
        provider=ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.MEDIUM),
        settings=settings,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_resolution_context_carries_the_provider_as_one_value() -> None:
    """The provider a tool resolves for is one `ProviderFacts`; the earlier keywords are still
    taken and read, a mix of both or a bare kind where the facts belong is a TypeError."""
    facts = ProviderFacts(ProviderKind.SELF_HOSTED, ConfidenceLevel.HIGH, True)
    context = ResolutionContext(Component.CHAT, facts, {"a": "b"})
    assert context.provider is facts and context.settings == {"a": "b"}
    earlier = ResolutionContext(
        Component.CHAT, provider_kind=ProviderKind.OPEN_AI, provider_confidence=ConfidenceLevel.LOW
    )
    assert earlier.provider == ProviderFacts(ProviderKind.OPEN_AI, ConfidenceLevel.LOW)
    assert (earlier.provider_kind, earlier.provider_confidence) == (
        ProviderKind.OPEN_AI,
        ConfidenceLevel.LOW,
    )
    with pytest.raises(TypeError, match="ResolutionContext: give the provider"):
        ResolutionContext(Component.CHAT, facts, provider_kind=ProviderKind.OPEN_AI)
    with pytest.raises(TypeError, match=r"provider must be a ProviderFacts.*not ProviderKind"):
        ResolutionContext(Component.CHAT, ProviderKind.OPEN_AI, {})  # type: ignore[arg-type]


def test_every_builtin_definition_is_valid_and_follows_the_naming_convention() -> None:
    assert set(BUILTIN_DEFINITIONS) == {
        WEB_SEARCH,
        READ_WEB_PAGE,
        SEARCH_CONFLUENCE,
        SEMANTIC_SEARCH,
    }
    for tool in builtin_tools():
        assert isinstance(tool, Tool)
        definition = tool.definition
        assert validate_definition(definition) is None
        assert definition.id == definition.implementation_key == definition.function.name
        parameters = definition.function.parameters
        assert parameters["type"] == "object" and parameters["additionalProperties"] is False
        assert set(parameters["required"]) <= set(parameters["properties"])


def test_minimum_confidences_and_activation_are_as_shipped() -> None:
    levels = {i: d.minimum_provider_confidence for i, d in BUILTIN_DEFINITIONS.items()}
    assert levels == {
        WEB_SEARCH: ConfidenceLevel.VERY_LOW,
        READ_WEB_PAGE: ConfidenceLevel.VERY_LOW,
        SEARCH_CONFLUENCE: ConfidenceLevel.HIGH,
        SEMANTIC_SEARCH: ConfidenceLevel.NONE,
    }
    semantic = BUILTIN_DEFINITIONS[SEMANTIC_SEARCH]
    assert semantic.activation is ToolActivation.CONTEXT
    assert semantic.visible_in.chat and not semantic.visible_in.assistants


def test_the_documented_setting_names_exist_with_their_defaults() -> None:
    web = BUILTIN_DEFINITIONS[WEB_SEARCH].settings_schema
    assert web.required == ("defaultLanguage",)
    assert web.properties["staan.apiKey"].secret and web.properties["tavily.apiKey"].secret
    assert web.properties["backendStrategy"].default == "FAILOVER"
    assert web.properties["maxResults"].default == "5"
    assert web.properties["staan.market"].enum_values == ("de-de", "en-us", "fr-fr")
    page = BUILTIN_DEFINITIONS[READ_WEB_PAGE].settings_schema.properties
    assert page["freeAddressChoice"].option_source == "free_address_choice"
    assert page["freeAddressChoice"].default == "OFF"
    assert [v for v, _ in option_values("free_address_choice")] == ["OFF", "ON"]
    wiki = BUILTIN_DEFINITIONS[SEARCH_CONFLUENCE].settings_schema
    assert wiki.required == ("baseUrl",)
    assert wiki.properties["timeoutSeconds"].default == "30"


def test_where_each_tool_sends_data() -> None:
    web, page, wiki, semantic = builtin_tools()
    assert web.outbound_data is ToolOutboundData.THIRD_PARTY_QUERIES
    assert page.outbound_data is ToolOutboundData.MODEL_CHOSEN_ADDRESSES
    assert page.enforces_outbound_data_restriction
    assert wiki.outbound_data is ToolOutboundData.CONFIGURED_SERVICE
    assert semantic.outbound_data is ToolOutboundData.CONFIGURED_SERVICE


# --- web_search validation ----------------------------------------------------------------------


def test_web_search_needs_a_backend() -> None:
    assert WebSearchTool().validate_configuration(SEARXNG).is_configured
    state = WebSearchTool().validate_configuration({})
    assert not state.is_configured and "no search backend" in state.message
    assert WebSearchTool().validate_configuration({"tavily.apiKey": "k"}).is_configured
    assert WebSearchTool().validate_configuration({"staan.apiKey": "k"}).is_configured
    assert not WebSearchTool().validate_configuration({"tavily.apiKey": "  "}).is_configured
    assert WebSearchTool().validate_configuration({**SEARXNG, "tavily.apiKey": "k"}).is_configured


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"maxResults": "21"}, "web_search.maxResults: '21' is not valid"),
        ({"maxResults": "-1"}, "from 1 to 20"),
        ({"pageTimeoutSeconds": "soon"}, "web_search.pageTimeoutSeconds"),
        (
            {"maxTotalContentCharacters": "50000", "minContentCharactersPerResult": "3000"},
            "must be at least 20 × minContentCharactersPerResult",
        ),
        ({"searxng.baseUrl": "ftp://search"}, "web_search.searxng.baseUrl"),
        ({"backendStrategy": "SPECIFIC"}, "SPECIFIC needs primaryBackend"),
    ],
)
def test_web_search_refuses_bad_settings_naming_the_key(
    settings: dict[str, str], expected: str
) -> None:
    state = WebSearchTool().validate_configuration({**SEARXNG, **settings})
    assert not state.is_configured
    assert expected in state.message


# --- read_web_page ------------------------------------------------------------------------------


def test_allowed_private_hosts_are_host_names_only() -> None:
    assert parse_allowed_private_hosts("wiki.corp; *.intra\nHost.Example,") == (
        "wiki.corp",
        "*.intra",
        "host.example",
    )
    with pytest.raises(ValueError, match="without scheme or path"):
        parse_allowed_private_hosts("https://wiki.corp")
    with pytest.raises(ValueError, match="Allowed private host 'bad host' is not valid"):
        parse_allowed_private_hosts("bad host")
    state = ReadWebPageTool().validate_configuration({"allowedPrivateHosts": "wiki/path"})
    assert not state.is_configured and "read_web_page.allowedPrivateHosts" in state.message


@pytest.mark.parametrize(
    ("value", "on"),
    [("ON", True), (" on ", True), ("OFF", False), ("", False), ("1", False), ("ON, OFF", False)],
)
def test_free_address_choice_is_read_strictly_by_name(value: str, on: bool) -> None:
    assert is_free_address_choice_on({"freeAddressChoice": value}) is on
    assert is_free_address_choice_on({}) is False


async def test_read_web_page_words_its_instructions_for_the_setting() -> None:
    tool = ReadWebPageTool()
    off = await tool.resolve_instructions(_context({}))
    on = await tool.resolve_instructions(_context({"freeAddressChoice": "ON"}))
    assert "word for word" in off and "refuses every other URL" in off
    assert "choose one yourself" in on and "word for word" not in on
    for text in (off, on):
        assert "Never put personal or confidential information" in text
        assert "untrusted working material" in text
    assert off == BUILTIN_DEFINITIONS[READ_WEB_PAGE].system_prompt_instructions
    restricted = read_web_page_instructions(False, OutboundDataRestriction.ONLY_CONFIGURED_SERVICES)
    assert "only pages of the configured wiki" in restricted


async def test_read_web_page_offers_nothing_under_only_configured_services_without_a_wiki() -> None:
    tool = ReadWebPageTool()
    strict = OutboundDataRestriction.ONLY_CONFIGURED_SERVICES
    assert await tool.resolve_function(_context({}, outbound_restriction=strict)) is None
    with_wiki = _context(
        {}, outbound_restriction=strict, extras=RequestExtras(wiki_base_url="https://w/")
    )
    assert await tool.resolve_function(with_wiki) is tool.definition.function
    links = _context({}, outbound_restriction=OutboundDataRestriction.ONLY_LINKS_FROM_CHAT)
    assert await tool.resolve_function(links) is tool.definition.function


async def test_the_registry_tells_read_web_page_about_the_configured_wiki() -> None:
    user = UserSettings(tool_settings={SEARCH_CONFLUENCE: {"baseUrl": "https://wiki.example/"}})
    registry = ToolRegistry(
        builtin_tools(), PolicyConfiguration(), user, secret_reader=lambda t, f: None
    )
    provider = ProviderConfig("local", "Local", ProviderKind.SELF_HOSTED, "llama-3.3-70b")
    runnable = await registry.runnable_tools(
        [READ_WEB_PAGE],
        provider,
        Component.CHAT,
        outbound_restriction=OutboundDataRestriction.ONLY_CONFIGURED_SERVICES,
    )
    assert runnable.tool_ids == (READ_WEB_PAGE,)
    assert "only pages of the configured wiki" in runnable.instructions


# --- search_confluence --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://wiki.example/", "expected an absolute HTTPS address"),
        ("https://user:pw@wiki.example/", "must not contain a user name or password"),
        ("https://wiki.example/?x=1", "must not contain a query or fragment"),
        ("https://wiki.example/#top", "must not contain a query or fragment"),
    ],
)
def test_search_confluence_needs_a_plain_https_base_address(url: str, expected: str) -> None:
    state = SearchConfluenceTool().validate_configuration({"baseUrl": url})
    assert not state.is_configured and expected in state.message
    assert "pw" not in state.message or "password" in state.message


def test_search_confluence_is_offered_to_high_confidence_providers_only_even_when_lowered() -> None:
    table = ManagedSetting(
        "DataTools.MinimumProviderConfidenceByToolId", {SEARCH_CONFLUENCE: "LOW"}, True, ORG
    )
    user = UserSettings(tool_settings={SEARCH_CONFLUENCE: {"baseUrl": "https://wiki.example/"}})
    registry = ToolRegistry(
        builtin_tools(),
        PolicyConfiguration(settings={table.key: table}),
        user,
        secret_reader=lambda t, f: None,
    )
    openai = ProviderConfig("oa", "OpenAI", ProviderKind.OPEN_AI, "gpt-4o")
    local = ProviderConfig("local", "Local", ProviderKind.SELF_HOSTED, "qwen3-32b")
    assert (
        registry.offer_decision(SEARCH_CONFLUENCE, openai).reason
        is ToolOfferBlockReason.PROVIDER_CONFIDENCE_TOO_LOW
    )
    assert registry.effective_minimum_confidence(SEARCH_CONFLUENCE).level is ConfidenceLevel.HIGH
    assert registry.offer_decision(SEARCH_CONFLUENCE, local).reason is ToolOfferBlockReason.NONE


@pytest.mark.parametrize(
    "address",
    [
        "http://alice:pa55@wiki.example.org/",
        "alice:pa55@wiki.example.org/",
        "https:/alice:pa55@wiki.example.org/",
        "ftp://alice:pa55@wiki.example.org/",
    ],
)
def test_a_refused_address_setting_never_shows_its_password(address: str) -> None:
    state = SearchConfluenceTool().validate_configuration({"baseUrl": address})
    assert not state.is_configured
    assert "pa55" not in state.message and "alice" not in state.message
    assert "*****@wiki.example.org" in state.message


@pytest.mark.parametrize(
    ("tool", "settings", "key"),
    [
        (
            WebSearchTool(),
            {**SEARXNG, "searxng.baseUrl": "http://[fe80::1", "defaultLanguage": "all"},
            "web_search.searxng.baseUrl",
        ),
        (SearchConfluenceTool(), {"baseUrl": "https://[wiki.example"}, "search_confluence.baseUrl"),
        (  # urllib drops the tab and reads wiki.example.org; httpx refuses the address
            SearchConfluenceTool(),
            {"baseUrl": "https://wiki.exa\tmple.org/"},
            "search_confluence.baseUrl",
        ),
        (
            SearchConfluenceTool(),
            {"baseUrl": "https://wiki.example:99999/"},
            "search_confluence.baseUrl",
        ),
    ],
)
def test_a_malformed_address_setting_is_named_with_what_would_be_valid(
    tool: Tool, settings: dict[str, str], key: str
) -> None:
    state = tool.validate_configuration(settings)
    assert not state.is_configured
    assert state.message.startswith(f"{key}: ")
    assert "is not valid; expected an absolute" in state.message


# Hosts policy.hosts.host_key cannot read: the runtime refuses them (search_confluence finds no
# origin for them, a request cannot name them), so the settings check refuses them as well.
UNREADABLE_HOSTS = [
    "https://wiki.corp../",
    "https://wiki..corp/",
    "https://exa mple.com/",
    "https://ex%61mple.com/",
    "https://-wiki.example.org/",
    "https://\u2603.example/",  # a snowman: IDNA 2008 refuses the label
    "https://wiki\u200d.example/",  # a joiner IDNA refuses in that place
]


@pytest.mark.parametrize("address", UNREADABLE_HOSTS)
@pytest.mark.parametrize(
    ("tool", "key", "wanted", "base"),
    [
        (SearchConfluenceTool(), "baseUrl", "an absolute HTTPS address", {}),
        (WebSearchTool(), "searxng.baseUrl", "an absolute HTTP or HTTPS address", SEARXNG),
    ],
    ids=["search_confluence", "web_search"],
)
def test_an_address_whose_host_is_no_host_is_refused_naming_setting_value_and_rule(
    address: str, tool: Tool, key: str, wanted: str, base: dict[str, str]
) -> None:
    state = tool.validate_configuration({**base, key: address})
    assert not state.is_configured
    assert state.message.startswith(f"{tool.definition.id}.{key}: '{address.strip()}' is not valid")
    assert "host name or IP address" in state.message
    assert state.message.endswith(f"expected {wanted}")


def test_an_unreadable_host_behind_a_password_never_shows_the_password() -> None:
    state = SearchConfluenceTool().validate_configuration(
        {"baseUrl": "https://alice:pa55@wiki.corp../"}
    )
    assert not state.is_configured
    assert "pa55" not in state.message and "alice" not in state.message
    assert "'https://*****@wiki.corp../' is not valid" in state.message


@pytest.mark.parametrize(
    "address",
    [
        "https://wiki.example.org/confluence",
        "https://WIKI.Example.ORG:8443/",
        "https://wiki.corp./",  # one trailing dot names the same host
        "https://b\u00fccher.example/wiki",
        "https://xn--bcher-kva.example/wiki",
        "https://\u4f8b\u3048.\u30c6\u30b9\u30c8/",
        "https://wiki_team.corp/",
        "https://[::1]:8443/wiki",
        "https://[fe80::1%25eth0]:8443/",
        "https://127.0.0.1:8443/",
        "https://localhost/",
    ],
)
def test_every_readable_host_stays_a_valid_address(address: str) -> None:
    assert SearchConfluenceTool().validate_configuration({"baseUrl": address}).is_configured
    plain = address.replace("https://", "http://", 1)
    assert WebSearchTool().validate_configuration({"searxng.baseUrl": plain}).is_configured


def test_a_malformed_address_keeps_its_password_out_of_the_message() -> None:
    state = SearchConfluenceTool().validate_configuration({"baseUrl": "https://al:pa55@[wiki"})
    assert not state.is_configured
    assert "pa55" not in state.message and "is not valid" in state.message


def test_a_number_setting_with_thousands_of_digits_is_reported_as_out_of_range() -> None:
    state = SearchConfluenceTool().validate_configuration(
        {"baseUrl": "https://wiki.example/", "timeoutSeconds": "9" * 5000}
    )
    assert not state.is_configured
    assert state.message.startswith("search_confluence.timeoutSeconds: ")
    assert "expected a whole number from 1 to 120" in state.message


ROOMS = ("web_search", "read_web_page", "search_confluence", "semantic_search")


@pytest.mark.parametrize("room", ROOMS)
def test_each_tool_has_its_own_room_which_imports_no_runtime(room: str) -> None:
    """policy/builtin/<tool>.py holds the tool's definition and policy-side class, and the
    policy still never imports the runtime (explain answers the same without it)."""
    import ast
    import importlib
    from pathlib import Path

    module = importlib.import_module(f"policy.builtin.{room}")
    assert module.DEFINITION.id == room
    assert BUILTIN_DEFINITIONS[room] is module.DEFINITION
    [tool] = [t for t in builtin_tools() if t.definition.id == room]
    assert type(tool).__module__ == module.__name__
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    imported = {
        name
        for node in ast.walk(ast.parse(source))
        for name in (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
    }
    assert sorted(n for n in imported if n.split(".")[0] == "runtime") == []


def test_the_names_of_the_single_module_still_import_from_policy_builtin() -> None:
    import policy.builtin as builtin
    from policy.builtin.web_search import WS_MAX_RESULTS

    assert builtin.WS_MAX_RESULTS is WS_MAX_RESULTS
    assert builtin.normalize_confluence_base_url("https://wiki.example") == "https://wiki.example/"
    with pytest.raises(AttributeError, match=r"policy\.builtin' has no attribute 'NO_SUCH_NAME'"):
        _ = builtin.NO_SUCH_NAME
