"""The user's YAML settings file: parsing with lines, writing with comments kept, never half."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from policy.configuration import ManagedSetting, PolicyConfiguration
from policy.provenance import Origin, SourceLocation
from policy.user_settings import (
    UserSettingsError,
    ignored_user_settings,
    load_user_settings,
    parse_user_settings,
    remove_tool_setting,
    save_tool_setting,
    set_confidence_scheme,
    set_default_tool_ids,
    set_minimum_provider_confidence,
    set_tools_enabled,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "user-settings.yaml"

FULL = """\
# my settings
tools:
  enabled: true                      # only where the organization leaves it open
  settings:
    web_search:
      searxng.baseUrl: "https://searx.example.org"   # my instance
      maxResults: 10
  minimum_provider_confidence:
    web_search: high
  default_tool_ids_by_component:
    CHAT: [web_search, read_web_page]
    writer: []
confidence:
  scheme: TRUST_EUROPE
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "settings.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _org(
    key: str, value: object, locked: bool = True, **entries: SourceLocation
) -> PolicyConfiguration:
    origin = Origin("id-1", "Org base", SourceLocation("org/plugin.lua", 12))
    setting = ManagedSetting(key, value, locked, origin, entry_locations=dict(entries))
    return PolicyConfiguration(settings={key: setting})


def test_a_missing_file_or_no_path_says_nothing(tmp_path: Path) -> None:
    assert load_user_settings(None).tool_settings == {}
    empty = load_user_settings(tmp_path / "absent.yaml")
    assert empty.tools_enabled is None and empty.confidence_scheme is None


def test_an_empty_file_says_nothing(tmp_path: Path) -> None:
    assert load_user_settings(_write(tmp_path, "# nothing yet\n")).tool_settings == {}


def test_every_section_is_read_with_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, FULL)
    user = load_user_settings(path)
    assert user.tools_enabled is True
    assert user.tool_settings == {
        "web_search": {"searxng.baseUrl": "https://searx.example.org", "maxResults": "10"}
    }
    assert user.minimum_provider_confidence == {"web_search": "HIGH"}
    assert user.default_tool_ids_by_component == {
        "CHAT": ("web_search", "read_web_page"),
        "WRITER": (),
    }
    assert user.confidence_scheme == "TRUST_EUROPE"
    assert user.path == str(path)
    assert user.locations["tools.enabled"] == SourceLocation(str(path), 3)
    assert user.locations["tools.settings.web_search.searxng.baseUrl"].line == 6
    assert user.locations["tools.minimum_provider_confidence.web_search"].line == 9
    assert user.locations["tools.default_tool_ids_by_component.WRITER"].line == 12
    assert user.locations["confidence.scheme"].line == 14


def test_the_shipped_example_loads() -> None:
    user = load_user_settings(EXAMPLE)
    assert user.tool_settings["web_search"]["searxng.baseUrl"].startswith("https://")
    assert user.confidence_scheme in {"TRUST_EUROPE", "TRUST_ALL", "TRUST_USA_EUROPE"}


@pytest.mark.parametrize(
    ("text", "line", "expected"),
    [
        (
            "tools:\n  enabeld: true\n",
            2,
            'unknown key "enabeld" under tools; did you mean "enabled"?; valid keys: enabled',
        ),
        ("tool:\n  enabled: true\n", 1, 'unknown key "tool" under the top level'),
        ("tools:\n  enabled: yes please\n", 2, "tools.enabled must be true or false"),
        (
            "tools:\n  minimum_provider_confidence:\n    web_search: UNKNOWN\n",
            3,
            "is not one of NONE, UNTRUSTED, VERY_LOW, LOW, MODERATE, MEDIUM, HIGH",
        ),
        (
            "tools:\n  default_tool_ids_by_component:\n    KITCHEN: [web_search]\n",
            3,
            "component: 'KITCHEN' is not one of",
        ),
        (
            "tools:\n  default_tool_ids_by_component:\n    CHAT: web_search\n",
            3,
            "must be a list of tool ids",
        ),
        (
            "tools:\n  default_tool_ids_by_component:\n    CHAT:\n      - web_search\n      - 'a b'\n",
            5,
            "is not a tool id",
        ),
        ("confidence:\n  scheme: TRUST_MARS\n", 2, "TRUST_ALL, TRUST_USA_EUROPE"),
        ("tools:\n  settings:\n    web_search:\n      maxResults:\n", 4, 'write "" for an empty'),
        ("tools:\n  settings:\n    'web search':\n      a: b\n", 3, "is not a tool id"),
        ("tools:\n  settings: [1, 2]\n", 0, "tools.settings must be a mapping"),
        ("tools: [\n", 2, "not valid YAML"),
        ("tools:\n  enabled: true\n  enabled: false\n", 3, "not valid YAML"),
        ("- a\n- b\n", 1, "must be a mapping"),
    ],
)
def test_bad_files_name_the_line_and_what_is_valid(
    tmp_path: Path, text: str, line: int, expected: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UserSettingsError) as caught:
        load_user_settings(path)
    assert expected in caught.value.message
    assert caught.value.location is not None
    assert caught.value.location.file == str(path)
    if line:
        assert caught.value.location.line == line
        assert str(caught.value).startswith(f"{path}:{line}: ")


