"""What a tool must have to run, as the runtime tells a tool author who forgot something."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from policy import DefinedTool, ToolDefinition, ToolFunction
from runtime import ExecutableTool, ToolExecutionContext, ToolExecutionResult, missing_members

_DEFINITION = ToolDefinition(
    id="dice",
    implementation_key="dice",
    function=ToolFunction(name="dice", description_for_llm="Roll a die."),
)


class _Dice(DefinedTool):
    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        return ToolExecutionResult(json_content={"rolled": 4})


def test_an_object_lacks_every_member_of_the_protocol_in_declaration_order() -> None:
    assert missing_members(object()) == (
        "definition",
        "display_name",
        "outbound_data",
        "enforces_outbound_data_restriction",
        "is_available",
        "validate_configuration",
        "resolve_function",
        "resolve_instructions",
        "companion_tool_ids",
        "switch_off_gate",
        "approval_gate",
        "minimum_confidence_floor",
        "minimum_confidence_floor_evidence",
        "effects",
        "searches_chat_data_sources",
        "request_extras",
        "setting_problem",
        "sensitive_trace_argument_names",
        "returns_untrusted_external_content",
        "execute",
    )


def test_a_defined_tool_with_execute_lacks_nothing_and_is_executable() -> None:
    assert missing_members(_Dice(_DEFINITION)) == ()
    assert isinstance(_Dice(_DEFINITION), ExecutableTool)
    assert missing_members(DefinedTool(_DEFINITION)) == ("execute",)


def test_every_member_named_missing_is_one_the_protocol_checks() -> None:
    for name in missing_members(object()):

        class _Without(_Dice):
            def __getattribute__(self, wanted: str, _name: str = name) -> Any:
                if wanted == _name:
                    raise AttributeError(wanted)
                return super().__getattribute__(wanted)

        tool = _Without(_DEFINITION)
        assert missing_members(tool) == (name,)
        assert not isinstance(tool, ExecutableTool)
