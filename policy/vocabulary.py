"""The words every part of toolpolicy shares.

Member names are persisted as strings in plugin.lua and settings files (AI Studio compatible), so
they never change; numeric values exist only where an order matters.
"""

from __future__ import annotations

from enum import Enum, IntEnum, StrEnum


class Component(StrEnum):
    """The parts of an app a tool can be offered in (AI Studio's `Components`)."""

    NONE = "NONE"
    GRAMMAR_SPELLING_ASSISTANT = "GRAMMAR_SPELLING_ASSISTANT"
    ICON_FINDER_ASSISTANT = "ICON_FINDER_ASSISTANT"
    REWRITE_ASSISTANT = "REWRITE_ASSISTANT"
    PROMPT_OPTIMIZER_ASSISTANT = "PROMPT_OPTIMIZER_ASSISTANT"
    TRANSLATION_ASSISTANT = "TRANSLATION_ASSISTANT"
    AGENDA_ASSISTANT = "AGENDA_ASSISTANT"
    CODING_ASSISTANT = "CODING_ASSISTANT"
    TEXT_SUMMARIZER_ASSISTANT = "TEXT_SUMMARIZER_ASSISTANT"
    EMAIL_ASSISTANT = "EMAIL_ASSISTANT"
    LEGAL_CHECK_ASSISTANT = "LEGAL_CHECK_ASSISTANT"
    SYNONYMS_ASSISTANT = "SYNONYMS_ASSISTANT"
    MY_TASKS_ASSISTANT = "MY_TASKS_ASSISTANT"
    JOB_POSTING_ASSISTANT = "JOB_POSTING_ASSISTANT"
    BIAS_DAY_ASSISTANT = "BIAS_DAY_ASSISTANT"
    ERI_ASSISTANT = "ERI_ASSISTANT"
    DOCUMENT_ANALYSIS_ASSISTANT = "DOCUMENT_ANALYSIS_ASSISTANT"
    SLIDE_BUILDER_ASSISTANT = "SLIDE_BUILDER_ASSISTANT"
    META_ASSISTANT = "META_ASSISTANT"
    I18N_ASSISTANT = "I18N_ASSISTANT"
    CHAT = "CHAT"
    DYNAMIC_ASSISTANT = "DYNAMIC_ASSISTANT"
    WRITER = "WRITER"
    APP_SETTINGS = "APP_SETTINGS"
    AGENT_TEXT_CONTENT_CLEANER = "AGENT_TEXT_CONTENT_CLEANER"
    AGENT_DATA_SOURCE_SELECTION = "AGENT_DATA_SOURCE_SELECTION"
    AGENT_RETRIEVAL_CONTEXT_VALIDATION = "AGENT_RETRIEVAL_CONTEXT_VALIDATION"
    AGENT_ASSISTANT_PLUGIN_AUDIT = "AGENT_ASSISTANT_PLUGIN_AUDIT"
    LOG_VIEWER_ASSISTANT = "LOG_VIEWER_ASSISTANT"
    VISUAL_BRIEFING_ASSISTANT = "VISUAL_BRIEFING_ASSISTANT"
    BATCH_PROCESSING_ASSISTANT = "BATCH_PROCESSING_ASSISTANT"


class ConfidenceLevel(IntEnum):
    """How far a provider's data handling is trusted; comparisons are numeric."""

    NONE = 0
    UNTRUSTED = 1
    UNKNOWN = 10
    VERY_LOW = 90
    LOW = 100
    MODERATE = 150
    MEDIUM = 200
    HIGH = 300


#: Levels an administrator may configure as a minimum (UNKNOWN never is).
CONFIGURABLE_CONFIDENCE_LEVELS: tuple[ConfidenceLevel, ...] = (
    ConfidenceLevel.NONE,
    ConfidenceLevel.UNTRUSTED,
    ConfidenceLevel.VERY_LOW,
    ConfidenceLevel.LOW,
    ConfidenceLevel.MODERATE,
    ConfidenceLevel.MEDIUM,
    ConfidenceLevel.HIGH,
)


def parse_confidence_level(text: object) -> ConfidenceLevel | None:
    """A configured level by name, case-insensitive; `UNKNOWN`, numbers and blanks are None."""
    if not isinstance(text, str):
        return None
    name = text.strip().upper()
    if not name or name == "UNKNOWN" or name not in ConfidenceLevel.__members__:
        return None
    return ConfidenceLevel[name]


