"""Whether a provider's model can call tools.

The decision, in order:

1. no provider, or provider kind NONE → unavailable ("Please select an LLM provider.");
2. `CapabilityOverrides["FUNCTION_CALLING"]` (also spelled `FunctionCalling`) true/false always wins;
3. otherwise the built-in model table below, matched case-insensitively against the model name's
   last path segment (so `openai/gpt-4o` on OpenRouter counts as `gpt-4o`); a model the table does
   not know is not capable until the user or a plugin overrides it.

Built-in model table (a model name *starts with* one of these families):

=================  ==================================================================================
Provider kind      Families that call tools
=================  ==================================================================================
OPEN_AI            gpt-4o, gpt-4.1, gpt-4-turbo, gpt-4, gpt-3.5-turbo, gpt-5, o1, o3, o4
                   (not: o1-mini, o1-preview, *-audio-*, *-realtime-*, *-search-*, *-transcribe*,
                   *-tts*, embeddings, image models)
ANTHROPIC          claude-3, claude-3-5/3-7, claude-sonnet-4, claude-opus-4, claude-haiku-4, claude-4
MISTRAL            mistral-large, mistral-medium, mistral-small, ministral, magistral, codestral,
                   devstral, pixtral-large, open-mistral-nemo
GOOGLE             gemini-1.5, gemini-2, gemini-3 (not: embedding models)
X                  grok-2, grok-3, grok-4, grok-code
DEEP_SEEK          deepseek-chat, deepseek-reasoner
ALIBABA_CLOUD      qwen-max, qwen-plus, qwen-turbo, qwen-flash, qwen2.5, qwen3
PERPLEXITY         none (sonar models do not call local tools)
every other kind   open-weight families served by hosts: llama-3.1, llama-3.2, llama-3.3, llama-4,
(SELF_HOSTED,      meta-llama-3.1/3.3/4, qwen2.5, qwen3, qwq, gpt-oss, mistral-large, mistral-small,
GROQ, FIREWORKS,   mistral-nemo, mixtral, magistral, devstral, deepseek-v3, deepseek-r1, deepseek-chat,
OPEN_ROUTER, ...)  kimi-k2, glm-4, command-r, command-a, hermes-3, granite-3, gemini, claude, gpt-4o,
                   gpt-4.1, gpt-5, grok
=================  ==================================================================================
"""

from __future__ import annotations

from policy._dataclass import dataclass
from policy._patterns import LazyPattern
from policy.configuration import ProviderConfig
from policy.vocabulary import ProviderKind


@dataclass(frozen=True, slots=True)
class ToolCallingAvailability:
    """Whether the provider can use tools; `message` says why not (empty when it can)."""

    is_available: bool
    message: str = ""


_AVAILABLE = ToolCallingAvailability(True)
_NO_PROVIDER = ToolCallingAvailability(False, "Please select an LLM provider.")

_OPEN_WEIGHT = (
    "llama-3.1",
    "llama-3.2",
    "llama-3.3",
    "llama-4",
    "llama3.1",
    "llama3.2",
    "llama3.3",
    "llama4",
    "meta-llama-3.1",
    "meta-llama-3.3",
    "meta-llama-4",
    "qwen2.5",
    "qwen-2.5",
    "qwen3",
    "qwq",
    "gpt-oss",
    "mistral-large",
    "mistral-small",
    "mistral-nemo",
    "mixtral",
    "magistral",
    "devstral",
    "deepseek-v3",
    "deepseek-r1",
    "deepseek-chat",
    "kimi-k2",
    "glm-4",
    "command-r",
    "command-a",
    "hermes-3",
    "granite-3",
    "gemini",
    "claude",
    "gpt-4o",
    "gpt-4.1",
    "gpt-5",
    "grok",
)

#: Per provider kind: families that call tools. Kinds not listed use the open-weight families.
_MODEL_FAMILIES: dict[ProviderKind, tuple[str, ...]] = {
    ProviderKind.OPEN_AI: (
        "gpt-4o",
        "gpt-4.1",
        "gpt-4-turbo",
        "gpt-4",
        "gpt-3.5-turbo",
        "gpt-5",
        "o1",
        "o3",
        "o4",
    ),
    ProviderKind.ANTHROPIC: (
        "claude-3",
        "claude-sonnet-4",
        "claude-opus-4",
        "claude-haiku-4",
        "claude-4",
    ),
    ProviderKind.MISTRAL: (
        "mistral-large",
        "mistral-medium",
        "mistral-small",
        "ministral",
        "magistral",
        "codestral",
        "devstral",
        "pixtral-large",
        "open-mistral-nemo",
    ),
    ProviderKind.GOOGLE: ("gemini-1.5", "gemini-2", "gemini-3"),
    ProviderKind.X: ("grok-2", "grok-3", "grok-4", "grok-code"),
    ProviderKind.DEEP_SEEK: ("deepseek-chat", "deepseek-reasoner"),
    ProviderKind.ALIBABA_CLOUD: (
        "qwen-max",
        "qwen-plus",
        "qwen-turbo",
        "qwen-flash",
        "qwen2.5",
        "qwen3",
    ),
    ProviderKind.PERPLEXITY: (),
}

#: Models of a known family that still cannot call tools.
_EXCLUDED = LazyPattern(
    r"^(o1-mini|o1-preview)|audio|realtime|search|transcribe|tts|embed|dall-e|image|whisper"
)

_OVERRIDE_KEYS = ("FUNCTION_CALLING", "FunctionCalling", "function_calling")


def _model_key(model: str) -> str:
    return model.strip().lower().rsplit("/", 1)[-1]


def _model_calls_tools(kind: ProviderKind, model: str) -> bool:
    """What the built-in table says about a model (overrides not considered)."""
    key = _model_key(model)
    if not key or _EXCLUDED.search(key):
        return False
    families = _MODEL_FAMILIES.get(kind, _OPEN_WEIGHT)
    return any(key.startswith(family) for family in families)


def _function_calling_override(provider: ProviderConfig) -> bool | None:
    """The user's or plugin's explicit FUNCTION_CALLING capability, if any."""
    for key in _OVERRIDE_KEYS:
        value = provider.capability_overrides.get(key)
        if isinstance(value, bool):
            return value
    return None


def can_use_tools(provider: ProviderConfig | None) -> ToolCallingAvailability:
    """Provider selected, then its capability override, then the model table."""
    if provider is None or provider.kind is ProviderKind.NONE:
        return _NO_PROVIDER
    override = _function_calling_override(provider)
    capable = (
        override if override is not None else _model_calls_tools(provider.kind, provider.model)
    )
    if capable:
        return _AVAILABLE
    return ToolCallingAvailability(
        False,
        f"Tool calling is not enabled by default for the model '{provider.model}' of provider "
        f"'{provider.name or provider.id}'. If you are sure the model can call tools, enable "
        "FUNCTION_CALLING in the provider's capability overrides (expert settings).",
    )
