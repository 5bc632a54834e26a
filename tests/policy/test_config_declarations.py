"""The reader, `policy schema` and the template agree with each section's declaration, field by
field: a valid value is read and accepted, a wrong or missing one is refused by both (the entry
skipped, an error where the section fails closed), an ignored one is read as its default with a
warning, an unknown field is treated as the section says. The plugins run in real Lua."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from policy.config.fields import Field, FieldType, Mistake, Section, UnknownFields
from policy.config.plugin_globals import PLUGIN_GLOBALS as DECLARED_GLOBALS
from policy.config.reference import PAGE, main, reference_page, section_table, settings_table
from policy.config.sections import SECTIONS
from policy.config.settings import TOOLPOLICY_KEYS, SettingKey, SettingKind
from policy.config_schema import configuration_schema
from policy.configuration import Severity
from policy.lua_sandbox import LuaTable, PluginSource, SandboxLimits, run_plugin_sources
from policy.plugins import ConfigurationPlugin, PluginLoadError, load_plugins
from policy.secrets import ENV_SECRET, encrypt
from policy.template import reference_plugin
from policy.vocabulary import PluginOrigin
from tests.policy.test_plugins import GLOBALS as PLUGIN_GLOBALS
from tests.policy.test_plugins import SECRET

GLOBALS = "".join(f"{name} = {value}\n" for name, value in PLUGIN_GLOBALS.items()) + (
    'CONFIG = {}\nCONFIG["SETTINGS"] = {}\n'
)
ENTRY_LINE = GLOBALS.count("\n") + 1
UNKNOWN_FIELD = "Zzyzx"
_WRONG: dict[FieldType, Any] = {
    FieldType.GUID: "not-a-guid",
    FieldType.TEXT: 12,
    FieldType.NONBLANK_TEXT: "  ",
    FieldType.CHOICE: "NOT_ONE_OF_THEM",
    FieldType.BOOL: "yes",
    FieldType.SECRET: "plaintext",
    FieldType.TEXT_LIST: "a text, not a list",
    FieldType.SECRET_TEXT_MAP: {"NAME": 5},
    FieldType.PIN_MAP: {"search": "sha256:abc"},
    FieldType.FLAG_MAP: {"FUNCTION_CALLING": "yes"},
    FieldType.CHOICE_LIST_MAP: {"search": ["SENDS_EVERYWHERE"]},
    FieldType.TABLE: "a text, not a table",
}


@pytest.fixture(autouse=True)
def _encryption_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_SECRET, SECRET)


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = configuration_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _wrong(declared: Field) -> Any:
    if declared.type in (FieldType.WHOLE_NUMBER, FieldType.NUMBER):
        assert declared.maximum is not None
        return declared.maximum + 1
    return _WRONG[declared.type]


def _valid(declared: Field) -> Any:
    if declared.type is FieldType.SECRET:
        return encrypt("s3cret", SECRET)
    assert declared.example is not None, f"{declared.name} declares no example"
    return declared.example


def _conditions_hold(declared: Field, entry: dict[str, Any]) -> bool:
    return all(entry.get(name) == value for name, value in declared.required_when)


def valid_entry(section: Section, *with_fields: Field) -> dict[str, Any]:
    """The required fields, the given ones with what they need, and whatever that requires."""
    entry = {f.name: _valid(f) for f in section if f.required}
    for declared in with_fields:
        entry.update(dict(declared.required_when))
        entry[declared.name] = _valid(declared)
    changed = True
    while changed:
        missing = [
            f
            for f in section
            if f.required_when and f.name not in entry and _conditions_hold(f, entry)
        ]
        entry.update({f.name: _valid(f) for f in missing})
        changed = bool(missing)
    return entry


def _lua(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "{ " + ", ".join(_lua(item) for item in value) + " }"
    assert isinstance(value, dict)
    return "{ " + ", ".join(f"[{_lua(k)}] = {_lua(v)}" for k, v in value.items()) + " }"


@dataclass(frozen=True)
class Case:
    section: Section
    entry: dict[str, Any]
    field: str = ""


def load(tmp_path: Path, cases: list[Case]) -> list[ConfigurationPlugin]:
    """Each case's entry as the one entry of its section, in one organization plugin each, all
    run in one round trip to the sandbox."""
    files = []
    for index, case in enumerate(cases):
        folder = tmp_path / f"case{index}"
        folder.mkdir()
        text = (
            GLOBALS
            + f'CONFIG["{case.section.name}"] = {{ {_lua(case.entry)} }}\n'  # line ENTRY_LINE
        )
        (folder / "plugin.lua").write_text(text, encoding="utf-8")
        files.append((folder / "plugin.lua", PluginOrigin.ORGANIZATION))
    outcomes = load_plugins(files)
    assert not [o for o in outcomes if isinstance(o, PluginLoadError)]
    return [o for o in outcomes if isinstance(o, ConfigurationPlugin)]


def entries(plugin: ConfigurationPlugin, section: Section) -> tuple[Any, ...]:
    return {
        "LLM_PROVIDERS": plugin.providers,
        "DATA_SOURCES": plugin.data_sources,
        "CHAT_TEMPLATES": plugin.chat_templates,
        "MCP_SERVERS": plugin.mcp_servers,
    }[section.name]


def schema_errors(
    validator: Draft202012Validator, section: Section, entry: dict[str, Any]
) -> list[str]:
    return [e.message for e in validator.iter_errors({"SETTINGS": {}, section.name: [entry]})]


def fields_of(section: Section) -> Iterator[tuple[Field, Field | None]]:
    """Each field with the table it is in (None at the top of the entry)."""
    for declared in section:
        yield declared, None
        for inner in declared.fields:
            yield inner, declared


def _field_ids() -> list[tuple[Section, Field, Field | None]]:
    return [(s, f, t) for s in SECTIONS for f, t in fields_of(s) if f.checked]


CHECKED = _field_ids()
IDS = [f"{s.name}.{t.name + '.' if t else ''}{f.name}" for s, f, t in CHECKED]


def _with_value(section: Section, declared: Field, table: Field | None, value: Any) -> Case:
    if table is None:
        entry = valid_entry(section, declared)
        entry[declared.name] = value
    else:
        entry = valid_entry(section, table)
        needs = dict(declared.required_when)
        entry[table.name] = {**entry[table.name], **needs, declared.name: value}
    return Case(section, entry, declared.name)


def _without(section: Section, declared: Field, table: Field | None) -> Case:
    if table is None:
        entry = valid_entry(section, declared)
        del entry[declared.name]
    else:
        entry = valid_entry(section, table)
        needs = dict(declared.required_when)
        inner = {**entry[table.name], **needs}
        entry[table.name] = {k: v for k, v in inner.items() if k != declared.name}
    return Case(section, entry, declared.name)


def test_every_field_declares_a_valid_example_and_a_meaning() -> None:
    for section in SECTIONS:
        for declared, _table in fields_of(section):
            if declared.checked:
                assert declared.doc and declared.example is not None, declared.name


def test_a_valid_value_of_every_field_is_read_and_accepted(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    cases = [_with_value(s, f, t, _valid(f)) for s, f, t in CHECKED]
    for case, plugin in zip(cases, load(tmp_path, cases), strict=True):
        where = f"{case.section.name}.{case.field}"
        assert plugin.skipped == (), where
        assert plugin.findings == (), (where, [f.message for f in plugin.findings])
        assert len(entries(plugin, case.section)) == 1, where
        assert schema_errors(validator, case.section, case.entry) == [], where


def test_a_wrong_value_of_every_field_is_refused_as_declared(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    cases = [_with_value(s, f, t, _wrong(f)) for s, f, t in CHECKED]
    for (section, declared, table), case, plugin in zip(
        CHECKED, cases, load(tmp_path, cases), strict=True
    ):
        where = f"{section.name}.{declared.name}"
        assert schema_errors(validator, section, case.entry) != [], where
        named = f"{table.name}." if table else ""
        messages = [f for f in plugin.findings if f"{named}{declared.name}" in f.message]
        assert messages, (where, [f.message for f in plugin.findings])
        assert all(f.location is not None and f.location.line == ENTRY_LINE for f in messages)
        if declared.mistake is Mistake.SKIPS_ENTRY and (
            table is None or table.mistake is Mistake.SKIPS_ENTRY
        ):
            assert len(plugin.skipped) == 1 and entries(plugin, section) == (), where
            expected = Severity.ERROR if section.fails_closed else Severity.WARNING
            assert {f.severity for f in messages} == {expected}, where
        else:
            assert declared.mistake is Mistake.IGNORED, where
            assert plugin.skipped == () and len(entries(plugin, section)) == 1, where
            assert {f.severity for f in messages} == {Severity.WARNING}, where


def test_a_missing_required_field_is_refused_by_both(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    required = [(s, f, t) for s, f, t in CHECKED if f.required or f.required_when]
    cases = [_without(s, f, t) for s, f, t in required]
    for (section, declared, _table), case, plugin in zip(
        required, cases, load(tmp_path, cases), strict=True
    ):
        where = f"{section.name}.{declared.name}"
        assert schema_errors(validator, section, case.entry) != [], where
        assert len(plugin.skipped) == 1 and entries(plugin, section) == (), where
        assert declared.name in plugin.skipped[0].reason, where


def test_fields_not_checked_are_kept_as_given(tmp_path: Path) -> None:
    kept = [(s, f) for s in SECTIONS for f in s if not f.checked]
    assert kept, "the declarations name AI Studio fields toolpolicy keeps without checking"
    cases = [Case(s, {**valid_entry(s), f.name: _WRONG[f.type]}, f.name) for s, f in kept]
    for case, plugin in zip(cases, load(tmp_path, cases), strict=True):
        (entry,) = entries(plugin, case.section)
        assert entry.raw[case.field] == case.entry[case.field]


def test_an_unknown_field_is_treated_as_the_section_says(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    cases = [Case(s, {**valid_entry(s), UNKNOWN_FIELD: "x"}) for s in SECTIONS]
    for case, plugin in zip(cases, load(tmp_path, cases), strict=True):
        section = case.section
        refused = section.unknown_fields is UnknownFields.SKIP_ENTRY
        assert (schema_errors(validator, section, case.entry) != []) is refused, section.name
        assert (len(plugin.skipped) == 1) is refused, section.name
        if refused:
            assert UNKNOWN_FIELD in plugin.skipped[0].reason


def _template_blocks() -> dict[str, str]:
    """Each section's commented example entry in the template, uncommented once."""
    blocks: dict[str, str] = {}
    pattern = re.compile(
        r'^-- (CONFIG\["(\w+)"\]\[#CONFIG\["\2"\]\+1\] = \{$.*?^-- \})$', re.M | re.S
    )
    for match in pattern.finditer(reference_plugin()):
        blocks[match.group(2)] = re.sub(r"^-- ?", "", match.group(1), flags=re.M)
    return blocks