def test_saving_keeps_comments_and_order(tmp_path: Path) -> None:
    path = _write(tmp_path, FULL)
    save_tool_setting(path, "web_search", "defaultLanguage", "de-DE")
    save_tool_setting(path, "web_search", "searxng.baseUrl", "https://other.example.org")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# my settings\n")
    assert "# only where the organization leaves it open" in text
    assert "# my instance" in text
    assert text.index("maxResults") < text.index("defaultLanguage") < text.index("minimum_provider")
    user = load_user_settings(path)
    assert user.tool_settings["web_search"] == {
        "searxng.baseUrl": "https://other.example.org",
        "maxResults": "10",
        "defaultLanguage": "de-DE",
    }
    assert user.confidence_scheme == "TRUST_EUROPE"


def test_saving_creates_a_new_private_file(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "settings.yaml"
    save_tool_setting(path, "read_web_page", "freeAddressChoice", "ON")
    save_tool_setting(path, "read_web_page", "note", "")
    assert load_user_settings(path).tool_settings == {
        "read_web_page": {"freeAddressChoice": "ON", "note": ""}
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_every_setter_writes_what_the_loader_reads(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    set_tools_enabled(path, False)
    set_minimum_provider_confidence(path, "web_search", "medium")
    set_default_tool_ids(path, "chat", ["web_search", "web_search", "read_web_page"])
    set_default_tool_ids(path, "WRITER", [])
    set_confidence_scheme(path, "trust_europe")
    user = load_user_settings(path)
    assert user.tools_enabled is False
    assert user.minimum_provider_confidence == {"web_search": "MEDIUM"}
    assert user.default_tool_ids_by_component == {
        "CHAT": ("web_search", "read_web_page"),
        "WRITER": (),
    }
    assert user.confidence_scheme == "TRUST_EUROPE"


def test_removing_entries_leaves_no_empty_sections(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    save_tool_setting(path, "web_search", "maxResults", "5")
    set_confidence_scheme(path, "TRUST_ALL")
    remove_tool_setting(path, "web_search", "maxResults")
    set_confidence_scheme(path, None)
    set_tools_enabled(path, None)
    assert path.read_text(encoding="utf-8").strip() in ("", "{}")
    assert load_user_settings(path).tool_settings == {}


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda p: set_minimum_provider_confidence(p, "web_search", "UNKNOWN"), "confidence level"),
        (lambda p: set_minimum_provider_confidence(p, "web search", "HIGH"), "is not a tool id"),
        (lambda p: set_default_tool_ids(p, "KITCHEN", ["web_search"]), "component"),
        (lambda p: set_confidence_scheme(p, "TRUST_MARS"), "confidence scheme"),
        (lambda p: save_tool_setting(p, "web_search", "", "x"), "field name"),
        (lambda p: save_tool_setting(p, "web.search", "a", "x"), "is not a tool id"),
    ],
)
def test_bad_values_are_refused_and_nothing_is_written(
    tmp_path: Path, call: object, expected: str
) -> None:
    path = _write(tmp_path, FULL)
    with pytest.raises(UserSettingsError, match=expected):
        call(path)  # type: ignore[operator]
    assert path.read_text(encoding="utf-8") == FULL


def test_a_broken_file_is_not_overwritten(tmp_path: Path) -> None:
    broken = "tools:\n  enabeld: true  # typo\n"
    path = _write(tmp_path, broken)
    with pytest.raises(UserSettingsError) as caught:
        save_tool_setting(path, "web_search", "maxResults", "3")
    assert caught.value.location == SourceLocation(str(path), 2)
    assert path.read_text(encoding="utf-8") == broken
    assert [p.name for p in tmp_path.iterdir()] == ["settings.yaml"]


def test_a_locked_tool_field_is_refused_naming_who_locks_it(tmp_path: Path) -> None:
    path = _write(tmp_path, FULL)
    configuration = _org(
        "DataTools.LockedToolSettings",
        {"web_search.searxng.baseUrl": "https://org.example"},
        **{"web_search.searxng.baseUrl": SourceLocation("org/plugin.lua", 40)},
    )
    with pytest.raises(UserSettingsError) as caught:
        save_tool_setting(path, "web_search", "searxng.baseUrl", "x", configuration)
    assert "locked by the organization plugin Org base (org/plugin.lua:40)" in str(caught.value)
    assert path.read_text(encoding="utf-8") == FULL
    save_tool_setting(path, "web_search", "maxResults", "3", configuration)


def test_locked_managed_keys_refuse_and_editable_defaults_accept(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    locked = _org("DataConfidence.ConfidenceScheme", "TRUST_ALL", locked=True)
    with pytest.raises(
        UserSettingsError, match=r"confidence.scheme is locked by the plugin Org base"
    ):
        set_confidence_scheme(path, "TRUST_EUROPE", locked)
    assert not path.exists()
    editable = _org("DataConfidence.ConfidenceScheme", "TRUST_ALL", locked=False)
    set_confidence_scheme(path, "TRUST_EUROPE", editable)
    enabled = _org("DataTools.EnableTools", True)
    with pytest.raises(UserSettingsError, match=r"tools\.enabled is locked"):
        set_tools_enabled(path, False, enabled)
    minimums = _org("DataTools.MinimumProviderConfidenceByToolId", {"web_search": "LOW"})
    with pytest.raises(UserSettingsError, match="minimum_provider_confidence is locked"):
        set_minimum_provider_confidence(path, "web_search", "HIGH", minimums)


def test_values_an_organization_lock_overrides_are_reported(tmp_path: Path) -> None:
    user = load_user_settings(_write(tmp_path, FULL))
    configuration = _org("DataTools.LockedToolSettings", {"web_search.maxResults": "3"})
    findings = ignored_user_settings(user, configuration)
    assert [f.code for f in findings] == ["user-setting-locked"]
    assert "tools.settings.web_search.maxResults has no effect" in findings[0].message
    assert findings[0].location is not None and findings[0].location.line == 7
    scheme = _org("DataConfidence.ConfidenceScheme", "TRUST_ALL")
    assert "confidence.scheme" in ignored_user_settings(user, scheme)[0].message
    open_scheme = _org("DataConfidence.ConfidenceScheme", "TRUST_ALL", locked=False)
    assert ignored_user_settings(user, open_scheme) == ()


def test_ignored_whole_sections_name_their_line_in_the_file(tmp_path: Path) -> None:
    user = load_user_settings(_write(tmp_path, FULL))
    minimums = _org("DataTools.MinimumProviderConfidenceByToolId", {"web_search": "LOW"})
    defaults = _org("DataTools.DefaultToolIdsByComponent", {"CHAT": ["web_search"]})
    for configuration, dotted, line in (
        (minimums, "tools.minimum_provider_confidence", 8),
        (defaults, "tools.default_tool_ids_by_component", 10),
    ):
        [finding] = ignored_user_settings(user, configuration)
        assert finding.message.startswith(f"{dotted} has no effect")
        assert finding.location == SourceLocation(str(tmp_path / "settings.yaml"), line)


@pytest.mark.parametrize(
    ("value", "shown"), [("[1, 2]", "a list"), ("{a: 1}", "a mapping"), ("2026-12-02", "a date")]
)
def test_a_setting_that_is_not_text_names_what_it_is_in_plain_words(
    tmp_path: Path, value: str, shown: str
) -> None:
    path = _write(tmp_path, f"tools:\n  settings:\n    web_search:\n      maxResults: {value}\n")
    with pytest.raises(UserSettingsError) as caught:
        load_user_settings(path)
    assert caught.value.message == (
        f"tools.settings.web_search.maxResults must be a text value, not {shown}; quote it"
    )
    assert caught.value.location == SourceLocation(str(path), 4)


def test_an_ignored_tool_field_names_the_line_of_the_lock_itself(tmp_path: Path) -> None:
    user = load_user_settings(_write(tmp_path, FULL))
    configuration = _org(
        "DataTools.LockedToolSettings",
        {"web_search.maxResults": "3"},
        **{"web_search.maxResults": SourceLocation("org/plugin.lua", 40)},
    )
    [finding] = ignored_user_settings(user, configuration)
    assert finding.message == (
        "tools.settings.web_search.maxResults has no effect: "
        "DataTools.LockedToolSettings locks web_search.maxResults in Org base (org/plugin.lua:40)"
    )


@pytest.mark.parametrize(
    ("text", "line", "dotted"),
    [
        ("tools:\n  enabled: true\n  settings: [1, 2]\n", 3, "tools.settings"),
        ("# mine\ntools: 5\n", 2, "tools"),
        ("tools:\n  settings:\n    web_search: on\n", 3, "tools.settings.web_search"),
        ("confidence:\n  - TRUST_ALL\n", 1, "confidence"),
        ("tools:\n  minimum_provider_confidence: HIGH\n", 2, "tools.minimum_provider_confidence"),
    ],
)
def test_a_section_that_is_not_a_mapping_names_its_line(
    tmp_path: Path, text: str, line: int, dotted: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(UserSettingsError) as caught:
        load_user_settings(path)
    assert caught.value.message.startswith(f"{dotted} must be a mapping")
    assert caught.value.location == SourceLocation(str(path), line)


_NESTED_4KB = {  # text, the line where the limit is crossed
    "flow sequences": ("tools: " + "[" * 4096 + "]" * 4096, 1),
    "behind an anchor": ("tools: &deep " + "[" * 4096, 1),
    "flow mappings": ("tools: " + "{a: " * 1100 + "1" + "}" * 1100, 1),
    "compact block sequences": ("tools:\n" + "- " * 2100 + "x\n", 2),
    "indentation": ("".join(" " * level + "a:\n" for level in range(120)), 101),
}


@pytest.mark.parametrize(("text", "line"), _NESTED_4KB.values(), ids=_NESTED_4KB.keys())
def test_yaml_nested_past_the_limit_is_refused_before_it_is_parsed(
    tmp_path: Path, text: str, line: int
) -> None:
    """4 KB+ of nesting (up to 4 s of ruamel.yaml's CPU each before): refused with the file, the
    line and the limit, whether read from a file or pasted."""
    assert len(text) >= 4096
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    for read, where in (
        (lambda: load_user_settings(path), str(path)),
        (lambda: parse_user_settings(text, "pasted"), "pasted"),
    ):
        with pytest.raises(UserSettingsError) as raised:
            read()
        assert raised.value.message == (
            "YAML nested too deeply: more than 100 levels (brackets and indentation levels "
            "count); a settings file is a few levels deep and a few KB long"
        )
        assert raised.value.location == SourceLocation(where, line)


def test_yaml_past_the_size_limit_is_refused_before_it_is_parsed() -> None:
    from policy.yaml_limits import MAX_YAML_BYTES

    text = "tools:\n" + "".join(f"  tool_{n}:\n    enabled: true\n" for n in range(9000))
    assert len(text) > MAX_YAML_BYTES == 256 * 1024
    with pytest.raises(UserSettingsError) as raised:
        parse_user_settings(text, "pasted")
    assert str(raised.value) == (
        f"pasted: {len(text):,} bytes of YAML; at most 262,144 are read; a settings file is a "
        "few levels deep and a few KB long"
    )


def test_a_file_nested_too_deeply_is_an_error_naming_it(tmp_path: Path) -> None:
    """YAML nested thousands deep is refused with the file named (not a RecursionError)."""
    deep = "tools: " + "[" * 5000 + "]" * 5000 + "\n"
    path = tmp_path / "deep.yaml"
    path.write_text(deep)
    for read in (lambda: load_user_settings(path), lambda: parse_user_settings(deep, "pasted")):
        with pytest.raises(UserSettingsError) as raised:
            read()
        assert "nested too deeply" in raised.value.message
    result = subprocess.run(
        [sys.executable, "-m", "policy.cli", "check", "--user-settings", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert f"{path}" in result.stdout + result.stderr and "nested too deeply" in result.stdout
    assert "RecursionError" not in result.stdout + result.stderr
