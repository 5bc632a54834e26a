"""Parameter schemas as tools write them, and as each provider API receives them."""

from __future__ import annotations

import json

import pytest

from policy.definitions import ToolDefinition, ToolFunction
from runtime.schema import (
    ParameterSchemaBuilder,
    anthropic_tool,
    chat_completions_tool,
    responses_tool,
    to_openai_strict,
)


def _web_search_schema() -> dict[str, object]:
    return (
        ParameterSchemaBuilder()
        .required_string("query", "What to search for.")
        .optional_integer("page", "Result page, starting at 1.")
        .optional_enum("time_range", "How recent.", ["day", "month", "year"])
        .build()
    )


# -- builder ---------------------------------------------------------------------------------------


def test_the_builder_writes_an_object_which_refuses_extra_arguments() -> None:
    schema = _web_search_schema()
    assert schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to search for."},
            "page": {"type": "integer", "description": "Result page, starting at 1."},
            "time_range": {
                "type": "string",
                "description": "How recent.",
                "enum": ["day", "month", "year"],
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_required_names_keep_the_order_they_were_added_in() -> None:
    schema = (
        ParameterSchemaBuilder()
        .required_enum("b", "", ["x"])
        .optional_string("c", "")
        .required_integer("a", "")
        .build()
    )
    assert schema["required"] == ["b", "a"]
    assert list(schema["properties"]) == ["b", "c", "a"]


def test_a_list_of_choices_restricts_every_entry() -> None:
    schema = ParameterSchemaBuilder().optional_string_array("ids", "Sources.", ["a", "b"]).build()
    assert schema["properties"]["ids"] == {
        "type": "array",
        "description": "Sources.",
        "items": {"type": "string", "enum": ["a", "b"]},
    }


def test_an_optional_boolean_is_a_boolean_which_may_be_left_out() -> None:
    schema = ParameterSchemaBuilder().optional_boolean("exact", "Match exactly.").build()
    assert schema["properties"]["exact"]["type"] == "boolean"
    assert schema["required"] == []


def test_a_list_without_choices_takes_any_string() -> None:
    schema = ParameterSchemaBuilder().optional_string_array("tags", "Tags.").build()
    assert schema["properties"]["tags"]["items"] == {"type": "string"}


def test_an_optional_list_is_not_required() -> None:
    schema = (
        ParameterSchemaBuilder()
        .required_string("q", "")
        .optional_string_array("tags", "", ["x"])
        .build()
    )
    assert schema["required"] == ["q"]


def test_an_empty_choice_list_adds_no_enum_which_would_allow_nothing() -> None:
    schema = ParameterSchemaBuilder().required_enum("kind", "", []).build()
    assert "enum" not in schema["properties"]["kind"]


def test_a_name_added_twice_is_refused_with_the_name() -> None:
    builder = ParameterSchemaBuilder().required_string("query", "")
    with pytest.raises(ValueError, match="'query' was added twice"):
        builder.optional_string("query", "")


def test_built_schemas_do_not_share_state_with_the_builder() -> None:
    builder = ParameterSchemaBuilder().optional_enum("t", "", ["a"])
    first = builder.build()
    first["properties"]["t"]["enum"].append("z")
    assert builder.build()["properties"]["t"]["enum"] == ["a"]


# -- strict conversion -----------------------------------------------------------------------------


def test_an_optional_argument_may_be_null_instead() -> None:
    strict = to_openai_strict(
        ParameterSchemaBuilder().optional_string("s", "").optional_integer("i", "").build()
    )
    assert strict["properties"]["s"]["type"] == ["string", "null"]
    assert strict["properties"]["i"]["type"] == ["integer", "null"]
    assert "enum" not in strict["properties"]["s"]


def test_an_optional_choice_offers_null_among_its_values() -> None:
    strict = to_openai_strict(_web_search_schema())
    assert strict["properties"]["time_range"]["enum"] == [None, "day", "month", "year"]
    assert strict["properties"]["time_range"]["type"] == ["string", "null"]


def test_an_optional_list_may_be_null_while_its_entries_keep_their_choice() -> None:
    schema = (
        ParameterSchemaBuilder()
        .required_string("q", "")
        .optional_string_array("ids", "", ["a", "b"])
        .build()
    )
    strict = to_openai_strict(schema)
    ids = strict["properties"]["ids"]
    assert ids["type"] == ["array", "null"]
    assert ids["items"] == {"type": "string", "enum": ["a", "b"]}
    assert "enum" not in ids


def test_a_required_argument_stays_as_it_is() -> None:
    strict = to_openai_strict(_web_search_schema())
    assert strict["properties"]["query"] == {"type": "string", "description": "What to search for."}


def test_every_argument_is_required_in_the_order_of_the_properties() -> None:
    schema = ParameterSchemaBuilder().optional_string("z", "").required_string("a", "").build()
    assert to_openai_strict(schema)["required"] == ["z", "a"]


def test_extra_arguments_stay_refused() -> None:
    assert to_openai_strict(_web_search_schema())["additionalProperties"] is False


def test_a_schema_without_optional_arguments_is_left_untouched() -> None:
    schema = ParameterSchemaBuilder().required_string("q", "").required_integer("n", "").build()
    before = json.dumps(schema)
    converted = to_openai_strict(schema)
    assert converted is schema
    assert json.dumps(converted) == before


@pytest.mark.parametrize(
    "schema",
    [
        "not a schema",
        {"type": "object"},
        {"type": "object", "properties": ["a"]},
        {"type": "object", "properties": {}},
    ],
)
def test_something_which_is_no_object_schema_with_properties_passes_unchanged(
    schema: object,
) -> None:
    assert to_openai_strict(schema) is schema


def test_the_conversion_never_changes_its_input_and_stays_at_the_top_level() -> None:
    nested = {"type": "object", "properties": {"inner": {"type": "string"}}, "required": []}
    schema = {"type": "object", "properties": {"n": nested}, "required": []}
    before = json.dumps(schema)
    strict = to_openai_strict(schema)
    assert json.dumps(schema) == before
    assert strict["properties"]["n"]["type"] == ["object", "null"]
    assert strict["properties"]["n"]["properties"]["inner"] == {"type": "string"}
    assert strict["properties"]["n"]["required"] == []


def test_a_type_list_gains_null_once_and_an_enum_with_null_stays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "integer"]},
            "b": {"type": ["string", "null"], "enum": [None, "x"]},
            "c": True,
        },
        "required": [],
    }
    strict = to_openai_strict(schema)
    assert strict["properties"]["a"]["type"] == ["string", "integer", "null"]
    assert strict["properties"]["b"] == {"type": ["string", "null"], "enum": [None, "x"]}
    assert strict["properties"]["c"] is True
    assert strict["required"] == ["a", "b", "c"]


