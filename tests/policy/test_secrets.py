"""ENC:v1: values: AI Studio's format, the secret's sources in order, errors that reveal nothing."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from policy.config_sources import SECRET_FILE_NAME as SECRET_FILE
from policy.secrets import (
    AI_STUDIO_ENV_SECRET,
    ENV_SECRET,
    SECRET_SOURCES,
    SecretError,
    check_secret,
    configured_secret,
    decrypt,
    encrypt,
    generate_secret,
    is_encrypted,
    secret_source,
)

SECRET = base64.b64encode(bytes(range(32))).decode()
OTHER_SECRET = base64.b64encode(bytes(range(1, 33))).decode()


def _reference_encrypt(plaintext: str, secret: str, salt: bytes) -> str:
    """AI Studio's ENC:v1: recipe, built from the cryptography primitives directly."""
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


def _policy_folder(root: Path, text: str) -> Path:
    folder = root / "mindwork-ai-studio"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config_encryption_secret.yaml").write_text(text, encoding="utf-8")
    return folder


def test_the_secret_comes_from_the_first_source_that_has_one(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _policy_folder(first, "# empty in the first folder\nconfig_encryption_secret: ''\n")
    _policy_folder(second, f'# deployed by IT\nconfig_encryption_secret: "{SECRET}"\n')
    folders = {"XDG_CONFIG_DIRS": f"{first}:{second}"}
    assert secret_source(folders) == (SECRET, str(second / "mindwork-ai-studio" / SECRET_FILE))
    # ours before the policy file, the policy file before AI Studio's variable
    assert secret_source({**folders, ENV_SECRET: OTHER_SECRET}) == (OTHER_SECRET, ENV_SECRET)
    assert configured_secret({**folders, AI_STUDIO_ENV_SECRET: OTHER_SECRET}) == SECRET
    assert secret_source({AI_STUDIO_ENV_SECRET: OTHER_SECRET, "XDG_CONFIG_DIRS": str(first)}) == (
        OTHER_SECRET,
        AI_STUDIO_ENV_SECRET,
    )


def test_a_secret_file_that_is_not_a_policy_file_is_ignored_and_named(tmp_path: Path) -> None:
    from policy.config_sources import policy_directories, secret_from_policy_files

    _policy_folder(tmp_path, f"config_encryption_secret: '{SECRET}\n")
    environ = {"XDG_CONFIG_DIRS": str(tmp_path)}
    assert configured_secret(environ) is None
    found, findings = secret_from_policy_files(policy_directories(environ))
    assert found is None
    (finding,) = findings
    assert SECRET_FILE in finding.message and "not a valid policy file" in finding.message
    assert SECRET not in finding.message


def test_without_any_source_the_message_names_every_place_a_secret_may_come_from() -> None:
    assert SECRET_FILE in SECRET_SOURCES
    assert ENV_SECRET in SECRET_SOURCES and AI_STUDIO_ENV_SECRET in SECRET_SOURCES
    assert SECRET_SOURCES.index(ENV_SECRET) < SECRET_SOURCES.index(SECRET_FILE)
    assert SECRET_SOURCES.index(SECRET_FILE) < SECRET_SOURCES.index(AI_STUDIO_ENV_SECRET)