def _plain(value: Any) -> Any:
    if isinstance(value, LuaTable):
        if value.is_sequence() and value.entries:
            return [_plain(v) for v in value.sequence()]
        return {k: _plain(v) for k, v in value.entries.items()}
    return value


@pytest.mark.parametrize("section", SECTIONS, ids=[s.name for s in SECTIONS])
def test_the_template_example_of_every_section_is_read_and_accepted(
    tmp_path: Path, validator: Draft202012Validator, section: Section
) -> None:
    """Its placeholders filled in (a real ENC:v1: value, a well-formed pin), the example entry
    loads without a finding and validates against the schema, and names only declared fields."""
    block = _template_blocks()[section.name]
    block = block.replace('"ENC:v1:..."', _lua(encrypt("s3cret", SECRET)))
    block = block.replace('"sha256:..."', _lua("sha256:" + "0" * 64))
    text = GLOBALS + f'CONFIG["{section.name}"] = {{}}\n' + block + "\n"
    folder = tmp_path / "template"
    folder.mkdir()
    (folder / "plugin.lua").write_text(text, encoding="utf-8")
    (plugin,) = load_plugins([(folder / "plugin.lua", PluginOrigin.ORGANIZATION)])
    assert isinstance(plugin, ConfigurationPlugin)
    assert plugin.findings == () and plugin.skipped == ()
    assert len(entries(plugin, section)) == 1
    (result,) = run_plugin_sources(
        [PluginSource(text, str(folder / "plugin.lua"), folder)], SandboxLimits()
    )
    assert not isinstance(result, Exception)
    config = _plain(result.globals["CONFIG"])
    (entry,) = config[section.name]
    assert set(entry) <= section.field_names
    assert schema_errors(validator, section, entry) == []


