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
    documented = {
        "NONE": 0,
        "UNTRUSTED": 1,
        "UNKNOWN": 10,
        "VERY_LOW": 90,
        "LOW": 100,
        "MODERATE": 150,
        "MEDIUM": 200,
        "HIGH": 300,
    }
    assert {level.name: int(level) for level in ConfidenceLevel} == documented
    assert [level.name for level in sorted(ConfidenceLevel)] == list(documented)


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


_EUROPEAN = {"MISTRAL", "HELMHOLTZ", "GWDG", "HETZNER", "IONOS"}
_ASIAN = {"DEEP_SEEK", "ALIBABA_CLOUD"}
_SCHEME_TABLE: dict[ConfidenceScheme, tuple[set[str], ConfidenceLevel, ConfidenceLevel]] = {
    # scheme: (kinds named explicitly, their level, everyone else) — the README's reference table
    ConfidenceScheme.TRUST_ALL: (set(), ConfidenceLevel.MEDIUM, ConfidenceLevel.MEDIUM),
    ConfidenceScheme.TRUST_USA_EUROPE: (_ASIAN, ConfidenceLevel.LOW, ConfidenceLevel.MEDIUM),
    ConfidenceScheme.TRUST_USA: (_EUROPEAN | _ASIAN, ConfidenceLevel.LOW, ConfidenceLevel.MEDIUM),
    ConfidenceScheme.TRUST_EUROPE: (_EUROPEAN, ConfidenceLevel.MEDIUM, ConfidenceLevel.LOW),
    ConfidenceScheme.TRUST_ASIA: (_ASIAN, ConfidenceLevel.MEDIUM, ConfidenceLevel.LOW),
    ConfidenceScheme.LOCAL_TRUST_ONLY: (set(), ConfidenceLevel.VERY_LOW, ConfidenceLevel.VERY_LOW),
}


def test_every_provider_kind_under_every_fixed_scheme_matches_the_documented_table() -> None:
    for scheme, (named, named_level, others) in _SCHEME_TABLE.items():
        for kind in ProviderKind:
            if kind is ProviderKind.SELF_HOSTED:
                expected = ConfidenceLevel.HIGH
            elif kind is ProviderKind.NONE:
                expected = ConfidenceLevel.NONE
            else:
                expected = named_level if kind.name in named else others
            assert provider_confidence(kind, scheme) is expected, (scheme, kind)


def test_a_custom_scheme_reads_its_table_and_leaves_other_kinds_unknown() -> None:
    custom = {ProviderKind.GROQ: ConfidenceLevel.HIGH}
    assert provider_confidence(ProviderKind.GROQ, ConfidenceScheme.CUSTOM, custom) is (
        ConfidenceLevel.HIGH
    )
    assert provider_confidence(ProviderKind.OPEN_AI, ConfidenceScheme.CUSTOM, custom) is (
        ConfidenceLevel.UNKNOWN
    )
    # a custom scheme is the whole table: self-hosted is not HIGH unless the table says so
    assert provider_confidence(ProviderKind.SELF_HOSTED, ConfidenceScheme.CUSTOM, custom) is (
        ConfidenceLevel.UNKNOWN
    )
    assert provider_confidence(ProviderKind.NONE, ConfidenceScheme.CUSTOM, custom) is (
        ConfidenceLevel.NONE
    )


def test_data_security_only_tightens() -> None:
    s = DataSecurity
    assert tighten_data_security(s.NOT_SPECIFIED, s.SELF_HOSTED) is s.SELF_HOSTED
    assert tighten_data_security(s.SELF_HOSTED, s.ALLOW_ANY) is s.SELF_HOSTED
    assert tighten_data_security(s.NOT_SPECIFIED, s.ALLOW_ANY) is s.ALLOW_ANY
    assert tighten_data_security(s.ALLOW_ANY, s.NOT_SPECIFIED) is s.ALLOW_ANY
