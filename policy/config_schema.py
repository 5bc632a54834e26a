"""`policy schema`: a JSON Schema of the CONFIG table toolpolicy understands.

Written from the same declarations the loader reads (`policy.config.settings`, the sections of
`policy.config`, the tool definitions), so
editors and CI check a plugin's CONFIG — converted to JSON: Lua sequences as arrays, other
tables as objects — against exactly what toolpolicy accepts. Names that AI Studio reads
case-insensitively are offered in their canonical spelling (`enum`) and accepted in any case
(`pattern`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from policy.config.fields import Field, FieldType, Section, UnknownFields
from policy.config.guid import GUID_SCHEMA_PATTERN
from policy.config.sections import SECTIONS
from policy.config.settings import (
    OVERRIDE_SUFFIX,
    SETTING_KEYS,
    SettingKey,
    SettingKind,
)
from policy.quotas import CALL_LIMIT_PATTERN
from policy.tools import Tool
from policy.vocabulary import option_values

_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCHEMA_ID = "https://toolpolicy.invalid/schema/config.json"

_BOOL_TEXT_PATTERN = "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"


def configuration_schema(tools: Sequence[Tool] | None = None) -> dict[str, Any]:
    """The schema of `CONFIG`; `tools` (default: the built-in ones) describe the tool-setting keys."""
    chosen = tuple(tools) if tools is not None else _builtin_tools()
    settings_properties: dict[str, Any] = {}
    for key in SETTING_KEYS.values():
        settings_properties[key.name] = _setting_schema(key, chosen)
        if key.honors_user_override:
            settings_properties[key.name + OVERRIDE_SUFFIX] = {
                "description": f"true makes {key.name} an editable default the user may change.",
                "anyOf": [{"type": "boolean"}, {"type": "string", "pattern": _BOOL_TEXT_PATTERN}],
            }
    return {
        "$schema": _SCHEMA_DIALECT,
        "$id": _SCHEMA_ID,
        "title": "CONFIG of a toolpolicy / AI Studio configuration plugin",
        "description": "Keys not listed are kept and reported by `policy check` as unknown.",
        "type": "object",
        "required": ["SETTINGS"],
        "properties": {
            "SETTINGS": {
                "type": "object",
                "description": 'CONFIG["SETTINGS"]: "<DataClass>.<Property>" keys (case-sensitive).',
                "properties": settings_properties,
            },
            **{
                section.name: {"type": "array", "items": section_schema(section)}
                for section in SECTIONS
            },
        },
    }


def _builtin_tools() -> tuple[Tool, ...]:
    from policy.builtin import builtin_tools

    return tuple(builtin_tools())


def _any_case(choices: Iterable[str]) -> dict[str, Any]:
    """Canonical names for completion, any spelling for validation."""
    names = list(choices)
    pattern = "^(" + "|".join(_case_insensitive(name) for name in names) + ")$"
    return {"anyOf": [{"enum": names}, {"type": "string", "pattern": pattern}]}


def _case_insensitive(name: str) -> str:
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else _escape(c) for c in name)


def _escape(character: str) -> str:
    return "\\" + character if character in ".^$*+?()[]{}|\\" else character


def _setting_schema(key: SettingKey, tools: Sequence[Tool]) -> dict[str, Any]:
    schema = _kind_schema(key, tools)
    schema["description"] = key.doc
    if key.default is not None and not isinstance(key.default, tuple):
        schema["default"] = key.default
    schema["x-allowUserOverride"] = key.honors_user_override
    if key.adds_up:
        schema["x-addsUp"] = True
    return schema


def _kind_schema(key: SettingKey, tools: Sequence[Tool]) -> dict[str, Any]:
    kind = key.kind
    if kind is SettingKind.BOOL:
        return {"anyOf": [{"type": "boolean"}, {"type": "string", "pattern": _BOOL_TEXT_PATTERN}]}
    if kind in (SettingKind.ENUM, SettingKind.LEVEL):
        return _any_case(key.choices) if key.choices else {"type": "string"}
    if kind is SettingKind.STRING:
        return {"type": "string"}
    if kind is SettingKind.INT:
        return {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^-?[0-9]+$"}]}
    if kind is SettingKind.GUID:
        return {"type": "string", "anyOf": [{"pattern": GUID_SCHEMA_PATTERN}, {"const": ""}]}
    if kind is SettingKind.STRING_SET:
        return {"type": "array", "items": {"type": "string"}}
    if kind is SettingKind.LEVEL_MAP:
        return {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": "\\S"},
            "additionalProperties": _any_case(key.choices),
        }
    if kind is SettingKind.ENUM_MAP:
        return {
            "type": "object",
            "propertyNames": _any_case(key.key_choices),
            "additionalProperties": _any_case(key.choices),
        }
    if kind is SettingKind.CHOICE_LISTS:
        return {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": "\\S"},
            "additionalProperties": {"type": "array", "items": _any_case(key.choices)},
        }
    if kind is SettingKind.GROUP_IDS:
        return {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": "\\S"},
            "additionalProperties": {
                "type": "array",
                "items": {"type": "string", "pattern": GUID_SCHEMA_PATTERN},
            },
        }
    if kind is SettingKind.CALL_LIMITS:
        return {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": "\\S"},
            "additionalProperties": {"type": "string", "pattern": CALL_LIMIT_PATTERN},
        }
    if kind is SettingKind.COMPONENT_IDS:
        return {
            "type": "object",
            "propertyNames": {"enum": list(key.key_choices)},
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        }
    if (
        kind is SettingKind.STRING_MAP
        and key.name.startswith("DataTools.")
        and key.name.endswith("ToolSettings")
    ):
        return _tool_settings_schema(tools)
    if kind is SettingKind.STRING_MAP:
        return {"type": "object", "additionalProperties": {"type": "string"}}
    return {}


def _tool_settings_schema(tools: Sequence[Tool]) -> dict[str, Any]:
    """ "<toolId>.<field>" → string, with the choices of each known field; other tools pass."""
    properties: dict[str, Any] = {}
    for tool in tools:
        definition = tool.definition
        for name, field in definition.settings_schema.properties.items():
            field_schema: dict[str, Any] = {"type": "string"}
            description = field.description or field.title
            if description:
                field_schema["description"] = description
            choices = _field_choices(field.enum_values, field.option_source)
            if choices:
                field_schema["enum"] = ["", *choices]
            properties[f"{definition.id}.{name}"] = field_schema
    return {
        "type": "object",
        "propertyNames": {"pattern": "^[^.\\s]+\\..+$"},
        "properties": properties,
        "additionalProperties": {"type": "string"},
    }


def _field_choices(enum_values: Sequence[str], option_source: str) -> tuple[str, ...]:
    """The values a setting field offers: its option source's, else its enum list."""
    if option_source.strip():
        return tuple(value for value, _label in option_values(option_source))
    return tuple(enum_values)


