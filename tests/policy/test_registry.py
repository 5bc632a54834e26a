"""The registry: registration, offers in order, requests, instructions,
collections and availability, with small test tools."""

from __future__ import annotations

from typing import Any

import pytest

from policy.catalog import UnknownToolError
from policy.configuration import (
    BrokenPlugin,
    ManagedSetting,
    PolicyConfiguration,
    ProviderConfig,
    UserSettings,
)
from policy.decide.registry import ToolRegistry
from policy.definitions import (
    DefinitionSource,
    SettingField,
    SettingsSchema,
    ToolCollectionDefinition,
    ToolDefinition,
    ToolFunction,
    ToolVisibility,
)
from policy.provenance import Origin, SourceLocation
from policy.tools import DefinedTool, ResolutionContext
from policy.vocabulary import (
    Component,
    ConfidenceLevel,
    OutboundDataRestriction,
    ProviderKind,
    ToolActivation,
    ToolOfferBlockReason,
    ToolOutboundData,
)

R = ToolOfferBlockReason
ORG = Origin("org", "Organization", SourceLocation("org/plugin.lua", 1))
SELF_HOSTED = ProviderConfig(
    "local",
    "Local",
    ProviderKind.SELF_HOSTED,
    "house-model",
    capability_overrides={"FUNCTION_CALLING": True},
)
OPEN_AI = ProviderConfig("oa", "OpenAI", ProviderKind.OPEN_AI, "gpt-4o")
NO_TOOLS = ProviderConfig(
    "oa2",
    "OpenAI",
    ProviderKind.OPEN_AI,
    "gpt-4o",
    capability_overrides={"FUNCTION_CALLING": False},
)


class FakeTool(DefinedTool):
    """A tool whose every answer the test decides; it records what it was asked."""

    def __init__(
        self,
        tool_id: str,
        *,
        name: str | None = None,
        minimum: ConfidenceLevel = ConfidenceLevel.NONE,
        visible: ToolVisibility | None = None,
        activation: ToolActivation = ToolActivation.SELECTION,
        required: tuple[str, ...] = (),
        instructions: str = "",
        available: bool = True,
        function: Any = "registered",
        tailored_instructions: Any = "registered",
        outbound: ToolOutboundData = ToolOutboundData.MODEL_CHOSEN_ADDRESSES,
        enforces: bool = False,
        display_name: str | None = None,
        key: str | None = None,
        schema: SettingsSchema | None = None,
    ) -> None:
        definition = ToolDefinition(
            id=tool_id,
            implementation_key=key if key is not None else tool_id,
            visible_in=visible or ToolVisibility(),
            activation=activation,
            minimum_provider_confidence=minimum,
            system_prompt_instructions=instructions,
            settings_schema=schema
            or SettingsSchema(properties={n: SettingField() for n in required}, required=required),
            function=ToolFunction(name=name or tool_id, description_for_llm=f"{tool_id} does it"),
        )
        super().__init__(definition, display_name, outbound, enforces)
        self._available = available
        self._function = function
        self._instructions = tailored_instructions
        self.asked: list[ResolutionContext] = []

    def is_available(self) -> bool:
        return self._available

    async def resolve_function(self, context: ResolutionContext) -> ToolFunction | None:
        self.asked.append(context)
        if isinstance(self._function, Exception):
            raise self._function
        if self._function == "registered":
            return self.definition.function
        return self._function  # type: ignore[no-any-return]

    async def resolve_instructions(self, context: ResolutionContext) -> str:
        if isinstance(self._instructions, Exception):
            raise self._instructions
        if self._instructions == "registered":
            return self.definition.system_prompt_instructions
        return str(self._instructions)


def _setting(key: str, value: object, locked: bool = True) -> ManagedSetting:
    return ManagedSetting(key, value, locked, ORG)


def _registry(
    *tools: FakeTool,
    settings: tuple[ManagedSetting, ...] = (),
    user: UserSettings | None = None,
    collections: tuple[ToolCollectionDefinition, ...] = (),
    broken: tuple[BrokenPlugin, ...] = (),
    sources: tuple[DefinitionSource, ...] = (),
) -> ToolRegistry:
    configuration = PolicyConfiguration(
        settings={s.key: s for s in settings}, broken_organization_plugins=broken
    )
    return ToolRegistry(
        list(tools),
        configuration,
        user or UserSettings(),
        collections=collections,
        definition_sources=sources,
        secret_reader=lambda t, f: None,
    )


