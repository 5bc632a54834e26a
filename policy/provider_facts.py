"""`ProviderFacts`: what the runtime's checks need about the provider of a request, in one value.

The registry's per-request offer (`ResolutionContext`), the chat's requirements, the data
sources a provider may search, the decision record and a running tool all ask the same three
facts; they travel together so no caller can pass one provider's kind with another's confidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policy._dataclass import dataclass
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


def given_provider(
    receiver: str,
    provider: ProviderFacts | None,
    provider_kind: ProviderKind | None = None,
    provider_confidence: ConfidenceLevel | None = None,
    provider_trusted: bool = False,
) -> ProviderFacts:
    """`provider`, or the facts given the earlier way (`provider_kind` and `provider_confidence`,
    optionally `provider_trusted`) as one `ProviderFacts`; a TypeError names `receiver` when both
    ways or neither are given."""
    if provider is not None and not isinstance(provider, ProviderFacts):
        raise TypeError(
            f"{receiver}: provider must be a ProviderFacts(kind, confidence, trusted), not "
            f"{type(provider).__name__}"
        )
    earlier = provider_kind is not None or provider_confidence is not None or provider_trusted
    if provider is not None and not earlier:
        return provider
    if provider is None and provider_kind is not None and provider_confidence is not None:
        return ProviderFacts(provider_kind, provider_confidence, provider_trusted)
    raise TypeError(
        f"{receiver}: give the provider as provider=ProviderFacts(kind, confidence, trusted) "
        "(or, as before, provider_kind= and provider_confidence=), not both"
    )


class EarlierProviderNames:
    """`provider_kind`, `provider_confidence` and `provider_trusted` — the names before
    `ProviderFacts` — read from a context's `provider`."""

    __slots__ = ()
    provider: ProviderFacts

    @property
    def provider_kind(self) -> ProviderKind:
        return self.provider.kind

    @property
    def provider_confidence(self) -> ConfidenceLevel:
        return self.provider.confidence

    @property
    def provider_trusted(self) -> bool:
        return self.provider.trusted
