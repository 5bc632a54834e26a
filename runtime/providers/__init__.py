"""Provider hosts and their HTTP client (`runtime.adapters.create_adapter` picks the adapter that
speaks a client's wire API; providers never import adapters)."""

from __future__ import annotations

from runtime.providers.client import ProviderClient, RetryPolicy, Timeouts, create_client
from runtime.providers.errors import (
    ProviderAuthError,
    ProviderConfigurationError,
    ProviderError,
    ProviderModelNotFound,
    ProviderProtocolError,
    ProviderRateLimited,
    ProviderRequestRejected,
    ProviderUnavailable,
)
from runtime.providers.hosts import (
    ANTHROPIC,
    OPENAI_CHAT_COMPLETIONS,
    OPENAI_RESPONSES,
    HostProfile,
    WireApi,
    host_profile_for,
)
from runtime.providers.parameters import additional_api_parameters, request_model

__all__ = [
    "ANTHROPIC",
    "OPENAI_CHAT_COMPLETIONS",
    "OPENAI_RESPONSES",
    "HostProfile",
    "ProviderAuthError",
    "ProviderClient",
    "ProviderConfigurationError",
    "ProviderError",
    "ProviderModelNotFound",
    "ProviderProtocolError",
    "ProviderRateLimited",
    "ProviderRequestRejected",
    "ProviderUnavailable",
    "RetryPolicy",
    "Timeouts",
    "WireApi",
    "additional_api_parameters",
    "create_client",
    "host_profile_for",
    "request_model",
]