class ProviderKind(StrEnum):
    """LLM provider kinds (AI Studio's `LLMProviders`); confidence is decided per kind."""

    NONE = "NONE"
    OPEN_AI = "OPEN_AI"
    ANTHROPIC = "ANTHROPIC"
    MISTRAL = "MISTRAL"
    SELF_HOSTED = "SELF_HOSTED"
    FIREWORKS = "FIREWORKS"
    GROQ = "GROQ"
    GOOGLE = "GOOGLE"
    X = "X"
    HELMHOLTZ = "HELMHOLTZ"
    GWDG = "GWDG"
    DEEP_SEEK = "DEEP_SEEK"
    ALIBABA_CLOUD = "ALIBABA_CLOUD"
    HUGGINGFACE = "HUGGINGFACE"
    PERPLEXITY = "PERPLEXITY"
    OPEN_ROUTER = "OPEN_ROUTER"
    HETZNER = "HETZNER"
    IONOS = "IONOS"
    LITE_LLM = "LITE_LLM"


COMPONENT_NAMES: tuple[str, ...] = tuple(c.value for c in Component if c is not Component.NONE)
"""Every component a tool can be offered in, by name (NONE is no component)."""

PROVIDER_KIND_NAMES: tuple[str, ...] = tuple(
    k.value for k in ProviderKind if k is not ProviderKind.NONE
)
"""Every provider kind a provider can be, by name (NONE is no provider)."""


class ConfidenceScheme(StrEnum):
    """Named tables that map a provider kind to a confidence level."""

    TRUST_ALL = "TRUST_ALL"
    TRUST_USA_EUROPE = "TRUST_USA_EUROPE"
    TRUST_USA = "TRUST_USA"
    TRUST_EUROPE = "TRUST_EUROPE"
    TRUST_ASIA = "TRUST_ASIA"
    LOCAL_TRUST_ONLY = "LOCAL_TRUST_ONLY"
    CUSTOM = "CUSTOM"


_P = ProviderKind
_C = ConfidenceLevel

#: Per scheme: (explicit levels per kind, fallback for every other kind). SELF_HOSTED is HIGH everywhere.
_SCHEME_TABLES: dict[
    ConfidenceScheme, tuple[dict[ProviderKind, ConfidenceLevel], ConfidenceLevel]
] = {
    ConfidenceScheme.TRUST_ALL: ({_P.SELF_HOSTED: _C.HIGH}, _C.MEDIUM),
    ConfidenceScheme.TRUST_USA_EUROPE: (
        {_P.SELF_HOSTED: _C.HIGH, _P.DEEP_SEEK: _C.LOW, _P.ALIBABA_CLOUD: _C.LOW},
        _C.MEDIUM,
    ),
    ConfidenceScheme.TRUST_USA: (
        {
            _P.SELF_HOSTED: _C.HIGH,
            _P.MISTRAL: _C.LOW,
            _P.HELMHOLTZ: _C.LOW,
            _P.GWDG: _C.LOW,
            _P.HETZNER: _C.LOW,
            _P.IONOS: _C.LOW,
            _P.DEEP_SEEK: _C.LOW,
            _P.ALIBABA_CLOUD: _C.LOW,
        },
        _C.MEDIUM,
    ),
    ConfidenceScheme.TRUST_EUROPE: (
        {
            _P.SELF_HOSTED: _C.HIGH,
            _P.MISTRAL: _C.MEDIUM,
            _P.HELMHOLTZ: _C.MEDIUM,
            _P.GWDG: _C.MEDIUM,
            _P.HETZNER: _C.MEDIUM,
            _P.IONOS: _C.MEDIUM,
        },
        _C.LOW,
    ),
    ConfidenceScheme.TRUST_ASIA: (
        {_P.SELF_HOSTED: _C.HIGH, _P.DEEP_SEEK: _C.MEDIUM, _P.ALIBABA_CLOUD: _C.MEDIUM},
        _C.LOW,
    ),
    ConfidenceScheme.LOCAL_TRUST_ONLY: ({_P.SELF_HOSTED: _C.HIGH}, _C.VERY_LOW),
}