# --- ToolRegistryOfferTests ---------------------------------------------------------------------


async def test_nothing_in_the_way_offers_and_runs_the_tool() -> None:
    registry = _registry(FakeTool("demo"))
    decision = registry.offer_decision("demo", SELF_HOSTED)
    assert decision.reason is R.NONE and decision.offered
    assert [c.guards for c in decision.checks] == [
        R.TOOLS_SWITCHED_OFF,
        R.MODEL_CANNOT_USE_TOOLS,
        R.NOT_AVAILABLE_HERE,
        R.TOOL_SWITCHED_OFF,
        R.NOT_AVAILABLE_HERE,
        R.DEFINITION_NOT_APPROVED,
        R.NOT_CONFIGURED,
        R.PROVIDER_CONFIDENCE_TOO_LOW,
        R.FLOW_CONFLICT,
        R.OUTBOUND_DATA_RESTRICTED,
    ]
    assert all(c.passed for c in decision.checks)
    assert decision.provider is not None and decision.provider.confidence is ConfidenceLevel.HIGH
    runnable = await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)
    assert runnable.tool_ids == ("demo",)


async def test_tools_switched_off_altogether() -> None:
    registry = _registry(FakeTool("demo"), settings=(_setting("DataTools.EnableTools", False),))
    decision = registry.offer_decision("demo", SELF_HOSTED)
    assert decision.reason is R.TOOLS_SWITCHED_OFF
    assert decision.checks[0].evidence[0].origin == ORG
    assert (await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)).tools == ()


async def test_a_model_without_tools_and_no_provider() -> None:
    registry = _registry(FakeTool("demo"))
    assert registry.offer_decision("demo", NO_TOOLS).reason is R.MODEL_CANNOT_USE_TOOLS
    decision = registry.offer_decision("demo", None)
    assert decision.reason is R.MODEL_CANNOT_USE_TOOLS
    assert decision.message == "Please select an LLM provider."
    assert (await registry.runnable_tools(["demo"], NO_TOOLS, Component.CHAT)).tools == ()


def test_a_tool_not_meant_for_the_chat_and_a_tool_nobody_knows() -> None:
    registry = _registry(FakeTool("demo", visible=ToolVisibility(chat=False)))
    assert (
        registry.offer_decision("demo", SELF_HOSTED, Component.CHAT).reason is R.NOT_AVAILABLE_HERE
    )
    assert registry.offer_decision("demo", SELF_HOSTED, Component.CODING_ASSISTANT).reason is R.NONE
    unknown = registry.offer_decision("nobody", SELF_HOSTED)
    assert unknown.reason is R.NOT_AVAILABLE_HERE
    assert len(unknown.checks) == 10
    assert "nobody" in unknown.message


def test_a_tool_switched_off_by_the_organization() -> None:
    registry = _registry(
        FakeTool("demo"), settings=(_setting("DataTools.DisabledToolIds", ("demo", "not_a_tool")),)
    )
    decision = registry.offer_decision("demo", SELF_HOSTED)
    assert decision.reason is R.TOOL_SWITCHED_OFF
    assert decision.first_failure is not None
    assert decision.first_failure.evidence[0].value == "demo"


async def test_a_tool_missing_a_setting() -> None:
    registry = _registry(FakeTool("demo", required=("url",)))
    decision = registry.offer_decision("demo", SELF_HOSTED)
    assert decision.reason is R.NOT_CONFIGURED
    assert "demo.url" in decision.message
    assert (await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)).tools == ()
    user = UserSettings(tool_settings={"demo": {"url": "https://x"}})
    assert (
        _registry(FakeTool("demo", required=("url",)), user=user)
        .offer_decision("demo", SELF_HOSTED)
        .reason
        is R.NONE
    )


def test_a_provider_trusted_too_little_and_a_raised_requirement() -> None:
    registry = _registry(FakeTool("demo", minimum=ConfidenceLevel.HIGH))
    assert registry.offer_decision("demo", OPEN_AI).reason is R.PROVIDER_CONFIDENCE_TOO_LOW
    raised = _registry(
        FakeTool("demo"),
        settings=(_setting("DataTools.MinimumProviderConfidenceByToolId", {"demo": "HIGH"}),),
    )
    decision = raised.offer_decision("demo", OPEN_AI)
    assert decision.reason is R.PROVIDER_CONFIDENCE_TOO_LOW
    assert decision.first_failure is not None
    assert decision.first_failure.evidence[0].origin == ORG


