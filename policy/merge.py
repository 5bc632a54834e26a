"""Plugins → one managed configuration, every value with the plugin and line that set it.

Order: organization plugins first, then local ones, each group by PRIORITY ascending (then path),
so a later plugin wins per key. Lists and tables replace; the add-up keys of the settings table
unite every plugin's entries. A local plugin never takes over a key or object an organization plugin
manages. A broken organization plugin fails closed: it is replaced by its last-known-good copy when
one is kept in the state directory, and otherwise every tool is switched off.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policy._dataclass import dataclass
from policy.config.settings import setting_key
from policy.configuration import (
    Beaten,
    BrokenPlugin,
    Finding,
    ManagedSetting,
    PluginInForce,
    PolicyConfiguration,
    Severity,
)
from policy.lua_sandbox import SandboxLimits, limits_from_environment
from policy.plugin_files import PluginFileError, read_plugin_file
from policy.plugins import (
    PLUGIN_FILE_NAME,
    ConfigurationPlugin,
    PluginLoadError,
    PluginSetting,
    discover_plugin_files,
    load_plugin,
    load_plugins,
)
from policy.provenance import Origin, SourceLocation
from policy.vocabulary import PluginOrigin

if TYPE_CHECKING:
    from policy.mcp import McpServerConfig

ENABLE_TOOLS = "DataTools.EnableTools"
_ALLOW_LOCAL_MCP_SERVERS = "DataTools.AllowLocalMcpServers"


def plugin_order(plugin: ConfigurationPlugin) -> tuple[int, int, str]:
    """Organization before local, then PRIORITY ascending, then path (case-insensitive)."""
    rank = 0 if plugin.origin is PluginOrigin.ORGANIZATION else 1
    return rank, plugin.priority, plugin.path.casefold()


def content_sha256(relative: Sequence[str], contents: Sequence[bytes]) -> str:
    """SHA-256 over a plugin's Lua files (path relative to its folder, then the bytes): the one
    content digest the last-known-good store and decision records use."""
    digest = hashlib.sha256()
    for rel, content in zip(relative, contents, strict=True):
        digest.update(rel.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()


def plugin_sha256(plugin: ConfigurationPlugin, max_bytes: int | None = None) -> str:
    """`content_sha256` of a loaded plugin's files: the bytes the loader ran (a file it did not
    keep is read as the loader reads it, at most `max_bytes`, inside the plugin's folder; one that
    cannot be read counts as empty)."""
    limit = max_bytes if max_bytes is not None else SandboxLimits().file_bytes
    return content_sha256(*_plugin_files(plugin, limit, unreadable_as_empty=True))


def _plugin_files(
    plugin: ConfigurationPlugin, max_bytes: int, *, unreadable_as_empty: bool
) -> tuple[list[str], list[bytes]]:
    """A plugin's Lua files (paths relative to its folder, sorted) and their bytes: those the
    loader ran where it kept them, else read safely now."""
    listed = _listed_files(plugin.path, plugin.files)
    contents = []
    for names, path, _relative in listed:
        content = next((c for c in map(plugin.contents.get, names) if c is not None), None)
        if content is None:
            try:
                content = read_plugin_file(path, max_bytes, Path(plugin.path).parent)
            except (OSError, PluginFileError):
                if not unreadable_as_empty:
                    raise
                content = b""
        contents.append(content)
    return [relative for _names, _path, relative in listed], contents


@lru_cache(maxsize=256)
def _listed_files(
    plugin_path: str, files: tuple[str, ...]
) -> tuple[tuple[tuple[str, ...], Path, str], ...]:
    """Each distinct file of a plugin, sorted as paths: the names it was listed under, its path,
    and its name relative to the plugin's folder (worked out once per plugin and file list)."""
    source_dir = Path(plugin_path).parent
    names: dict[Path, tuple[str, ...]] = {}
    for name in files or (plugin_path,):
        path = Path(name)
        names[path] = (*names.get(path, ()), name)
    return tuple((names[path], path, _relative_inside(path, source_dir)) for path in sorted(names))


