"""policy.redaction: a secret is found in every spelling encoders produce, and nothing else is."""

from __future__ import annotations

import logging

import pytest

from policy.redaction import MASK, SecretMask, mask_in_logs
from tests.security._spellings import leaked_spellings, spellings_of

SECRETS = [
    "sk-live-4f9a/b+c=d",
    "pässwörd with space\\ok",
    "ghp_0123456789abcdefABCDEF",
    "/a~b*c'd",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_every_spelling_is_masked(secret: str) -> None:
    mask = SecretMask.of([secret])
    for name, form in spellings_of(secret).items():
        shown = mask.text(f"before {form} after")
        assert leaked_spellings(secret, shown) == [], name
        assert MASK in shown and shown.startswith("before ") and shown.endswith(" after"), name


def test_mixed_spellings_in_one_value_are_masked() -> None:
    mask = SecretMask.of(["a/b+c=d-e"])
    assert mask.text("x a%2Fb%2bc\\u003dd\\u002De y") == f"x {MASK} y"


def test_ordinary_text_is_left_as_it_is() -> None:
    mask = SecretMask.of(["sk-live-4f9a/b+c=d"])
    text = "sk-live and 4f9a, 100% & <b> \\ / + = c2stbGl2ZQ 736b2d6c6976 &#47; %2F"
    assert mask.text(text) == text


def test_short_and_blank_values_are_not_searched_for() -> None:
    assert not SecretMask.of(["abc", "   ", None, 42])
    assert SecretMask.of(["abc"]).text("abc") == "abc"
    assert SecretMask.of(["abc"], min_characters=1).text("abcd") == f"{MASK}d"


def test_json_like_values_are_masked_keys_included() -> None:
    mask = SecretMask.of(["tok-0123456789"])
    value = {"tok-0123456789": ["x tok-0123456789", 3, None, {"k": "tok%2D0123456789"}]}
    assert mask.value(value) == {MASK: [f"x {MASK}", 3, None, {"k": MASK}]}


def test_a_secret_is_masked_in_every_logger_once_registered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    secret = "log-canary-7f3e/9a+Q"
    caplog.set_level(logging.DEBUG)
    mask_in_logs(SecretMask.of([secret]))
    logging.getLogger("httpcore.http11").debug(
        "receive_response_headers.complete return_value=%r", [(b"x-key", secret.encode())]
    )
    logging.getLogger("some.app").warning("quoted %s", "tok=" + secret.replace("/", "%2F"))
    try:
        raise RuntimeError(f"failed with {secret}")
    except RuntimeError:
        logging.getLogger("runtime.anything").exception("it broke")
    text = "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records)
    assert len(caplog.records) == 3 and "it broke" in text
    assert leaked_spellings(secret, text) == []
    assert text.count(MASK) == 3


def test_every_output_masks_a_secret_with_the_one_mask() -> None:
    from policy.configuration import SecretValue
    from policy.explain import to_document
    from policy.secrets import without_user_info
    from runtime.executor import format_arguments
    from runtime.web.addresses import redact_url_for_log

    assert without_user_info("https://me:pw@host.example/") == f"https://{MASK}@host.example/"
    assert redact_url_for_log("https://host.example/?key=pw") == f"https://host.example/?key={MASK}"
    assert repr(SecretValue("ENC:v1:abc")) == f"SecretValue({MASK})"
    assert to_document(SecretValue("ENC:v1:abc")) == MASK
    assert format_arguments({"token": "pw"}, frozenset({"token"})) == {"token": MASK}


def test_a_mask_in_use_is_not_compiled_again_however_many_others_are_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 31: the patterns were kept only in a cache of the last 256 sets of secrets, so a
    long-lived mask (a signed-in person's token, a server's Headers) was compiled again on the
    request path once enough other masks had been used (~70 ms for a JWT)."""
    import re

    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbm4iLCJhdWQiOiJ0b29scyJ9.c2lnbmF0dXJlLXBhcnQ"
    mask = SecretMask.of([token])
    assert mask.text(f"Bearer {token}") == f"Bearer {MASK}"
    for index in range(300):
        other = SecretMask.of([f"other-secret-{index:04d}"])
        assert other.text(f"x other-secret-{index:04d}") == f"x {MASK}"

    compiled: list[str] = []
    compile_pattern = re.compile

    def counting(pattern: str, flags: int = 0) -> re.Pattern[str]:
        compiled.append(pattern)
        return compile_pattern(pattern, flags)

    monkeypatch.setattr(re, "compile", counting)
    assert mask.text(f"token={token}") == f"token={MASK}"
    assert mask.shows_secret(token)
    assert compiled == [], "the mask in use kept its own pattern"
