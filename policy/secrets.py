"""`ENC:v1:` values: how an organization ships a secret inside plugin.lua (AI Studio compatible).

The format is obfuscation against casual reading, not protection against someone who holds the
secret: base64(salt[16] + AES-256-CBC(PKCS7(utf-8 plaintext))), key and IV derived with
PBKDF2-HMAC-SHA512 (10 000 iterations) from the raw 32-byte secret and the salt.

Errors never repeat the secret, the encrypted value or the plaintext.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Collection, Mapping
from urllib.parse import unquote

from policy._patterns import LazyPattern
from policy.errors import ToolPolicyError
from policy.redaction import MASK

PREFIX = "ENC:v1:"
ENV_SECRET = "TOOLPOLICY_CONFIG_ENCRYPTION_SECRET"
AI_STUDIO_ENV_SECRET = "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ENCRYPTION_SECRET"
SECRET_ENV_NAMES: tuple[str, ...] = (ENV_SECRET, AI_STUDIO_ENV_SECRET)
SECRET_SOURCES = (
    f"{ENV_SECRET}, AI Studio's policy file config_encryption_secret.yaml or {AI_STUDIO_ENV_SECRET}"
)
"""Where the secret may come from, in the order asked; error messages name it with this text."""

_SECRET_BYTES = 32
_SALT_BYTES = 16
_BLOCK_BYTES = 16
_ITERATIONS = 10_000


class SecretError(ToolPolicyError):
    """An `ENC:v1:` value or the configured secret is unusable; the message says why, never what."""

    code = "secret"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


_SCHEME = LazyPattern(r"^[A-Za-z][A-Za-z0-9+.-]*:[/\\\\]+")
_AUTHORITY_END = LazyPattern(r"[/?#\\]")


def without_user_info(text: str) -> str:
    """`text` (an address or a host entry) with any user name and password masked.

    The URL standard reads user info up to the last `@` of the authority (which ends at the first
    `/`, `?`, `#` or `\\`), but a password may hold those characters too. So, failing closed,
    everything from the start of the authority (after `scheme:` and its slashes, else the start
    of a bare host entry) up to the last `@` is masked when the authority holds an `@`, or holds
    a `:` (a user name and the start of a password, or a port) with an `@` after it. An `@` after
    a plain host (`https://social.example/@alice`) is no user info. The one rule every output
    and log asks (settings, explain, tools, check, export, errors, logged addresses)."""
    at = text.rfind("@")
    if at < 0:
        return text
    scheme = _SCHEME.match(text)
    start = scheme.end() if scheme else 0
    if at < start:
        return text
    authority = _AUTHORITY_END.split(text[start:], maxsplit=1)[0]
    if "@" not in authority and ":" not in authority:
        return text
    return f"{text[:start]}{MASK}{text[at:]}"


def address_secrets(text: str, parameters: Collection[str] | None = None) -> frozenset[str]:
    """The secrets an address carries, for a log mask: the password of its user info (read as
    `without_user_info` reads it) and the values of its query parameters (only those named in
    `parameters`, every one when None), each as written and percent-decoded — a library quoting
    the address, or an error quoting a part it could not decode (`%zz`), shows it as written."""
    found: list[str] = []
    masked = without_user_info(text)
    if masked != text:
        start = masked.index(MASK)
        found.append(text[start : text.rfind("@")].partition(":")[2])
    query = text[text.rfind("@") + 1 :].partition("?")[2].partition("#")[0]
    for item in query.split("&") if query else ():
        name, _, value = item.partition("=")
        if parameters is None or unquote(name) in parameters:
            found.append(value)
    return frozenset(form for value in found for form in (value, unquote(value)) if form)


def configured_secret(environ: Mapping[str, str] | None = None) -> str | None:
    """The encryption secret from the first source that has one; blank = none.

    Order: `TOOLPOLICY_CONFIG_ENCRYPTION_SECRET`, then AI Studio's policy file
    `config_encryption_secret.yaml` in its policy folders (`$XDG_CONFIG_DIRS/mindwork-ai-studio`,
    else `/etc/xdg/mindwork-ai-studio`), then `MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ENCRYPTION_SECRET`
    — the order in which the configuration sources are asked (`policy.config_sources`)."""
    found = secret_source(environ)
    return found[0] if found is not None else None


def secret_source(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The configured secret and where it came from (a variable name or a policy file path)."""
    env = os.environ if environ is None else environ
    own = env.get(ENV_SECRET, "").strip()
    if own:
        return own, ENV_SECRET
    from policy.config_sources import policy_directories, secret_from_policy_files

    from_file, _ = secret_from_policy_files(policy_directories(env))
    if from_file is not None:
        return from_file.value, str(from_file.path)
    studio = env.get(AI_STUDIO_ENV_SECRET, "").strip()
    if studio:
        return studio, AI_STUDIO_ENV_SECRET
    return None