def provider_confidence(
    kind: ProviderKind,
    scheme: ConfidenceScheme | str,
    custom: dict[ProviderKind, ConfidenceLevel] | None = None,
) -> ConfidenceLevel:
    """A provider kind's confidence under a scheme (kind NONE → NONE; unknown scheme → UNKNOWN)."""
    if kind is ProviderKind.NONE:
        return ConfidenceLevel.NONE
    if scheme == ConfidenceScheme.CUSTOM:
        return (custom or {}).get(kind, ConfidenceLevel.UNKNOWN)
    try:
        table, fallback = _SCHEME_TABLES[ConfidenceScheme(scheme)]
    except (ValueError, KeyError):
        return ConfidenceLevel.UNKNOWN
    return table.get(kind, fallback)


class DataSecurity(StrEnum):
    """Where a chat's data may go (AI Studio's `DataSourceSecurity`)."""

    NOT_SPECIFIED = "NOT_SPECIFIED"
    ALLOW_ANY = "ALLOW_ANY"
    SELF_HOSTED = "SELF_HOSTED"


def may_receive_data(security: DataSecurity, kind: ProviderKind, trusted: bool) -> bool:
    """Whether data of `security` may go to a provider: SELF_HOSTED data only to a self-hosted one
    or one the organization trusts (`DataSourceSecuritySettings.TrustedProviderIds`)."""
    return security is not DataSecurity.SELF_HOSTED or kind is ProviderKind.SELF_HOSTED or trusted


def tighten_data_security(held: DataSecurity, arriving: DataSecurity) -> DataSecurity:
    """The ratchet: SELF_HOSTED sticks, ALLOW_ANY marks, NOT_SPECIFIED changes nothing."""
    if DataSecurity.SELF_HOSTED in (held, arriving):
        return DataSecurity.SELF_HOSTED
    if arriving is DataSecurity.ALLOW_ANY:
        return DataSecurity.ALLOW_ANY
    return held


class OutboundDataRestriction(IntEnum):
    """How far a chat may send data after reading a mailbox; lower is stricter."""

    ONLY_CONFIGURED_SERVICES = 0
    ONLY_LINKS_FROM_CHAT = 1
    UNRESTRICTED = 2


class ToolOutboundData(IntEnum):
    """Where a tool sends data, most contained first."""

    NONE = 0
    CONFIGURED_SERVICE = 1
    THIRD_PARTY_QUERIES = 2
    MODEL_CHOSEN_ADDRESSES = 3


def is_outbound_data_allowed(
    restriction: OutboundDataRestriction, data: ToolOutboundData, enforces_itself: bool
) -> bool:
    """Below UNRESTRICTED only contained tools, or tools that keep to the restriction, may run."""
    return (
        restriction is OutboundDataRestriction.UNRESTRICTED
        or data in (ToolOutboundData.NONE, ToolOutboundData.CONFIGURED_SERVICE)
        or enforces_itself
    )


class ToolActivation(StrEnum):
    """SELECTION tools are offered when selected; CONTEXT tools offer themselves per request."""

    SELECTION = "SELECTION"
    CONTEXT = "CONTEXT"


class ToolOfferBlockReason(StrEnum):
    """The first obstacle between a tool and a provider, in the order the checks run."""

    NONE = "NONE"
    TOOLS_SWITCHED_OFF = "TOOLS_SWITCHED_OFF"
    MODEL_CANNOT_USE_TOOLS = "MODEL_CANNOT_USE_TOOLS"
    NOT_AVAILABLE_HERE = "NOT_AVAILABLE_HERE"
    TOOL_SWITCHED_OFF = "TOOL_SWITCHED_OFF"
    DEFINITION_NOT_APPROVED = "DEFINITION_NOT_APPROVED"
    NOT_CONFIGURED = "NOT_CONFIGURED"
    PROVIDER_CONFIDENCE_TOO_LOW = "PROVIDER_CONFIDENCE_TOO_LOW"
    OUTBOUND_DATA_RESTRICTED = "OUTBOUND_DATA_RESTRICTED"
    FLOW_CONFLICT = "FLOW_CONFLICT"
    """`DataTools.FlowRule` BLOCK: with what the chat holds, the tool would complete untrusted
    content, private data and an outward effect (toolpolicy's own; AI Studio has no flows)."""


