"""One verdict per setting value: `policy check`, `policy settings set`, the registry's
NOT_CONFIGURED check and the tool's own reading at run time agree, for every field of every
built-in tool and any value (hypothesis draws each from the field's type, choices or range, plus
the strings that once split them).

Each value is put, locked, into a real organization plugin (loaded through Lua) next to a base
configuration in which every built-in tool is configured; the verdicts are then:

- check: an error finding about that entry among what `policy check` prints (`check_findings`);
- settings set: what `policy settings set` refuses against the base configuration
  (`settable_field_problem`, its exit 2);
- registry: the tool is NOT_CONFIGURED (`ToolRegistry.configuration_state`);
- run time: the executable tool's settings reader (`web_search_settings`, ...) raises.

Secret fields are left out: check never reads a secret's value (a plaintext secret is refused
whatever it says) and settings set keeps secrets in the keyring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from policy import Policy, load_policy
from policy.builtin import (
    READ_WEB_PAGE,
    READ_WEB_PAGE_NUMBERS,
    SEARCH_CONFLUENCE,
    SEARCH_CONFLUENCE_NUMBERS,
    SEMANTIC_SEARCH,
    WEB_SEARCH,
    WEB_SEARCH_NUMBERS,
    IntegerSetting,
    ToolSettingsError,
    read_web_page_settings,
    search_confluence_settings,
    web_search_settings,
)
from policy.configuration import Severity
from policy.explain import settable_field_problem
from policy.lint import check_findings
from policy.resolve import setting_choices
from tests.policy.test_cli import PROVIDERS, write_plugin

BASE: dict[str, str] = {
    f"{WEB_SEARCH}.searxng.baseUrl": "https://searx.example.org",
    f"{SEARCH_CONFLUENCE}.baseUrl": "https://wiki.example.org/confluence",
}
"""Organization defaults under which every built-in tool is configured."""

READERS: dict[str, Callable[[Any, Mapping[str, str]], object]] = {
    WEB_SEARCH: web_search_settings,
    READ_WEB_PAGE: read_web_page_settings,
    SEARCH_CONFLUENCE: search_confluence_settings,
}
NUMBERS: dict[str, IntegerSetting] = {
    f"{tool}.{setting.name}": setting
    for tool, numbers in (
        (WEB_SEARCH, WEB_SEARCH_NUMBERS),
        (READ_WEB_PAGE, READ_WEB_PAGE_NUMBERS),
        (SEARCH_CONFLUENCE, SEARCH_CONFLUENCE_NUMBERS),
    )
    for setting in numbers
}
ONCE_SPLIT = (
    "500",
    "99",
    "42",
    "ROUND_ROBIN",
    "round_robin",
    "*.10.0.0.1",
    "bücher.example",
    "a_b.corp",
    "wiki.corp:8080",
    "[fd00::1]",
    "http://searx.example.org",
    "https://user:pw@wiki.example.org/",
    "1000",
    "",
    " ",
)
"""Values that once got different answers from check, settings set, the registry or the tool."""


def _lua_string(text: str) -> str:
    """`text` as a Lua string literal: every byte outside [A-Za-z0-9 ] as a decimal escape."""
    plain = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ")
    return '"' + "".join(chr(b) if b in plain else f"\\{b:03d}" for b in text.encode()) + '"'


def _table(entries: Mapping[str, str]) -> str:
    return (
        "{ "
        + ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in entries.items())
        + " }"
    )


def _load(folder: Path, locked: Mapping[str, str]) -> Policy:
    write_plugin(
        folder,
        PROVIDERS
        + 'CONFIG["SETTINGS"] = {}\n'
        + f'CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = {_table(BASE)}\n'
        + f'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {_table(locked)}\n',
    )
    return load_policy(org=[folder])


@cache
def _base(folder: str) -> Policy:
    return _load(Path(folder), {})


def _fields() -> list[tuple[str, str]]:
    policy = load_policy(org=[])
    return [
        (tool.definition.id, name)
        for tool in policy.tools
        if tool.definition.id in {WEB_SEARCH, READ_WEB_PAGE, SEARCH_CONFLUENCE, SEMANTIC_SEARCH}
        for name, spec in tool.definition.settings_schema.properties.items()
        if not spec.secret
    ]


def _values(tool_id: str, name: str) -> st.SearchStrategy[str]:
    """Values drawn from the field's shape: its range, its choices, or host and address text."""
    policy = load_policy(org=[])
    spec = policy.registry.definition(tool_id).settings_schema.properties[name]
    anything = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=24)
    key = f"{tool_id}.{name}"
    drawn: list[st.SearchStrategy[str]] = [anything, st.sampled_from(ONCE_SPLIT)]
    if key in NUMBERS:
        top = NUMBERS[key].maximum
        drawn.append(st.integers(-3, top * 3).map(str))
        drawn.append(st.integers(1, top).map(lambda n: f" 0{n} "))
    choices = setting_choices(spec)
    if choices:
        drawn.append(st.sampled_from(choices))
        drawn.append(st.sampled_from(choices).map(str.lower))
    if name == "allowedPrivateHosts":
        label = st.from_regex(r"[a-z0-9_ü*-]{1,8}", fullmatch=True)
        host = st.lists(label, min_size=1, max_size=3).map(".".join)
        entry = host | st.ip_addresses().map(str) | host.map(lambda h: f"{h}:80")
        drawn.append(st.lists(entry, max_size=3).map(", ".join))
    if name.endswith(("baseUrl", "BaseUrl")):
        scheme = st.sampled_from(["https://", "http://", "ftp://", ""])
        host = st.sampled_from(["wiki.example.org", "searx.example.org", "[fd00::1]", "a b"])
        tail = st.sampled_from(["", "/", "/confluence", "/?q=1", "#top", ":99999"])
        drawn.append(st.tuples(scheme, host, tail).map("".join))
    return st.one_of(drawn)


