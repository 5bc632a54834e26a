"""`CONFIG["MCP_SERVERS"]`: MCP servers whose tools are governed like any other.

The server name rule, the transports, the timeout bounds and the pin format are declared here,
once: the reader, `policy schema`, `policy.mcp` (ids, fingerprints) and the runtime ask them.
"""

from __future__ import annotations

import re
from enum import StrEnum

from policy.config.fields import Field, FieldType, Section, UnknownFields
from policy.config.guid import GUID_SCHEMA_PATTERN
from policy.config.settings import LEVEL_NAMES
from policy.flow import EFFECT_NAMES

SERVER_NAME_PATTERN = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
SERVER_NAME_RULE = (
    'lower-case letters and digits, words joined by single underscores (no "__", no "_" at '
    "either end): it is the prefix of its tool ids, <Name>__<tool name>, split at the first "
    '"__"'
)
DEFAULT_TIMEOUT_SECONDS = 30.0
_MAX_TIMEOUT_SECONDS = 600.0
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
MESSAGE_BYTES_RANGE = (64 * 1024, 256 * 1024 * 1024)
"""What `MaxMessageBytes` may be: a message (a result, a listing page) is cut off beyond it."""
FINGERPRINT_PREFIX = "sha256:"
_PIN_PATTERN = re.compile(FINGERPRINT_PREFIX + "[0-9a-f]{64}")
"""A pin: the fingerprint of a tool definition, `sha256:` and 64 lower-case hex digits."""


class McpAuthType(StrEnum):
    """Whose identity a server sees: the entry's own headers, or the signed-in caller's."""

    STATIC = "STATIC"
    """The entry's `Headers` (ENC:v1: secrets), the same for every caller."""
    TOKEN_EXCHANGE = "TOKEN_EXCHANGE"
    """A token the gateway obtains for each caller at the identity provider (RFC 8693)."""


class McpTransport(StrEnum):
    """How toolpolicy talks to a server: a subprocess over stdio, or streamable HTTP."""

    STDIO = "STDIO"
    STREAMABLE_HTTP = "STREAMABLE_HTTP"


_SECRET_NAMES = "Secret-looking names need ENC:v1: values."

