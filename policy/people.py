"""Policy per person and group: which configurations apply to a `Caller`, and its `Policy`.

`DataGateway.ConfigurationsByGroup` maps a group of the identity provider to configuration ids
(plugin IDs). A configuration no group names applies to everyone; one a group names applies to
that group's members only. A caller is decided with the plugins of everyone merged with those of
their groups, in the usual merge order; a request without a caller (no sign-in, the shared
token, a report without `--as`) is decided as a person in no group: with everyone's plugins only. The merge happens once per distinct set of matched groups
(`PeoplePolicies`, kept with the policy in force), never per request; a person's own user
settings are applied over their groups' policy once per settings they have.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from policy._dataclass import dataclass
from policy.configuration import Finding, Severity
from policy.identity import Caller

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import PolicyConfiguration, UserSettings
    from policy.mcp import McpServerConfig, McpServerListing
    from policy.plugins import ConfigurationPlugin
    from policy.provenance import SourceLocation

CONFIGURATIONS_BY_GROUP = "DataGateway.ConfigurationsByGroup"
ADMINISTRATOR_GROUPS = "DataGateway.AdministratorGroups"
RECORD_SUBJECT = "DataGateway.RecordSubject"
_PERSON_CHAT = "person:"


def subject_hash(subject: str) -> str:
    """One person's name in places that must not show it: SHA-256 of the `sub`, hex."""
    import hashlib

    return hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()


def person_chat_id(caller: Caller, chat_id: str) -> str:
    """The id a person's chat is stored under: their `chat_id` inside their own space, so no
    chat id one person sends reaches another's chat (an id already in their space is kept)."""
    space = f"{_PERSON_CHAT}{subject_hash(caller.subject)}/"
    return chat_id if chat_id.startswith(space) else space + chat_id


def is_persons_chat(caller: Caller, chat_id: str) -> bool:
    """Whether a stored chat id lies in the caller's own space."""
    return chat_id.startswith(f"{_PERSON_CHAT}{subject_hash(caller.subject)}/")


def recorded_subject(configuration: PolicyConfiguration, caller: Caller) -> str:
    """How decision records name the caller: `DataGateway.RecordSubject` HASH (the default) or
    SUBJECT."""
    setting = configuration.setting(RECORD_SUBJECT)
    if setting is not None and setting.value == "SUBJECT":
        return caller.subject
    return "sha256:" + subject_hash(caller.subject)


__all__ = [
    "CONFIGURATIONS_BY_GROUP",
    "RECORD_SUBJECT",
    "AppliedConfiguration",
    "GroupConfigurations",
    "PeoplePolicies",
    "UserSettingsFolder",
    "is_persons_chat",
    "person_chat_id",
    "recorded_subject",
    "subject_hash",
    "what_if_caller",
]


@dataclass(frozen=True, slots=True)
class AppliedConfiguration:
    """A configuration (plugin) as it applies to one caller: whether it does, and why."""

    id: str
    name: str
    applies: bool
    why: str