def _verdicts(tmp_path: Path, tool_id: str, name: str, value: str) -> dict[str, bool]:
    """For each of the four, whether it refuses `value` for `tool_id`.`name`."""
    key = f"{tool_id}.{name}"
    policy = _load(tmp_path / "candidate", {key: value})
    assert not [f for f in policy.findings if f.code in {"lua-error", "broken-organization-plugin"}]
    entry = f'["{key}"]'
    check = any(f.severity is Severity.ERROR and entry in f.message for f in check_findings(policy))
    registry = not policy.registry.configuration_state(tool_id).is_configured
    base = _base(str(tmp_path / "base"))
    assert base.registry.configuration_state(tool_id).is_configured
    settings_set = settable_field_problem(base, tool_id, name, value) is not None
    reader = READERS.get(tool_id)
    run_time = False
    if reader is not None:
        values = policy.registry.settings(tool_id).values_for_tool()
        try:
            read = reader(policy.registry.tool(tool_id), values)
        except ToolSettingsError:
            run_time = True
        else:
            if key in NUMBERS and value.strip():
                attribute = {
                    s: getattr(read, a)
                    for s, a in (
                        ("maxResults", "max_results"),
                        ("timeoutSeconds", "timeout_seconds"),
                        ("maxContentCharacters", "max_content_characters"),
                    )
                    if hasattr(read, a)
                }
                if name in attribute:
                    assert attribute[name] == int(value), (key, value)
    else:
        run_time = registry
    return {
        "check": check,
        "settings set": settings_set,
        "registry": registry,
        "run time": run_time,
    }


_FIELDS = _fields()


def test_every_field_of_every_built_in_tool_is_covered() -> None:
    keys = {f"{tool}.{name}" for tool, name in _FIELDS}
    assert set(NUMBERS) <= keys
    assert {"web_search.backendStrategy", "read_web_page.allowedPrivateHosts"} <= keys
    assert len(keys) >= 17


@pytest.mark.parametrize(("tool_id", "name"), _FIELDS, ids=[f"{t}.{n}" for t, n in _FIELDS])
def test_check_settings_set_registry_and_the_tool_agree_on_every_value(
    tmp_path_factory: pytest.TempPathFactory, tool_id: str, name: str
) -> None:
    tmp_path = tmp_path_factory.mktemp(name.replace(".", "_"))

    @settings(
        max_examples=12,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(value=_values(tool_id, name))
    @example(value="500")
    @example(value="ROUND_ROBIN")
    @example(value="*.10.0.0.1")
    def agree(value: str) -> None:
        verdicts = _verdicts(tmp_path, tool_id, name, value)
        assert len(set(verdicts.values())) == 1, (f"{tool_id}.{name} = {value!r}", verdicts)

    agree()


@pytest.mark.parametrize(
    ("key", "value", "refused"),
    [
        ("web_search.maxResults", "500", True),
        ("web_search.maxResults", "20", False),
        ("web_search.backendStrategy", "ROUND_ROBIN", True),
        ("web_search.backendStrategy", "SPECIFIC", True),
        ("web_search.maxTotalContentCharacters", "1000", True),
        ("read_web_page.allowedPrivateHosts", "*.10.0.0.1", True),
        ("read_web_page.allowedPrivateHosts", "bücher.example", False),
        ("read_web_page.allowedPrivateHosts", "a_b.corp", False),
        ("read_web_page.allowedPrivateHosts", "wiki.corp:8080", True),
        ("search_confluence.baseUrl", "http://wiki.example.org", True),
    ],
)
def test_the_values_that_once_split_them_get_one_answer(
    tmp_path: Path, key: str, value: str, refused: bool
) -> None:
    tool_id, name = key.split(".", 1)
    assert set(_verdicts(tmp_path, tool_id, name, value).values()) == {refused}
