"""The `CONFIG["SETTINGS"]` keys toolpolicy knows: type, parser, override and add-up rules, docs.

One table serves the plugin loader (parsing), the merge (add-up keys, locking), `policy schema`,
`policy template` and lint. AI Studio keys toolpolicy does not use are listed too (with
`used_by_toolpolicy=False`) so lint can tell "kept, not used here" from "unknown key (typo?)";
their values are kept raw and never validated.

`ManagedSetting.value` per kind: BOOL → bool; ENUM/LEVEL/STRING → str (enum and level names
upper-case); STRING_SET → tuple[str, ...]; STRING_MAP / LEVEL_MAP / ENUM_MAP →
Mapping[str, str]; COMPONENT_IDS / CHOICE_LISTS / GROUP_IDS → Mapping[str, tuple[str, ...]];
CALL_LIMITS → Mapping[str, str] (each value a limit as `policy.quotas` reads it); RAW → the Lua value as plain
Python data (tables become dicts, sequences tuples).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from policy._dataclass import dataclass
from policy.flow import EFFECT_NAMES, FLOW_RULE_NAMES, FlowRule
from policy.sign_in import (
    DEFAULT_GROUPS_CLAIM,
    audience_problem,
    claim_problem,
    issuer_problem,
    secret_problem,
)
from policy.vocabulary import (
    COMPONENT_NAMES,
    CONFIGURABLE_CONFIDENCE_LEVELS,
    PROVIDER_KIND_NAMES,
    ConfidenceScheme,
    DataSourceRetrievalMode,
    InjectionFilterKind,
    OutboundDataRestriction,
)

if TYPE_CHECKING:
    from policy.suggest import HintBudget

OVERRIDE_SUFFIX = ".AllowUserOverride"


class SettingKind(StrEnum):
    """What values a key takes, which decides how it is parsed and checked."""

    BOOL = "bool"
    ENUM = "enum"
    LEVEL = "level"
    STRING = "string"
    INT = "int"
    GUID = "guid"
    STRING_SET = "string_set"
    STRING_MAP = "string_map"
    LEVEL_MAP = "level_map"
    ENUM_MAP = "enum_map"
    COMPONENT_IDS = "component_ids"
    CHOICE_LISTS = "choice_lists"
    GROUP_IDS = "group_ids"
    CALL_LIMITS = "call_limits"
    RAW = "raw"


@dataclass(frozen=True, slots=True)
class SettingKey:
    """One key of `CONFIG["SETTINGS"]`.

    `honors_user_override`: `<key>.AllowUserOverride = true` makes the value an editable default;
    on other keys the companion is ignored and the value stays locked. `adds_up`: every plugin's
    entries are kept and united instead of the later plugin replacing the earlier.
    `rejects_plugin`: a malformed value rejects the whole plugin instead of skipping the key.
    `choices` are the accepted (upper-case) names of an enum/level value, `key_choices` of a map key.
    `replaced_by` names what to write instead of a key AI Studio has retired (shown in the notice).
    `mistake_reads_as`: a value that is none of `choices` is an error and reads as this one (the
    strictest), never as the default — for a key whose default is the loosest. A CHOICE_LISTS
    entry naming a word that is none of `choices` reads as every choice (the strictest).
    `text_rule`: for a STRING key, what a valid text is — None for a text it takes, else what
    would be valid (the value is then skipped, an error in `policy check`). `secret`: a
    mistaken value is never shown in a message (it may be a secret written in plain text).
    """

    name: str
    kind: SettingKind
    doc: str
    honors_user_override: bool = True
    adds_up: bool = False
    used_by_toolpolicy: bool = True
    rejects_plugin: bool = False
    organization_only: bool = False
    replaced_by: str = ""
    choices: tuple[str, ...] = ()
    key_choices: tuple[str, ...] = ()
    default: Any = None
    example: str = ""
    mistake_reads_as: str = ""
    text_rule: Callable[[str], str | None] | None = None
    secret: bool = False

    @property
    def section(self) -> str:
        return self.name.split(".", 1)[0]


LEVEL_NAMES: tuple[str, ...] = tuple(level.name for level in CONFIGURABLE_CONFIDENCE_LEVELS)
_COMPONENTS = COMPONENT_NAMES
_PROVIDER_KINDS = PROVIDER_KIND_NAMES


def _names(enum: Any) -> tuple[str, ...]:
    return tuple(member.name for member in enum)


_TOOLPOLICY_KEYS: tuple[SettingKey, ...] = (
    SettingKey(
        "DataTools.EnableTools",
        SettingKind.BOOL,
        "Switches tool calling on or off for everyone; off blocks every tool (TOOLS_SWITCHED_OFF).",
        default=True,
        example="false",
    ),
    SettingKey(
        "DataTools.AllowLocalMcpServers",
        SettingKind.BOOL,
        'Whether local plugins may declare their own CONFIG["MCP_SERVERS"] (never under an '
        "organization server's name). Honored only from organization plugins; always locked.",
        honors_user_override=False,
        organization_only=True,
        default=False,
        example="true",
    ),
    SettingKey(
        "DataTools.DisabledToolIds",
        SettingKind.STRING_SET,
        "Tool or collection ids that are switched off. An id that names no tool is an error "
        "in `policy check` and is read as the tool it most likely meant until it is fixed. "
        "Always locked.",
        honors_user_override=False,
        default=(),
        example='{ "web_search" }',
    ),
    SettingKey(
        "DataTools.RequireApprovalToolIds",
        SettingKind.STRING_SET,
        "Tool ids or globs (`tickets__delete_*`) whose every call waits for a person's approval "
        "before it runs, whatever else allows it. Entries of every plugin add up. Always locked.",
        honors_user_override=False,
        adds_up=True,
        default=(),
        example='{ "tickets__delete_*", "pay_invoice" }',
    ),
    SettingKey(
        "DataTools.MinimumProviderConfidenceByToolId",
        SettingKind.LEVEL_MAP,
        "Per tool or collection id, the lowest provider confidence the tool may be offered to. "
        "A malformed table rejects the whole plugin; an id that names no tool is an error and "
        "its level applies to the tool it most likely meant until it is fixed.",
        rejects_plugin=True,
        choices=LEVEL_NAMES,
        example='{ ["web_search"] = "VERY_LOW", ["search_confluence"] = "HIGH" }',
    ),
    SettingKey(
        "DataTools.LockedToolSettings",
        SettingKind.STRING_MAP,
        'Tool settings users cannot change, keyed "<toolId>.<field>"; the only place for '
        "secrets (ENC:v1: values). Always locked.",
        honors_user_override=False,
        example='{ ["search_confluence.baseUrl"] = "https://wiki.example.org/" }',
    ),
    SettingKey(
        "DataTools.DefaultToolSettings",
        SettingKind.STRING_MAP,
        'Pre-filled tool settings keyed "<toolId>.<field>"; a value the user saves wins. '
        "Already defaults by nature, so the companion key has nothing to add.",
        honors_user_override=False,
        example='{ ["web_search.defaultLanguage"] = "de-DE" }',
    ),
    SettingKey(
        "DataTools.DefaultToolIdsByComponent",
        SettingKind.COMPONENT_IDS,
        "Per component name, the tool ids selected by default.",
        key_choices=_COMPONENTS,
        example='{ ["CHAT"] = { "web_search", "read_web_page" } }',
    ),
    SettingKey(
        "DataTools.InjectionFilter",
        SettingKind.ENUM,
        "Which filter removes prompt injections from what tools bring in: the built-in "
        "STRUCTURAL rules, or MODEL — the self-hosted model named by "
        "DataTools.InjectionFilterProviderId, with the structural rules standing in whenever it "
        "does not answer in time or answers something unreadable. A mistake (no such provider, "
        "one that is not self-hosted) is an error and leaves STRUCTURAL in force. Honored only "
        "from organization plugins; always locked.",
        choices=_names(InjectionFilterKind),
        default=InjectionFilterKind.STRUCTURAL.value,
        honors_user_override=False,
        organization_only=True,
        example='"MODEL"',
    ),
    SettingKey(
        "DataTools.InjectionFilterProviderId",
        SettingKind.STRING,
        'The Id of the CONFIG["LLM_PROVIDERS"] entry whose model the MODEL injection filter '
        "asks: a SELF_HOSTED entry (e.g. a local vLLM or Ollama) or one listed in "
        "DataSourceSecuritySettings.TrustedProviderIds, since every text a tool brings in is sent "
        "to it. Honored only from organization plugins; always locked.",
        honors_user_override=False,
        organization_only=True,
        example='"00000000-0000-0000-0000-000000000001"',
    ),
    SettingKey(
        "DataTools.FlowRule",
        SettingKind.ENUM,
        "What happens to a tool in conflict with what the chat holds (the chat's untrusted "
        "content and private data plus the tool's effects cover untrusted content, private data "
        "and SENDS_OUT or CHANGES_STATE): OFF checks nothing; BLOCK does not offer it and "
        "refuses each of its calls; APPROVE offers it and each call needs a person's approval. "
        "A value that is none of these is an error and reads as BLOCK. Always locked.",
        choices=FLOW_RULE_NAMES,
        default=FlowRule.OFF.value,
        honors_user_override=False,
        mistake_reads_as=FlowRule.BLOCK.value,
        example='"BLOCK"',
    ),
    SettingKey(
        "DataTools.ToolEffects",
        SettingKind.CHOICE_LISTS,
        "Per tool id, its effects (UNTRUSTED_CONTENT, PRIVATE_DATA, SENDS_OUT, CHANGES_STATE), "
        "replacing what its definition or MCP annotations declare. A tool that acts with the "
        "user's own account (mail as them, their calendar, payments) reaches their private "
        "systems: give it PRIVATE_DATA too. A word that is no effect is an error and the tool "
        "counts as having all four until it is fixed. Always locked.",
        honors_user_override=False,
        choices=EFFECT_NAMES,
        example='{ ["pay_invoice"] = { "PRIVATE_DATA", "CHANGES_STATE" } }',
    ),
    SettingKey(
        "DataGateway.ConfigurationsByGroup",
        SettingKind.GROUP_IDS,
        "Per group of the signed-in person (the identity provider's groups claim), the ids of the "
        "configurations (plugin IDs) that apply to its members; a configuration no group names "
        "applies to everyone. A caller is decided with the plugins of everyone merged with those "
        "of their groups. An id that names no loaded configuration is an error in `policy "
        "check` (read as the configuration it most likely meant until it is fixed); a malformed "
        "table rejects the plugin. Honored only from organization plugins; always locked.",
        honors_user_override=False,
        organization_only=True,
        rejects_plugin=True,
        example='{ ["engineering"] = { "6f1c2d3e-0000-4000-8000-000000000001" } }',
    ),
    SettingKey(
        "DataGateway.CallLimits",
        SettingKind.CALL_LIMITS,
        'Per tool id or glob ("*" for every tool), how many calls one person may make in a '
        'window: "<count>/<second|minute|hour|day>". The most specific entry applies (an exact '
        "id, then the longest glob). A call over its limit is refused (BLOCKED) saying when the "
        "next one is possible. Counted per person across every instance sharing the PostgreSQL "
        "store (SQLite for one instance). A malformed limit is an error and reads as 0 calls "
        "until it is fixed. Always locked.",
        honors_user_override=False,
        example='{ ["tickets__delete_ticket"] = "5/hour", ["*"] = "600/hour" }',
    ),
    SettingKey(
        "DataGateway.AdministratorGroups",
        SettingKind.STRING_SET,
        "The groups (of the identity provider's groups claim) whose signed-in members may, on "
        "`policy serve`, decide for other people: simulate as another subject or groups, with a "
        "user settings file of the server's machine, and compare candidate configurations "
        "(Diff, which shows every group's configurations). Everyone else signed in simulates "
        "only as themselves, with settings they paste. Unset, nobody signed in may; without "
        "sign-in (loopback, `--token`) whoever reaches the page may. Honored only from "
        "organization plugins; always locked.",
        honors_user_override=False,
        organization_only=True,
        default=(),
        example='{ "toolpolicy-admins" }',
    ),
    SettingKey(
        "DataGateway.RecordSubject",
        SettingKind.ENUM,
        "How decision records name the signed-in person: HASH (a SHA-256 of the issuer's `sub`, "
        "the same for one person in every record: the log does not show the `sub`, though one "
        "who knows a `sub` can find its records) or SUBJECT (the `sub` as the identity provider "
        "sends it). Always locked.",
        choices=("HASH", "SUBJECT"),
        default="HASH",
        honors_user_override=False,
        example='"SUBJECT"',
    ),
    SettingKey(
        "DataConfidence.ConfidenceScheme",
        SettingKind.ENUM,
        "Which table maps a provider kind to its confidence level.",
        choices=_names(ConfidenceScheme),
        default=ConfidenceScheme.TRUST_ALL.value,
        example='"TRUST_EUROPE"',
    ),
    SettingKey(
        "DataConfidence.CustomConfidenceScheme",
        SettingKind.ENUM_MAP,
        "Provider kind → confidence level, used when the scheme is CUSTOM (missing kind = UNKNOWN).",
        key_choices=_PROVIDER_KINDS,
        choices=LEVEL_NAMES,
        example='{ ["OPEN_AI"] = "MEDIUM", ["SELF_HOSTED"] = "HIGH" }',
    ),
    SettingKey(
        "DataConfidence.EnforceGlobalMinimumConfidence",
        SettingKind.BOOL,
        "Whether GlobalMinimumConfidence applies to every component.",
        default=False,
        example="true",
    ),
    SettingKey(
        "DataConfidence.GlobalMinimumConfidence",
        SettingKind.LEVEL,
        "The lowest provider confidence any component may use (when enforced).",
        choices=LEVEL_NAMES,
        default="NONE",
        example='"MEDIUM"',
    ),
    SettingKey(
        "DataSourceSecuritySettings.TrustedProviderIds",
        SettingKind.STRING_SET,
        "Provider instance ids treated like self-hosted for data-source security only "
        "(never a confidence boost). Always locked.",
        honors_user_override=False,
        example='{ "00000000-0000-0000-0000-000000000001" }',
    ),
    SettingKey(
        "DataChat.PreselectedDataSourcesRetrievalMode",
        SettingKind.ENUM,
        "Who searches a chat's data sources: the model via semantic_search, or every message.",
        choices=_names(DataSourceRetrievalMode),
        default=DataSourceRetrievalMode.SEMANTIC_SEARCH.value,
        example='"EVERY_MESSAGE"',
    ),
    SettingKey(
        "DataGateway.Issuer",
        SettingKind.STRING,
        "The identity provider whose access tokens `policy mcp serve --transport http` and "
        "`policy serve` accept (its OpenID issuer address: https, or http on a loopback host). "
        "Set, every request needs a token it signed for DataGateway.Audience; the caller's "
        "`sub` and groups travel with the request. Honored only from organization plugins; "
        "always locked.",
        honors_user_override=False,
        organization_only=True,
        example='"https://login.example.org/realms/corp"',
        text_rule=issuer_problem,
    ),
    SettingKey(
        "DataGateway.Audience",
        SettingKind.STRING,
        "The audience (`aud`) an access token must name to be accepted by the gateway and the "
        "web page; required with DataGateway.Issuer. Honored only from organization plugins; "
        "always locked.",
        honors_user_override=False,
        organization_only=True,
        example='"toolpolicy-gateway"',
        text_rule=audience_problem,
    ),
    SettingKey(
        "DataGateway.GroupsClaim",
        SettingKind.STRING,
        "The access-token claim that lists the caller's groups (a dotted path reaches into an "
        "object, e.g. `realm_access.roles`). A token whose claim is not a list of strings is "
        "refused. Honored only from organization plugins; always locked.",
        honors_user_override=False,
        organization_only=True,
        default=DEFAULT_GROUPS_CLAIM,
        example='"groups"',
        text_rule=claim_problem,
    ),
    SettingKey(
        "DataGateway.ClientId",
        SettingKind.STRING,
        "The gateway's own client id at DataGateway.Issuer, with which it exchanges a caller's "
        'token for one to an MCP server whose ["Auth"] is TOKEN_EXCHANGE (RFC 8693). Honored '
        "only from organization plugins; always locked.",
        honors_user_override=False,
        organization_only=True,
        example='"toolpolicy-gateway"',
    ),
    SettingKey(
        "DataGateway.ClientSecret",
        SettingKind.STRING,
        "The gateway's client secret at DataGateway.Issuer, an ENC:v1: value (`policy encrypt`). "
        "Honored only from organization plugins; always locked.",
        honors_user_override=False,
        organization_only=True,
        example='"ENC:v1:..."',
        text_rule=secret_problem,
        secret=True,
    ),
    SettingKey(
        "DataMailboxes.MinimumOutboundDataRestriction",
        SettingKind.ENUM,
        "The loosest outbound-data restriction a mailbox may have.",
        choices=_names(OutboundDataRestriction),
        default=OutboundDataRestriction.UNRESTRICTED.name,
        example='"ONLY_LINKS_FROM_CHAT"',
    ),
)


def _ai_studio(name: str, kind: SettingKind, **extra: Any) -> SettingKey:
    return SettingKey(
        name,
        kind,
        "AI Studio setting; kept, not used by toolpolicy.",
        used_by_toolpolicy=False,
        **extra,
    )


_B, _E, _S, _I, _G, _SET, _R = (
    SettingKind.BOOL,
    SettingKind.ENUM,
    SettingKind.STRING,
    SettingKind.INT,
    SettingKind.GUID,
    SettingKind.STRING_SET,
    SettingKind.RAW,
)

_AI_STUDIO_KEYS: tuple[SettingKey, ...] = (
    *(
        _ai_studio(f"DataApp.{n}", k)
        for n, k in (
            ("UpdateInterval", _E),
            ("UpdateInstallation", _E),
            ("StartPage", _E),
            ("ShowIntroduction", _B),
            ("ShowQuickStartGuide", _B),
            ("ShowLastChangelog", _B),
            ("ShowVision", _B),
            ("AllowUserToAddProvider", _B),
            ("AllowUserToImportPlugins", _B),
            ("AllowUserToImportConfigurationPlugins", _B),
            ("AllowUserToSharePlugins", _B),
            ("ShowAdminSettings", _B),
            ("PreviewVisibility", _E),
            ("ShortcutVoiceRecording", _S),
            ("HttpClientTimeoutSeconds", _I),
            ("ExternalHttpCustomRootCertificatesEnabled", _B),
            ("ExternalHttpCustomRootCertificateBundlePath", _S),
            ("PreselectedProvider", _G),
            ("PreselectedProfile", _G),
            ("UseTranscriptionProvider", _G),
            ("ShowPromptInjectionAlert", _B),
        )
    ),
    _ai_studio("DataApp.HiddenAssistants", _SET, honors_user_override=False),
    _ai_studio(
        "DataApp.ExternalHttpCustomRootCertificateAllowedHosts", _SET, honors_user_override=False
    ),
    _ai_studio("DataApp.EnabledPreviewFeatures", _SET, adds_up=True, honors_user_override=False),
    _ai_studio("DataConfidence.ShowProviderConfidence", _B),
    _ai_studio("DataAgentDataSourceSelection.PreselectAgentOptions", _B),
    _ai_studio("DataAgentDataSourceSelection.PreselectedAgentProvider", _G),
    *(
        _ai_studio(f"DataAgentRetrievalContextValidation.{n}", k)
        for n, k in (
            ("EnableRetrievalContextValidation", _B),
            ("PreselectAgentOptions", _B),
            ("PreselectedAgentProvider", _G),
            ("NumParallelValidations", _I),
        )
    ),
    *(
        _ai_studio(f"DataAssistantPluginAudit.{n}", k)
        for n, k in (
            ("RequireAuditBeforeActivation", _B),
            ("BlockActivationBelowMinimum", _B),
            ("AutomaticallyAuditAssistants", _B),
            ("PreselectedAgentProvider", _G),
            ("MinimumLevel", _E),
        )
    ),
    _ai_studio(
        "DataAssistantPluginAudit.EnterpriseApprovedPlugins",
        _R,
        adds_up=True,
        honors_user_override=False,
        organization_only=True,
    ),
    *(
        _ai_studio(f"DataChat.{n}", k)
        for n, k in (
            ("PreselectOptions", _B),
            ("PreselectedProvider", _G),
            ("PreselectedProfile", _S),
            ("PreselectedChatTemplate", _S),
            ("PreselectedDataSourcesDisabled", _B),
            ("PreselectedDataSourcesAutomaticSelection", _B),
            ("PreselectedDataSourcesAutomaticValidation", _B),
            ("PreselectedDataSourceIds", _SET),
            ("SendToChatDataSourceBehavior", _E),
        )
    ),
    *(
        _ai_studio(f"DataBatchProcessing.{n}", k)
        for n, k in (
            ("PreselectOptions", _B),
            ("IncludeSubdirectories", _B),
            ("InputDirectory", _S),
            ("OutputDirectory", _S),
            ("FilePatterns", _S),
            ("FreePrompt", _S),
            ("PromptFilePath", _S),
            ("PreselectedPolicyId", _S),
            ("CsvFileName", _S),
            ("ResultColumnHeader", _S),
            ("CustomCsvSeparator", _S),
            ("PromptSource", _E),
            ("OutputMode", _E),
            ("CsvSeparator", _E),
            ("MinimumDelaySeconds", _I),
            ("MinimumProviderConfidence", SettingKind.LEVEL),
            ("PreselectedProvider", _G),
            ("ResultFileFormat", _E),
        )
    ),
    *(
        _ai_studio(f"DataVisualBriefing.{n}", k)
        for n, k in (
            ("PreselectedProvider", _G),
            ("PreselectedProfile", _G),
            ("PreselectedTargetLanguage", _E),
            ("PreselectedOtherLanguage", _S),
            ("PreselectedAudienceProfile", _E),
            ("PreselectedAudienceAgeGroup", _E),
            ("PreselectedAudienceOrganizationalLevel", _E),
            ("PreselectedAudienceExpertise", _E),
            ("ShowSourceReferences", _B),
            ("OptimizeImages", _B),
            ("MinimumProviderConfidence", SettingKind.LEVEL),
        )
    ),
    _ai_studio(
        "DataTools.WebSearchBaseUrl",
        _S,
        replaced_by='DataTools.LockedToolSettings["web_search.searxng.baseUrl"]',
    ),
    _ai_studio(
        "DataTools.ReadWebPageAllowedPrivateHosts",
        _S,
        replaced_by='DataTools.LockedToolSettings["read_web_page.allowedPrivateHosts"]',
    ),
)

SETTING_KEYS: Mapping[str, SettingKey] = {k.name: k for k in (*_TOOLPOLICY_KEYS, *_AI_STUDIO_KEYS)}
"""Every key toolpolicy knows, by name (case-sensitive, like AI Studio)."""

TOOLPOLICY_KEYS: tuple[SettingKey, ...] = _TOOLPOLICY_KEYS
"""The keys toolpolicy acts on, in documentation order."""


def setting_key(name: str) -> SettingKey | None:
    """The known key of that exact name, or None."""
    return SETTING_KEYS.get(name)


def is_override_companion(name: str) -> bool:
    """Whether `name` is a `<key>.AllowUserOverride` companion entry."""
    return name.endswith(OVERRIDE_SUFFIX) and len(name) > len(OVERRIDE_SUFFIX)


def companion_of(name: str) -> str:
    """The setting a `<key>.AllowUserOverride` companion belongs to."""
    return name[: -len(OVERRIDE_SUFFIX)]


@dataclass(frozen=True, slots=True)
class UnknownKey:
    """A settings key toolpolicy does not know, and the known key it most likely meant."""

    name: str
    meant: str | None

    @property
    def hint(self) -> str:
        """` (did you mean "X"? …)` for a near miss, else an empty string."""
        if self.meant is None:
            return ""
        case = " keys are case-sensitive" if self.meant.lower() == self.name.lower() else ""
        return f' (did you mean "{self.meant}"?{case})'

    @property
    def misses_a_key_in_force(self) -> bool:
        """Spelled right, it would be a key toolpolicy acts on: the mistake leaves a value the
        administrator wrote out of force, which may loosen the policy, so it is an error."""
        return self.meant is not None and SETTING_KEYS[self.meant].used_by_toolpolicy


def unknown_key(name: str, budget: HintBudget | None = None) -> UnknownKey:
    """`name` read as an unknown key with its near miss (case slips are the common typo); with
    a `budget`, the near miss is searched only while it lasts."""
    from policy.suggest import closest_name

    meant = budget.closest_name(name, SETTING_KEYS) if budget else closest_name(name, SETTING_KEYS)
    return UnknownKey(name, meant)


def parse_bool(value: Any) -> bool | None:
    """A Lua bool, or the invariant strings "true"/"false" in any case; else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def parse_choice(value: Any, choices: tuple[str, ...]) -> str | None:
    """A case-insensitive name among `choices`, returned in its canonical spelling."""
    if not isinstance(value, str):
        return None
    wanted = value.strip().upper()
    return wanted if wanted in choices else None


def describe(value: Any) -> str:
    """A short, safe rendering of a configured value for messages (secrets masked)."""
    from policy.secrets import is_encrypted

    if is_encrypted(value):
        return "an ENC:v1: value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return f'"{shown}"'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dict | tuple | list):
        return "a table"
    return "a function" if callable(value) else type(value).__name__
