"""`policy export`: an administrator's own tool settings as a plugin.lua fragment.

The administrator configures tools on a test machine (user settings file, OS keyring) and deploys
that setup to everyone by pasting the fragment into an organization plugin (or `require`-ing it).
Values are what the administrator's setup resolves to — a locked or default organization value or
the user's own — never a tool's built-in default, so a later change of a default still reaches
users. Secrets are only exported on request, always locked and `ENC:v1:`-encrypted; a secret that
cannot be encrypted fails the whole export, so a fragment is never missing what was asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from policy import secrets
from policy._dataclass import dataclass
from policy.errors import ToolPolicyError
from policy.vocabulary import SettingSource

if TYPE_CHECKING:
    from policy import Policy
    from policy.decide.registry import ToolRegistry
    from policy.definitions import ToolDefinition

LOCKED_TABLE = "DataTools.LockedToolSettings"
DEFAULT_TABLE = "DataTools.DefaultToolSettings"
MINIMUM_TABLE = "DataTools.MinimumProviderConfidenceByToolId"
_UNGROUPED_LABEL = "General"

_EXPORTED_SOURCES = frozenset({SettingSource.LOCKED, SettingSource.USER, SettingSource.ORG_DEFAULT})
_PLAIN_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class ExportMode(StrEnum):
    """Where non-secret values go: locked for everyone, or pre-filled defaults users may change."""

    LOCKED = "LOCKED"
    DEFAULT = "DEFAULT"


class ExportError(ToolPolicyError):
    """An export that cannot be produced; `argument` names what was wrong ("TOOL_ID", "--area")."""

    code = "export"

    def __init__(self, message: str, argument: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.argument = argument


class SecretExportError(ExportError):
    """Secrets were asked for but cannot be encrypted; the message never contains a secret."""

    code = "secret-export"


@dataclass(frozen=True, slots=True)
class _ExportArea:
    """One setting group of one tool: `"<toolId>/<group>"`, the empty group being ungrouped fields."""

    id: str
    tool_id: str
    group: str
    label: str
    fields: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _ExportEntry:
    """A catalog entry being exported: a standalone tool, or (some of) the tools of a collection."""

    id: str
    display_name: str
    tool_ids: tuple[str, ...]
    areas: tuple[_ExportArea, ...]


@dataclass(frozen=True, slots=True)
class _ToolSettingsExport:
    """The finished export: what was exported and the Lua fragment."""

    tool_ids: tuple[str, ...]
    mode: ExportMode
    areas: tuple[str, ...]
    lua: str

    def document(self) -> dict[str, object]:
        """The `--format json|yaml` shape."""
        return {
            "tool_ids": list(self.tool_ids),
            "mode": self.mode.value,
            "areas": list(self.areas),
            "lua": self.lua,
        }


# --- public API -----------------------------------------------------------------------------------


def export_tool_settings(
    policy: Policy,
    tool_ids: Sequence[str],
    mode: ExportMode | str,
    areas: Iterable[str] | None = None,
    include_secrets: bool = False,
    include_minimum_confidence: bool = False,
    secret: str | None = None,
) -> str:
    """The Lua fragment for `tool_ids` (tool or collection ids); see `build_export`."""
    return build_export(
        policy,
        tool_ids,
        mode,
        areas,
        include_secrets=include_secrets,
        include_minimum_confidence=include_minimum_confidence,
        secret=secret,
    ).lua


def build_export(
    policy: Policy,
    tool_ids: Sequence[str],
    mode: ExportMode | str,
    areas: Iterable[str] | None = None,
    *,
    include_secrets: bool = False,
    include_minimum_confidence: bool = False,
    secret: str | None = None,
) -> _ToolSettingsExport:
    """Export the settings of `tool_ids` as the administrator's setup resolves them.

    A collection id exports every tool of the collection; a tool id exports that tool (its
    collection's minimum confidence still goes under the collection id). `areas` selects area ids
    (`"<toolId>/<group>"`, default all). `secret` is the base64 encryption secret; None reads the
    environment (`configured_secret()`). Raises `ExportError` for an unknown id, area or mode and
    `SecretExportError` when secrets are asked for but cannot be encrypted.
    """
    chosen_mode = _mode(mode)
    entries = export_entries(policy, tool_ids)
    selected = _selected_areas(entries, areas)
    key = _encryption_key(secret) if include_secrets else None
    lua = _fragment(
        policy.registry, entries, selected, chosen_mode, key, include_minimum_confidence
    )
    exported_tools = tuple(t for entry in entries for t in entry.tool_ids)
    area_ids = tuple(a.id for e in entries for a in e.areas if a.id in selected)
    return _ToolSettingsExport(exported_tools, chosen_mode, area_ids, lua)


def export_entries(policy: Policy, tool_ids: Sequence[str]) -> tuple[_ExportEntry, ...]:
    """The catalog entries `tool_ids` name, in first-mentioned order, with their areas."""
    registry = policy.registry
    wanted: dict[str, list[str]] = {}
    for raw in tool_ids:
        ident = raw.strip()
        if ident in registry.tool_ids:
            members = wanted.setdefault(registry.collection_id(ident), [])
            if ident not in members:
                members.append(ident)
        elif registry.collection_tool_ids(ident):
            wanted[ident] = list(registry.collection_tool_ids(ident))
        else:
            raise ExportError(_unknown_id_message(registry, raw), "TOOL_ID")
    if not wanted:
        raise ExportError("name at least one tool or collection id to export", "TOOL_ID")
    names = {entry.id: entry.display_name for entry in registry.catalog()}
    result: list[_ExportEntry] = []
    for entry_id, members in wanted.items():
        order = registry.collection_tool_ids(entry_id) or tuple(members)
        ordered = tuple(t for t in order if t in members)
        result.append(_entry(registry, entry_id, names, ordered))
    return tuple(result)


def lua_string(text: str) -> str:
    """`text` as a double-quoted Lua string literal that reads back exactly (Lua 5.1 to 5.4).

    Printable characters (non-ASCII included) stay as they are, written as UTF-8; quotes,
    backslashes and line breaks get their short escapes; every other unprintable character (control
    and bidirectional-override characters among them) is written byte by byte as `\\ddd`, so what
    an administrator reads in the file is what the value holds.
    """
    parts: list[str] = []
    for character in text:
        escaped = _PLAIN_ESCAPES.get(character)
        if escaped is not None:
            parts.append(escaped)
        elif character.isprintable():
            parts.append(character)
        else:
            encoded = character.encode("utf-8", errors="surrogatepass")
            parts.extend(f"\\{byte:03d}" for byte in encoded)
    return '"' + "".join(parts) + '"'


# --- entries and areas ----------------------------------------------------------------------------


def _mode(mode: ExportMode | str) -> ExportMode:
    name = mode.value if isinstance(mode, ExportMode) else str(mode).strip().upper()
    if name not in ExportMode.__members__:
        valid = ", ".join(m.value for m in ExportMode)
        raise ExportError(f"'{mode}' is not an export mode; valid: {valid}", "--mode")
    return ExportMode[name]


def _unknown_id_message(registry: ToolRegistry, raw: str) -> str:
    known = sorted({*registry.tool_ids, *(e.id for e in registry.catalog())})
    listed = ", ".join(known) if known else "(no tools installed)"
    from policy.suggest import did_you_mean

    return f"unknown tool or collection id '{raw}'{did_you_mean(raw, known)}; known: {listed}"


def _entry(
    registry: ToolRegistry, entry_id: str, names: dict[str, str], tool_ids: tuple[str, ...]
) -> _ExportEntry:
    grouped = [(t, _groups(registry.definition(t))) for t in tool_ids]
    with_areas = sum(1 for _, groups in grouped if groups)
    areas: list[_ExportArea] = []
    for tool_id, groups in grouped:
        tool_name = registry.tool(tool_id).display_name
        for group, fields in groups.items():
            label = group or _UNGROUPED_LABEL
            if with_areas > 1:
                label = f"{tool_name}: {label}"
            areas.append(_ExportArea(f"{tool_id}/{group}", tool_id, group, label, fields))
    display = names.get(entry_id) or registry.tool(tool_ids[0]).display_name
    return _ExportEntry(entry_id, display, tool_ids, tuple(areas))


def _groups(definition: ToolDefinition) -> dict[str, tuple[str, ...]]:
    """Setting groups in the order their first field appears in the schema."""
    groups: dict[str, list[str]] = {}
    for name, spec in definition.settings_schema.properties.items():
        groups.setdefault(spec.group, []).append(name)
    return {group: tuple(fields) for group, fields in groups.items()}


def _selected_areas(entries: Sequence[_ExportEntry], areas: Iterable[str] | None) -> frozenset[str]:
    available = [area.id for entry in entries for area in entry.areas]
    if areas is None:
        return frozenset(available)
    chosen = [a.strip() for a in areas]
    unknown = [a for a in chosen if a not in available]
    if unknown:
        listed = ", ".join(available) if available else "(the tools named have no settings)"
        raise ExportError(
            f"unknown area {', '.join(repr(a) for a in unknown)}; areas of the tools named: "
            f"{listed} (an area is '<toolId>/<group>', '<toolId>/' for ungrouped settings)",
            "--area",
        )
    return frozenset(chosen)


def _encryption_key(secret: str | None) -> str:
    key = secret if secret is not None else secrets.configured_secret()
    if key is None or not key.strip():
        raise SecretExportError(
            "secrets cannot be exported: no encryption secret is configured; set one of "
            f"{secrets.SECRET_SOURCES} to the base64 of 32 bytes, "
            "the same secret your users' apps are given"
        )
    try:
        secrets.check_secret(key)
    except secrets.SecretError as error:
        raise SecretExportError(f"secrets cannot be exported: {error.message}") from None
    return key


# --- the fragment ---------------------------------------------------------------------------------


def _fragment(
    registry: ToolRegistry,
    entries: Sequence[_ExportEntry],
    selected: frozenset[str],
    mode: ExportMode,
    key: str | None,
    include_minimum_confidence: bool,
) -> str:
    mode_table = LOCKED_TABLE if mode is ExportMode.LOCKED else DEFAULT_TABLE
    body: list[str] = []
    used: set[str] = set()
    for entry in entries:
        body.append("")
        body.append(lua_comment(f"{entry.display_name} ({entry.id})"))
        for area in entry.areas:
            if area.id in selected:
                body.extend(_area_lines(registry, area, mode_table, key, used))
        if include_minimum_confidence:
            level = registry.effective_minimum_confidence(entry.id).level
            body.append(lua_comment(f"Minimum provider confidence of {entry.display_name}"))
            body.append(_assignment(MINIMUM_TABLE, entry.id, level.name))
            used.add(MINIMUM_TABLE)
    names = ", ".join(entry.id for entry in entries)
    head = [
        lua_comment(f"Tool settings exported by `policy export` ({mode.value}) for: {names}"),
        lua_comment('Paste it below CONFIG["SETTINGS"] = {} in an organization plugin.lua, or'),
        lua_comment("require it from there; several fragments combine in one plugin."),
    ]
    for table in (LOCKED_TABLE, DEFAULT_TABLE, MINIMUM_TABLE):
        if table in used:
            if table == MINIMUM_TABLE:
                override = lua_string(MINIMUM_TABLE + ".AllowUserOverride")
                head.append(lua_comment(f"{MINIMUM_TABLE} is locked for users unless you also set"))
                head.append(lua_comment(f'CONFIG["SETTINGS"][{override}] = true'))
            slot = f'CONFIG["SETTINGS"][{lua_string(table)}]'
            head.append(f"{slot} = {slot} or {{}}")
    return "\n".join([*head, *body]) + "\n"


def _area_lines(
    registry: ToolRegistry,
    area: _ExportArea,
    mode_table: str,
    key: str | None,
    used: set[str],
) -> list[str]:
    resolved = registry.settings(area.tool_id)
    lines = [lua_comment(f"{area.label} [{area.id}]")]
    wrote = False
    for name in area.fields:
        setting = resolved[name]
        setting_key = f"{area.tool_id}.{name}"
        if setting.secret:
            if key is None:
                if setting.value is not None:
                    lines.append(
                        lua_comment(
                            f"{setting_key} is a secret and was left out (export with "
                            "--include-secrets to deploy it encrypted)"
                        )
                    )
                continue
            if setting.note:
                lines.append(lua_comment(f"{setting_key} not exported: {setting.note}"))
            plain = setting.plain()
            if plain is None:
                continue
            lines.append(
                _assignment(LOCKED_TABLE, setting_key, _encrypted(plain, key, setting_key))
            )
            used.add(LOCKED_TABLE)
            wrote = True
        elif setting.source in _EXPORTED_SOURCES and isinstance(setting.value, str):
            if secrets.without_user_info(setting.value) != setting.value:
                lines.append(
                    lua_comment(
                        f"{setting_key} was left out: its value "
                        f"'{secrets.without_user_info(setting.value)}' holds a user name or "
                        "password, which is never exported in plain text"
                    )
                )
                continue
            lines.append(_assignment(mode_table, setting_key, setting.value))
            used.add(mode_table)
            wrote = True
    if not wrote:
        lines.append(lua_comment("(nothing set in this area)"))
    return lines


def _encrypted(plain: str, key: str, setting_key: str) -> str:
    try:
        return secrets.encrypt(plain, key)
    except (secrets.SecretError, ValueError) as error:
        reason = error.message if isinstance(error, secrets.SecretError) else type(error).__name__
        raise SecretExportError(
            f"{setting_key}: the secret could not be encrypted ({reason}); nothing was exported"
        ) from None


def _assignment(table: str, entry: str, value: str) -> str:
    return f'CONFIG["SETTINGS"][{lua_string(table)}][{lua_string(entry)}] = {lua_string(value)}'


def lua_comment(text: str) -> str:
    """A one-line Lua comment; unprintable characters (line breaks) cannot end it early."""
    flat = "".join(c if c.isprintable() else " " for c in text)
    return f"-- {flat}"