@dataclass(frozen=True, slots=True)
class GroupConfigurations:
    """`DataGateway.ConfigurationsByGroup` read against the loaded plugins.

    `by_group`: group → the configuration ids its members get (an id naming no loaded
    configuration is read as the one it most likely meant, else kept as written: it then names
    nothing); `named`: every id some group names; `findings`: the ids that name no loaded
    configuration (errors for `policy check`).
    """

    by_group: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    where: Mapping[str, str] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()

    @property
    def named(self) -> frozenset[str]:
        return frozenset(i for ids in self.by_group.values() for i in ids)

    @classmethod
    def of(cls, configuration: PolicyConfiguration) -> GroupConfigurations:
        setting = configuration.setting(CONFIGURATIONS_BY_GROUP)
        if setting is None or not setting.value:
            return cls()
        from policy.suggest import HintBudget

        known = {p.id: p for p in configuration.applied_plugins}
        hints = HintBudget()
        by_group: dict[str, tuple[str, ...]] = {}
        where: dict[str, str] = {}
        findings: list[Finding] = []
        for group, ids in dict(setting.value).items():
            at: SourceLocation = setting.entry_locations.get(group) or setting.origin.location
            where[group] = f"{CONFIGURATIONS_BY_GROUP} ({at})"
            read: list[str] = []
            for configuration_id in ids:
                if configuration_id in known:
                    read.append(configuration_id)
                    continue
                meant = hints.closest_name(configuration_id, known)
                read.append(meant or configuration_id)
                then = (
                    f'; did you mean "{meant}" ({known[meant].name})? Until it is fixed it is read '
                    "as that one (a typo never gives a group's configuration to everyone)"
                    if meant
                    else "; it applies to nobody"
                )
                findings.append(
                    Finding(
                        Severity.ERROR,
                        "unknown-configuration-id",
                        f'{CONFIGURATIONS_BY_GROUP}["{group}"] names the configuration '
                        f'"{configuration_id}", which no loaded plugin has (loaded: '
                        f"{', '.join(sorted(known)) or 'none'}){then}",
                        at,
                    )
                )
            by_group[group] = tuple(dict.fromkeys(read))
        return cls(by_group, where, tuple(findings))

    def matched(self, caller: Caller | None) -> frozenset[str]:
        """The caller's groups the setting names: what their policy depends on."""
        if caller is None or not self.by_group:
            return frozenset()
        return frozenset(g for g in caller.groups if g in self.by_group)

    def applied(
        self, plugins: tuple[ConfigurationPlugin, ...], matched: frozenset[str]
    ) -> tuple[AppliedConfiguration, ...]:
        """Each plugin with whether it applies to a caller of the `matched` groups, and why."""
        named = self.named
        answers = []
        for plugin in plugins:
            if plugin.id not in named:
                answers.append(
                    AppliedConfiguration(
                        plugin.id, plugin.name, True, "no group names it: it applies to everyone"
                    )
                )
                continue
            groups = sorted(g for g, ids in self.by_group.items() if plugin.id in ids)
            mine = [g for g in groups if g in matched]
            if mine:
                why = "; ".join(f'group "{g}" ({self.where[g]})' for g in mine)
                answers.append(AppliedConfiguration(plugin.id, plugin.name, True, why))
            else:
                why = "only for " + ", ".join(f'"{g}"' for g in groups)
                answers.append(AppliedConfiguration(plugin.id, plugin.name, False, why))
        return tuple(answers)


def decides_for_others(configuration: PolicyConfiguration, caller: Caller | None) -> bool:
    """Whether a signed-in person may decide for other people on the web page (simulate as
    someone else, with a settings file of the server's machine, or diff the whole policy):
    only a member of a group `DataGateway.AdministratorGroups` names. Nobody without it, and
    nobody the sign-in did not name (fails closed)."""
    if caller is None:
        return False
    setting = configuration.setting(ADMINISTRATOR_GROUPS)
    groups = setting.value if setting is not None else ()
    return isinstance(groups, tuple | frozenset | list) and not caller.groups.isdisjoint(groups)


def what_if_caller(subject: str, groups: str) -> Caller | None:
    """The person a what-if names (a subject and comma-separated groups, either may be blank;
    None when both are): `policy explain --as/--groups` and the simulate form read them so."""
    named = frozenset(g.strip() for g in groups.split(",") if g.strip())
    if not subject.strip() and not named:
        return None
    return Caller(subject.strip() or "(what-if)", named)


