"""What a decision knows about a provider: its facts, computed once per provider value, and
whether the organization trusts it with data sources."""

from __future__ import annotations

from dataclasses import field
from typing import Any

from policy._dataclass import dataclass
from policy.capabilities import ToolCallingAvailability, can_use_tools
from policy.configuration import PolicyConfiguration, ProviderConfig
from policy.decision import Check, ProviderSummary
from policy.resolve import ConfidenceSchemeChoice, provider_confidence_under
from policy.vocabulary import ConfidenceLevel

_TRUSTED_PROVIDER_IDS = "DataSourceSecuritySettings.TrustedProviderIds"


def is_trusted_provider(
    configuration: PolicyConfiguration, provider: ProviderConfig | None
) -> bool:
    """In `DataSourceSecuritySettings.TrustedProviderIds` (case-insensitive): counts as
    self-hosted for data security, never as confidence. The one rule the decider and the
    injection filter's provider check ask."""
    if provider is None:
        return False
    setting = configuration.setting(_TRUSTED_PROVIDER_IDS)
    value = setting.value if setting is not None else ()
    ids = (value,) if isinstance(value, str) else tuple(value or ())
    return provider.id.casefold() in {str(i).casefold() for i in ids}


@dataclass(frozen=True, slots=True)
class ProviderOfferFacts:
    """What an offer decision needs about one provider (the runtime's checks need less:
    `policy.provider_facts.ProviderFacts`)."""

    key: tuple[Any, ...]
    """Everything about the provider a decision depends on (the decision cache key)."""
    provider: ProviderConfig | None
    summary: ProviderSummary | None
    availability: ToolCallingAvailability
    confidence: ConfidenceLevel
    verdicts: dict[int, Check] = field(default_factory=dict, compare=False)
    """The verdicts of the checks that depend on the provider alone, by place, once each."""


def provider_key(provider: ProviderConfig | None) -> tuple[Any, ...]:
    if provider is None:
        return ()
    return (
        provider.id,
        provider.kind,
        provider.model,
        tuple(sorted(provider.capability_overrides.items())),
    )


def provider_offer_facts(
    provider: ProviderConfig | None, key: tuple[Any, ...], scheme: ConfidenceSchemeChoice
) -> ProviderOfferFacts:
    availability = can_use_tools(provider)
    if provider is None:
        return ProviderOfferFacts(key, None, None, availability, ConfidenceLevel.NONE)
    confidence = provider_confidence_under(provider.kind, scheme.scheme, scheme.custom)
    summary = ProviderSummary(provider.id, provider.kind, provider.model, confidence)
    return ProviderOfferFacts(key, provider, summary, availability, confidence)
