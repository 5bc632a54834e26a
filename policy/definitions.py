"""Tool definitions: what a tool is, independent of any provider's wire format.

The models mirror AI Studio's `ToolDefinition` record. Validation (the 13 ordered rules of
policy-spec §1.3) lives in `validate_definition`; definitions that arrive as data go through a
JSON Schema check first and then the same rules.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from policy.vocabulary import Component, ConfidenceLevel, ToolActivation


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")


class ToolVisibility(_Frozen):
    """Where a tool may be offered; non-empty component lists replace the two flags."""

    chat: bool = True
    assistants: bool = True
    allowed_components: tuple[Component | str, ...] = ()
    denied_components: tuple[Component | str, ...] = ()


class SettingField(_Frozen):
    """One tool setting; every setting is a string field (rule 8)."""

    type: str = "string"
    title: str = ""
    description: str = ""
    enum_values: tuple[str, ...] = Field(default=(), alias="enum")
    option_source: str = ""
    secret: bool = False
    group: str = ""
    default: str | None = None
    """The tool's own default (last step of resolution); None = no default."""


class SettingsSchema(_Frozen):
    type: str = "object"
    properties: dict[str, SettingField] = Field(default_factory=dict)
    required: tuple[str, ...] = ()


class ToolFunction(_Frozen):
    """What the model sees: name, description and JSON Schema parameters."""

    name: str
    description_for_llm: str = ""
    strict: bool = True
    parameters: Any = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolDefinition(_Frozen):
    schema_version: int = 1
    id: str
    implementation_key: str
    visible_in: ToolVisibility = Field(default_factory=ToolVisibility)
    activation: ToolActivation = ToolActivation.SELECTION
    settings_schema: SettingsSchema = Field(default_factory=SettingsSchema)
    system_prompt_instructions: str = ""
    minimum_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    function: ToolFunction
