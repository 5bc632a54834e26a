"""Whether a provider's model can call tools: no provider (or kind NONE) cannot; a provider's
`CapabilityOverrides["FUNCTION_CALLING"]` decides when set; otherwise the families of
`_MODEL_FAMILIES` (by provider kind; `_OPEN_WEIGHT` for every kind not listed there) and the
exclusions after them.

Administrators read that table on docs/administrators/provider-confidence.md, which
`python -m policy.capabilities` writes from the data here (`tool_calling_part`); a test fails
while the page shows anything else.
"""

from __future__ import annotations

from policy._dataclass import dataclass
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

#: Why a kind listed without families has none.
_WHY_NONE: dict[ProviderKind, str] = {
    ProviderKind.PERPLEXITY: "its sonar models do not call local tools",
}

#: Models of a known family that still cannot call tools: names starting with one of
#: `_EXCLUDED_PREFIXES` or holding one of `_EXCLUDED_WORDS` (audio, speech, search, embedding
#: and image models).
_EXCLUDED_PREFIXES = ("o1-mini", "o1-preview")
_EXCLUDED_WORDS = (
    "audio",
    "realtime",
    "search",
    "transcribe",
    "tts",
    "embed",
    "dall-e",
    "image",
    "whisper",
)

_OVERRIDE_KEYS = ("FUNCTION_CALLING", "FunctionCalling", "function_calling")


def _model_key(model: str) -> str:
    return model.strip().lower().rsplit("/", 1)[-1]


def _model_calls_tools(kind: ProviderKind, model: str) -> bool:
    """What the built-in table says about a model (overrides not considered)."""
    key = _model_key(model)
    if not key or key.startswith(_EXCLUDED_PREFIXES) or any(w in key for w in _EXCLUDED_WORDS):
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


PAGE = "docs/administrators/provider-confidence.md"
"""The site's page that shows which models call tools, from the repository root."""


def _names(words: tuple[str, ...] | list[str], last: str = ", ") -> str:
    """`a`, `b` and `c` (with `last` before the last one)."""
    shown = [f"`{word}`" for word in words]
    return last.join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else "".join(shown)


def tool_calling_part() -> str:
    """The families that call tools, per provider kind, and the models excluded from them, as the
    site shows them."""
    rows = ["| provider kind | a model calls tools when its name starts with |", "|---|---|"]
    for kind, families in _MODEL_FAMILIES.items():
        shown = _names(families) if families else f"none: {_WHY_NONE[kind]}"
        rows.append(f"| `{kind.name}` | {shown} |")
    others = [
        k.name for k in ProviderKind if k not in _MODEL_FAMILIES and k is not ProviderKind.NONE
    ]
    rows.append(f"| every other kind: {_names(others)} | {_names(_OPEN_WEIGHT)} |")
    excluded = (
        f"Whatever the kind, a model whose name starts with {_names(_EXCLUDED_PREFIXES, ' or ')}, "
        f"or contains {_names(_EXCLUDED_WORDS, ' or ')}, does not call tools. A provider "
        "of kind `NONE` is no provider: it is offered no tools."
    )
    return "\n".join([*rows, "", excluded]) + "\n"


def main(arguments: list[str]) -> int:
    """`python -m policy.capabilities [PAGE ...]`: write the table into the page(s)."""
    from pathlib import Path

    from policy._page_parts import write_part

    return write_part(arguments, "policy.capabilities", tool_calling_part(), Path(PAGE))


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
