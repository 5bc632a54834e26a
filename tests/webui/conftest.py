"""A copy of the example organization with a hostile provider name and an encrypted secret, and
`policy serve`'s app over it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.applications import Starlette

from policy.secrets import encrypt, generate_secret
from policy.web import ConfigurationPaths, build_app
from runtime import PolicyWatcher

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "organization"
HOSTILE = '<script>alert("owned")</script><img src=x onerror=alert(1)>'
SECRET = "tvly-live-9f8e7d6c5b4a"


def hostile_organization(parent: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    key = generate_secret()
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", key)
    folder = parent / "organization"
    shutil.copytree(EXAMPLES, folder)
    base = folder / "base" / "plugin.lua"
    base.write_text(base.read_text().replace('"Example Corp vLLM"', f"'{HOSTILE}'"))
    department = folder / "department" / "plugin.lua"
    department.write_text(
        department.read_text()
        + '\nCONFIG["SETTINGS"]["DataTools.LockedToolSettings"]["web_search.tavily.apiKey"]'
        f' = "{encrypt(SECRET, key)}"\n'
    )
    return folder


def web_app(
    paths: ConfigurationPaths, token: str | None = None, *, watch: bool = False
) -> Starlette:
    """`policy serve`'s app over a PolicyWatcher of `paths`, as the command builds it."""
    watcher = PolicyWatcher(paths.load, watch=paths.watched())
    return build_app(watcher, paths, token, watch=watch)
