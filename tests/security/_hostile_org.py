"""A copy of the example organization whose plugins carry hostile text and a canary secret.

Hostile text: CR, LF, ESC (a window-title and a clear-screen sequence), BEL, DEL, a C1 CSI and a
right-to-left override in a provider name, a model id, setting values (valid and invalid), an
unknown key, and a line that would pass for `policy check`'s verdict. The canary secret sits in
an `ENC:v1:` locked API key and as the password in an address setting and an allowedPrivateHosts
entry (that one in the spellings a URL encoder writes).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import quote

from policy.secrets import encrypt
from tests.servers import cli_runner
from tests.servers.cli_runner import CliRun

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "organization"
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
VLLM = "79cb8e25-0940-4280-964a-0a57c61d6ee7"
"""The organization's self-hosted provider (its name is hostile, so it is chosen by id)."""


def chat_arguments(
    organization: Path, base_url: str, tools_file: Path, tool: str, folder: Path, output_format: str
) -> list[str]:
    """`policy chat` with one message against the loopback provider, one tool from a tools
    file, the chat kept and the decision log written in `folder`."""
    return [
        "chat",
        "Look it up",
        "--org",
        str(organization),
        "--provider",
        VLLM,
        "--base-url",
        base_url,
        "--tools-file",
        str(tools_file),
        "--tool",
        tool,
        "--chat-db",
        str(folder / "chats.sqlite3"),
        "--decision-log",
        str(folder / "decisions.jsonl"),
        "--format",
        output_format,
    ]


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


def run_policy(
    *args: str | Path,
    secret: str,
    env: dict[str, str] | None = None,
    debug_logging: bool = False,
) -> CliRun:
    """One run of the `policy` command (its console script's `main`) with the encryption secret
    set; with `debug_logging`, the root logger writes every record at DEBUG to stderr."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment["TOOLPOLICY_CONFIG_ENCRYPTION_SECRET"] = secret
    environment.update(env or {})
    return cli_runner.run_policy(args, env=environment, cwd=ROOT, debug_log=debug_logging)
