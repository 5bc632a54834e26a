"""`CONFIG["CHAT_TEMPLATES"]`: chat templates, whose `ToolIds` preselect a chat's tools."""

from __future__ import annotations

from policy.config.fields import Field, FieldType, Mistake, Section
from policy.config.guid import GUID_SCHEMA_PATTERN

CHAT_TEMPLATES = Section(
    "CHAT_TEMPLATES",
    "Chat templates; each becomes a `ChatTemplateConfig`.",
    (
        Field(
            "Id",
            FieldType.GUID,
            "The template's id.",
            required=True,
            pattern=GUID_SCHEMA_PATTERN,
            example="6c7e1c38-6d0b-4c2c-a8a9-0d1f6f0b2f42",
        ),
        Field("Name", FieldType.TEXT, "The name users see.", required=True, example="Research"),
        Field(
            "SystemPrompt",
            FieldType.TEXT,
            "The system prompt of chats started from it.",
            required=True,
            example="You help with research. Cite your sources.",
        ),
        Field(
            "ToolIds",
            FieldType.TEXT_LIST,
            "Absent: the chat's default tools. Empty: no tools.",
            example=["web_search", "read_web_page"],
        ),
        Field(
            "PredefinedUserPrompt",
            FieldType.TEXT,
            "AI Studio's first user message; kept.",
            mistake=Mistake.NOT_CHECKED,
            example="",
        ),
        Field(
            "AllowProfileUsage",
            FieldType.BOOL,
            "AI Studio's profile switch; kept.",
            mistake=Mistake.NOT_CHECKED,
            example=True,
        ),
        Field(
            "DataSourceOptions",
            FieldType.TABLE,
            "AI Studio's data-source options of chats started from it; kept.",
            mistake=Mistake.NOT_CHECKED,
            fields=(
                Field("DisableDataSources", FieldType.BOOL, "", mistake=Mistake.NOT_CHECKED),
                Field(
                    "AutomaticDataSourceSelection", FieldType.BOOL, "", mistake=Mistake.NOT_CHECKED
                ),
                Field("AutomaticValidation", FieldType.BOOL, "", mistake=Mistake.NOT_CHECKED),
                Field(
                    "PreselectedDataSourceIds", FieldType.TEXT_LIST, "", mistake=Mistake.NOT_CHECKED
                ),
            ),
            example={"DisableDataSources": False},
        ),
    ),
    fails_closed=False,
)