def configuration_revision(
    plugins: Sequence[PluginInForce], broken: Sequence[BrokenPlugin] = ()
) -> str:
    """SHA-256 over the plugins in force (in merge order) and the organization plugins that
    failed closed without a copy: two configurations with one revision decide alike."""
    digest = hashlib.sha256()
    for plugin in plugins:
        digest.update(f"{plugin.origin.value}\0{plugin.id}\0{plugin.priority}\0".encode())
        digest.update(f"{plugin.sha256}\0{plugin.last_known_good}\n".encode())
    for failed in broken:
        if not failed.replaced_by_last_known_good:
            digest.update(f"failed-closed\0{failed.plugin_id or failed.path}\n".encode())
    return digest.hexdigest()


def merge_plugins(
    plugins: Sequence[ConfigurationPlugin],
    broken: Sequence[BrokenPlugin] = (),
    findings: Sequence[Finding] = (),
    *,
    last_known_good: frozenset[str] = frozenset(),
) -> PolicyConfiguration:
    """Merge loaded plugins (in any order; they are sorted here) into one PolicyConfiguration.

    `last_known_good` names the plugin ids whose kept copy stood in for a broken plugin."""
    ordered = sorted(plugins, key=plugin_order)
    in_force = tuple(
        PluginInForce(
            id=p.id,
            name=p.name,
            origin=p.origin,
            priority=p.priority,
            sha256=plugin_sha256(p),
            last_known_good=p.id in last_known_good,
        )
        for p in ordered
    )
    merger = _Merger()
    for plugin in ordered:
        merger.apply(plugin)
    settings = merger.settings()
    failing = [b for b in broken if not b.replaced_by_last_known_good]
    if failing:
        settings[ENABLE_TOOLS] = _switched_off(failing[0], settings.get(ENABLE_TOOLS))
    reported = frozenset(
        f.location for f in findings if f.severity is Severity.ERROR and f.location is not None
    )
    return PolicyConfiguration(
        settings=settings,
        providers=tuple(merger.objects["LLM_PROVIDERS"].values()),
        data_sources=tuple(merger.objects["DATA_SOURCES"].values()),
        chat_templates=tuple(merger.objects["CHAT_TEMPLATES"].values()),
        mcp_servers=merger.mcp_servers(),
        broken_organization_plugins=tuple(broken),
        findings=(
            *findings,
            *(_broken_finding(b, reported) for b in broken),
            *(f for p in ordered for f in (*p.findings, *p.unused)),
            *merger.findings,
        ),
        plugins=tuple(p.provenance for p in ordered),
        applied_plugins=tuple(ordered),
        plugins_in_force=in_force,
        revision=configuration_revision(in_force, broken),
    )


@dataclass
class _Held:
    """A key's value while merging: where it came from, whether locked, what it beat."""

    value: Any
    origin: Origin
    locked: bool
    by_organization: bool
    entry_locations: Any
    beaten: list[Beaten] = field(default_factory=list)


