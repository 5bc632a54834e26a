"""The user's settings file (YAML): read with line numbers, written back with comments and order kept.

Only what the organization leaves open takes effect (resolution decides that); a setter given the
configuration refuses a value the organization locks, naming who locks it. Every write validates
the whole resulting document first and then replaces the file atomically, so a bad value never
leaves a half-written file behind.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

from policy._patterns import LazyPattern
from policy.configuration import (
    Finding,
    ManagedSetting,
    PolicyConfiguration,
    Severity,
    UserSettings,
)
from policy.errors import ToolPolicyError
from policy.provenance import SourceLocation
from policy.suggest import did_you_mean
from policy.vocabulary import (
    COMPONENT_NAMES,
    CONFIGURABLE_CONFIDENCE_LEVELS,
    ConfidenceScheme,
)
from policy.yaml_limits import MAX_YAML_BYTES, yaml_limit_exceeded

LEVEL_NAMES: tuple[str, ...] = tuple(level.name for level in CONFIGURABLE_CONFIDENCE_LEVELS)
_SCHEME_NAMES: tuple[str, ...] = tuple(s.value for s in ConfidenceScheme)

_TOOLS_KEYS = (
    "enabled",
    "settings",
    "minimum_provider_confidence",
    "default_tool_ids_by_component",
)
_TOP_KEYS = ("tools", "confidence")
MAX_FILE_BYTES = MAX_YAML_BYTES
"""The largest user settings file read: the most YAML parsed (a real one has a few hundred
bytes); a FIFO or device is refused, so neither can make a load wait or read without end."""
_CONFIDENCE_KEYS = ("scheme",)
_TOOL_ID = LazyPattern(r"^[A-Za-z0-9_-]+$")
_FIELD = LazyPattern(r"^\S+$")

_MANAGED_KEY_FOR = {
    "tools.enabled": "DataTools.EnableTools",
    "tools.minimum_provider_confidence": "DataTools.MinimumProviderConfidenceByToolId",
    "tools.default_tool_ids_by_component": "DataTools.DefaultToolIdsByComponent",
    "confidence.scheme": "DataConfidence.ConfidenceScheme",
}


class UserSettingsError(ToolPolicyError):
    """A bad settings file or value; the message names file:line and what would be valid."""

    code = "user-settings"

    def __init__(self, message: str, location: SourceLocation | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


def load_user_settings(path: Path | None) -> UserSettings:
    """The parsed file; no path or a missing file means the user said nothing."""
    if path is None or not path.exists():
        return UserSettings(path=str(path) if path else None)
    return _parse(_read_document(path), str(path))


def parse_user_settings(text: str, file: str) -> UserSettings:
    """Settings given as YAML text (a what-if pasted into `policy serve`); `file` names it in
    every error. Nothing is read from or written to disk."""
    return _parse(_load_text(text, file), file)


def save_tool_setting(
    path: Path,
    tool_id: str,
    field: str,
    value: str,
    configuration: PolicyConfiguration | None = None,
) -> None:
    """Store a (non-secret) tool setting; secrets belong in the OS keyring, never in this file."""
    _check_tool_id(tool_id, "tool id")
    if not _FIELD.match(field):
        raise UserSettingsError(f'field name "{field}" must be non-blank and without spaces')
    if not isinstance(value, str):
        raise UserSettingsError(f"the value of {tool_id}.{field} must be a string")
    if configuration is not None:
        _refuse_locked_tool_field(configuration, tool_id, field)

    def change(doc: Any) -> None:
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString

        fields = _child_map(_child_map(_child_map(doc, "tools"), "settings"), tool_id)
        fields[field] = DoubleQuotedScalarString(value)

    _update(path, change)


def remove_tool_setting(path: Path, tool_id: str, field: str) -> None:
    """Forget a saved tool setting (the organization default or the tool's own default applies)."""

    def change(doc: Any) -> None:
        tools = doc.get("tools") or {}
        settings = tools.get("settings") or {}
        fields = settings.get(tool_id)
        if fields is not None and field in fields:
            del fields[field]
            if not fields:
                del settings[tool_id]

    _update(path, change)


def set_tools_enabled(
    path: Path, enabled: bool | None, configuration: PolicyConfiguration | None = None
) -> None:
    """Switch tools on/off for this user (None removes the entry)."""
    _refuse_locked(configuration, "tools.enabled")
    _set_or_remove(path, ("tools", "enabled"), enabled)


def set_minimum_provider_confidence(
    path: Path, tool_id: str, level: str | None, configuration: PolicyConfiguration | None = None
) -> None:
    """The user's minimum confidence for one tool (None removes it)."""
    _check_tool_id(tool_id, "tool id")
    canonical = None if level is None else _canonical(level, LEVEL_NAMES, "confidence level")
    _refuse_locked(configuration, "tools.minimum_provider_confidence")
    _set_or_remove(path, ("tools", "minimum_provider_confidence", tool_id), canonical)


def set_default_tool_ids(
    path: Path,
    component: str,
    tool_ids: Sequence[str] | None,
    configuration: PolicyConfiguration | None = None,
) -> None:
    """The tools selected by default in a component (None removes the entry, [] selects none)."""
    name = _canonical(component, COMPONENT_NAMES, "component")
    ids: list[str] | None = None
    if tool_ids is not None:
        for tool_id in tool_ids:
            _check_tool_id(tool_id, "tool id")
        ids = list(dict.fromkeys(tool_ids))
    _refuse_locked(configuration, "tools.default_tool_ids_by_component")
    _set_or_remove(path, ("tools", "default_tool_ids_by_component", name), ids)


def set_confidence_scheme(
    path: Path, scheme: str | None, configuration: PolicyConfiguration | None = None
) -> None:
    """The user's confidence scheme (None removes it)."""
    canonical = None if scheme is None else _canonical(scheme, _SCHEME_NAMES, "confidence scheme")
    _refuse_locked(configuration, "confidence.scheme")
    _set_or_remove(path, ("confidence", "scheme"), canonical)


def ignored_user_settings(
    user: UserSettings, configuration: PolicyConfiguration
) -> tuple[Finding, ...]:
    """Warnings for the user's values an organization lock overrides (they have no effect)."""
    findings: list[Finding] = []
    locked_fields = _locked_tool_fields(configuration)
    for tool_id, fields in user.tool_settings.items():
        for field in fields:
            key = f"{tool_id}.{field}"
            setting = locked_fields.get(key)
            if setting is not None:
                dotted = f"tools.settings.{key}"
                where = setting.entry_locations.get(key, setting.origin.location)
                lock = f"{setting.key} locks {key} in {setting.origin.plugin_name} ({where})"
                findings.append(_ignored(user, dotted, setting, lock))
    said = {
        "tools.enabled": user.tools_enabled is not None,
        "tools.minimum_provider_confidence": bool(user.minimum_provider_confidence),
        "tools.default_tool_ids_by_component": bool(user.default_tool_ids_by_component),
        "confidence.scheme": user.confidence_scheme is not None,
    }
    for dotted, present in said.items():
        setting = configuration.setting(_MANAGED_KEY_FOR[dotted])
        if present and setting is not None and setting.locked:
            findings.append(_ignored(user, dotted, setting))
    return tuple(findings)


# -- reading -------------------------------------------------------------------------------------


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _read_document(path: Path) -> Any:
    from policy.plugin_files import PluginFileError, read_regular_file

    where = SourceLocation(str(path), 0)
    try:
        raw = read_regular_file(path, MAX_FILE_BYTES, "a user settings file may have")
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UserSettingsError("the file is not UTF-8 text", where) from None
    except PluginFileError as error:
        raise UserSettingsError(f"cannot be read: {error.message}", where) from None
    return _load_text(text, str(path))


def _load_text(text: str, file: str) -> Any:
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    exceeded = yaml_limit_exceeded(text)
    if exceeded is not None:
        raise UserSettingsError(
            f"{exceeded.problem}; a settings file is a few levels deep and a few KB long",
            SourceLocation(file, exceeded.line),
        )
    try:
        return _yaml().load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else 0
        problem = error.problem or error.context or "not valid YAML"
        raise UserSettingsError(f"not valid YAML: {problem}", SourceLocation(file, line)) from None
    except YAMLError as error:
        raise UserSettingsError(f"not valid YAML: {error}", SourceLocation(file, 0)) from None


class _Reader:
    def __init__(self, file: str) -> None:
        self.file = file
        self.locations: dict[str, SourceLocation] = {}

    def at(self, node: Any, key: Any) -> SourceLocation:
        try:
            line = node.lc.key(key)[0] + 1 if isinstance(key, str) else node.lc.item(key)[0] + 1
        except (AttributeError, KeyError, IndexError, TypeError):
            line = 0
        return SourceLocation(self.file, line)

    def fail(self, message: str, node: Any = None, key: Any = None) -> UserSettingsError:
        where = self.at(node, key) if node is not None else SourceLocation(self.file, 0)
        return UserSettingsError(message, where)

    def mapping(
        self,
        node: Any,
        dotted: str,
        allowed: tuple[str, ...] | None,
        parent: Any = None,
        key: Any = None,
    ) -> Mapping[Any, Any]:
        """`node` as a mapping; `parent[key]` is where it stands, for the line of an error."""
        if node is None:
            return {}
        if not isinstance(node, Mapping):
            raise self.fail(f"{dotted} must be a mapping (key: value lines)", parent, key)
        for key in node:
            if not isinstance(key, str):
                raise self.fail(f"{dotted} has a key that is not text: {key!r}", node, key)
            if allowed is not None and key not in allowed:
                raise self.fail(
                    f'unknown key "{key}" under {dotted}{did_you_mean(key, allowed)}; '
                    f"valid keys: {', '.join(allowed)}",
                    node,
                    key,
                )
        return node


def _parse(doc: Any, file: str) -> UserSettings:
    reader = _Reader(file)
    if doc is None:
        return UserSettings(path=file)
    if not isinstance(doc, Mapping):
        raise UserSettingsError(
            "the file must be a mapping with the keys tools and/or confidence",
            SourceLocation(file, 1),
        )
    top = reader.mapping(doc, "the top level", _TOP_KEYS)
    tools = reader.mapping(top.get("tools"), "tools", _TOOLS_KEYS, top, "tools")
    confidence = reader.mapping(
        top.get("confidence"), "confidence", _CONFIDENCE_KEYS, top, "confidence"
    )
    if "tools" in top:
        reader.locations["tools"] = reader.at(top, "tools")
    return UserSettings(
        tools_enabled=_tools_enabled(reader, tools),
        tool_settings=_tool_settings(reader, tools),
        minimum_provider_confidence=_minimums(reader, tools),
        default_tool_ids_by_component=_default_tool_ids(reader, tools),
        confidence_scheme=_scheme(reader, confidence),
        path=file,
        locations=reader.locations,
    )


def _tools_enabled(reader: _Reader, tools: Mapping[str, Any]) -> bool | None:
    if "enabled" not in tools:
        return None
    value = tools["enabled"]
    if not isinstance(value, bool):
        raise reader.fail(f"tools.enabled must be true or false, not {value!r}", tools, "enabled")
    reader.locations["tools.enabled"] = reader.at(tools, "enabled")
    return value


def _tool_settings(reader: _Reader, tools: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    tool_settings: dict[str, dict[str, str]] = {}
    settings = reader.mapping(tools.get("settings"), "tools.settings", None, tools, "settings")
    for tool_id, fields in settings.items():
        _check_tool_id(tool_id, "tool id", reader.at(settings, tool_id))
        field_map = reader.mapping(fields, f"tools.settings.{tool_id}", None, settings, tool_id)
        tool_settings[tool_id] = {}
        for field, value in field_map.items():
            dotted = f"tools.settings.{tool_id}.{field}"
            if not _FIELD.match(field):
                raise reader.fail(f"{dotted}: a field name has no spaces", field_map, field)
            tool_settings[tool_id][field] = _setting_text(reader, field_map, field, value, dotted)
            reader.locations[dotted] = reader.at(field_map, field)
    return tool_settings


def _minimums(reader: _Reader, tools: Mapping[str, Any]) -> dict[str, str]:
    minimums: dict[str, str] = {}
    levels = reader.mapping(
        tools.get("minimum_provider_confidence"),
        "tools.minimum_provider_confidence",
        None,
        tools,
        "minimum_provider_confidence",
    )
    if levels:
        reader.locations["tools.minimum_provider_confidence"] = reader.at(
            tools, "minimum_provider_confidence"
        )
    for tool_id, level in levels.items():
        dotted = f"tools.minimum_provider_confidence.{tool_id}"
        _check_tool_id(tool_id, "tool id", reader.at(levels, tool_id))
        minimums[tool_id] = _canonical(level, LEVEL_NAMES, dotted, reader.at(levels, tool_id))
        reader.locations[dotted] = reader.at(levels, tool_id)
    return minimums


def _default_tool_ids(reader: _Reader, tools: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    defaults: dict[str, tuple[str, ...]] = {}
    by_component = reader.mapping(
        tools.get("default_tool_ids_by_component"),
        "tools.default_tool_ids_by_component",
        None,
        tools,
        "default_tool_ids_by_component",
    )
    if by_component:
        reader.locations["tools.default_tool_ids_by_component"] = reader.at(
            tools, "default_tool_ids_by_component"
        )
    for component, ids in by_component.items():
        where = reader.at(by_component, component)
        name = _canonical(component, COMPONENT_NAMES, "component", where)
        dotted = f"tools.default_tool_ids_by_component.{name}"
        if not isinstance(ids, list):
            raise UserSettingsError(
                f"{dotted} must be a list of tool ids, e.g. [web_search]", where
            )
        for index, tool_id in enumerate(ids):
            _check_tool_id(tool_id, f"{dotted} entry", reader.at(ids, index))
        defaults[name] = tuple(dict.fromkeys(ids))
        reader.locations[dotted] = where
    return defaults


def _scheme(reader: _Reader, confidence: Mapping[str, Any]) -> str | None:
    if "scheme" not in confidence:
        return None
    where = reader.at(confidence, "scheme")
    reader.locations["confidence.scheme"] = where
    return _canonical(confidence["scheme"], _SCHEME_NAMES, "confidence.scheme", where)


def _setting_text(reader: _Reader, node: Any, key: str, value: Any, dotted: str) -> str:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        shown = 'empty (write "" for an empty value)'
    elif isinstance(value, Mapping):
        shown = "a mapping"
    elif isinstance(value, list):
        shown = "a list"
    elif isinstance(value, date):
        shown = "a date"
    else:
        shown = type(value).__name__
    raise reader.fail(f"{dotted} must be a text value, not {shown}; quote it", node, key)


def _check_tool_id(value: Any, what: str, where: SourceLocation | None = None) -> None:
    if not isinstance(value, str) or not _TOOL_ID.match(value):
        raise UserSettingsError(
            f"{what} {value!r} is not a tool id (letters, digits, _ and -, e.g. web_search)", where
        )


def _canonical(
    value: Any, choices: tuple[str, ...], what: str, where: SourceLocation | None = None
) -> str:
    name = value.strip().upper() if isinstance(value, str) else None
    if name not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        raise UserSettingsError(
            f"{what}: {value!r} is not one of {', '.join(choices)}{hint}", where
        )
    assert name is not None
    return name


# -- writing -------------------------------------------------------------------------------------


def _update(path: Path, change: Callable[[Any], None]) -> None:
    from ruamel.yaml.comments import CommentedMap

    doc = _read_document(path) if path.exists() else None
    if doc is not None:
        _parse(doc, str(path))
    else:
        doc = CommentedMap()
    change(doc)
    _prune_empty(doc)
    buffer = io.StringIO()
    _yaml().dump(doc, buffer)
    text = buffer.getvalue() if doc else ""
    _parse(_load_text(text, str(path)), str(path))
    _write_atomically(path, text)


def _child_map(node: Any, key: str) -> Any:
    from ruamel.yaml.comments import CommentedMap

    child = node.get(key)
    if child is None:
        child = CommentedMap()
        node[key] = child
    return child


def _set_or_remove(path: Path, keys: tuple[str, ...], value: Any) -> None:
    def change(doc: Any) -> None:
        node = doc
        if value is None:
            for key in keys[:-1]:
                node = node.get(key)
                if node is None:
                    return
            node.pop(keys[-1], None)
            return
        for key in keys[:-1]:
            node = _child_map(node, key)
        node[keys[-1]] = _flow_list(value) if isinstance(value, list) else value

    _update(path, change)


def _flow_list(items: list[str]) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _prune_empty(doc: Any) -> None:
    """Drop the section maps a removal left empty (tools.settings.x, tools, confidence)."""
    for outer in ("tools", "confidence"):
        section = doc.get(outer)
        if isinstance(section, MutableMapping):
            for inner in (
                "settings",
                "minimum_provider_confidence",
                "default_tool_ids_by_component",
            ):
                if isinstance(section.get(inner), Mapping) and not section[inner]:
                    del section[inner]
            if not section:
                del doc[outer]


def _write_atomically(path: Path, text: str) -> None:
    try:
        _replace_file(path, text)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UserSettingsError(
            f"cannot be written: {reason}", SourceLocation(str(path), 0)
        ) from None


def _replace_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- organization locks --------------------------------------------------------------------------


def _locked_tool_fields(configuration: PolicyConfiguration) -> dict[str, ManagedSetting]:
    setting = configuration.setting("DataTools.LockedToolSettings")
    if setting is None or not isinstance(setting.value, Mapping):
        return {}
    return {key: setting for key in setting.value}


def _refuse_locked_tool_field(configuration: PolicyConfiguration, tool_id: str, field: str) -> None:
    key = f"{tool_id}.{field}"
    setting = _locked_tool_fields(configuration).get(key)
    if setting is not None:
        where = setting.entry_locations.get(key, setting.origin.location)
        raise UserSettingsError(
            f"{key} is locked by the organization plugin {setting.origin.plugin_name} ({where}); "
            "your value would have no effect"
        )


def _refuse_locked(configuration: PolicyConfiguration | None, dotted: str) -> None:
    if configuration is None:
        return
    setting = configuration.setting(_MANAGED_KEY_FOR[dotted])
    if setting is not None and setting.locked:
        raise UserSettingsError(
            f"{dotted} is locked by the plugin {setting.origin.plugin_name} "
            f"({setting.origin.location}, {setting.key}); your value would have no effect"
        )


def _ignored(
    user: UserSettings, dotted: str, setting: ManagedSetting, lock: str | None = None
) -> Finding:
    return Finding(
        Severity.WARNING,
        "user-setting-locked",
        f"{dotted} has no effect: {lock or f'{setting.key} is locked by {setting.origin}'}",
        user.locations.get(dotted),
    )


__all__ = [
    "UserSettingsError",
    "ignored_user_settings",
    "load_user_settings",
    "remove_tool_setting",
    "save_tool_setting",
    "set_confidence_scheme",
    "set_default_tool_ids",
    "set_minimum_provider_confidence",
    "set_tools_enabled",
]
