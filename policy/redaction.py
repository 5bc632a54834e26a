"""Every spelling of a secret, found and masked: the one rule for what counts as a secret showing.

A tool or library that lets a secret slip rarely writes it verbatim: `urllib.parse.quote` turns
`/` into `%2F` (other encoders into `%2f`, or `%252F` when they encode twice), a JSON encoder
writes `\\/`, `\\u002f` or a doubled backslash when the JSON sits inside JSON, an HTML page
`&#47;`, an `Authorization: Basic` header carries base64 of `user:secret`, a debug line prints
hex. A `SecretMask` matches the secret with every character in any of these spellings (mixed
freely), and the base64 and hex forms of the secret at any alignment, so one mask covers
results, traces, events, logs and errors alike.

Secrets shorter than `_MIN_SECRET_CHARACTERS` are not searched for (masking them would blank
ordinary words); base64 and hex forms are searched for once they are long enough not to occur in
ordinary text by chance.
"""

from __future__ import annotations

import base64
import functools
import re
import string
import threading
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any

from policy._dataclass import dataclass

if TYPE_CHECKING:
    import logging

MASK = "*****"
_MIN_SECRET_CHARACTERS = 4
_MIN_ENCODED_CHARACTERS = 8
_NEVER_ESCAPED = frozenset(string.ascii_letters + string.digits)
"""URL, JSON and HTML encoders write ASCII letters and digits as they are, so a secret's run of
them is a plain literal, which keeps the search fast."""
_HTML_NAMED = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "(?:apos|#0*39)"}
_JSON_SHORT = {
    "/": "/",
    '"': '"',
    "\\": "\\",
    "\b": "b",
    "\f": "f",
    "\n": "n",
    "\r": "r",
    "\t": "t",
}


def _hex(value: int, digits: int) -> str:
    """`value` in hexadecimal matching either letter case (`2f` and `2F`)."""
    spelled = f"{value:0{digits}x}"
    return "".join(f"[{c}{c.upper()}]" if c.isalpha() else c for c in spelled)


def _utf16_units(character: str) -> list[int]:
    code = ord(character)
    if code < 0x10000:
        return [code]
    code -= 0x10000
    return [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]


@functools.lru_cache(maxsize=4096)
def _character(character: str) -> str:
    """A pattern for one character of a secret in any spelling an encoder is likely to produce.

    Percent-encoding (either letter case, once or twice), JSON and Python escapes (any number of
    backslashes: JSON inside JSON), HTML character references, `+` for a space."""
    if character in _NEVER_ESCAPED:
        return re.escape(character)
    encoded = character.encode("utf-8", "surrogatepass")
    forms = [re.escape(character)]
    forms.append("".join(f"%(?:25)?{_hex(b, 2)}" for b in encoded))
    forms.append("".join(f"\\\\+u{_hex(unit, 4)}" for unit in _utf16_units(character)))
    forms.append("".join(f"\\\\+x{_hex(b, 2)}" for b in encoded))
    if character in _JSON_SHORT:
        forms.append(f"\\\\+{re.escape(_JSON_SHORT[character])}")
    forms.append(f"&#(?:[xX]0*{_hex(ord(character), 1)}|0*{ord(character)});")
    if character in _HTML_NAMED:
        forms.append(f"&{_HTML_NAMED[character]};")
    if character == " ":
        forms.append(r"\+")
    return "(?:" + "|".join(forms) + ")"


def _spelled(text: str) -> str:
    return "".join(_character(c) for c in text)