class _Merger:
    def __init__(self) -> None:
        self.held: dict[str, _Held] = {}
        self.contributions: dict[str, list[tuple[ConfigurationPlugin, PluginSetting]]] = {}
        self.objects: dict[str, dict[str, Any]] = {
            "LLM_PROVIDERS": {},
            "DATA_SOURCES": {},
            "CHAT_TEMPLATES": {},
            "MCP_SERVERS": {},
        }
        self.object_owner_is_org: dict[tuple[str, str], bool] = {}
        self.findings: list[Finding] = []

    def apply(self, plugin: ConfigurationPlugin) -> None:
        for key, setting in plugin.settings.items():
            spec = setting_key(key)
            if spec is not None and spec.adds_up:
                self._contribute(plugin, setting)
            else:
                self._set(plugin, setting)
        for section, items in (
            ("LLM_PROVIDERS", plugin.providers),
            ("DATA_SOURCES", plugin.data_sources),
            ("CHAT_TEMPLATES", plugin.chat_templates),
            ("MCP_SERVERS", plugin.mcp_servers),
        ):
            for item in items:
                self._upsert(plugin, section, item)

    def _set(self, plugin: ConfigurationPlugin, setting: PluginSetting) -> None:
        origin = plugin.origin_at(setting.location)
        local = plugin.origin is PluginOrigin.LOCAL
        if self._organization_only_from_local(plugin, setting):
            return
        current = self.held.get(setting.key)
        if current is not None and current.by_organization and local:
            current.beaten.append(Beaten(setting.value, origin))
            self.findings.append(
                Finding(
                    Severity.WARNING,
                    "local-override-ignored",
                    f"local plugin {plugin.name} cannot change {setting.key}: organization plugin "
                    f"{current.origin} manages it; the local value is ignored",
                    setting.location,
                )
            )
            return
        beaten = [*current.beaten, Beaten(current.value, current.origin)] if current else []
        self.held[setting.key] = _Held(
            value=setting.value,
            origin=origin,
            locked=not setting.allow_user_override,
            by_organization=not local,
            entry_locations=setting.entry_locations,
            beaten=beaten,
        )

    def _organization_only_from_local(
        self, plugin: ConfigurationPlugin, setting: PluginSetting
    ) -> bool:
        """A key honored only from organization plugins, set by a local one: reported, ignored."""
        spec = setting_key(setting.key)
        if plugin.origin is not PluginOrigin.LOCAL or spec is None or not spec.organization_only:
            return False
        self.findings.append(
            Finding(
                Severity.WARNING,
                "organization-only-setting",
                f"{setting.key} is honored only from organization plugins; "
                f"local plugin {plugin.name} is ignored here",
                setting.location,
            )
        )
        return True

    def _contribute(self, plugin: ConfigurationPlugin, setting: PluginSetting) -> None:
        if self._organization_only_from_local(plugin, setting):
            return
        self.contributions.setdefault(setting.key, []).append((plugin, setting))

    def _upsert(self, plugin: ConfigurationPlugin, section: str, item: Any) -> None:
        items = self.objects[section]
        local = plugin.origin is PluginOrigin.LOCAL
        key = (section, item.id)
        if item.id in items and local and self.object_owner_is_org.get(key, False):
            where = item.origin.location if item.origin else None
            self.findings.append(
                Finding(
                    Severity.WARNING,
                    "local-override-ignored",
                    f'local plugin {plugin.name} cannot replace CONFIG["{section}"] entry {item.id}: '
                    f"an organization plugin owns it; the local entry is ignored",
                    where,
                )
            )
            return
        items.pop(item.id, None)
        items[item.id] = item
        self.object_owner_is_org[key] = not local

    def mcp_servers(self) -> tuple[McpServerConfig, ...]:
        """The servers in force: a local plugin's own servers only when an organization plugin
        sets `DataTools.AllowLocalMcpServers = true`, and never under an organization server's
        name (its tool ids would shadow the organization's)."""
        held = self.held.get(_ALLOW_LOCAL_MCP_SERVERS)
        local_allowed = held is not None and held.by_organization and held.value is True
        servers = sorted(self.objects["MCP_SERVERS"].values(), key=lambda s: not s.by_organization)
        organization_names = {s.name for s in servers if s.by_organization}
        kept: list[McpServerConfig] = []
        for server in servers:
            where = server.origin.location if server.origin is not None else None
            if any(s.name == server.name for s in kept):
                self.findings.append(
                    Finding(
                        Severity.WARNING,
                        "duplicate-mcp-server-name",
                        f"MCP server {server.name} ({server.id}) is ignored: an earlier MCP "
                        "server has that name, and its tool ids would be the same",
                        where,
                    )
                )
                continue
            if server.by_organization:
                kept.append(server)
                continue
            if not local_allowed:
                why = (
                    f"local MCP server {server.name} is ignored: local plugins may declare MCP "
                    f"servers only when an organization plugin sets {_ALLOW_LOCAL_MCP_SERVERS} = true"
                )
            elif server.name in organization_names:
                why = (
                    f"local MCP server {server.name} is ignored: an organization MCP server has "
                    "that name"
                )
            else:
                kept.append(server)
                continue
            self.findings.append(Finding(Severity.WARNING, "local-mcp-server-ignored", why, where))
        return tuple(kept)

    def settings(self) -> dict[str, ManagedSetting]:
        merged = {
            key: ManagedSetting(
                key=key,
                value=held.value,
                locked=held.locked,
                origin=held.origin,
                beaten=tuple(held.beaten),
                entry_locations=dict(held.entry_locations),
            )
            for key, held in self.held.items()
        }
        for key, contributions in self.contributions.items():
            merged[key] = _united(key, contributions)
        return merged