class PeoplePolicies:
    """The `Policy` of each caller, derived from the policy in force.

    One merged `Policy` per distinct set of matched groups, made on first ask and kept; one per
    person on top of it when they have user settings of their own (kept while those settings
    are the same object). Build a new one when the policy changes (its tools included).

    An MCP server entry a group's merge keeps in place of the policy's entry of that id (same
    id, another connection: `own_entries`) lists its own tools: `entry_listings` has them by
    the entry's connection (`McpServerConfig.connection`); until it does, that entry offers none.
    """

    __slots__ = ("_by_groups", "_by_subject", "_entry_listings", "groups", "policy")

    def __init__(
        self,
        policy: Policy,
        entry_listings: Mapping[tuple[object, ...], McpServerListing] | None = None,
    ) -> None:
        self.policy = policy
        self.groups = GroupConfigurations.of(policy.configuration)
        self._entry_listings = entry_listings or {}
        self._by_groups: dict[frozenset[str], Policy] = {}
        self._by_subject: dict[tuple[frozenset[str], str], tuple[UserSettings, Policy]] = {}

    def for_caller(self, caller: Caller | None, user: UserSettings | None = None) -> Policy:
        """The policy that decides for `caller`, with `user` settings of their own when given
        (else the policy's). None is a person in no group (no sign-in, the shared token, a
        report without `--as`): a group's configurations never reach a request that names no
        caller."""
        base = self.for_groups(self.groups.matched(caller))
        if user is None or caller is None:
            return base
        key = (self.groups.matched(caller), caller.subject)
        held = self._by_subject.get(key)
        if held is not None and held[0] is user:
            return held[1]
        decided = base.with_user_settings(user)
        if len(self._by_subject) >= _MAX_PEOPLE:
            self._by_subject.pop(next(iter(self._by_subject)))
        self._by_subject[key] = (user, decided)
        return decided

    def for_groups(self, matched: frozenset[str]) -> Policy:
        """The policy of a caller whose groups named in the setting are `matched`."""
        if not self.groups.by_group:
            return self.policy
        held = self._by_groups.get(matched)
        if held is None:
            held = self._merged(matched)
            self._by_groups[matched] = held
        return held

    def applied(self, caller: Caller | None) -> tuple[AppliedConfiguration, ...]:
        """Which configurations decide for `caller`, and why (explain and the web page)."""
        plugins = self.policy.configuration.applied_plugins
        return self.groups.applied(plugins, self.groups.matched(caller))

    def decided_for(self, caller: Caller | None) -> str | None:
        """Whom a page or report decided for, in one line (None without a caller while no
        group names a configuration: everyone then has the whole configuration)."""
        if caller is None:
            return self.without_caller_note()
        groups = ", ".join(sorted(caller.groups)) or "none"
        return f"decided for {caller.subject} (groups: {groups})"

    def without_caller_note(self) -> str | None:
        """What a request without a caller is decided with, in one line (None while no group
        names a configuration: then everyone has the whole configuration)."""
        if not self.groups.by_group:
            return None
        left_out = [a for a in self.applied(None) if not a.applies]
        shown = "; ".join(f"{a.name} ({a.id}, {a.why})" for a in left_out) or "none loaded"
        return f"decided for a person in no group; group-only configurations: {shown}"

    def caller_document(self, caller: Caller) -> dict[str, object]:
        """Who a what-if decides for and which configurations applied, and why (`policy
        explain --as` and the web page's simulate form show the same)."""
        return {
            "caller": {"subject": caller.subject, "groups": sorted(caller.groups)},
            "configurations": [
                {"id": a.id, "name": a.name, "applies": a.applies, "why": a.why}
                for a in self.applied(caller)
            ],
            "groups_without_configurations": sorted(
                g for g in caller.groups if g not in self.groups.by_group
            ),
        }

    def own_entries(self) -> tuple[McpServerConfig, ...]:
        """The MCP server entries some caller is decided with in place of the policy's entry of
        that id (another connection): what must be listed for them besides the policy's own.

        A set of groups keeps, per id, the entry of the last plugin among everyone's and its
        groups' ones, so the entries in force anywhere are those of a person in no group and of
        each single group; worked out once per policy (a merge per group, no listing)."""
        if not self.groups.by_group:
            return ()
        known = {s.id: s.connection for s in self.policy.configuration.mcp_servers}
        entries: dict[tuple[object, ...], McpServerConfig] = {}
        for matched in (frozenset(), *(frozenset([g]) for g in self.groups.by_group)):
            for server in self._configuration_for(matched).mcp_servers:
                if known.get(server.id, server.connection) != server.connection:
                    entries.setdefault(server.connection, server)
        return tuple(entries.values())

    def _configuration_for(self, matched: frozenset[str]) -> PolicyConfiguration:
        from policy.merge import merge_plugins

        whole = self.policy.configuration
        wanted = {i for g in matched for i in self.groups.by_group[g]}
        named = self.groups.named
        plugins = [p for p in whole.applied_plugins if p.id not in named or p.id in wanted]
        return merge_plugins(
            plugins,
            whole.broken_organization_plugins,
            last_known_good=frozenset(p.id for p in whole.plugins_in_force if p.last_known_good),
        )

    def _merged(self, matched: frozenset[str]) -> Policy:
        from policy import Policy
        from policy.decide.registry import ToolRegistry
        from policy.mcp import McpTool, mcp_tools

        base = self.policy
        configuration = self._configuration_for(matched)
        kinds = [type(t) for t in base.tools if isinstance(t, McpTool)]
        kind = kinds[0] if kinds else McpTool
        listings = self._listings_of(configuration.mcp_servers)
        tools = (*base.base_tools, *mcp_tools(configuration.mcp_servers, listings, kind))
        registry = ToolRegistry(tools, configuration, base.user)
        return Policy(
            configuration=configuration,
            user=base.user,
            registry=registry,
            tools=tools,
            findings=base.findings,
            _registration=base._registration,
            mcp_listings=listings,
        )

    def _listings_of(self, servers: tuple[McpServerConfig, ...]) -> dict[str, McpServerListing]:
        """Each server's listing by id: the policy's for its own entry of the id, the entry's
        own (by connection) for an entry that differs; one not listed says why (a report shows
        it), never the other entry's tools."""
        from policy.mcp import not_listed

        base = self.policy
        known = {s.id: s.connection for s in base.configuration.mcp_servers}
        listings: dict[str, McpServerListing] = {}
        for server in servers:
            if known.get(server.id) == server.connection:
                listing = base.mcp_listings.get(server.id)
            else:
                listing = self._entry_listings.get(server.connection) or not_listed(
                    server, _OWN_ENTRY_NOT_LISTED
                )
            if listing is not None:
                listings[server.id] = listing
        return listings


