"""Which prompt-injection filter the organization's configuration puts in force, and why.

`DataTools.InjectionFilter = "MODEL"` sends every text a tool brings in to the model of the
provider entry `DataTools.InjectionFilterProviderId` names. A mistake there fails closed: the
structural filter stays in force and `policy check` reports an error at the key's file:line; a
cloud provider is refused, since the texts may hold what only self-hosted models may see. The
runtime builds its guard from this one reading; lint, `policy explain --all` and
`policy settings keys` show it.
"""

from __future__ import annotations

from policy._dataclass import dataclass
from policy.configuration import PolicyConfiguration, ProviderConfig
from policy.provenance import SourceLocation
from policy.vocabulary import InjectionFilterKind, ProviderKind

FILTER_KEY = "DataTools.InjectionFilter"
PROVIDER_KEY = "DataTools.InjectionFilterProviderId"


@dataclass(frozen=True, slots=True)
class InjectionFilterChoice:
    """The filter in force. `problem` says why the configured MODEL filter is not (with the
    place to fix it); `provider` is the entry the MODEL filter asks, when in force."""

    kind: InjectionFilterKind
    configured: InjectionFilterKind
    provider: ProviderConfig | None = None
    problem: str = ""
    location: SourceLocation | None = None

    @property
    def summary(self) -> str:
        """One line for explain: what is in force, through what, or why not."""
        if self.provider is not None:
            named = self.provider.name or self.provider.id
            return f"MODEL ({named}, {self.provider.model}), STRUCTURAL as fallback"
        if self.problem:
            return f"STRUCTURAL (MODEL is configured but not in force: {self.problem})"
        return "STRUCTURAL"


def injection_filter_choice(configuration: PolicyConfiguration) -> InjectionFilterChoice:
    """The filter the configuration puts in force."""
    from policy.decide.provider import is_trusted_provider

    setting = configuration.setting(FILTER_KEY)
    configured = InjectionFilterKind(setting.value) if setting else InjectionFilterKind.STRUCTURAL
    if configured is InjectionFilterKind.STRUCTURAL:
        return InjectionFilterChoice(configured, configured)
    where = setting.origin.location if setting else None
    named = configuration.setting(PROVIDER_KEY)
    provider_id = str(named.value).strip() if named else ""

    def refused(problem: str, location: SourceLocation | None) -> InjectionFilterChoice:
        return InjectionFilterChoice(
            InjectionFilterKind.STRUCTURAL, configured, problem=problem, location=location
        )

    if not provider_id:
        return refused(
            f"{PROVIDER_KEY} is not set; name the Id of a self-hosted LLM_PROVIDERS entry", where
        )
    at = named.origin.location if named else where
    wanted = provider_id.casefold()
    provider = next((p for p in configuration.providers if p.id.casefold() == wanted), None)
    if provider is None:
        known = ", ".join(f"{p.id} ({p.name})" for p in configuration.providers) or "none"
        return refused(
            f"{PROVIDER_KEY} '{provider_id}' names no LLM_PROVIDERS entry in force "
            f"(entries: {known})",
            at,
        )
    if provider.kind is not ProviderKind.SELF_HOSTED and not is_trusted_provider(
        configuration, provider
    ):
        return refused(
            f"{PROVIDER_KEY} names '{provider.name or provider.id}', a {provider.kind.name} "
            "provider; every text a tool brings in would be sent to it, so it must be "
            "SELF_HOSTED or listed in DataSourceSecuritySettings.TrustedProviderIds",
            at,
        )
    return InjectionFilterChoice(InjectionFilterKind.MODEL, configured, provider=provider)
