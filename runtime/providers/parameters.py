"""What a provider entry adds to each request: its additional API parameters and model id."""

from __future__ import annotations

import json
from typing import Any

from policy import ProviderConfig, ProviderKind
from runtime.providers.errors import ProviderConfigurationError

_FIELD = "AdditionalJsonApiParameters"


def additional_api_parameters(provider: ProviderConfig) -> dict[str, Any]:
    """The extra top-level request fields an administrator configured for this provider.

    AI Studio stores them as the members of a JSON object without its braces
    (`"temperature": 0.2, "top_p": 0.9`); a complete object is accepted too. Empty means none.
    """
    text = provider.additional.get(_FIELD)
    if not isinstance(text, str) or not text.strip():
        return {}
    stripped = text.strip().rstrip(",")
    complete = stripped[0] in "{["
    candidate = stripped if complete else "{" + stripped + "}"
    try:
        parsed = json.loads(candidate)
    except (ValueError, RecursionError) as error:
        where = f"provider '{provider.name or provider.id}'"
        at = _where_in(error, wrapped=not complete)
        raise ProviderConfigurationError(
            f"{where}: {_FIELD} is no valid JSON{at}; write object members such as "
            '"temperature": 0.2, "top_p": 0.9',
            provider=provider.name,
        ) from None
    if not isinstance(parsed, dict):
        raise ProviderConfigurationError(
            f"provider '{provider.name or provider.id}': {_FIELD} must be JSON object members "
            'such as "temperature": 0.2',
            provider=provider.name,
        )
    return parsed


def _where_in(error: Exception, *, wrapped: bool) -> str:
    """Where the JSON went wrong in the text as written (the braces we added do not count)."""
    line, column = getattr(error, "lineno", None), getattr(error, "colno", None)
    if line is None or column is None:
        return ""
    if line == 1:
        return f" near character {column - (1 if wrapped else 0)}"
    return f" at line {line}, column {column}"


# Hugging Face's router picks the inference provider from a suffix of the model id.
_HF_ROUTER_SUFFIXES = {
    "CEREBRAS": "cerebras",
    "NEBIUS_AI_STUDIO": "nebius",
    "SAMBANOVA": "sambanova",
    "NOVITA": "novita",
    "HYPERBOLIC": "hyperbolic",
    "TOGETHER_AI": "together",
    "FIREWORKS": "fireworks-ai",
    "HF_INFERENCE_API": "hf-inference",
}


def request_model(provider: ProviderConfig) -> str:
    """The model id to send: Hugging Face entries with an `HFInferenceProvider` get its suffix."""
    model = provider.model
    if provider.kind is not ProviderKind.HUGGINGFACE:
        return model
    chosen = provider.additional.get("HFInferenceProvider")
    suffix = _HF_ROUTER_SUFFIXES.get(chosen) if isinstance(chosen, str) else None
    if suffix is None or ":" in model:
        return model
    return f"{model}:{suffix}"