ROOT = Path(__file__).parents[2]


def test_the_sites_plugin_lua_reference_is_the_declarations() -> None:
    """`python -m policy.config.reference` writes it whole when a declaration changes."""
    page = (ROOT / PAGE).read_text(encoding="utf-8")
    assert page == reference_page(), "the page is stale: python -m policy.config.reference"
    for key in TOOLPOLICY_KEYS:
        assert f"| `{key.name}` |" in page
    for section in SECTIONS:
        assert f'## `CONFIG["{section.name}"]`' in page
        assert section_table(section) in page
    for declared in DECLARED_GLOBALS:
        required = "yes" if declared.required else "no"
        assert f"| `{declared.name}` | {declared.wanted} | {required} |" in page


def test_the_reference_tables_live_only_on_their_page() -> None:
    """The guide's pages link to the reference; a copy of a table elsewhere would go stale."""
    tables = [settings_table(), *(section_table(section) for section in SECTIONS)]
    for text_file in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        if text_file == ROOT / PAGE:
            continue
        text = text_file.read_text(encoding="utf-8")
        assert "<!-- reference:" not in text, text_file
        for table in tables:
            first_row = next(line for line in table.splitlines() if line.startswith("| `"))
            assert first_row not in text, (text_file, first_row)


def test_the_reference_command_writes_a_stale_page_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / PAGE).parent.mkdir(parents=True)
    (tmp_path / PAGE).write_text(reference_page().replace("RequirePins", "RequirePinz"))
    elsewhere = tmp_path / "plugin-lua.md"
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    assert (tmp_path / PAGE).read_text(encoding="utf-8") == reference_page()
    assert main([str(elsewhere)]) == 0
    assert elsewhere.read_text(encoding="utf-8") == reference_page()
    assert capsys.readouterr().err == ""