# -- per-API shapes --------------------------------------------------------------------------------


def _definition(strict: bool = True) -> ToolDefinition:
    return ToolDefinition(
        id="web_search",
        implementation_key="web_search",
        function=ToolFunction(
            name="web_search",
            description_for_llm="Search the web.",
            strict=strict,
            parameters=_web_search_schema(),
        ),
    )


def test_a_host_which_does_not_enforce_strict_mode_gets_the_schema_as_written() -> None:
    tool = chat_completions_tool(_definition(), host_enforces_strict=False)
    assert tool == {
        "type": "function",
        "function": {
            "name": "web_search",
            "description": "Search the web.",
            "parameters": _web_search_schema(),
            "strict": False,
        },
    }


def test_a_host_which_enforces_strict_mode_gets_the_converted_schema() -> None:
    tool = chat_completions_tool(_definition(), host_enforces_strict=True)
    assert tool["function"]["strict"] is True
    assert tool["function"]["parameters"]["required"] == ["query", "page", "time_range"]


def test_a_tool_which_opts_out_stays_out_of_strict_mode_everywhere() -> None:
    definition = _definition(strict=False)
    chat = chat_completions_tool(definition, host_enforces_strict=True)["function"]
    responses = responses_tool(definition)
    anthropic = anthropic_tool(definition)
    assert (chat["strict"], responses["strict"], anthropic["strict"]) == (False, False, False)
    assert chat["parameters"] == responses["parameters"] == _web_search_schema()


def test_the_responses_api_takes_the_same_fields_flat_and_converted() -> None:
    tool = responses_tool(_definition())
    assert tool["type"] == "function"
    assert tool["name"] == "web_search"
    assert tool["description"] == "Search the web."
    assert tool["strict"] is True
    assert tool["parameters"]["properties"]["page"]["type"] == ["integer", "null"]


def test_anthropic_gets_the_schema_as_written_under_input_schema() -> None:
    tool = anthropic_tool(_definition())
    assert tool == {
        "name": "web_search",
        "description": "Search the web.",
        "input_schema": _web_search_schema(),
        "strict": True,
    }


def test_a_tailored_function_can_be_shaped_directly() -> None:
    function = _definition().function
    assert responses_tool(function) == responses_tool(_definition())
