"""The spellings of a secret that tools and libraries produce, computed with those libraries.

Tests feed these into what a tool returns, a host answers or a plugin holds, and grep every output
for all of them (`leaked_spellings`); they never ask `policy.redaction` what it masks.
"""

from __future__ import annotations

import base64
import html
import json
from urllib.parse import quote, quote_plus


def spellings_of(secret: str) -> dict[str, str]:
    """Name → the secret as that encoder writes it (only the forms that differ from the secret)."""
    raw = secret.encode()
    percent = quote(secret, safe="")
    forms = {
        "verbatim": secret,
        "quote": quote(secret),
        "quote safe=''": percent,
        "quote, lower-case hex": _lower_hex_escapes(percent),
        "quote_plus": quote_plus(secret),
        "quote twice": quote(percent, safe=""),
        "JSON": json.dumps(secret)[1:-1],
        "JSON ensure_ascii, \\/": json.dumps(secret, ensure_ascii=True)[1:-1].replace("/", "\\/"),
        "JSON \\u escapes, upper-case": "".join(
            c if c.isalnum() else f"\\u{ord(c):04X}" for c in secret
        ),
        "JSON inside JSON": json.dumps(json.dumps(secret))[3:-3],
        "HTML": html.escape(secret),
        "base64": base64.b64encode(raw).decode(),
        "base64 of user:secret (Basic auth)": base64.b64encode(b"user:" + raw).decode(),
        "base64 of a:secret": base64.b64encode(b"a:" + raw).decode(),
        "urlsafe base64, no padding": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
    }
    return forms


def _lower_hex_escapes(percent: str) -> str:
    parts = percent.split("%")
    return parts[0] + "".join("%" + p[:2].lower() + p[2:] for p in parts[1:])


def leaked_spellings(secret: str, text: str) -> list[str]:
    """The names of the spellings of `secret` (or, for base64 forms, their inner part) in `text`."""
    found = []
    for name, form in spellings_of(secret).items():
        probe = form
        if name.startswith("base64 of"):
            probe = form[8:-4]  # the prefix and padding change the first and last characters
        if probe and probe in text:
            found.append(name)
    return found
