"""`ProviderFacts`: what the runtime's checks need about the provider of a request, in one value.

The chat's requirements, the data sources a provider may search and a running tool all ask the
same three facts; they travel together so no caller can pass one provider's kind with another's
confidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from policy.vocabulary import ConfidenceLevel, ProviderKind

if TYPE_CHECKING:
    from policy.configuration import ProviderConfig
    from policy.decide.registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class ProviderFacts:
    """A provider as the runtime's checks see it."""

    kind: ProviderKind
    confidence: ConfidenceLevel
    """Its confidence under the configuration's confidence scheme."""
    trusted: bool = False
    """Listed in `DataSourceSecuritySettings.TrustedProviderIds`: counts as self-hosted for data
    security, never for confidence."""

    @classmethod
    def of(cls, registry: ToolRegistry, provider: ProviderConfig) -> ProviderFacts:
        """The facts the policy in force (its registry) states about `provider`."""
        return cls(
            provider.kind,
            registry.provider_confidence(provider),
            registry.is_trusted_provider(provider),
        )