MCP_SERVERS = Section(
    "MCP_SERVERS",
    "MCP servers; each tool a server lists becomes the tool `<Name>__<tool name>`.",
    (
        Field(
            "Id",
            FieldType.GUID,
            "The server's id.",
            required=True,
            pattern=GUID_SCHEMA_PATTERN,
            example="6f1c7f2e-51a8-4b55-9d1c-0c0a6b3a9e01",
        ),
        Field(
            "Name",
            FieldType.NONBLANK_TEXT,
            "The prefix of its tool ids, `<Name>__<tool name>`: lower-case letters and digits, "
            "words joined by single underscores (no `__`, no `_` at either end).",
            required=True,
            pattern=f"^{SERVER_NAME_PATTERN.pattern}$",
            rule=SERVER_NAME_RULE,
            example="tickets",
        ),
        Field(
            "Transport",
            FieldType.CHOICE,
            "How toolpolicy talks to it.",
            required=True,
            choices=tuple(transport.value for transport in McpTransport),
            example="STDIO",
        ),
        Field(
            "Command",
            FieldType.NONBLANK_TEXT,
            "STDIO: the program to start.",
            required_when=(("Transport", McpTransport.STDIO.value),),
            example="ticket-mcp",
        ),
        Field(
            "Url",
            FieldType.NONBLANK_TEXT,
            "STREAMABLE_HTTP: the endpoint, an http:// or https:// address.",
            required_when=(("Transport", McpTransport.STREAMABLE_HTTP.value),),
            example="http://127.0.0.1:8080/mcp",
        ),
        Field(
            "Args", FieldType.TEXT_LIST, "STDIO: the program's arguments.", example=["--readonly"]
        ),
        Field(
            "AllowedTools",
            FieldType.TEXT_LIST,
            "Globs on MCP tool names; empty: all.",
            example=["search_*"],
        ),
        Field(
            "DeniedTools",
            FieldType.TEXT_LIST,
            "Globs on MCP tool names; wins.",
            example=["delete_*"],
        ),
        Field(
            "RequireApproval",
            FieldType.TEXT_LIST,
            "Globs on MCP tool names whose every call waits for a person's approval.",
            example=["delete_*"],
        ),
        Field(
            "SensitiveArguments",
            FieldType.TEXT_LIST,
            "Argument names masked in traces.",
            example=["token"],
        ),
        Field(
            "Env",
            FieldType.SECRET_TEXT_MAP,
            f"STDIO: the program's environment. {_SECRET_NAMES}",
            example={"LOG_LEVEL": "info"},
        ),
        Field(
            "Headers",
            FieldType.SECRET_TEXT_MAP,
            f"STREAMABLE_HTTP: request headers. {_SECRET_NAMES}",
            example={"X-Team": "support"},
        ),
        Field(
            "MinimumProviderConfidence",
            FieldType.CHOICE,
            "A floor for all its tools; per-tool keys may ask more.",
            choices=LEVEL_NAMES,
            default="NONE",
            example="HIGH",
        ),
        Field(
            "ReadOnlyOnly",
            FieldType.BOOL,
            "true: only tools annotated readOnlyHint=true.",
            default=False,
            example=True,
        ),
        Field(
            "RequirePins",
            FieldType.BOOL,
            "Unpinned or changed definitions are not offered.",
            default=False,
            example=True,
        ),
        Field(
            "Pins",
            FieldType.PIN_MAP,
            "MCP tool name → the fingerprint of its approved definition (policy mcp pin).",
            pattern=f"^{_PIN_PATTERN.pattern}$",
            example={"search_tickets": FINGERPRINT_PREFIX + "0" * 64},
        ),
        Field(
            "Effects",
            FieldType.CHOICE_LIST_MAP,
            "MCP tool name → its effects, replacing what its annotations say "
            "(DataTools.ToolEffects by tool id wins over this).",
            choices=EFFECT_NAMES,
            example={"search_tickets": ["PRIVATE_DATA"]},
        ),
        Field(
            "Auth",
            FieldType.TABLE,
            "Whose identity the server sees. STATIC (the default): the entry's Headers. "
            "TOKEN_EXCHANGE (STREAMABLE_HTTP only, with the DataGateway sign-in): each call "
            "carries a token the gateway obtains for the signed-in caller at the identity "
            "provider for Audience (OAuth 2.0 Token Exchange), never the caller's own token; "
            "a call without a signed-in caller is refused.",
            fields=(
                Field(
                    "Type",
                    FieldType.CHOICE,
                    "STATIC or TOKEN_EXCHANGE.",
                    required=True,
                    choices=tuple(kind.value for kind in McpAuthType),
                    example=McpAuthType.STATIC.value,
                ),
                Field(
                    "Audience",
                    FieldType.NONBLANK_TEXT,
                    "TOKEN_EXCHANGE: the audience the server's tokens are for.",
                    required_when=(("Type", McpAuthType.TOKEN_EXCHANGE.value),),
                    example="tickets-api",
                ),
            ),
            example={"Type": "STATIC"},
        ),
        Field(
            "TimeoutSeconds",
            FieldType.NUMBER,
            "Seconds per call.",
            minimum=0,
            maximum=_MAX_TIMEOUT_SECONDS,
            default=DEFAULT_TIMEOUT_SECONDS,
            example=30,
        ),
        Field(
            "MaxMessageBytes",
            FieldType.WHOLE_NUMBER,
            "The most one message from the server may hold (a result, a listing page); a "
            "longer one is cut off while it arrives and its call fails.",
            minimum=MESSAGE_BYTES_RANGE[0],
            maximum=MESSAGE_BYTES_RANGE[1],
            default=DEFAULT_MAX_MESSAGE_BYTES,
            example=DEFAULT_MAX_MESSAGE_BYTES,
        ),
    ),
    fails_closed=True,
    unknown_fields=UnknownFields.SKIP_ENTRY,
)