def test_later_checks_are_reported_after_the_first_failure() -> None:
    registry = _registry(
        FakeTool("demo", required=("url",), minimum=ConfidenceLevel.HIGH),
        settings=(_setting("DataTools.EnableTools", False),),
    )
    decision = registry.offer_decision("demo", OPEN_AI)
    assert decision.reason is R.TOOLS_SWITCHED_OFF
    failed = [c.guards for c in decision.checks if not c.passed]
    assert failed == [R.TOOLS_SWITCHED_OFF, R.NOT_CONFIGURED, R.PROVIDER_CONFIDENCE_TOO_LOW]


async def test_a_broken_organization_plugin_switches_every_tool_off() -> None:
    broken = BrokenPlugin(
        "org/plugin.lua",
        "syntax error near 'end'",
        "org",
        "Org",
        SourceLocation("org/plugin.lua", 9),
    )
    registry = _registry(FakeTool("demo"), broken=(broken,))
    decision = registry.offer_decision("demo", SELF_HOSTED)
    assert decision.reason is R.TOOLS_SWITCHED_OFF
    evidence = decision.checks[0].evidence[0]
    assert evidence.value == "syntax error near 'end'"
    assert evidence.origin is not None and evidence.origin.location.line == 9
    assert (await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)).tools == ()
    recovered = _registry(
        FakeTool("demo"),
        broken=(BrokenPlugin("org/plugin.lua", "x", replaced_by_last_known_good=True),),
    )
    assert recovered.offer_decision("demo", SELF_HOSTED).reason is R.NONE


def test_the_offer_never_reports_an_outbound_restriction_but_a_restricted_chat_does() -> None:
    registry = _registry(FakeTool("open"), FakeTool("careful", enforces=True))
    assert registry.offer_decision("open", SELF_HOSTED).reason is R.NONE
    restricted = registry.offer_decision(
        "open", SELF_HOSTED, outbound_restriction=OutboundDataRestriction.ONLY_LINKS_FROM_CHAT
    )
    assert restricted.reason is R.OUTBOUND_DATA_RESTRICTED
    careful = registry.offer_decision(
        "careful",
        SELF_HOSTED,
        outbound_restriction=OutboundDataRestriction.ONLY_CONFIGURED_SERVICES,
    )
    assert careful.reason is R.NONE


# --- ToolRegistryResolutionTests ----------------------------------------------------------------


async def test_a_tailored_function_reaches_the_request_with_name_and_strict_kept() -> None:
    tailored = ToolFunction(
        name="renamed",
        description_for_llm="tailored",
        strict=False,
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    registry = _registry(FakeTool("demo", function=tailored, instructions="registered text"))
    [offered] = (await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)).definitions
    assert offered.id == "demo"
    assert offered.function.name == "demo" and offered.function.strict is True
    assert offered.function.description_for_llm == "tailored"
    assert offered.function.parameters == tailored.parameters
    assert offered.system_prompt_instructions == "registered text"


async def test_an_untailored_tool_keeps_its_registered_definition() -> None:
    tool = FakeTool("demo", instructions="text")
    registry = _registry(tool)
    [offered] = (await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)).definitions
    assert offered is registry.definition("demo")


async def test_nothing_to_offer_leaves_the_tool_out_yet_the_offer_reason_is_none() -> None:
    registry = _registry(FakeTool("demo", function=None))
    runnable = await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)
    assert runnable.tools == ()
    assert runnable.left_out == (("demo", "nothing to offer in this request"),)
    assert registry.offer_decision("demo", SELF_HOSTED).reason is R.NONE


async def test_parameters_which_are_no_schema_are_not_offered() -> None:
    bad = ToolFunction(
        name="demo", description_for_llm="tailored", parameters=["not", "a", "schema"]
    )
    registry = _registry(FakeTool("demo", function=bad))
    [offered] = (await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)).definitions
    assert offered is registry.definition("demo")


