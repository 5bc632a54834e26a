import re
from pathlib import Path

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


_PAGE = Path(__file__).parents[1] / "docs/administrators/provider-confidence.md"


def _documented_schemes() -> dict[ConfidenceScheme, tuple[set[str], str | None, str]]:
    """The page's scheme table: per scheme, the kinds named explicitly, their level, and the
    level of everyone else (`| `TRUST_USA` | `MISTRAL`, …, `ALIBABA_CLOUD` LOW | MEDIUM |`)."""
    rows = re.findall(r"^\| `(\w+)`[^|]*\| ([^|]+) \| (\w+) \|$", _PAGE.read_text("utf-8"), re.M)
    table = {}
    for scheme, named, others in rows:
        kinds, _, level = named.rpartition(" ")
        explicit = {kind.strip().strip("`") for kind in kinds.split(",")} if kinds else set()
        table[ConfidenceScheme[scheme]] = (explicit, level if kinds else None, others)
    return table


def test_every_provider_kind_under_every_fixed_scheme_matches_the_documented_table() -> None:
    """docs/administrators/provider-confidence.md is what administrators read: the code and it
    must agree for every kind under every scheme but CUSTOM."""
    documented = _documented_schemes()
    assert set(documented) == set(ConfidenceScheme) - {ConfidenceScheme.CUSTOM}
    for scheme, (named, named_level, others) in documented.items():
        assert named <= {kind.name for kind in ProviderKind}, (scheme, named)
        for kind in ProviderKind:
            if kind is ProviderKind.SELF_HOSTED:
                expected = ConfidenceLevel.HIGH
            elif kind is ProviderKind.NONE:
                expected = ConfidenceLevel.NONE
            else:
                expected = ConfidenceLevel[named_level if kind.name in named else others]
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
