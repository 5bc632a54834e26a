"""A copy of the example organization whose plugins carry hostile text and a canary secret.

Hostile text: CR, LF, ESC (a window-title and a clear-screen sequence), BEL, DEL, a C1 CSI and a
right-to-left override in a provider name, a model id, setting values (valid and invalid), an
unknown key, and a line that would pass for `policy check`'s verdict. The canary secret sits in
an `ENC:v1:` locked API key and as the password in an address setting and an allowedPrivateHosts
entry (that one in the spellings a URL encoder writes).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

from policy.secrets import encrypt

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "organization"
FAKE_VERDICT = "ok: 0 error(s), 0 warning(s) FAKE"
HOSTILE = f"\r\n{FAKE_VERDICT}\x1b]0;pwned\x07\x1b[2J\x7f\x9b31m\u202eevil"
LUA_HOSTILE = (
    HOSTILE.replace("\r", "\\r")
    .replace("\n", "\\n")
    .replace("\x1b", "\\27")
    .replace("\x07", "\\7")
    .replace("\x7f", "\\127")
    .replace("\x9b", "\\194\\155")
    .replace("\u202e", "\\226\\128\\174")
)
CANARY = "cAn4ry-Se/cr3t+Pa=ss_~!"


def _lua(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def hostile_organization(parent: Path, encryption_secret: str) -> Path:
    """The organization under `parent`; its ENC:v1 values are encrypted with `encryption_secret`."""
    folder = parent / "organization"
    shutil.copytree(EXAMPLES, folder)
    base = folder / "base" / "plugin.lua"
    text = base.read_text()
    text = text.replace('"Example Corp vLLM"', f'"vLLM{LUA_HOSTILE}"')
    text = text.replace('"Qwen/Qwen2.5-72B-Instruct"', f'"Qwen{LUA_HOSTILE}"')
    base.write_text(text)
    department = folder / "department" / "plugin.lua"
    password = quote(CANARY, safe="")
    department.write_text(
        department.read_text()
        .replace('["web_search.maxResults"] = "8"', f'["web_search.maxResults"] = "8{LUA_HOSTILE}"')
        .replace('"en-US"', f'"all{LUA_HOSTILE}"')
        .replace(
            '"https://search.example.org"',
            _lua(f"https://admin:{password}@search.example.org"),
        )
        + f'\nCONFIG["SETTINGS"]["DataTools.Unknown{LUA_HOSTILE}"] = "x"\n'
        + 'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"]["web_search.tavily.apiKey"] = '
        + _lua(encrypt(CANARY, encryption_secret))
        + '\nCONFIG["SETTINGS"]["DataTools.LockedToolSettings"]["read_web_page.allowedPrivateHosts"]'
        + " = "
        + _lua(f"intranet.example.org, svc:{CANARY}@wiki.example.org")
        + "\n"
    )
    return folder
