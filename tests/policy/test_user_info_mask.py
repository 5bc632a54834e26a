"""One rule masks the user info of an address or host entry, whatever characters the password holds."""

from __future__ import annotations

import pytest

from policy.secrets import without_user_info


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://admin:PA/SS@host.example/", "https://*****@host.example/"),
        ("https://admin:PA?SS@host.example/x", "https://*****@host.example/x"),
        ("https://admin:PA#SS@host.example", "https://*****@host.example"),
        ("https://admin:PA\\SS@host.example", "https://*****@host.example"),
        ("https://a@b:c@host.example/", "https://*****@host.example/"),
        ("https:/alice:pa55@wiki.example.org/", "https:/*****@wiki.example.org/"),
        ("https:alice:pa55@wiki.example.org/", "*****@wiki.example.org/"),
        ("user:PASS@intranet", "*****@intranet"),
        ("alice@intranet", "*****@intranet"),
        ("https://host.example/path", "https://host.example/path"),
        ("intranet.example", "intranet.example"),
    ],
)
def test_user_info_is_masked_up_to_the_last_at(text: str, shown: str) -> None:
    assert without_user_info(text) == shown
