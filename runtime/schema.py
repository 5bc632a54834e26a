"""Tool parameter schemas: one provider-neutral JSON Schema per tool, translated per wire API.

A definition's schema is written the ordinary way (an optional argument is absent from
`required`). OpenAI's strict mode wants every property required and optional ones nullable, so
`to_openai_strict` converts on the way out, and only where strict mode is kept.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from policy import ToolDefinition, ToolFunction

_JsonSchema = dict[str, Any]


class ParameterSchemaBuilder:
    """Builds `{"type":"object","properties":…,"required":…,"additionalProperties":false}`.

    Properties keep the order they were added in; so does `required`. Each method returns the
    builder so a schema reads as one expression.
    """

    def __init__(self) -> None:
        self._properties: dict[str, _JsonSchema] = {}
        self._required: list[str] = []

    def required_string(self, name: str, description: str) -> ParameterSchemaBuilder:
        return self._add(name, {"type": "string", "description": description}, required=True)

    def optional_string(self, name: str, description: str) -> ParameterSchemaBuilder:
        return self._add(name, {"type": "string", "description": description}, required=False)

    def required_integer(self, name: str, description: str) -> ParameterSchemaBuilder:
        return self._add(name, {"type": "integer", "description": description}, required=True)

    def optional_integer(self, name: str, description: str) -> ParameterSchemaBuilder:
        return self._add(name, {"type": "integer", "description": description}, required=False)

    def optional_boolean(self, name: str, description: str) -> ParameterSchemaBuilder:
        return self._add(name, {"type": "boolean", "description": description}, required=False)

    def required_enum(
        self, name: str, description: str, values: Iterable[str]
    ) -> ParameterSchemaBuilder:
        return self._add(name, _string_with_choices(description, values), required=True)

    def optional_enum(
        self, name: str, description: str, values: Iterable[str]
    ) -> ParameterSchemaBuilder:
        return self._add(name, _string_with_choices(description, values), required=False)

    def optional_string_array(
        self, name: str, description: str, values: Iterable[str] = ()
    ) -> ParameterSchemaBuilder:
        """A list of strings, never required; with values, every entry must be one of them."""
        items: _JsonSchema = {"type": "string"}
        choices = list(values)
        if choices:
            items["enum"] = choices
        return self._add(
            name, {"type": "array", "description": description, "items": items}, required=False
        )

    def build(self) -> _JsonSchema:
        return {
            "type": "object",
            "properties": copy.deepcopy(self._properties),
            "required": list(self._required),
            "additionalProperties": False,
        }

    def _add(self, name: str, schema: _JsonSchema, *, required: bool) -> ParameterSchemaBuilder:
        if name in self._properties:
            raise ValueError(f"Parameter '{name}' was added twice; each name may appear once.")
        self._properties[name] = schema
        if required:
            self._required.append(name)
        return self


def _string_with_choices(description: str, values: Iterable[str]) -> _JsonSchema:
    """An empty choice list adds no enum: an empty enum would allow nothing at all."""
    schema: _JsonSchema = {"type": "string", "description": description}
    choices = list(values)
    if choices:
        schema["enum"] = choices
    return schema


def to_openai_strict(schema: Any) -> Any:
    """The schema as OpenAI's strict mode wants it: every property required, optional ones nullable.

    Only the top level is converted. A schema that is no object, has no properties object or
    already requires every property is returned as the very same object.
    """
    if not isinstance(schema, Mapping):
        return schema
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return schema
    raw_required = schema.get("required")
    required = (
        {n for n in raw_required if isinstance(n, str)}
        if isinstance(raw_required, list | tuple)
        else set()
    )
    if all(name in required for name in properties):
        return schema

    converted = copy.deepcopy(dict(schema))
    new_properties: dict[str, Any] = {}
    for name, prop in converted["properties"].items():
        if name not in required and isinstance(prop, dict):
            prop = _nullable(prop)
        new_properties[name] = prop
    converted["properties"] = new_properties
    converted["required"] = list(new_properties)
    converted["additionalProperties"] = False
    return converted


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    kind = prop.get("type")
    if isinstance(kind, str) and kind != "null":
        prop["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        prop["type"] = [*kind, "null"]
    choices = prop.get("enum")
    if isinstance(choices, list) and None not in choices:
        prop["enum"] = [None, *choices]
    return prop


def _function_of(tool: ToolDefinition | ToolFunction) -> ToolFunction:
    return tool.function if isinstance(tool, ToolDefinition) else tool


def chat_completions_tool(
    tool: ToolDefinition | ToolFunction, host_enforces_strict: bool
) -> dict[str, Any]:
    """Chat Completions shape: strict only where the definition and the host both keep it."""
    function = _function_of(tool)
    strict = function.strict and host_enforces_strict
    parameters = to_openai_strict(function.parameters) if strict else function.parameters
    return {
        "type": "function",
        "function": {
            "name": function.name,
            "description": function.description_for_llm,
            "parameters": parameters,
            "strict": strict,
        },
    }


def responses_tool(tool: ToolDefinition | ToolFunction) -> dict[str, Any]:
    """Responses shape (flat): OpenAI binds its output, so the definition alone decides strict."""
    function = _function_of(tool)
    parameters = to_openai_strict(function.parameters) if function.strict else function.parameters
    return {
        "type": "function",
        "name": function.name,
        "description": function.description_for_llm,
        "parameters": parameters,
        "strict": function.strict,
    }


def anthropic_tool(tool: ToolDefinition | ToolFunction) -> dict[str, Any]:
    """Anthropic shape: the schema as written; Anthropic binds optional arguments without help."""
    function = _function_of(tool)
    return {
        "name": function.name,
        "description": function.description_for_llm,
        "input_schema": function.parameters,
        "strict": function.strict,
    }