def _united(
    key: str, contributions: list[tuple[ConfigurationPlugin, PluginSetting]]
) -> ManagedSetting:
    """An add-up key: every plugin's entries, first mention first, each with its own line."""
    entries: dict[str, Any] = {}
    locations: dict[str, Any] = {}
    for _plugin, setting in contributions:
        values = setting.value if isinstance(setting.value, tuple) else (setting.value,)
        for value in values:
            identity = _entry_identity(value)
            if identity not in entries:
                entries[identity] = value
                locations[identity] = setting.entry_locations.get(identity, setting.location)
    last_plugin, last = contributions[-1]
    spec = setting_key(key)
    return ManagedSetting(
        key=key,
        value=tuple(entries.values()),
        locked=bool(spec and spec.organization_only),
        origin=last_plugin.origin_at(last.location),
        entry_locations=locations,
    )


def _entry_identity(value: Any) -> str:
    if isinstance(value, dict) and isinstance(value.get("PluginHash"), str):
        return str(value["PluginHash"]).strip().upper()
    if isinstance(value, str):
        return value.strip().upper() if re.fullmatch(r"\s*[0-9A-Fa-f]{64}\s*", value) else value
    return json.dumps(value, sort_keys=True, default=str)


def _switched_off(broken: BrokenPlugin, previous: ManagedSetting | None) -> ManagedSetting:
    location = broken.location or SourceLocation(broken.path, 0)
    origin = Origin(broken.plugin_id, broken.plugin_name or broken.path, location)
    beaten: tuple[Beaten, ...] = ()
    if previous is not None:
        beaten = (*previous.beaten, Beaten(previous.value, previous.origin))
    return ManagedSetting(ENABLE_TOOLS, False, True, origin, beaten)


def _broken_finding(broken: BrokenPlugin, reported: frozenset[SourceLocation]) -> Finding:
    """What a broken organization plugin means; its load error is not repeated when already
    reported at the same place, so every fatal error is printed once."""
    name = broken.plugin_name or broken.path
    why = "" if broken.location in reported else f" ({broken.message})"
    if broken.replaced_by_last_known_good:
        return Finding(
            Severity.WARNING,
            "broken-organization-plugin",
            f"organization plugin {name} does not load{why}; "
            "its last-known-good copy applies instead",
            broken.location,
        )
    return Finding(
        Severity.ERROR,
        "broken-organization-plugin",
        f"organization plugin {name} does not load{why}; every tool is switched off "
        "(TOOLS_SWITCHED_OFF) until it loads again, since no last-known-good copy is available",
        broken.location,
    )


# -- loading ------------------------------------------------------------------------------------


