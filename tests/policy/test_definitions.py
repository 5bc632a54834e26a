"""Definition validation, visibility and definitions as data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from policy.definitions import (
    SettingField,
    SettingsSchema,
    ToolDefinition,
    ToolFunction,
    ToolVisibility,
    definition_source_from_file,
    definitions_from_data,
    is_valid_function_name,
    is_visible_in,
    load_definitions_file,
    validate_definition,
)
from policy.provenance import SourceLocation
from policy.vocabulary import Component, ConfidenceLevel, ToolActivation


def _definition(**changes: Any) -> ToolDefinition:
    base: dict[str, Any] = {
        "id": "demo",
        "implementation_key": "demo",
        "function": ToolFunction(name="demo"),
    }
    base.update(changes)
    return ToolDefinition(**base)


def _settings(**fields: SettingField) -> SettingsSchema:
    return SettingsSchema(properties=dict(fields))


def test_a_sound_definition_passes() -> None:
    assert validate_definition(_definition()) is None


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"schema_version": 2}, "unsupported schema version '2'"),
        ({"id": "  "}, "the definition ID is empty"),
        ({"implementation_key": ""}, "the implementation key is empty"),
        ({"function": ToolFunction(name="read page")}, "1-64 ASCII letters"),
        ({"function": ToolFunction(name="x", parameters=[1])}, "must be a JSON object"),
        (
            {"visible_in": ToolVisibility(allowed_components=("CHAT", "KITCHEN"))},
            "valid component lists (unknown: 'KITCHEN')",
        ),
        ({"settings_schema": SettingsSchema(type="array")}, "must have type 'object'"),
        (
            {"settings_schema": _settings(limit=SettingField(type="integer"))},
            "named string fields (limit)",
        ),
        ({"settings_schema": _settings(a=SettingField(group="  "))}, "blank group name: a"),
        (
            {
                "settings_schema": _settings(
                    a=SettingField(option_source="safe_search", enum=("x",))
                )
            },
            "both an option source and an enum list: a",
        ),
        (
            {"settings_schema": _settings(a=SettingField(option_source="colours"))},
            "unknown option source: a ('colours')",
        ),
        (
            {"settings_schema": SettingsSchema(properties={"a": SettingField()}, required=(" ",))},
            "required setting names cannot be empty",
        ),
        (
            {"settings_schema": SettingsSchema(properties={"a": SettingField()}, required=("b",))},
            "required settings are missing definitions: b",
        ),
    ],
)
def test_each_rule_names_its_field(changes: dict[str, Any], expected: str) -> None:
    issue = validate_definition(_definition(**changes))
    assert issue is not None
    assert expected in issue


def test_the_first_failing_rule_wins() -> None:
    issue = validate_definition(
        _definition(schema_version=3, id="", function=ToolFunction(name="bad name"))
    )
    assert issue is not None and issue.startswith("schema_version:")
    issue = validate_definition(
        _definition(
            function=ToolFunction(name="x", parameters="no"),
            settings_schema=SettingsSchema(type="list"),
        )
    )
    assert issue is not None and issue.startswith("function.parameters:")


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("read-web-page_2", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("", False),
        (" web_search", False),
        ("web search", False),
        ("web,search", False),
        ("größe", False),
        ("straße", False),
    ],
)
def test_function_names_follow_the_providers_rule(name: str, valid: bool) -> None:
    assert is_valid_function_name(name) is valid


def test_settings_type_and_field_type_compare_case_insensitively() -> None:
    definition = _definition(
        settings_schema=SettingsSchema(type="OBJECT", properties={"a": SettingField(type="String")})
    )
    assert validate_definition(definition) is None


def test_an_empty_group_is_ungrouped_and_fine() -> None:
    assert validate_definition(_definition(settings_schema=_settings(a=SettingField()))) is None


# --- visibility ---------------------------------------------------------------------------------


def test_without_lists_chat_uses_the_chat_flag_and_everything_else_the_assistants_flag() -> None:
    chat_only = ToolVisibility(chat=True, assistants=False)
    assert is_visible_in(chat_only, Component.CHAT)
    assert not is_visible_in(chat_only, Component.REWRITE_ASSISTANT)
    assert not is_visible_in(chat_only, Component.APP_SETTINGS)
    assistants_only = ToolVisibility(chat=False, assistants=True)
    assert not is_visible_in(assistants_only, Component.CHAT)
    assert is_visible_in(assistants_only, Component.NONE)


def test_lists_replace_the_flags_and_the_deny_list_wins() -> None:
    allow = ToolVisibility(chat=False, assistants=False, allowed_components=("CHAT",))
    assert is_visible_in(allow, Component.CHAT)
    assert not is_visible_in(allow, Component.CODING_ASSISTANT)
    deny_only = ToolVisibility(chat=False, assistants=False, denied_components=("CHAT",))
    assert not is_visible_in(deny_only, Component.CHAT)
    assert is_visible_in(deny_only, Component.CODING_ASSISTANT)
    both = ToolVisibility(allowed_components=("CHAT",), denied_components=("CHAT",))
    assert not is_visible_in(both, Component.CHAT)


# --- definitions as data ------------------------------------------------------------------------

_GOOD = {
    "id": "ticket_search",
    "implementation_key": "ticket_search",
    "minimum_provider_confidence": "medium",
    "activation": "SELECTION",
    "visible_in": {"chat": True, "assistants": False},
    "settings_schema": {
        "properties": {
            "baseUrl": {"title": "Address"},
            "priority": {"enum": ["low", "high"], "default": "low"},
            "token": {"secret": True},
        },
        "required": ["baseUrl"],
    },
    "function": {
        "name": "ticket_search",
        "description_for_llm": "Searches tickets.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def test_a_json_file_becomes_definitions(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"definitions": [_GOOD]}), "utf-8")
    definitions, findings = load_definitions_file(path)
    assert findings == []
    [definition] = definitions
    assert definition.id == "ticket_search"
    assert definition.minimum_provider_confidence is ConfidenceLevel.MEDIUM
    assert definition.activation is ToolActivation.SELECTION
    assert definition.settings_schema.properties["priority"].enum_values == ("low", "high")
    assert definition.settings_schema.properties["token"].secret


def test_a_yaml_file_reports_the_line_of_a_bad_field_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(
        "- id: good\n"
        "  implementation_key: good\n"
        "  function:\n"
        "    name: good\n"
        "- id: wrong_type\n"
        "  implementation_key: wrong_type\n"
        "  function:\n"
        "    name: wrong_type\n"
        "    strict: perhaps\n"
        "- id: bad_name\n"
        "  implementation_key: bad_name\n"
        "  function:\n"
        "    name: bad name\n",
        "utf-8",
    )
    definitions, findings = load_definitions_file(path)
    assert [d.id for d in definitions] == ["good"]
    assert len(findings) == 2
    schema_finding, rule_finding = findings
    assert "Skipping tool definition 'wrong_type'" in schema_finding.message
    assert "function.strict" in schema_finding.message
    assert schema_finding.location is not None and schema_finding.location.line == 9
    assert "function.name" in rule_finding.message
    assert rule_finding.location is not None and rule_finding.location.line == 10


def test_the_json_schema_runs_before_the_rules() -> None:
    data = [{**_GOOD, "schema_version": "one", "id": ""}]
    definitions, findings = definitions_from_data(data, "inline")
    assert definitions == []
    assert "schema_version" in findings[0].message
    assert "is not of type 'integer'" in findings[0].message


def test_unknown_keys_are_refused_by_the_schema() -> None:
    data = [{**_GOOD, "minimum_confidence": "HIGH"}]
    _, findings = definitions_from_data(data, "inline")
    assert "minimum_confidence" in findings[0].message


def test_an_unknown_level_name_is_refused() -> None:
    data = [{**_GOOD, "minimum_provider_confidence": "UNKNOWN"}]
    definitions, findings = definitions_from_data(data, "inline")
    assert definitions == []
    assert "minimum_provider_confidence" in findings[0].message


def test_the_rules_run_on_data_too() -> None:
    bad = dict(_GOOD)
    bad["settings_schema"] = {"properties": {"a": {"option_source": "colours"}}}
    definitions, findings = definitions_from_data([bad], "tools.yaml")
    assert definitions == []
    assert findings[0].message == (
        "Skipping tool definition 'ticket_search' from source 'tools.yaml': "
        "settings_schema.properties: these settings reference an unknown option source: "
        "a ('colours')"
    )


def test_a_file_which_is_no_list_says_what_it_expects(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text('{"id": "x"}', "utf-8")
    definitions, findings = load_definitions_file(path)
    assert definitions == []
    assert "expected a list of tool definitions" in findings[0].message


def test_broken_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text('[\n  {"id": "x",\n  }\n]', "utf-8")
    _, findings = load_definitions_file(path)
    assert findings[0].code == "invalid-definitions-file"
    assert f"{path}:3: not valid JSON" in findings[0].message


def test_broken_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text("- id: x\n  function: [unclosed\n", "utf-8")
    _, findings = load_definitions_file(path)
    assert "not valid YAML" in findings[0].message
    assert findings[0].location is not None and findings[0].location.line > 0


@pytest.mark.parametrize("name", ["tools.json", "tools.yaml"])
def test_a_file_which_is_not_utf8_says_so_rather_than_blaming_its_syntax(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes(b"[\n  \xff\xfe]\n")
    definitions, findings = load_definitions_file(path)
    assert definitions == []
    assert findings[0].code == "unreadable-definitions-file"
    assert findings[0].message.startswith(f"{path}: cannot read the file: not UTF-8 text")
    assert "YAML" not in findings[0].message


@pytest.mark.parametrize(
    "text", ["- &tool\n  id: x\n  itself: *tool\n", "&all [*all]\n"], ids=["entry", "list"]
)
def test_a_yaml_alias_inside_the_node_it_names_is_a_finding(tmp_path: Path, text: str) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(text, "utf-8")
    definitions, findings = load_definitions_file(path)
    assert definitions == []
    assert findings[0].code == "invalid-definitions-file"
    assert findings[0].message.startswith(f"{path}: ")
    assert "refers to itself" in findings[0].message


@pytest.mark.parametrize("depth", [600, 5000])
def test_parameters_nested_absurdly_deep_are_a_finding(tmp_path: Path, depth: int) -> None:
    parameters = '{"a":' * depth + "1" + "}" * depth
    path = tmp_path / "tools.json"
    path.write_text(
        f'[{{"id": "x", "implementation_key": "k", "function": {{"name": "f", '
        f'"parameters": {parameters}}}}}]',
        "utf-8",
    )
    definitions, findings = load_definitions_file(path)
    assert definitions == []
    assert findings[0].code == "invalid-definitions-file"
    assert findings[0].message.startswith(f"{path}: ")
    assert "nested more than 100 levels deep" in findings[0].message


def test_a_yaml_file_nested_past_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """4 KB of flow nesting cost ruamel.yaml's scanner 4 s of CPU before the depth check on the
    data could run; the text is checked first."""
    path = tmp_path / "tools.yaml"
    path.write_text(
        "- id: x\n  implementation_key: k\n  function:\n    name: f\n    parameters: "
        + "[" * 4096
        + "\n",
        "utf-8",
    )
    definitions, findings = load_definitions_file(path)
    assert definitions == []
    assert [(f.code, f.message, f.location) for f in findings] == [
        (
            "invalid-definitions-file",
            f"{path}:5: YAML nested too deeply: more than 100 levels (brackets and indentation "
            "levels count); no tool definition needs that",
            SourceLocation(str(path), 5),
        )
    ]


@pytest.mark.parametrize("name", ["tools.json", "tools.yaml"])
def test_a_file_saved_with_a_byte_order_mark_loads(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([_GOOD]).encode("utf-8"))
    definitions, findings = load_definitions_file(path)
    assert findings == []
    assert [d.id for d in definitions] == ["ticket_search"]


def test_a_missing_file_is_a_finding(tmp_path: Path) -> None:
    _, findings = load_definitions_file(tmp_path / "absent.yaml")
    assert findings[0].code == "unreadable-definitions-file"
    assert "absent.yaml" in findings[0].message


def test_a_file_becomes_a_registry_source_named_after_it(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([_GOOD]), "utf-8")
    source, findings = definition_source_from_file(path)
    assert findings == [] and source.name == str(path)
    assert [d.id for d in source.definitions] == ["ticket_search"]
