"""Selection rules: normalize, expand, defaults, filters, catalog."""

from __future__ import annotations

from collections.abc import Mapping

from policy.builtin import (
    READ_WEB_PAGE,
    SEARCH_CONFLUENCE,
    SEMANTIC_SEARCH,
    WEB_SEARCH,
    builtin_tools,
)
from policy.configuration import ManagedSetting, PolicyConfiguration, UserSettings
from policy.decide.registry import ToolRegistry
from policy.definitions import (
    SettingField,
    SettingsSchema,
    ToolCollectionDefinition,
    ToolDefinition,
    ToolFunction,
)
from policy.provenance import Origin, SourceLocation
from policy.tools import DefinedTool, RequestExtras
from policy.vocabulary import Component, ConfidenceLevel

ORG = Origin("org", "Organization", SourceLocation("org/plugin.lua", 1))
MAIL_IDS = ("search_mails", "read_mail", "count_mails")
MAILBOXES = ToolCollectionDefinition(
    id="mailboxes",
    tool_ids=MAIL_IDS,
    minimum_provider_confidence=ConfidenceLevel.VERY_LOW,
    display_name="Mailboxes",
)
CONFIGURED_WEB = UserSettings(
    tool_settings={
        WEB_SEARCH: {"searxng.baseUrl": "https://search.example"},
        SEARCH_CONFLUENCE: {"baseUrl": "https://wiki.example/"},
    }
)


def _mail_tool(tool_id: str) -> DefinedTool:
    return DefinedTool(
        ToolDefinition(id=tool_id, implementation_key=tool_id, function=ToolFunction(name=tool_id)),
        display_name=tool_id.replace("_", " "),
    )


def _registry(*settings: ManagedSetting, user: UserSettings = CONFIGURED_WEB) -> ToolRegistry:
    return ToolRegistry(
        [*builtin_tools(), *(_mail_tool(i) for i in MAIL_IDS)],
        PolicyConfiguration(settings={s.key: s for s in settings}),
        user,
        collections=(MAILBOXES,),
        secret_reader=lambda t, f: None,
    )


def test_a_tool_of_a_collection_selects_the_whole_collection() -> None:
    registry = _registry()
    assert registry.normalize_selection(["read_mail"]) == ("mailboxes",)
    assert registry.expand_selection(["read_mail"]) == MAIL_IDS


def test_search_confluence_brings_read_web_page_along_but_not_the_other_way() -> None:
    registry = _registry()
    assert registry.normalize_selection([SEARCH_CONFLUENCE]) == (SEARCH_CONFLUENCE, READ_WEB_PAGE)
    assert registry.normalize_selection([READ_WEB_PAGE]) == (READ_WEB_PAGE,)
    assert registry.normalize_selection([WEB_SEARCH]) == (WEB_SEARCH,)


def test_semantic_search_is_never_part_of_a_selection() -> None:
    assert _registry().normalize_selection([SEMANTIC_SEARCH, WEB_SEARCH]) == (WEB_SEARCH,)


def test_an_unknown_tool_stays_in_the_selection() -> None:
    registry = _registry()
    assert registry.normalize_selection(["future_tool"]) == ("future_tool",)
    assert registry.expand_selection(["future_tool"]) == ("future_tool",)
    assert not registry.is_known("future_tool")
    assert registry.is_known("mailboxes") and registry.is_known(WEB_SEARCH)


def test_normalizing_twice_changes_nothing_and_a_twice_selected_collection_runs_once() -> None:
    registry = _registry()
    once = registry.normalize_selection(
        ["count_mails", "mailboxes", "read_mail", SEARCH_CONFLUENCE]
    )
    assert once == ("mailboxes", SEARCH_CONFLUENCE, READ_WEB_PAGE)
    assert registry.normalize_selection(once) == once
    assert registry.expand_selection(once) == (*MAIL_IDS, SEARCH_CONFLUENCE, READ_WEB_PAGE)


