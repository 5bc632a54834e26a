"""Errors a provider call can end in. Each message says what to check and never holds the API key."""

from __future__ import annotations

from policy import ToolPolicyError


class ProviderError(ToolPolicyError):
    """Base of every provider failure the runtime raises to the embedding application."""

    code = "provider"

    def __init__(self, message: str, *, provider: str = "", status_code: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status_code = status_code


class ProviderConfigurationError(ProviderError):
    """The provider entry cannot be turned into a client (unknown host, missing base URL or key)."""

    code = "provider-configuration"


class ProviderAuthError(ProviderError):
    """HTTP 401/403: the host refused the credentials."""

    code = "provider-auth"


class ProviderModelNotFound(ProviderError):
    """HTTP 404: the model (or the endpoint under the base URL) does not exist."""

    code = "provider-model-not-found"


class ProviderRequestRejected(ProviderError):
    """Another 4xx: the host refused the request as sent (often an additional API parameter)."""

    code = "provider-request-rejected"


class ProviderRateLimited(ProviderError):
    """HTTP 429 after the allowed retries, or a Retry-After longer than we are willing to wait."""

    code = "provider-rate-limited"

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        status_code: int | None = 429,
        retry_after_seconds: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status_code=status_code)
        self.retry_after_seconds = retry_after_seconds


class ProviderUnavailable(ProviderError):
    """5xx, timeouts, refused or broken connections, or an error the host reported mid-stream."""

    code = "provider-unavailable"


class ProviderProtocolError(ProviderError):
    """The host answered, but not with a server-sent event stream of the expected wire API."""

    code = "provider-protocol"