async def test_a_failing_tool_or_failing_instructions_cost_only_that_tool() -> None:
    registry = _registry(
        FakeTool("a_breaks", function=RuntimeError("boom")),
        FakeTool("b_breaks", tailored_instructions=RuntimeError("boom")),
        FakeTool("c_works"),
    )
    runnable = await registry.runnable_tools(
        ["a_breaks", "b_breaks", "c_works"], SELF_HOSTED, Component.CHAT
    )
    assert runnable.tool_ids == ("c_works",)
    assert {tool_id for tool_id, _ in runnable.left_out} == {"a_breaks", "b_breaks"}


async def test_tailored_instructions_reach_the_system_prompt() -> None:
    registry = _registry(
        FakeTool("demo", instructions="registered", tailored_instructions="tailored")
    )
    runnable = await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)
    assert "tailored" in runnable.instructions and "registered" not in runnable.instructions
    assert runnable.definitions[0].system_prompt_instructions == "tailored"


async def test_a_context_tool_runs_without_being_selected_and_a_selection_tool_does_not() -> None:
    registry = _registry(FakeTool("ctx", activation=ToolActivation.CONTEXT), FakeTool("sel"))
    runnable = await registry.runnable_tools([], SELF_HOSTED, Component.CHAT)
    assert runnable.tool_ids == ("ctx",)


async def test_a_tool_is_only_asked_once_its_checks_passed() -> None:
    tool = FakeTool("demo", minimum=ConfidenceLevel.HIGH)
    registry = _registry(tool)
    await registry.runnable_tools(["demo"], OPEN_AI, Component.CHAT)
    assert tool.asked == []
    await registry.runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)
    assert len(tool.asked) == 1
    assert tool.asked[0].provider_confidence is ConfidenceLevel.HIGH


async def test_may_run_tools_false_offers_nothing() -> None:
    registry = _registry(FakeTool("demo"))
    runnable = await registry.runnable_tools(
        ["demo"], SELF_HOSTED, Component.CHAT, may_run_tools=False
    )
    assert runnable.tools == ()


async def test_requests_offer_tools_in_display_name_order() -> None:
    registry = _registry(
        FakeTool("z_tool", display_name="alpha"), FakeTool("a_tool", display_name="Beta")
    )
    runnable = await registry.runnable_tools(["a_tool", "z_tool"], SELF_HOSTED, Component.CHAT)
    assert runnable.tool_ids == ("z_tool", "a_tool")


# --- instructions ---------------------------------------------------------------------------------


def test_instructions_are_combined_per_function_and_duplicates_dropped() -> None:
    one = FakeTool("one", instructions="  Use one wisely.  ").definition
    two = FakeTool("two", instructions="").definition
    again = FakeTool("one", instructions="Use one wisely.").definition
    text = ToolRegistry.tool_instructions([one, two, again])
    assert text.startswith("# Tool usage instructions:\n")
    assert text.endswith("\n\n## Tool `one`\nUse one wisely.")
    assert text.count("## Tool") == 1
    assert ToolRegistry.tool_instructions([two]) == ""


# --- registration --------------------------------------------------------------------------


def test_registration_skips_bad_and_duplicate_definitions_with_warnings() -> None:
    first = FakeTool("demo")
    duplicate_key = FakeTool("other", key="demo")
    blank_key = FakeTool("blank", key=" ")
    extra = DefinitionSource(
        "extra.yaml",
        (
            FakeTool("demo").definition,
            FakeTool("same_name", name="demo", key="demo").definition,
            FakeTool("no_impl", key="missing").definition,
            FakeTool("bad", name="bad name").definition,
            FakeTool("data_tool", key="demo", name="data_tool").definition,
        ),
    )
    registry = _registry(first, duplicate_key, blank_key, sources=(extra,))
    codes = [f.code for f in registry.findings]
    assert codes == [
        "duplicate-implementation",
        "blank-implementation-key",
        "duplicate-tool-id",
        "duplicate-function-name",
        "unknown-implementation",
        "invalid-tool-definition",
    ]
    assert "Skipping tool definition 'bad' from source 'extra.yaml'" in registry.findings[5].message
    assert set(registry.tool_ids) == {"demo", "data_tool"}
    assert registry.tool("data_tool") is first


def test_asking_for_an_unknown_tools_settings_names_the_known_ones() -> None:
    registry = _registry(FakeTool("demo"))
    with pytest.raises(UnknownToolError, match="unknown tool id 'nope'; known tools: demo"):
        registry.settings("nope")


# --- ToolCollectionTests --------------------------------------------------------------------------