def test_the_selection_passed_in_stays_untouched() -> None:
    selection = ["read_mail", SEMANTIC_SEARCH]
    _registry().normalize_selection(selection)
    assert selection == ["read_mail", SEMANTIC_SEARCH]


def test_the_catalog_shows_a_collection_as_one_entry() -> None:
    entries = _registry().catalog(Component.CHAT)
    assert {e.id for e in entries} == {"mailboxes", WEB_SEARCH, READ_WEB_PAGE, SEARCH_CONFLUENCE}
    names = [e.display_name for e in entries]
    assert names == sorted(names, key=str.casefold)
    mailboxes = next(e for e in entries if e.id == "mailboxes")
    assert mailboxes.is_collection and mailboxes.tool_ids == MAIL_IDS


def test_the_defaults_name_the_collection() -> None:
    user = UserSettings(
        tool_settings=CONFIGURED_WEB.tool_settings,
        default_tool_ids_by_component={"CHAT": ("search_mails", SEMANTIC_SEARCH)},
    )
    registry = _registry(user=user)
    assert registry.default_tool_ids(Component.CHAT) == ("mailboxes",)
    assert registry.default_tool_ids(Component.CODING_ASSISTANT) == ()


def test_locked_defaults_beat_the_users_and_editable_ones_yield() -> None:
    user = UserSettings(default_tool_ids_by_component={"CHAT": (WEB_SEARCH,)})
    key = "DataTools.DefaultToolIdsByComponent"
    locked = ManagedSetting(key, {"CHAT": (READ_WEB_PAGE,)}, True, ORG)
    assert _registry(locked, user=user).default_tool_ids(Component.CHAT) == (READ_WEB_PAGE,)
    editable = ManagedSetting(key, {"CHAT": (READ_WEB_PAGE,)}, False, ORG)
    assert _registry(editable, user=user).default_tool_ids(Component.CHAT) == (WEB_SEARCH,)
    assert _registry(editable, user=UserSettings()).default_tool_ids(Component.CHAT) == (
        READ_WEB_PAGE,
    )


class _Notes(DefinedTool):
    """An app's tool that declares a companion and what its settings tell other tools."""

    companion_tool_ids = ("count_mails", "no_such_tool")

    def request_extras(self, settings: Mapping[str, str]) -> RequestExtras:
        return RequestExtras(wiki_base_url=settings.get("wiki", ""))


class _BrokenExtras(DefinedTool):
    def request_extras(self, settings: Mapping[str, str]) -> RequestExtras:
        raise RuntimeError("no wiki today")


def _app_tool(cls: type[DefinedTool], tool_id: str) -> DefinedTool:
    return cls(
        ToolDefinition(
            id=tool_id,
            implementation_key=tool_id,
            function=ToolFunction(name=tool_id),
            settings_schema=SettingsSchema(properties={"wiki": SettingField(title="Wiki")}),
        )
    )


def test_any_tool_declares_its_companions_and_request_extras() -> None:
    registry = ToolRegistry(
        [*builtin_tools(), *(_mail_tool(i) for i in MAIL_IDS), _app_tool(_Notes, "notes")],
        PolicyConfiguration(),
        UserSettings(tool_settings={"notes": {"wiki": "https://notes.example/"}}),
        collections=(MAILBOXES,),
        secret_reader=lambda t, f: None,
    )
    assert registry.normalize_selection(["notes"]) == ("notes", "mailboxes")
    assert registry.request_extras == RequestExtras(wiki_base_url="https://notes.example/")


def test_the_configured_wiki_reaches_every_request_and_a_broken_declaration_adds_nothing() -> None:
    registry = ToolRegistry(
        [*builtin_tools(), _app_tool(_BrokenExtras, "broken")],
        PolicyConfiguration(),
        CONFIGURED_WEB,
        secret_reader=lambda t, f: None,
    )
    assert registry.request_extras.wiki_base_url == "https://wiki.example/"
