"""ENC:v1: values: AI Studio's format, the two environment names, errors that reveal nothing."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from policy.secrets import (
    AI_STUDIO_ENV_SECRET,
    ENV_SECRET,
    SecretError,
    check_secret,
    configured_secret,
    decrypt,
    encrypt,
    generate_secret,
    is_encrypted,
)

SECRET = base64.b64encode(bytes(range(32))).decode()
OTHER_SECRET = base64.b64encode(bytes(range(1, 33))).decode()


def _reference_encrypt(plaintext: str, secret: str, salt: bytes) -> str:
    """The recipe of plugin-loader-spec §12, built from the cryptography primitives directly."""
    kdf = PBKDF2HMAC(algorithm=hashes.SHA512(), length=48, salt=salt, iterations=10_000)
    material = kdf.derive(base64.b64decode(secret))
    padder = padding.PKCS7(128).padder()
    data = padder.update(plaintext.encode()) + padder.finalize()
    enc = Cipher(algorithms.AES(material[:32]), modes.CBC(material[32:])).encryptor()
    return "ENC:v1:" + base64.b64encode(salt + enc.update(data) + enc.finalize()).decode()


def test_a_value_made_by_the_spec_recipe_decrypts() -> None:
    value = _reference_encrypt("sk-live-Üml4ut", SECRET, b"0123456789abcdef")
    assert decrypt(value, SECRET) == "sk-live-Üml4ut"


def test_encrypt_and_decrypt_round_trip_with_a_fresh_salt_each_time() -> None:
    first = encrypt("token", SECRET)
    second = encrypt("token", SECRET)
    assert first.startswith("ENC:v1:") and second.startswith("ENC:v1:")
    assert first != second
    assert decrypt(first, SECRET) == decrypt(second, SECRET) == "token"


def test_an_empty_plaintext_survives() -> None:
    assert decrypt(encrypt("", SECRET), SECRET) == ""


def test_the_wrong_secret_fails_without_revealing_anything() -> None:
    value = encrypt("very-secret-plaintext", SECRET)
    with pytest.raises(SecretError) as caught:
        for _ in range(3):  # a wrong key could, rarely, yield valid padding; utf-8 then fails
            decrypt(value, OTHER_SECRET)
            value = encrypt("very-secret-plaintext", SECRET)
    message = str(caught.value)
    assert "wrong secret" in message
    for leaked in ("very-secret-plaintext", SECRET, OTHER_SECRET, value[7:]):
        assert leaked not in message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plaintext", "does not start with 'ENC:v1:'"),
        ("enc:v1:AAAA", "does not start with 'ENC:v1:'"),
        ("ENC:v1:not base64!", "not valid base64"),
        ("ENC:v1:" + base64.b64encode(b"x" * 16).decode(), "too short"),
        ("ENC:v1:" + base64.b64encode(b"x" * 20).decode(), "too short or cut off"),
    ],
)
def test_malformed_values_are_refused(value: str, expected: str) -> None:
    with pytest.raises(SecretError, match=expected):
        decrypt(value, SECRET)


@pytest.mark.parametrize("secret", ["", "not base64!", base64.b64encode(b"short").decode()])
def test_a_secret_that_is_not_32_bytes_is_refused_without_being_repeated(secret: str) -> None:
    with pytest.raises(SecretError) as caught:
        check_secret(secret)
    assert "exactly 32 bytes" in caught.value.message
    assert ENV_SECRET in caught.value.message
    if secret:
        assert secret not in caught.value.message
    with pytest.raises(SecretError):
        encrypt("x", secret)


def test_configured_secret_prefers_our_name_and_accepts_ai_studios() -> None:
    assert configured_secret({}) is None
    assert configured_secret({ENV_SECRET: "  "}) is None
    assert configured_secret({AI_STUDIO_ENV_SECRET: SECRET}) == SECRET
    assert (
        configured_secret({ENV_SECRET: OTHER_SECRET, AI_STUDIO_ENV_SECRET: SECRET}) == OTHER_SECRET
    )
    assert AI_STUDIO_ENV_SECRET == "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ENCRYPTION_SECRET"


def test_configured_secret_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_SECRET, raising=False)
    monkeypatch.setenv(AI_STUDIO_ENV_SECRET, SECRET)
    assert configured_secret() == SECRET


def test_generated_secrets_are_usable() -> None:
    secret = generate_secret()
    check_secret(secret)
    assert decrypt(encrypt("abc", secret), secret) == "abc"


def test_is_encrypted_is_case_sensitive() -> None:
    assert is_encrypted("ENC:v1:abc")
    assert not is_encrypted("enc:v1:abc")
    assert not is_encrypted(None)
