"""A copy of the example organization with a hostile provider name and settings key and an
encrypted secret, and `policy serve`'s app over it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from policy.config_sources import delivered_home, set_copy_in_force
from policy.secrets import encrypt, generate_secret
from policy.web import ConfigurationPaths, build_app
from runtime.cli_serve import ServedPolicy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "organization"
HOSTILE = '<script>alert("owned")</script><img src=x onerror=alert(1)>'
SECRET = "tvly-live-9f8e7d6c5b4a"
HOSTILE_KEY = "DataTools.<script>alert(2)</script><img src=x onerror=alert(3)>"
"""A settings key no tool knows: the status page lists it as a warning, as text."""


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
        f'CONFIG["SETTINGS"]["{HOSTILE_KEY}"] = true\n'
    )
    return folder


def web_app(
    paths: ConfigurationPaths,
    token: str | None = None,
    *,
    watch: bool = False,
    served: ServedPolicy | None = None,
    **options: Any,
) -> Starlette:
    """`policy serve`'s app over `served` (by default a `ServedPolicy` of `paths`), as the
    command builds it; `options` go to `build_app` (e.g. `caller_of`)."""
    served = served or ServedPolicy(paths)
    return build_app(served, paths, token, watch=watch, people_of=served.people_of, **options)


def fetched_in_force(state_dir: Path, plugin_lua: str) -> Path:
    """A configuration as `policy fetch` leaves it in `state_dir`: one copy, put in force."""
    configuration_id = "3f2a1b0c-9d8e-4f7a-b6c5-d4e3f2a1b0c9"
    fetched = delivered_home(state_dir, configuration_id) / ("0" * 32)
    fetched.mkdir(parents=True)
    (fetched / "plugin.lua").write_text(plugin_lua)
    set_copy_in_force(state_dir, configuration_id, fetched.name)
    return fetched
