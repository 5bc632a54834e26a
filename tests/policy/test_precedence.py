"""One precedence for every setting, and one data-security rule for every provider check."""

from __future__ import annotations

import itertools

import pytest

from policy.resolve import resolve_setting
from policy.vocabulary import DataSecurity, ProviderKind, SettingSource, may_receive_data

LAYERS = ("locked", "user", "organization", "default")
SOURCES = {
    "locked": SettingSource.LOCKED,
    "user": SettingSource.USER,
    "organization": SettingSource.ORG_DEFAULT,
    "default": SettingSource.DEFAULT,
}


@pytest.mark.parametrize(
    "present", [c for n in range(len(LAYERS) + 1) for c in itertools.combinations(LAYERS, n)]
)
def test_the_highest_layer_that_holds_a_value_wins(present: tuple[str, ...]) -> None:
    chosen = resolve_setting(**{layer: f"from {layer}" for layer in present})
    if not present:
        assert chosen == (SettingSource.UNSET, None)
    else:
        assert chosen == (SOURCES[present[0]], f"from {present[0]}")


def test_an_empty_value_is_a_value() -> None:
    assert resolve_setting(user="", default="x") == (SettingSource.USER, "")
    assert resolve_setting(locked=(), user=("web_search",)) == (SettingSource.LOCKED, ())


@pytest.mark.parametrize(
    ("security", "kind", "trusted", "allowed"),
    [
        (DataSecurity.SELF_HOSTED, ProviderKind.SELF_HOSTED, False, True),
        (DataSecurity.SELF_HOSTED, ProviderKind.OPEN_AI, False, False),
        (DataSecurity.SELF_HOSTED, ProviderKind.OPEN_AI, True, True),
        (DataSecurity.ALLOW_ANY, ProviderKind.OPEN_AI, False, True),
        (DataSecurity.NOT_SPECIFIED, ProviderKind.DEEP_SEEK, False, True),
    ],
)
def test_self_hosted_data_goes_only_to_self_hosted_or_trusted_providers(
    security: DataSecurity, kind: ProviderKind, trusted: bool, allowed: bool
) -> None:
    assert may_receive_data(security, kind, trusted) is allowed