_OWN_ENTRY_NOT_LISTED = (
    "this entry differs from the one in force for everyone (its command, URL, headers or "
    "auth) and is listed on its own, live only (not from the state directory, not offline)"
)


_MAX_PEOPLE = 4096
"""People whose own-settings policy is kept at once (the oldest made is dropped first)."""


class UserSettingsFolder:
    """Each person's own user settings: `<folder>/<subject>.yaml` (the `sub` percent-encoded,
    so no subject names a path outside the folder), in the format of the user settings file.

    A person without a file has the organization's defaults. A file is read again only when it
    changed (its size and modification time), so a request costs one `stat`. A file that does
    not parse raises `UserSettingsError` naming file:line.
    """

    __slots__ = ("_held", "folder")

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self._held: dict[str, tuple[tuple[int, int], UserSettings]] = {}

    def path_for(self, subject: str) -> Path:
        from urllib.parse import quote

        name = quote(subject, safe="-_@+=,")
        if not name or name.startswith("."):
            name = "%2E" + name[1:] if name else "%00"
        if len(name) > 200:  # beyond what a file system allows in one name
            name = "sha256-" + subject_hash(subject)
        return self.folder / f"{name}.yaml"

    def settings_for(self, subject: str) -> UserSettings:
        from policy.configuration import UserSettings
        from policy.user_settings import load_user_settings

        path = self.path_for(subject)
        try:
            status = path.stat()
        except FileNotFoundError:
            self._held.pop(subject, None)
            return UserSettings()
        stamp = (status.st_size, status.st_mtime_ns)
        held = self._held.get(subject)
        if held is not None and held[0] == stamp:
            return held[1]
        settings = load_user_settings(path)
        self._held[subject] = (stamp, settings)
        return settings