def load_configuration(
    org: Sequence[Path] = (),
    local: Sequence[Path] = (),
    state_dir: Path | None = None,
    limits: SandboxLimits | None = None,
    *,
    unreadable: Sequence[tuple[Path, str, str]] = (),
    keep_copies: bool = True,
) -> PolicyConfiguration:
    """Load and merge plugins. Never raises for a bad plugin.

    A rejected plugin becomes error findings. A broken organization plugin (or a missing
    organization path) becomes a BrokenPlugin; with `state_dir`, its last-known-good copy stands in,
    and every organization plugin that loads refreshes its copy there. `unreadable` are
    organization plugins known to exist that cannot be read at all, as (path, plugin id, why) —
    a fetched configuration whose copy in force is damaged: each is broken the same way (its
    last-known-good copy found by its id). `keep_copies=False` only reads the copies kept in
    `state_dir` (a candidate that is not in force refreshes none). Every plugin runs once, all
    in one round trip to the sandbox, under `limits` (default: `SandboxLimits()` with the wall-clock
    cap of `TOOLPOLICY_PLUGIN_WALL_SECONDS` when set).
    """
    findings: list[Finding] = []
    if limits is None:
        limits, problem = limits_from_environment()
        if problem is not None:
            findings.append(Finding(Severity.ERROR, "invalid-sandbox-limit", problem, None))
    store = _LastKnownGood(state_dir, limits) if state_dir is not None else None
    loaded: dict[str, ConfigurationPlugin] = {}
    restored: set[str] = set()
    broken: list[BrokenPlugin] = []

    def admit(plugin: ConfigurationPlugin) -> None:
        holder = loaded.get(plugin.id)
        if holder is not None:
            takes_over = (
                plugin.origin is PluginOrigin.ORGANIZATION and holder.origin is PluginOrigin.LOCAL
            )
            kept, dropped = (plugin, holder) if takes_over else (holder, plugin)
            findings.append(
                Finding(
                    Severity.WARNING,
                    "duplicate-plugin-id",
                    f"plugins {kept.path} and {dropped.path} share the ID {plugin.id}; "
                    f"{dropped.path} is ignored",
                    SourceLocation(dropped.path, 0),
                )
            )
            if not takes_over:
                return
        loaded[plugin.id] = plugin

    def stand_in(
        path: Path, message: str, failure: PluginLoadError | None, plugin_id: str = ""
    ) -> None:
        broken_plugin, copies = _fail_closed(path, message, failure, store, plugin_id)
        broken.append(broken_plugin)
        for copy in copies:
            admit(copy)
            restored.add(copy.id)

    org_files = [(root, _discover(root)) for root in org]
    local_files = [(root, _discover(root)) for root in local]
    to_load = [
        (plugin_file, origin)
        for found, origin in (
            (org_files, PluginOrigin.ORGANIZATION),
            (local_files, PluginOrigin.LOCAL),
        )
        for _root, files in found
        for plugin_file, error in files
        if error is None
    ]
    outcomes = iter(load_plugins(to_load, limits))

    for path, plugin_id, message in unreadable:
        stand_in(path, message, None, plugin_id)
    for root, files in org_files:
        for plugin_file, error in files:
            if error is not None:
                stand_in(root, error, None)
                continue
            plugin = next(outcomes)
            if isinstance(plugin, PluginLoadError):
                if plugin.not_configuration:
                    findings.append(_as_warning(plugin))
                    continue
                findings.extend(plugin.findings)
                stand_in(plugin_file, plugin.message, plugin)
                continue
            admit(plugin)
            if store is not None and keep_copies:
                findings.extend(store.save(plugin))

    for root, files in local_files:
        for _plugin_file, error in files:
            if error is not None:
                findings.append(
                    Finding(Severity.ERROR, "plugin-not-found", error, SourceLocation(str(root), 0))
                )
                continue
            plugin = next(outcomes)
            if isinstance(plugin, PluginLoadError):
                if plugin.not_configuration:
                    findings.append(_as_warning(plugin))
                else:
                    findings.extend(plugin.findings)
                continue
            admit(plugin)

    kept = frozenset(i for i in restored if i in loaded and _is_kept_copy(loaded[i], store))
    return merge_plugins(list(loaded.values()), broken, findings, last_known_good=kept)


def _discover(root: Path) -> list[tuple[Path, str | None]]:
    try:
        files = discover_plugin_files(root)
    except FileNotFoundError:
        return [(root, f"{root} does not exist")]
    except OSError as error:
        return [(root, f"{root} cannot be read: {error.strerror or type(error).__name__}")]
    if not files:
        return [(root, f"{root} holds no {PLUGIN_FILE_NAME}")]
    return [(f, None) for f in files]


def _as_warning(failure: PluginLoadError) -> Finding:
    first = failure.findings[0]
    return Finding(
        Severity.WARNING,
        "not-a-configuration-plugin",
        f"{first.message}; skipped (only configuration plugins are read)",
        first.location,
    )


def _fail_closed(
    path: Path,
    message: str,
    failure: PluginLoadError | None,
    store: _LastKnownGood | None,
    known_id: str = "",
) -> tuple[BrokenPlugin, list[ConfigurationPlugin]]:
    plugin_id = failure.plugin_id if failure is not None else known_id
    copies = store.restore(path, plugin_id) if store is not None else []
    name = failure.plugin_name if failure and failure.plugin_name else ""
    if not name and copies:
        name = copies[0].name
    return (
        BrokenPlugin(
            path=str(path),
            message=message,
            plugin_id=plugin_id or (copies[0].id if len(copies) == 1 else ""),
            plugin_name=name,
            location=failure.location if failure else SourceLocation(str(path), 0),
            replaced_by_last_known_good=bool(copies),
        ),
        copies,
    )