MAILBOXES = ToolCollectionDefinition(
    id="mailboxes",
    tool_ids=("search_mails", "read_mail", "count_mails"),
    minimum_provider_confidence=ConfidenceLevel.VERY_LOW,
    display_name="Mailboxes",
)


def _mail_tools(**kwargs: Any) -> tuple[FakeTool, ...]:
    return (
        FakeTool("search_mails", minimum=ConfidenceLevel.HIGH, **kwargs),
        FakeTool("read_mail", **kwargs),
        FakeTool("count_mails", **kwargs),
    )


def test_the_mailbox_collection_gathers_its_tools_in_order() -> None:
    registry = _registry(*_mail_tools(), collections=(MAILBOXES,))
    [entry] = registry.catalog(Component.CHAT)
    assert (entry.id, entry.display_name, entry.tool_ids) == (
        "mailboxes",
        "Mailboxes",
        ("search_mails", "read_mail", "count_mails"),
    )
    assert entry.minimum_provider_confidence is ConfidenceLevel.VERY_LOW
    assert registry.is_known("mailboxes") and registry.collection_id("read_mail") == "mailboxes"


def test_every_tool_needs_the_confidence_of_its_collection() -> None:
    medium = MAILBOXES.model_copy(update={"minimum_provider_confidence": ConfidenceLevel.MEDIUM})
    registry = _registry(
        *_mail_tools(), FakeTool("alone", minimum=ConfidenceLevel.HIGH), collections=(medium,)
    )
    assert registry.effective_minimum_confidence("search_mails").level is ConfidenceLevel.MEDIUM
    assert registry.effective_minimum_confidence("read_mail").level is ConfidenceLevel.MEDIUM
    assert registry.effective_minimum_confidence("alone").level is ConfidenceLevel.HIGH


def test_an_entry_for_one_tool_counts_for_the_whole_collection_and_the_strictest_wins() -> None:
    table = "DataTools.MinimumProviderConfidenceByToolId"
    registry = _registry(
        *_mail_tools(),
        collections=(MAILBOXES,),
        settings=(_setting(table, {"mailboxes": "LOW", "read_mail": "HIGH"}),),
    )
    for tool_id in MAILBOXES.tool_ids:
        assert registry.effective_minimum_confidence(tool_id).level is ConfidenceLevel.HIGH
        assert registry.offer_decision(tool_id, OPEN_AI).reason is R.PROVIDER_CONFIDENCE_TOO_LOW


async def test_switching_off_the_collection_or_one_of_its_tools_switches_off_every_tool() -> None:
    for disabled in ("mailboxes", "count_mails"):
        registry = _registry(
            *_mail_tools(),
            collections=(MAILBOXES,),
            settings=(_setting("DataTools.DisabledToolIds", (disabled,)),),
        )
        for tool_id in MAILBOXES.tool_ids:
            assert registry.offer_decision(tool_id, SELF_HOSTED).reason is R.TOOL_SWITCHED_OFF
        assert (
            await registry.runnable_tools(["mailboxes"], SELF_HOSTED, Component.CHAT)
        ).tools == ()


def test_collection_registration_rules() -> None:
    tools = (*_mail_tools(), FakeTool("ctx", activation=ToolActivation.CONTEXT), FakeTool("web"))
    collections = (
        ToolCollectionDefinition(id="web", tool_ids=("read_mail",)),
        ToolCollectionDefinition(id=" ", tool_ids=("read_mail",)),
        ToolCollectionDefinition(
            id="first", tool_ids=("search_mails", "ctx", "ghost", "search_mails")
        ),
        ToolCollectionDefinition(id="second", tool_ids=("search_mails", "read_mail")),
        ToolCollectionDefinition(id="first", tool_ids=("count_mails",)),
        ToolCollectionDefinition(id="empty", tool_ids=("ghost",)),
    )
    registry = _registry(*tools, collections=collections)
    assert registry.collection_tool_ids("web") == ()
    assert registry.collection_tool_ids("first") == ("search_mails",)
    assert registry.collection_tool_ids("second") == ("read_mail",)
    assert not registry.is_known("empty")
    assert registry.collection_id("ctx") == "ctx"
    messages = " | ".join(f.message for f in registry.findings)
    assert "'web': a tool already has this ID" in messages
    assert "'ghost' is left out of collection 'first': it is not registered" in messages
    assert "'ctx' is left out of collection 'first': nobody selects the tool" in messages
    assert "'search_mails' is left out of collection 'second': it already belongs" in messages


