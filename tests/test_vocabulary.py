from policy.vocabulary import (
    ConfidenceLevel,
    ConfidenceScheme,
    DataSecurity,
    ProviderKind,
    parse_confidence_level,
    provider_confidence,
    tighten_data_security,
)


def test_levels_compare_numerically() -> None:
    assert ConfidenceLevel.NONE < ConfidenceLevel.UNTRUSTED < ConfidenceLevel.UNKNOWN
    assert ConfidenceLevel.VERY_LOW < ConfidenceLevel.LOW < ConfidenceLevel.MODERATE
    assert ConfidenceLevel.MEDIUM < ConfidenceLevel.HIGH


def test_unknown_is_never_a_configured_level() -> None:
    assert parse_confidence_level("unknown") is None
    assert parse_confidence_level(" high ") is ConfidenceLevel.HIGH
    assert parse_confidence_level("300") is None
    assert parse_confidence_level("") is None


def test_scheme_table() -> None:
    assert provider_confidence(ProviderKind.SELF_HOSTED, ConfidenceScheme.TRUST_ALL) is (
        ConfidenceLevel.HIGH
    )
    assert provider_confidence(ProviderKind.OPEN_AI, ConfidenceScheme.TRUST_ALL) is (
        ConfidenceLevel.MEDIUM
    )
    assert provider_confidence(ProviderKind.MISTRAL, ConfidenceScheme.TRUST_EUROPE) is (
        ConfidenceLevel.MEDIUM
    )
    assert provider_confidence(ProviderKind.OPEN_AI, ConfidenceScheme.TRUST_EUROPE) is (
        ConfidenceLevel.LOW
    )
    assert provider_confidence(ProviderKind.DEEP_SEEK, ConfidenceScheme.TRUST_USA_EUROPE) is (
        ConfidenceLevel.LOW
    )
    assert provider_confidence(ProviderKind.IONOS, ConfidenceScheme.TRUST_USA) is (
        ConfidenceLevel.LOW
    )
    assert provider_confidence(ProviderKind.OPEN_AI, ConfidenceScheme.LOCAL_TRUST_ONLY) is (
        ConfidenceLevel.VERY_LOW
    )
    assert provider_confidence(ProviderKind.NONE, ConfidenceScheme.TRUST_ALL) is (
        ConfidenceLevel.NONE
    )
    assert provider_confidence(ProviderKind.GROQ, ConfidenceScheme.CUSTOM, {}) is (
        ConfidenceLevel.UNKNOWN
    )
    assert provider_confidence(ProviderKind.GROQ, "NO_SUCH_SCHEME") is ConfidenceLevel.UNKNOWN


def test_data_security_only_tightens() -> None:
    s = DataSecurity
    assert tighten_data_security(s.NOT_SPECIFIED, s.SELF_HOSTED) is s.SELF_HOSTED
    assert tighten_data_security(s.SELF_HOSTED, s.ALLOW_ANY) is s.SELF_HOSTED
    assert tighten_data_security(s.NOT_SPECIFIED, s.ALLOW_ANY) is s.ALLOW_ANY
    assert tighten_data_security(s.ALLOW_ANY, s.NOT_SPECIFIED) is s.ALLOW_ANY