class _LastKnownGood:
    """Copies of organization plugins that loaded: `<state_dir>/<plugin id>/`.

    Each copy lives in `<id>/<content sha256>/` (the Lua files, same relative paths) and
    `<id>/current.json` names the live copy and the plugin file it came from. The pointer is
    replaced atomically, so a crash leaves the previous copy in force.
    """

    def __init__(self, root: Path, limits: SandboxLimits) -> None:
        self.root = root
        self.limits = limits

    def save(self, plugin: ConfigurationPlugin) -> list[Finding]:
        try:
            self._save(plugin)
        except (OSError, PluginFileError) as error:
            reason = (
                error.message
                if isinstance(error, PluginFileError)
                else error.strerror or type(error).__name__
            )
            return [
                Finding(
                    Severity.WARNING,
                    "state-not-saved",
                    f"the last-known-good copy of {plugin.name} could not be saved in {self.root}: "
                    f"{reason}",
                    SourceLocation(plugin.path, 0),
                )
            ]
        return []

    def _save(self, plugin: ConfigurationPlugin) -> None:
        relative, contents = _plugin_files(
            plugin, self.limits.file_bytes, unreadable_as_empty=False
        )
        version = content_sha256(relative, contents)
        home = self.root / plugin.id
        pointer = home / "current.json"
        current = self._pointer(plugin.id)
        if (
            current
            and current.get("copy") == version
            and current.get("source") == str(Path(plugin.path).resolve())
            and (home / version).is_dir()
        ):
            return
        target = home / version
        if not target.is_dir():
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=_ensure(home)))
            for rel, content in zip(relative, contents, strict=True):
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel).write_bytes(content)
            os.replace(staging, target)
        entry = {
            "copy": version,
            "plugin_file": Path(plugin.path).name,
            "source": str(Path(plugin.path).resolve()),
            "name": plugin.name,
        }
        _write_atomically(pointer, json.dumps(entry, indent=2))
        for old in home.iterdir():
            if old.is_dir() and old.name != version:
                shutil.rmtree(old, ignore_errors=True)

    def _pointer(self, plugin_id: str) -> dict[str, Any] | None:
        try:
            data = json.loads((self.root / plugin_id / "current.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def restore(self, path: Path, plugin_id: str) -> list[ConfigurationPlugin]:
        """Copies standing in for `path`: by plugin id, else every copy that came from under `path`."""
        ids = [plugin_id] if plugin_id else self._ids_from(path)
        copies: list[ConfigurationPlugin] = []
        for candidate in ids:
            entry = self._pointer(candidate)
            if entry is None:
                continue
            plugin_file = (
                self.root
                / candidate
                / str(entry.get("copy", ""))
                / str(entry.get("plugin_file", ""))
            )
            try:
                copies.append(load_plugin(plugin_file, PluginOrigin.ORGANIZATION, self.limits))
            except PluginLoadError:
                continue
        return copies

    def _ids_from(self, path: Path) -> list[str]:
        if not self.root.is_dir():
            return []
        wanted = path.resolve()
        found = []
        for home in sorted(self.root.iterdir()):
            entry = self._pointer(home.name)
            source = Path(str(entry.get("source", ""))) if entry else None
            if source is not None and (source == wanted or wanted in source.parents):
                found.append(home.name)
        return found


def _is_kept_copy(plugin: ConfigurationPlugin, store: _LastKnownGood | None) -> bool:
    """True when the plugin in force was loaded from the last-known-good store."""
    if store is None:
        return False
    try:
        return store.root.resolve() in Path(plugin.path).resolve().parents
    except OSError:
        return False


def _relative_inside(path: Path, folder: Path) -> str:
    """The name a file is required by (a link keeps its own name, not its target's)."""
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return path.name


def _ensure(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write_atomically(path: Path, text: str) -> None:
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


__all__ = [
    "ENABLE_TOOLS",
    "load_configuration",
    "merge_plugins",
    "plugin_order",
]