def test_an_unknown_tool_cannot_disable_a_collection() -> None:
    collection = ToolCollectionDefinition(id="box", tool_ids=("read_mail", "ghost"))
    registry = _registry(
        *_mail_tools(),
        collections=(collection,),
        settings=(_setting("DataTools.DisabledToolIds", ("ghost",)),),
    )
    assert registry.offer_decision("read_mail", SELF_HOSTED).reason is R.NONE


# --- ToolAvailabilityTests ------------------------------------------------------------------------


async def test_an_unavailable_tool_appears_in_no_list_and_no_request() -> None:
    registry = _registry(FakeTool("preview", available=False), FakeTool("demo"))
    assert [e.id for e in registry.catalog(Component.CHAT)] == ["demo"]
    assert [e.id for e in registry.catalog()] == ["demo"]
    assert [d.id for d in registry.definitions()] == ["demo"]
    assert registry.offer_decision("preview", SELF_HOSTED).reason is R.NOT_AVAILABLE_HERE
    runnable = await registry.runnable_tools(["preview", "demo"], SELF_HOSTED, Component.CHAT)
    assert runnable.tool_ids == ("demo",)
    assert registry.normalize_selection(["preview"]) == ("preview",)


def test_the_app_settings_list_shows_context_tools_but_component_catalogs_do_not() -> None:
    registry = _registry(FakeTool("ctx", activation=ToolActivation.CONTEXT), FakeTool("sel"))
    assert [e.id for e in registry.catalog(Component.CHAT)] == ["sel"]
    assert {e.id for e in registry.catalog()} == {"ctx", "sel"}


# --- settings and secrets ------------------------------------------------------------------------


def test_settings_carry_their_source_and_a_registry_keeps_secrets_out_of_findings() -> None:
    tool = FakeTool(
        "demo",
        schema=SettingsSchema(properties={"key": SettingField(secret=True), "url": SettingField()}),
    )
    configuration = PolicyConfiguration(
        settings={
            "DataTools.LockedToolSettings": _setting(
                "DataTools.LockedToolSettings",
                {"demo.key": "plaintext-key", "demo.url": "https://w"},
            )
        }
    )
    registry = ToolRegistry([tool], configuration, UserSettings(), secret_reader=lambda t, f: "kr")
    settings = registry.settings("demo")
    assert settings["url"].locked and settings["url"].value == "https://w"
    assert settings["key"].value is None
    assert [f.code for f in registry.findings] == ["tool-setting-refused"]
    assert "plaintext-key" not in registry.findings[0].message
    decision = registry.offer_decision("demo", SELF_HOSTED)
    assert "plaintext-key" not in repr(decision)


def test_trusted_providers_are_matched_case_insensitively_and_bring_no_confidence() -> None:
    trusted = _setting("DataSourceSecuritySettings.TrustedProviderIds", ("OA",))
    registry = _registry(FakeTool("demo", minimum=ConfidenceLevel.HIGH), settings=(trusted,))
    assert registry.is_trusted_provider(OPEN_AI) and not registry.is_trusted_provider(SELF_HOSTED)
    assert registry.offer_decision("demo", OPEN_AI).reason is R.PROVIDER_CONFIDENCE_TOO_LOW


async def test_a_runnable_tool_unpacks_as_definition_and_tool() -> None:
    tool = FakeTool("demo")
    runnable = await _registry(tool).runnable_tools(["demo"], SELF_HOSTED, Component.CHAT)
    [(definition, implementation)] = runnable.tools
    assert definition.id == "demo" and implementation is tool


def test_a_capability_override_is_part_of_what_a_decision_depends_on() -> None:
    registry = _registry(FakeTool("demo"))
    same_but_without_tools = ProviderConfig(
        "oa",
        "OpenAI",
        ProviderKind.OPEN_AI,
        "gpt-4o",
        capability_overrides={"FUNCTION_CALLING": False},
    )
    assert registry.offer_decision("demo", OPEN_AI).reason is R.NONE
    assert (
        registry.offer_decision("demo", same_but_without_tools).reason is R.MODEL_CANNOT_USE_TOOLS
    )
    assert registry.offer_decision("demo", OPEN_AI).reason is R.NONE
