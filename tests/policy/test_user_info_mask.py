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
        ("https://admin:8443/s3cr3t@host.example/x", "https://*****@host.example/x"),
        ("https://admin:/s3cr3t@host.example/", "https://*****@host.example/"),
        ("https://host.example/path", "https://host.example/path"),
        ("https://social.example/@alice/post", "https://social.example/@alice/post"),
        ("https://host.example/p?email=a@b.example", "https://host.example/p?email=a@b.example"),
        ("intranet.example", "intranet.example"),
    ],
)
def test_user_info_is_masked_up_to_the_last_at(text: str, shown: str) -> None:
    assert without_user_info(text) == shown


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        ("https://admin:8443/s3cr3t@host.example/x?a=1", "https://host.example/x?a=*****"),
        ("https://admin:/s3cr3t@host.example/", "https://host.example/"),
        ("https://admin:PA/SS@host.example/x", "https://host.example/x"),
        ("https://social.example/@alice/post", "https://social.example/@alice/post"),
    ],
)
def test_a_logged_address_drops_user_info_by_the_same_rule(url: str, logged: str) -> None:
    from runtime.web.addresses import redact_url_for_log

    assert redact_url_for_log(url) == logged