def _base64_cores(secret: bytes) -> set[str]:
    """The part of base64 that is the same wherever `secret` sits inside the encoded bytes.

    The encoding of a byte depends on its position modulo 3; for each of the three positions the
    characters that hold only bits of `secret` (none of the text before or after) are kept.
    """
    cores: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret).decode("ascii")
        start = -(-8 * offset // 6)
        end = 8 * (offset + len(secret)) // 6
        core = encoded[start:end]
        if len(core) >= _MIN_ENCODED_CHARACTERS:
            cores.add(core)
            cores.add(core.translate(str.maketrans("+/", "-_")))
    return cores


def spellings(secret: str) -> tuple[str, ...]:
    """The base texts a secret may show as: itself, its base64 cores and its hex (each is then
    matched with every character in any spelling)."""
    raw = secret.encode("utf-8", "surrogatepass")
    forms = {secret, *_base64_cores(raw)}
    if len(raw) * 2 >= _MIN_ENCODED_CHARACTERS:
        forms.update((raw.hex(), raw.hex().upper()))
    return tuple(sorted(forms, key=lambda form: (-len(form), form)))


@functools.lru_cache(maxsize=256)
def _pattern(secrets: frozenset[str]) -> re.Pattern[str] | None:
    """The pattern of a set of secrets, shared by the masks made of the same set while it is
    among the last ones built (a mask keeps its own: `SecretMask._compiled`)."""
    forms = {form for secret in secrets for form in spellings(secret)}
    if not forms:
        return None
    ordered = sorted(forms, key=lambda form: (-len(form), form))
    return re.compile("|".join(_spelled(form) for form in ordered))


_NOT_COMPILED: Any = object()


@dataclass(frozen=True, slots=True)
class SecretMask:
    """Masks the given secrets, in every spelling, in text and in JSON-like values.

    A mask compiles its pattern on first use and keeps it: a long-lived mask (a server's
    Headers, a signed-in person's token) is never compiled again on the request path, however
    many other masks are in use (a JWT's pattern takes ~70 ms to build)."""

    secrets: frozenset[str] = frozenset()
    _compiled: re.Pattern[str] | None = field(
        default=_NOT_COMPILED, init=False, repr=False, compare=False
    )

    def _pattern(self) -> re.Pattern[str] | None:
        compiled = self._compiled
        if compiled is _NOT_COMPILED:
            compiled = _pattern(self.secrets) if self.secrets else None
            object.__setattr__(self, "_compiled", compiled)
        return compiled

    @classmethod
    def of(
        cls, secrets: Iterable[object], *, min_characters: int = _MIN_SECRET_CHARACTERS
    ) -> SecretMask:
        """A mask for the strings among `secrets` (blank and too short ones are left out).

        `min_characters=1` masks even a short value: for text that quotes the value itself (a
        refusal of a sensitive argument), where blanking a common word is the lesser harm."""
        kept = frozenset(
            s
            for s in secrets
            if isinstance(s, str) and s.strip() and len(s) >= max(1, min_characters)
        )
        return cls(kept)

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        """`text` with every spelling of every secret replaced by `MASK`."""
        pattern = self._pattern()
        if pattern is None:
            return text
        return pattern.sub(MASK, text)

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string (keys included) masked, and a number whose
        written form shows a secret replaced by `MASK`; other values as they are."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return MASK if self.shows_secret(repr(value)) else value
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def shows_secret(self, text: str) -> bool:
        """Whether any spelling of a secret occurs in `text`."""
        pattern = self._pattern()
        return pattern is not None and pattern.search(text) is not None


NO_SECRETS = SecretMask()


# --- logs ---------------------------------------------------------------------------------------

_log_lock = threading.Lock()
_log_mask = NO_SECRETS
_factory_installed = False


def mask_in_logs(mask: SecretMask) -> None:
    """From now on, every log record this process creates masks these secrets, whichever logger
    writes it: ours, httpx's request lines, httpcore's DEBUG dump of response headers, an app's.

    A provider client and the executor call this for the keys and secret settings they hold; the
    record factory is installed on first use and keeps any factory installed before it.
    """
    global _log_mask, _factory_installed
    if mask.secrets <= _log_mask.secrets:
        return
    with _log_lock:
        _log_mask = SecretMask(_log_mask.secrets | mask.secrets)
        if not _factory_installed:
            import logging

            previous = logging.getLogRecordFactory()

            def masking_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
                return _masked_record(previous(*args, **kwargs))

            logging.setLogRecordFactory(masking_factory)
            _factory_installed = True


def masked_as_in_logs(text: str) -> str:
    """`text` with the secrets every log record masks (`mask_in_logs`) masked, for a handler
    that shows part of a record (an exception's text) on its own."""
    return _log_mask.text(text)


def _masked_record(record: logging.LogRecord) -> logging.LogRecord:
    mask = _log_mask
    try:
        message = record.getMessage()
    except Exception:  # a malformed record is logging's to report, as it is
        return record
    masked = mask.text(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and not record.exc_text:
        import logging

        formatted = logging.Formatter().formatException(record.exc_info)
        masked = mask.text(formatted)
        if masked != formatted:  # otherwise each handler formats the traceback its own way
            record.exc_text = masked
    return record
