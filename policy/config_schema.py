"""`policy schema`: a JSON Schema of the CONFIG table toolpolicy understands.

Written from the same tables the loader uses (`policy.settings_keys`, the tool definitions), so
editors and CI check a plugin's CONFIG — converted to JSON: Lua sequences as arrays, other
tables as objects — against exactly what toolpolicy accepts. Names that AI Studio reads
case-insensitively are offered in their canonical spelling (`enum`) and accepted in any case
(`pattern`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from policy.settings_keys import (
    LEVEL_NAMES,
    OVERRIDE_SUFFIX,
    SETTING_KEYS,
    SettingKey,
    SettingKind,
)
from policy.tools import Tool
from policy.vocabulary import PROVIDER_KIND_NAMES, option_values

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_ID = "https://toolpolicy.invalid/schema/config.json"

_GUID_PATTERN = "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
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
        "$schema": SCHEMA_DIALECT,
        "$id": SCHEMA_ID,
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
            "LLM_PROVIDERS": {"type": "array", "items": _provider_schema()},
            "DATA_SOURCES": {"type": "array", "items": _data_source_schema()},
            "CHAT_TEMPLATES": {"type": "array", "items": _chat_template_schema()},
            "MCP_SERVERS": {"type": "array", "items": _mcp_server_schema()},
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
        return {"type": "string", "anyOf": [{"pattern": _GUID_PATTERN}, {"const": ""}]}
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
            choices = field_choices(field.enum_values, field.option_source)
            if choices:
                field_schema["enum"] = ["", *choices]
            properties[f"{definition.id}.{name}"] = field_schema
    return {
        "type": "object",
        "propertyNames": {"pattern": "^[^.\\s]+\\..+$"},
        "properties": properties,
        "additionalProperties": {"type": "string"},
    }


def field_choices(enum_values: Sequence[str], option_source: str) -> tuple[str, ...]:
    """The values a setting field offers: its option source's, else its enum list."""
    if option_source.strip():
        return tuple(value for value, _label in option_values(option_source))
    return tuple(enum_values)


def _provider_schema() -> dict[str, Any]:
    kinds = list(PROVIDER_KIND_NAMES)
    return {
        "type": "object",
        "required": ["Id", "InstanceName", "UsedLLMProvider", "Host", "Hostname", "Model"],
        "properties": {
            "Id": {"type": "string", "pattern": _GUID_PATTERN},
            "InstanceName": {"type": "string"},
            "UsedLLMProvider": _any_case(kinds),
            "Host": _any_case(["NONE", "LM_STUDIO", "LLAMA_CPP", "WHISPER_CPP", "OLLAMA", "VLLM"]),
            "Hostname": {"type": "string"},
            "Model": {
                "type": "object",
                "required": ["Id", "DisplayName"],
                "properties": {"Id": {"type": "string"}, "DisplayName": {"type": "string"}},
            },
            "AdditionalJsonApiParameters": {"type": "string"},
            "AllowUserProvidedAPIKey": {"type": "boolean"},
            "APIKey": {
                "type": "string",
                "pattern": "^ENC:v1:",
                "description": "Only encrypted values are accepted (policy encrypt).",
            },
            "CapabilityOverrides": {
                "type": "object",
                "description": "Capability name → true (add) or false (remove), e.g. FUNCTION_CALLING.",
                "additionalProperties": {"type": "boolean"},
            },
        },
    }


def _data_source_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": [
            "Id",
            "Name",
            "Type",
            "Hostname",
            "Port",
            "AuthMethod",
            "SecurityPolicy",
            "SelectedRetrievalId",
            "MaxMatches",
        ],
        "properties": {
            "Id": {"type": "string", "pattern": _GUID_PATTERN},
            "Name": {"type": "string", "minLength": 1},
            "Type": {"const": "ERI_V1"},
            "Hostname": {"type": "string", "minLength": 1},
            "Port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "AuthMethod": _any_case(["NONE", "KERBEROS", "USERNAME_PASSWORD", "TOKEN"]),
            "SecurityPolicy": _any_case(["ALLOW_ANY", "SELF_HOSTED"]),
            "SelectedRetrievalId": {"type": "string", "minLength": 1},
            "MaxMatches": {"type": "integer", "minimum": 1, "maximum": 65535},
            "UsernamePasswordMode": _any_case(
                ["SHARED_USERNAME_AND_PASSWORD", "OS_USERNAME_SHARED_PASSWORD"]
            ),
            "Username": {"type": "string"},
            "Password": {"type": "string", "pattern": "^ENC:v1:"},
            "Token": {"type": "string", "pattern": "^ENC:v1:"},
        },
    }


def _chat_template_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["Id", "Name", "SystemPrompt"],
        "properties": {
            "Id": {"type": "string", "pattern": _GUID_PATTERN},
            "Name": {"type": "string"},
            "SystemPrompt": {"type": "string"},
            "PredefinedUserPrompt": {"type": "string"},
            "AllowProfileUsage": {"type": "boolean"},
            "ToolIds": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Absent: the chat's default tools. Empty: no tools.",
            },
            "DataSourceOptions": {
                "type": "object",
                "properties": {
                    "DisableDataSources": {"type": "boolean"},
                    "AutomaticDataSourceSelection": {"type": "boolean"},
                    "AutomaticValidation": {"type": "boolean"},
                    "PreselectedDataSourceIds": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    }


def _mcp_server_schema() -> dict[str, Any]:
    from policy.mcp import SERVER_NAME_PATTERN  # the one owner of the rule; loaded only here

    texts = {"type": "array", "items": {"type": "string"}}
    table = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "type": "object",
        "required": ["Id", "Name", "Transport"],
        "properties": {
            "Id": {"type": "string", "pattern": _GUID_PATTERN},
            "Name": {
                "type": "string",
                "pattern": f"^{SERVER_NAME_PATTERN.pattern}$",
                "description": (
                    "The prefix of its tool ids, <Name>__<tool name>: lower-case letters and "
                    'digits, words joined by single underscores (no "__", no "_" at either end).'
                ),
            },
            "Transport": {"enum": ["STDIO", "STREAMABLE_HTTP"]},
            "Command": {"type": "string", "description": "STDIO: the program to start."},
            "Args": texts,
            "Env": {**table, "description": "Secret-looking names need ENC:v1: values."},
            "Url": {"type": "string", "description": "STREAMABLE_HTTP: the endpoint."},
            "Headers": {**table, "description": "Secret-looking names need ENC:v1: values."},
            "MinimumProviderConfidence": {"enum": list(LEVEL_NAMES)},
            "AllowedTools": {**texts, "description": "Globs on MCP tool names; empty: all."},
            "DeniedTools": {**texts, "description": "Globs on MCP tool names; wins."},
            "ReadOnlyOnly": {"type": "boolean"},
            "RequirePins": {"type": "boolean"},
            "Pins": {
                "type": "object",
                "additionalProperties": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
            },
            "SensitiveArguments": texts,
            "TimeoutSeconds": {"type": "number", "exclusiveMinimum": 0, "maximum": 600},
        },
    }