def section_schema(section: Section) -> dict[str, Any]:
    """The schema of one entry of a `CONFIG[...]` list, from its declaration."""
    schema = _table_schema(section.fields)
    if section.unknown_fields is UnknownFields.SKIP_ENTRY:
        schema["additionalProperties"] = False
    return schema


def _table_schema(fields: Sequence[Field]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    required = [declared.name for declared in fields if declared.required]
    if required:
        schema["required"] = required
    schema["properties"] = {declared.name: _field_schema(declared) for declared in fields}
    conditions = [_required_when(declared) for declared in fields if declared.required_when]
    if conditions:
        schema["allOf"] = conditions
    return schema


def _required_when(declared: Field) -> dict[str, Any]:
    names = [name for name, _value in declared.required_when]
    return {
        "if": {
            "required": names,
            "properties": {name: _any_case([value]) for name, value in declared.required_when},
        },
        "then": {"required": [declared.name]},
    }


def _field_schema(declared: Field) -> dict[str, Any]:
    schema = _field_type_schema(declared)
    if declared.doc:
        schema["description"] = declared.doc
    if declared.default is not None:
        schema["default"] = declared.default
    return schema


def _field_type_schema(declared: Field) -> dict[str, Any]:
    kind = declared.type
    if kind in (FieldType.GUID, FieldType.SECRET):
        return {"type": "string", "pattern": declared.pattern}
    if kind is FieldType.TEXT:
        return {"type": "string"}
    if kind is FieldType.NONBLANK_TEXT:
        return {"type": "string", "pattern": declared.pattern or "\\S"}
    if kind is FieldType.CHOICE:
        return _any_case(declared.choices)
    if kind is FieldType.WHOLE_NUMBER:
        return {"type": "integer", "minimum": declared.minimum, "maximum": declared.maximum}
    if kind is FieldType.NUMBER:
        return {
            "type": "number",
            "exclusiveMinimum": declared.minimum,
            "maximum": declared.maximum,
        }
    if kind is FieldType.BOOL:
        return {"type": "boolean"}
    if kind is FieldType.TEXT_LIST:
        return {"type": "array", "items": {"type": "string"}}
    if kind is FieldType.SECRET_TEXT_MAP:
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if kind is FieldType.PIN_MAP:
        return {
            "type": "object",
            "additionalProperties": {"type": "string", "pattern": declared.pattern},
        }
    if kind is FieldType.FLAG_MAP:
        return {"type": "object", "additionalProperties": {"type": "boolean"}}
    if kind is FieldType.CHOICE_LIST_MAP:
        return {
            "type": "object",
            "additionalProperties": {"type": "array", "items": _any_case(declared.choices)},
        }
    return _table_schema(declared.fields)