class DataSourceRetrievalMode(StrEnum):
    """Who searches a chat's data sources: the model via semantic_search, or every message."""

    SEMANTIC_SEARCH = "SEMANTIC_SEARCH"
    EVERY_MESSAGE = "EVERY_MESSAGE"


class InjectionFilterKind(StrEnum):
    """Which filter the prompt-injection guard asks (`DataTools.InjectionFilter`)."""

    STRUCTURAL = "STRUCTURAL"
    """The built-in rules (`runtime.web.injection_filter`): no network, always available."""
    MODEL = "MODEL"
    """A self-hosted model the organization names marks injected passages; the structural
    filter stands in whenever it cannot answer in time or answers something unreadable."""


class FreeAddressChoice(StrEnum):
    """Whether read_web_page may read addresses the model chose itself."""

    OFF = "OFF"
    ON = "ON"


class SafeSearch(StrEnum):
    OFF = "OFF"
    MODERATE = "MODERATE"
    STRICT = "STRICT"


class WebSearchBackend(StrEnum):
    SEARXNG = "SEARXNG"
    STAAN = "STAAN"
    TAVILY = "TAVILY"


class WebSearchBackendStrategy(StrEnum):
    FAILOVER = "FAILOVER"
    PARALLEL = "PARALLEL"
    SPECIFIC = "SPECIFIC"


class OptionSource(StrEnum):
    """Named lists of values a setting may take (AI Studio's `ToolSettingsOptionSources`)."""

    COMMON_LANGUAGES = "common_languages"
    SAFE_SEARCH = "safe_search"
    WEB_SEARCH_BACKENDS = "web_search_backends"
    WEB_SEARCH_BACKEND_STRATEGY = "web_search_backend_strategy"
    FREE_ADDRESS_CHOICE = "free_address_choice"


ANY_LANGUAGE = "all"

#: IETF tags of the common-language list (AI Studio's `CommonLanguages`, without AS_IS/OTHER).
_COMMON_LANGUAGE_TAGS: tuple[str, ...] = (
    "en-US",
    "en-GB",
    "zh-CN",
    "hi-IN",
    "es-ES",
    "fr-FR",
    "de-DE",
    "de-AT",
    "de-CH",
    "ja-JP",
    "ru-RU",
    "pt-BR",
    "it-IT",
    "ko-KR",
    "nl-NL",
    "pl-PL",
    "tr-TR",
    "ar-SA",
    "sv-SE",
)

_OPTION_VALUES: dict[OptionSource, tuple[tuple[str, str], ...]] = {
    OptionSource.COMMON_LANGUAGES: (
        (ANY_LANGUAGE, "Any language"),
        *((tag, tag) for tag in _COMMON_LANGUAGE_TAGS),
    ),
    OptionSource.SAFE_SEARCH: (
        ("OFF", "Off"),
        ("MODERATE", "Moderate"),
        ("STRICT", "Strict"),
    ),
    OptionSource.WEB_SEARCH_BACKENDS: (
        ("SEARXNG", "SearXNG"),
        ("STAAN", "Staan"),
        ("TAVILY", "Tavily"),
    ),
    OptionSource.WEB_SEARCH_BACKEND_STRATEGY: (
        ("FAILOVER", "One after another until one answers"),
        ("PARALLEL", "All at once, results combined"),
        ("SPECIFIC", "Only the preferred backend"),
    ),
    OptionSource.FREE_ADDRESS_CHOICE: (
        ("OFF", "Only web addresses from the chat or tools"),
        ("ON", "The AI may also choose addresses"),
    ),
}


def is_known_option_source(name: str) -> bool:
    return name in {s.value for s in OptionSource}


def option_values(name: str) -> tuple[tuple[str, str], ...]:
    """(value, label) pairs an option source offers; an unknown name offers nothing."""
    try:
        return _OPTION_VALUES[OptionSource(name)]
    except ValueError:
        return ()


class SettingSource(StrEnum):
    """Where a resolved tool setting value came from."""

    LOCKED = "LOCKED"
    USER = "USER"
    ORG_DEFAULT = "ORG_DEFAULT"
    DEFAULT = "DEFAULT"
    UNSET = "UNSET"


class PluginOrigin(Enum):
    """Who deployed a configuration plugin; organization plugins always apply first."""

    ORGANIZATION = "organization"
    LOCAL = "local"