def is_encrypted(value: object) -> bool:
    """True for a string carrying the (case-sensitive) `ENC:v1:` prefix."""
    return isinstance(value, str) and value.startswith(PREFIX)


def generate_secret() -> str:
    """A fresh secret in the form the environment variable expects (base64 of 32 random bytes)."""
    return base64.b64encode(os.urandom(_SECRET_BYTES)).decode("ascii")


def encrypt(plaintext: str, secret: str) -> str:
    """`ENC:v1:` + base64(salt + ciphertext) for `plaintext` under `secret`."""
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    raw_secret = _secret_bytes(secret)
    salt = os.urandom(_SALT_BYTES)
    key, iv = _derive(raw_secret, salt)
    padder = padding.PKCS7(_BLOCK_BYTES * 8).padder()
    padded = padder.update(plaintext.encode("utf-8")) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padded) + encryptor.finalize()
    return PREFIX + base64.b64encode(salt + ciphertext).decode("ascii")


def decrypt(value: str, secret: str) -> str:
    """The plaintext of an `ENC:v1:` value; SecretError when it is malformed or the secret is wrong."""
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if not is_encrypted(value):
        raise SecretError(
            f"the value does not start with {PREFIX!r}; only encrypted values are accepted"
        )
    raw_secret = _secret_bytes(secret)
    try:
        blob = base64.b64decode(value[len(PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise SecretError(f"the text after {PREFIX!r} is not valid base64") from None
    ciphertext = blob[_SALT_BYTES:]
    if len(blob) <= _SALT_BYTES or len(ciphertext) % _BLOCK_BYTES:
        raise SecretError(
            "the encrypted value is too short or cut off (expected a 16-byte salt and whole AES blocks)"
        )
    key, iv = _derive(raw_secret, blob[:_SALT_BYTES])
    decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    padded = decryptor.update(ciphertext) + decryptor.finalize()
    try:
        unpadder = padding.PKCS7(_BLOCK_BYTES * 8).unpadder()
        plain = unpadder.update(padded) + unpadder.finalize()
        return plain.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise SecretError(
            "the value cannot be decrypted with the configured secret (wrong secret or damaged value)"
        ) from None


def check_secret(secret: str) -> None:
    """Raise SecretError unless `secret` is base64 of exactly 32 bytes."""
    _secret_bytes(secret)


def _secret_bytes(secret: str) -> bytes:
    names = SECRET_SOURCES
    try:
        raw = base64.b64decode(secret.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise SecretError(
            f"the encryption secret ({names}) is not valid base64; it must encode exactly 32 bytes"
        ) from None
    if len(raw) != _SECRET_BYTES:
        raise SecretError(
            f"the encryption secret ({names}) encodes {len(raw)} bytes; it must encode exactly 32 bytes"
        )
    return raw


def _derive(raw_secret: bytes, salt: bytes) -> tuple[bytes, bytes]:
    material = hashlib.pbkdf2_hmac("sha512", raw_secret, salt, _ITERATIONS, 48)
    return material[:32], material[32:48]