def test_the_reference_command_refuses_a_file_that_is_not_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command once wrote tables into README.md: given it now, it must not replace it."""
    readme = tmp_path / "README.md"
    readme.write_text("# A guide\n", encoding="utf-8")
    page = tmp_path / "plugin-lua.md"
    assert main([str(page), str(readme)]) == 2
    assert readme.read_text(encoding="utf-8") == "# A guide\n"
    assert not page.exists(), "nothing is written when one target is refused"
    error = capsys.readouterr().err
    assert f"Error: {readme}: not the plugin.lua reference page" in error
    assert f"live only in {PAGE}" in error
    assert main([str(tmp_path / "no-such-folder" / "plugin-lua.md")]) == 2
    assert "run it from the repository root" in capsys.readouterr().err


_WRONG_SETTING: dict[SettingKind, str] = {
    SettingKind.BOOL: '"maybe"',
    SettingKind.ENUM: '"NOT_ONE_OF_THEM"',
    SettingKind.LEVEL: '"NOT_ONE_OF_THEM"',
    SettingKind.STRING: "12",
    SettingKind.STRING_SET: '"a text, not a list"',
    SettingKind.STRING_MAP: '{ ["web_search.defaultLanguage"] = { "a table" } }',
    SettingKind.LEVEL_MAP: '{ ["web_search"] = "NOT_ONE_OF_THEM" }',
    SettingKind.ENUM_MAP: '{ ["OPEN_AI"] = "NOT_ONE_OF_THEM" }',
    SettingKind.COMPONENT_IDS: '{ ["NOT_A_COMPONENT"] = { "web_search" } }',
    SettingKind.CHOICE_LISTS: '{ ["web_search"] = { "NOT_ONE_OF_THEM" } }',
    SettingKind.GROUP_IDS: '{ ["engineering"] = { "not-a-configuration-id" } }',
    SettingKind.CALL_LIMITS: '{ ["web_search"] = "five an hour" }',
}


def _settings_plugins(tmp_path: Path, values: list[tuple[SettingKey, str]]) -> list[Any]:
    files = []
    for index, (key, value) in enumerate(values):
        folder = tmp_path / f"setting{index}"
        folder.mkdir()
        text = GLOBALS + f'CONFIG["SETTINGS"]["{key.name}"] = {value}\n'  # line ENTRY_LINE
        (folder / "plugin.lua").write_text(text, encoding="utf-8")
        files.append((folder / "plugin.lua", PluginOrigin.ORGANIZATION))
    return load_plugins(files)


def _settings_json(tmp_path: Path, key: SettingKey, value: str) -> dict[str, Any]:
    """What `CONFIG["SETTINGS"]` holds after Lua ran, as JSON-like data."""
    folder = tmp_path / "json"
    folder.mkdir(exist_ok=True)
    text = GLOBALS + f'CONFIG["SETTINGS"]["{key.name}"] = {value}\n'
    (result,) = run_plugin_sources(
        [PluginSource(text, str(folder / "plugin.lua"), folder)], SandboxLimits()
    )
    assert not isinstance(result, Exception)
    settings: dict[str, Any] = _plain(result.globals["CONFIG"])["SETTINGS"]
    return settings


def test_every_setting_key_example_is_read_and_accepted(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    keys = list(TOOLPOLICY_KEYS)
    outcomes = _settings_plugins(tmp_path, [(key, key.example) for key in keys])
    for key, plugin in zip(keys, outcomes, strict=True):
        assert isinstance(plugin, ConfigurationPlugin), key.name
        assert key.name in plugin.settings and plugin.findings == (), key.name
        settings = _settings_json(tmp_path, key, key.example)
        assert list(validator.iter_errors({"SETTINGS": settings})) == [], key.name


def test_a_wrong_value_of_every_setting_key_is_refused_as_declared(
    tmp_path: Path, validator: Draft202012Validator
) -> None:
    keys = list(TOOLPOLICY_KEYS)
    outcomes = _settings_plugins(tmp_path, [(key, _WRONG_SETTING[key.kind]) for key in keys])
    for key, outcome in zip(keys, outcomes, strict=True):
        settings = _settings_json(tmp_path, key, _WRONG_SETTING[key.kind])
        assert list(validator.iter_errors({"SETTINGS": settings})) != [], key.name
        if key.rejects_plugin:
            assert isinstance(outcome, PluginLoadError), key.name
            findings = outcome.findings
        else:
            assert isinstance(outcome, ConfigurationPlugin), key.name
            findings = outcome.findings
            value = outcome.settings.get(key.name)
            if key.mistake_reads_as:  # read as the strictest, never the loosest default
                assert value is not None and value.value == key.mistake_reads_as, key.name
            elif key.kind is SettingKind.CHOICE_LISTS:  # the entry reads as every choice
                assert value is not None and value.value == {"web_search": key.choices}
            elif key.kind is SettingKind.CALL_LIMITS:  # the limit reads as no call at all
                assert value is not None and value.value == {"web_search": "0/hour"}
            else:
                assert value is None or not value.value, key.name  # skipped, or its entry is
        named = [f for f in findings if key.name in f.message]
        assert named and {f.severity for f in named} == {Severity.ERROR}, key.name
        assert all(f.location is not None and f.location.line == ENTRY_LINE for f in named)
