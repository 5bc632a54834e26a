"""The documents `policy serve` renders, built once per policy in force: the status (plugins,
sources, findings of `policy check`), the settings with their filters, the decision matrices.

Each is a view of what `policy.explain` builds for `--format json`; nothing here decides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from policy._dataclass import dataclass
from policy.vocabulary import Component, SettingSource

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import Finding
    from policy.flow import ChatHoldings
    from policy.identity import Caller
    from policy.people import PeoplePolicies
    from policy.tools import Tool

__all__ = [
    "ConfigurationPaths",
    "Deliveries",
    "ReloadOutcome",
    "SettingsFilter",
    "Snapshot",
    "finding_document",
    "reload_document",
    "settings_page_document",
]

_SET_BY_CONFIGURATION = frozenset(
    {SettingSource.LOCKED, SettingSource.USER, SettingSource.ORG_DEFAULT}
)


class ReloadOutcome(Protocol):
    """What one reload did (`runtime.ReloadResult`)."""

    @property
    def swapped(self) -> bool: ...
    @property
    def old_revision(self) -> str: ...
    @property
    def new_revision(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def finished_at(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class ConfigurationPaths:
    """The configuration options of `policy serve` (--org, --local, --user-settings, --state-dir,
    --tools-file, --offline)."""

    org: tuple[Path, ...] = ()
    local: tuple[Path, ...] = ()
    user_settings: Path | None = None
    state_dir: Path | None = None
    tools_files: tuple[Path, ...] = ()
    offline: bool = False

    def load(self) -> Policy:
        """The policy of these paths, as every other command loads it (MCP servers listed as
        `policy.cli_options.with_current_mcp_listings` lists them)."""
        from policy.cli_options import load_cli_policy

        return load_cli_policy(
            self.org,
            self.local,
            self.user_settings,
            self.state_dir,
            self.tools_files,
            offline=self.offline,
        )

    def extra_tools(self) -> list[Tool]:
        """The app's own tools, from each `--tools-file` as it reads now (a file that gives no
        tools raises the usage error that names it)."""
        if not self.tools_files:
            return []
        from policy.cli_options import tools_from_files

        return tools_from_files(self.tools_files)

    def watched(self) -> tuple[Path, ...]:
        """The files and folders whose change is a new configuration: the fetched copies too,
        and the MCP listings `policy mcp list` cached (the MCP tools and their definitions)."""
        paths = [*self.org, *self.local, *self.tools_files]
        if self.user_settings is not None:
            paths.append(self.user_settings)
        if self.state_dir is not None:
            from policy.config_sources import DELIVERED_DIR
            from policy.mcp import listing_cache_folder

            paths.extend((self.state_dir / DELIVERED_DIR, listing_cache_folder(self.state_dir)))
        return tuple(paths)

    def document(self) -> dict[str, Any]:
        return {
            "org": [str(p) for p in self.org],
            "local": [str(p) for p in self.local],
            "user_settings": str(self.user_settings) if self.user_settings else None,
            "state_dir": str(self.state_dir) if self.state_dir else None,
            "tools_files": [str(p) for p in self.tools_files],
        }


def finding_document(finding: Finding) -> dict[str, Any]:
    return {
        "severity": finding.severity.value,
        "code": finding.code,
        "message": finding.message,
        "file": finding.location.file if finding.location else None,
        "line": finding.location.line if finding.location else None,
    }


def _plugin_document(plugin: Any, paths: ConfigurationPaths) -> dict[str, Any]:
    from policy.config_sources import DELIVERED_DIR

    where = "file"
    if paths.state_dir is not None:
        path = Path(plugin.path).resolve()
        state = paths.state_dir.resolve()
        if path.is_relative_to(state / DELIVERED_DIR):
            where = "fetched"
        elif path.is_relative_to(state):
            where = "last-known-good copy"
    return {
        "id": plugin.id,
        "plugin": plugin.name,
        "origin": plugin.origin.value,
        "priority": plugin.priority,
        "version": plugin.version,
        "file": plugin.path,
        "kept_as": where,
    }


def reload_document(outcome: ReloadOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {
        "swapped": outcome.swapped,
        "old_revision": outcome.old_revision,
        "new_revision": outcome.new_revision,
        "error": outcome.error,
        "finished_at": outcome.finished_at.isoformat() if outcome.finished_at else None,
    }


class Deliveries:
    """What the fetch rounds recorded in the state directory, read again only when `policy
    fetch` has rewritten the record (a failed fetch changes it without changing the policy)."""

    def __init__(self, state_dir: Path | None) -> None:
        self._state_dir = state_dir
        self._seen: tuple[int, int] | None = None
        self._documents: list[dict[str, Any]] = []

    def documents(self) -> list[dict[str, Any]]:
        if self._state_dir is None:
            return []
        from policy.config_sources import STATUS_FILE, read_statuses
        from policy.secrets import without_user_info

        try:
            stat = (self._state_dir / STATUS_FILE).stat()
            seen: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen = None
        if seen != self._seen or seen is None:
            documents = []
            for status in sorted(read_statuses(self._state_dir).values(), key=lambda s: s.id):
                document = status.document()
                document["server_url"] = without_user_info(str(status.server_url))
                documents.append(document)
            self._seen, self._documents = seen, documents
        return self._documents


def _status_document(
    policy: Policy, findings: Sequence[Finding], paths: ConfigurationPaths
) -> dict[str, Any]:
    from policy.explain import mcp_servers_document, skipped_entries_document

    return {
        "sources": paths.document(),
        "plugins": [_plugin_document(p, paths) for p in policy.configuration.applied_plugins],
        "broken_organization_plugins": [
            {
                "path": broken.path,
                "message": broken.message,
                "replaced_by_last_known_good": broken.replaced_by_last_known_good,
            }
            for broken in policy.configuration.broken_organization_plugins
        ],
        "providers": [
            {"id": p.id, "name": p.name, "kind": p.kind.value, "model": p.model}
            for p in policy.providers
        ],
        "mcp_servers": mcp_servers_document(policy),
        "skipped_entries": skipped_entries_document(policy.configuration),
        "errors": [finding_document(f) for f in findings if f.severity.value == "error"],
        "warnings": [finding_document(f) for f in findings if f.severity.value != "error"],
    }


@dataclass(frozen=True, slots=True)
class SettingsFilter:
    """The filters of the settings page: one tool, locked only, set by the configuration only,
    and whether settings with no value are shown."""

    tool: str = ""
    locked: bool = False
    overridden: bool = False
    unset: bool = False

    @staticmethod
    def of(query: Mapping[str, str]) -> SettingsFilter:
        def flag(name: str) -> bool:
            return query.get(name, "").strip().lower() in ("1", "true", "on", "yes")

        return SettingsFilter(
            query.get("tool", "").strip(), flag("locked"), flag("overridden"), flag("unset")
        )

    def keeps(self, row: Mapping[str, Any], set_by_configuration: bool) -> bool:
        if self.locked and not row["locked"]:
            return False
        if self.overridden and not set_by_configuration:
            return False
        return self.unset or row["value"] is not None


class Snapshot:
    """The documents of one policy, built on first use and kept while that policy is in force.

    The snapshot of the policy in force holds every loaded configuration (what `policy check`
    checks, the simulate and diff forms start from); `decided_for` is the snapshot of what
    decides for one caller (their groups' configurations; without a caller, a person in no
    group's), whose findings are the whole policy's."""

    def __init__(
        self,
        policy: Policy,
        paths: ConfigurationPaths,
        whole: Snapshot | None = None,
        people: PeoplePolicies | None = None,
    ) -> None:
        self.policy = policy
        self.paths = paths
        self._whole = whole
        self._cache: dict[Any, Any] = {} if people is None else {"people": people}

    def _once(self, key: Any, build: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def people(self) -> PeoplePolicies:
        from policy.people import PeoplePolicies

        people: PeoplePolicies = self._once("people", lambda: PeoplePolicies(self.policy))
        return people

    def decided_for(self, caller: Caller | None) -> Snapshot:
        """The snapshot of what decides for `caller` (kept per set of matched groups)."""
        people = self.people()

        def build() -> Snapshot:
            decided = people.for_caller(caller)
            return self if decided is self.policy else Snapshot(decided, self.paths, self)

        snapshot: Snapshot = self._once(("decided", people.groups.matched(caller)), build)
        return snapshot

    def findings(self) -> tuple[Finding, ...]:
        from policy.lint import check_findings

        if self._whole is not None:
            return self._whole.findings()
        found: tuple[Finding, ...] = self._once("findings", lambda: check_findings(self.policy))
        return found

    def status(self) -> dict[str, Any]:
        document: dict[str, Any] = self._once(
            "status", lambda: _status_document(self.policy, self.findings(), self.paths)
        )
        return document

    def tool_settings(self) -> list[dict[str, Any]]:
        from policy.explain import settings_document

        def build() -> list[dict[str, Any]]:
            return [settings_document(self.policy, t) for t in sorted(self.policy.tool_ids)]

        documents: list[dict[str, Any]] = self._once("settings", build)
        return documents

    def settings_keys(self) -> list[dict[str, Any]]:
        from policy.explain import settings_keys_document

        rows: list[dict[str, Any]] = self._once("keys", lambda: settings_keys_document(self.policy))
        return rows

    def matrix(self, component: Component, holdings: ChatHoldings | None = None) -> dict[str, Any]:
        """`explain --all` for the component; with `holdings`, as if the chat held them."""
        from policy.explain import build_matrix, matrix_report, ordered_tool_ids

        def build() -> dict[str, Any]:
            policy = self.policy
            matrix = build_matrix(
                policy.registry, ordered_tool_ids(policy), policy.providers, component, holdings
            )
            return matrix_report(policy, matrix)

        held = None if holdings is None else holdings.effects
        document: dict[str, Any] = self._once(("matrix", component, held), build)
        return document


def settings_page_document(snapshot: Snapshot, chosen: SettingsFilter) -> dict[str, Any]:
    tools = [
        {
            "tool": t["tool"],
            "settings": [
                row
                for row in t["settings"]
                if chosen.keeps(row, row["source"] in _SET_BY_CONFIGURATION)
            ],
        }
        for t in snapshot.tool_settings()
        if not chosen.tool or t["tool"] == chosen.tool
    ]
    keys = (
        []
        if chosen.tool
        else [row for row in snapshot.settings_keys() if chosen.keeps(row, row["overridden"])]
    )
    return {"tools": tools, "keys": keys}
