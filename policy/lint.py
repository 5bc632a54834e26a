"""Warnings for `policy check`: things that load fine but probably do not do what was meant.

Each rule reads the merged configuration (with provenance) and the tool definitions, and names
the file:line of the entry it is about. Rules never change anything and never raise; their
`code`s are stable for tooling.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from policy._patterns import LazyPattern
from policy.config.settings import OVERRIDE_SUFFIX, SETTING_KEYS, unknown_key
from policy.configuration import Finding, ManagedSetting, PolicyConfiguration, Severity
from policy.definitions import ToolDefinition
from policy.provenance import SourceLocation
from policy.resolve import (
    ResolvedSettings,
    field_problem,
    misspelled_tool_ids,
    resolve_tool_settings,
    setting_choices,
    setting_text,
    value_problem,
)
from policy.secrets import is_encrypted
from policy.suggest import HintBudget
from policy.vocabulary import InjectionFilterKind, PluginOrigin, ProviderKind, ToolActivation

if TYPE_CHECKING:
    from policy import Policy
    from policy.mcp import McpServerListing
    from policy.plugins import ConfigurationPlugin
    from policy.provenance import Origin
    from policy.tools import Tool

ENABLE_TOOLS = "DataTools.EnableTools"
_DISABLED = "DataTools.DisabledToolIds"
MINIMUMS = "DataTools.MinimumProviderConfidenceByToolId"
LOCKED = "DataTools.LockedToolSettings"
DEFAULTS = "DataTools.DefaultToolSettings"
_DEFAULT_IDS = "DataTools.DefaultToolIdsByComponent"

#: Provider kinds the released AI Studio does not know (they exist only in its tool line).
_AI_STUDIO_UNKNOWN_KINDS = frozenset({ProviderKind.IONOS, ProviderKind.LITE_LLM})


def _lint_policy(policy: Policy) -> tuple[Finding, ...]:
    """Every warning for a loaded policy, in rule order; duplicates of load findings left out.

    The plugins that took part (before the merge) let lint see what each plugin asked for,
    such as an `.AllowUserOverride` the key cannot honor.
    """
    definitions = {t.definition.id: t.definition for t in policy.tools}
    return lint_configuration(
        policy.configuration,
        definitions,
        policy.registry.is_known,
        policy.findings,
        policy.configuration.applied_plugins,
        {t.definition.id: t for t in policy.tools},
        functools.partial(_settings_without_keyring, policy),
        policy.mcp_listings,
    )


def _settings_without_keyring(policy: Policy, tool_id: str) -> ResolvedSettings:
    """A tool's settings as configured, the user's keyring left unread: `policy check` starts
    no keyring program. The rules across fields ask whether a value breaks the tool, which a
    secret only the keyring holds does not change (the value is compared with its default)."""
    definition = policy.registry.definition(tool_id)
    return resolve_tool_settings(
        definition, policy.configuration, policy.user, lambda _tool, _field: None
    )


def check_findings(policy: Policy) -> tuple[Finding, ...]:
    """What `policy check` reports for a loaded policy: the load findings, then lint's."""
    from policy.people import GroupConfigurations

    groups = GroupConfigurations.of(policy.configuration).findings
    return (*policy.findings, *_lint_policy(policy), *groups, *_user_names(policy))


def _user_names(policy: Policy) -> Iterable[Finding]:
    """The user's file names a tool or a setting that does not exist: a warning with the near
    miss (the value has no effect; the file itself loads, it may serve another installation)."""
    user = policy.user
    known = [t.definition.id for t in policy.tools]
    hints = HintBudget()

    def where(dotted: str) -> SourceLocation | None:
        return user.locations.get(dotted)

    def unknown_tool(tool_id: str, dotted: str) -> Finding:
        return _warning(
            "unknown-user-tool",
            f"{dotted}: unknown tool '{tool_id}'{hints.did_you_mean(tool_id, known)}; the entry has "
            "no effect (an app's own tool needs --tools-file)",
            where(dotted),
        )

    for tool_id, fields in user.tool_settings.items():
        if not policy.registry.is_known(tool_id):
            finding = unknown_tool(tool_id, f"tools.settings.{tool_id}")
            first = next((where(f"tools.settings.{tool_id}.{name}") for name in fields), None)
            yield finding if finding.location else replace(finding, location=first)
            continue
        properties = policy.registry.definition(tool_id).settings_schema.properties
        for name in fields:
            if name not in properties:
                dotted = f"tools.settings.{tool_id}.{name}"
                yield _warning(
                    "unknown-user-tool-setting",
                    f'{dotted}: {tool_id} has no setting "{name}"{hints.did_you_mean(name, properties)} '
                    f"(its settings: {', '.join(properties) or 'none'}); the entry has no effect",
                    where(dotted),
                )
    for tool_id in user.minimum_provider_confidence:
        if not policy.registry.is_known(tool_id):
            yield unknown_tool(tool_id, f"tools.minimum_provider_confidence.{tool_id}")
    for component, tool_ids in user.default_tool_ids_by_component.items():
        for tool_id in tool_ids:
            if not policy.registry.is_known(tool_id):
                yield unknown_tool(tool_id, f"tools.default_tool_ids_by_component.{component}")


def lint_configuration(
    configuration: PolicyConfiguration,
    definitions: Mapping[str, ToolDefinition],
    is_known: Callable[[str], bool] | None = None,
    already_reported: Iterable[Finding] = (),
    plugins: Sequence[ConfigurationPlugin] = (),
    tools: Mapping[str, Tool] | None = None,
    settings_of: Callable[[str], ResolvedSettings] | None = None,
    mcp_listings: Mapping[str, McpServerListing] | None = None,
) -> tuple[Finding, ...]:
    """Findings for a merged configuration. `tools` (by id) lets each setting value be checked by
    its tool's own field rule; without it only the definitions' offered values are checked.
    `settings_of(tool_id)` (the resolved settings in force) adds the rules across fields for each
    value in force: one that leaves its tool NOT_CONFIGURED is an error too. `mcp_listings` (by
    server id) are the known listings an MCP tool id `server__tool` is checked against."""
    earlier = tuple(already_reported)
    context = _Context(
        configuration, definitions, is_known or definitions.__contains__, earlier, tools or {}
    )
    context.settings_of = settings_of
    context.mcp_listings = mcp_listings or {}
    findings: list[Finding] = []
    for rule in _RULES:
        findings.extend(rule(context))
    findings.extend(_override_not_honored(plugins))
    reported = {(f.location, f.message) for f in earlier}
    return tuple(f for f in findings if (f.location, f.message) not in reported)


class _Context:
    def __init__(
        self,
        configuration: PolicyConfiguration,
        definitions: Mapping[str, ToolDefinition],
        is_known: Callable[[str], bool],
        reported: tuple[Finding, ...] = (),
        tools: Mapping[str, Tool] | None = None,
    ) -> None:
        self.tools = tools or {}
        self.settings_of: Callable[[str], ResolvedSettings] | None = None
        self.configuration = configuration
        self.definitions = definitions
        self.is_known = is_known
        self.said = {
            (finding.location, key) for finding in reported for key in _named_keys(finding.message)
        }
        self.known_tools = ", ".join(sorted(definitions)) or "none"
        self.hints = HintBudget()
        self.mcp_listings: Mapping[str, McpServerListing] = {}
        self.read_as = {
            typo: meant
            for meant, typos in misspelled_tool_ids(configuration, list(definitions)).items()
            for typo in typos
        }
        """Each misspelled id of DisabledToolIds and MinimumProviderConfidenceByToolId, and the
        tool the registry reads it as (the strict reading)."""
        self.local_plugin_ids = frozenset(
            p.id for p in configuration.plugins_in_force if p.origin is PluginOrigin.LOCAL
        )

    def severity(self, origin: Origin | None) -> Severity:
        """A mistake that leaves out of force what could have tightened the policy: an error
        in an organization plugin, a warning in a local one (it cannot loosen the organization's
        policy anyway)."""
        local = origin is not None and origin.plugin_id in self.local_plugin_ids
        return Severity.WARNING if local else Severity.ERROR

    def tool_id_problem(self, tool_id: str) -> tuple[bool, str] | None:
        """None for a known tool; else (checked, what to say after the id): checked False when
        the id names a tool of a configured MCP server no listing is known of."""
        if self.is_known(tool_id):
            return None
        server_name, separator, _ = tool_id.partition("__")
        server = next(
            (s for s in self.configuration.mcp_servers if separator and s.name == server_name),
            None,
        )
        if server is None:
            return True, (
                f"{self.hints.did_you_mean(tool_id, self.definitions)} (known: "
                f"{self.known_list()}; an app's own tool needs --tools-file FILE)"
            )
        listing = self.mcp_listings.get(server.id)
        if listing is None or not listing.ok:
            why = listing.status if listing is not None else "no listing is known"
            return False, f"not checked: server not listed (MCP server {server.name}: {why})"
        from policy.mcp import mcp_tool_id

        listed = [mcp_tool_id(server.name, t.name) for t in listing.tools]
        if tool_id in listed:
            return None
        return True, (
            f"{self.hints.did_you_mean(tool_id, listed)} (MCP server {server.name} lists: "
            f"{', '.join(listed) or 'no tools'})"
        )

    def already_said(self, location: SourceLocation | None, key: str) -> bool:
        """Loading already reported `key` (as `["key"]`) at this place; lint adds nothing.
        One set lookup, so lint stays linear however many findings share a line (a loop)."""
        return (location, key) in self.said

    def setting(self, key: str) -> ManagedSetting | None:
        return self.configuration.setting(key)

    def table(self, key: str) -> Mapping[str, Any]:
        setting = self.setting(key)
        return setting.value if setting is not None and isinstance(setting.value, Mapping) else {}

    def items(self, key: str) -> tuple[str, ...]:
        setting = self.setting(key)
        if setting is None or not isinstance(setting.value, tuple | list):
            return ()
        return tuple(str(v) for v in setting.value)

    def where(self, key: str, entry: str | None = None) -> SourceLocation | None:
        setting = self.setting(key)
        if setting is None:
            return None
        if entry is not None and entry in setting.entry_locations:
            return setting.entry_locations[entry]
        return setting.origin.location

    def known_list(self) -> str:
        return self.known_tools


_NAMED_KEY = LazyPattern(r'\["(.*?)"\]')


def _named_keys(message: str) -> list[str]:
    """The keys a message names in `["key"]` form (how loading names a setting it reports)."""
    return _NAMED_KEY.findall(message)


def _warning(code: str, message: str, location: SourceLocation | None) -> Finding:
    return Finding(Severity.WARNING, code, message, location)


def _split_tool_key(key: str) -> tuple[str, str]:
    tool_id, _, field = key.partition(".")
    return tool_id, field


# --- rules ------------------------------------------------------------------------------------


def _unknown_tool_ids(c: _Context) -> Iterable[Finding]:
    """A tool id that names no known tool. Where it would have switched a tool off, raised its
    confidence floor, given it effects or set a selection, the mistake may loosen the policy: an error (in an
    organization plugin); in a tool-settings key only with a near miss; in a chat template a
    warning (fewer tools is all it can mean)."""

    def unknown(
        tool_id: str, where: str, setting: ManagedSetting | None, entry: str, strict: bool
    ) -> Finding | None:
        if setting is not None and setting.key in (_DISABLED, MINIMUMS) and tool_id in c.read_as:
            return Finding(
                c.severity(setting.origin),
                "unknown-tool-id",
                f"{where} names the unknown tool '{tool_id}'; did you mean "
                f'"{c.read_as[tool_id]}"? Until it is fixed it is read as {c.read_as[tool_id]} '
                "(a typo here never leaves a tool on or below its level)",
                setting.entry_locations.get(entry, setting.origin.location),
            )
        problem = c.tool_id_problem(tool_id)
        if problem is None:
            return None
        checked, said = problem
        location = setting.entry_locations.get(entry, setting.origin.location) if setting else None
        if not checked:
            return _warning("unchecked-tool-id", f"{where} names '{tool_id}': {said}", location)
        severity = c.severity(setting.origin if setting else None)
        if not strict and "did you mean" not in said:
            severity = Severity.WARNING
        return Finding(
            severity,
            "unknown-tool-id",
            f"{where} names the unknown tool '{tool_id}'{said}: the entry has no effect",
            location,
        )

    found: list[Finding | None] = []
    disabled = c.setting(_DISABLED)
    found.extend(unknown(t, _DISABLED, disabled, t, True) for t in c.items(_DISABLED))
    minimums = c.setting(MINIMUMS)
    found.extend(unknown(t, MINIMUMS, minimums, t, True) for t in c.table(MINIMUMS))
    from policy.catalog import TOOL_EFFECTS

    effects = c.setting(TOOL_EFFECTS)  # a typo leaves the tool with its own, maybe fewer, effects
    found.extend(unknown(t, TOOL_EFFECTS, effects, t, True) for t in c.table(TOOL_EFFECTS))
    from policy.approvals import REQUIRE_APPROVAL_TOOL_IDS, is_tool_glob

    approvals = c.setting(REQUIRE_APPROVAL_TOOL_IDS)  # a typo leaves its calls unapproved
    found.extend(
        unknown(t, REQUIRE_APPROVAL_TOOL_IDS, approvals, t, True)
        for t in c.items(REQUIRE_APPROVAL_TOOL_IDS)
        if not is_tool_glob(t)
    )
    from policy.quotas import CALL_LIMITS

    limits = c.setting(CALL_LIMITS)  # a typo leaves the tool's calls unlimited
    found.extend(
        unknown(t, CALL_LIMITS, limits, t, True)
        for t in c.table(CALL_LIMITS)
        if not is_tool_glob(t)
    )
    for key in (LOCKED, DEFAULTS):
        for entry in c.table(key):
            tool_id, _ = _split_tool_key(entry)
            found.append(unknown(tool_id, f'{key}["{entry}"]', c.setting(key), entry, False))
    for component, ids in c.table(_DEFAULT_IDS).items():
        for tool_id in ids if isinstance(ids, tuple | list) else ():
            where = f'{_DEFAULT_IDS}["{component}"]'
            found.append(unknown(tool_id, where, c.setting(_DEFAULT_IDS), component, True))
    yield from (f for f in found if f is not None)
    for template in c.configuration.chat_templates:
        for tool_id in template.tool_ids or ():
            problem = c.tool_id_problem(tool_id)
            if problem is not None:
                yield _warning(
                    "unknown-tool-id" if problem[0] else "unchecked-tool-id",
                    f"chat template '{template.name}' (ToolIds) names the unknown tool "
                    f"'{tool_id}'{problem[1]}; the template offers it only once a tool of that "
                    "id is installed",
                    template.origin.location if template.origin else None,
                )


def _approval_globs(c: _Context) -> Iterable[Finding]:
    """An approval entry that names no tool: a `DataTools.RequireApprovalToolIds` glob that
    matches no known tool, an MCP server's `RequireApproval` glob or name that matches none of
    the tools its listing names. A missed approval loosens the policy (the calls it meant run
    unapproved), so, like an unknown id there, it is an error in an organization plugin; an MCP
    plain name is read as the tool it most likely meant until it is fixed (`ApprovalRules`).
    Unchecked (a warning) while a server whose tools the glob could match is not listed."""
    from fnmatch import fnmatchcase

    from policy.approvals import REQUIRE_APPROVAL_TOOL_IDS, is_tool_glob

    yield from _globs_matching_nothing(
        c,
        REQUIRE_APPROVAL_TOOL_IDS,
        c.items(REQUIRE_APPROVAL_TOOL_IDS),
        "approval-matches-nothing",
        "no call waits for approval because of it; a misspelled glob leaves the calls it meant "
        "unapproved",
    )
    for server in c.configuration.mcp_servers:
        listing = c.mcp_listings.get(server.id)
        if not server.require_approval or listing is None or not listing.ok:
            continue
        names = [t.name for t in listing.tools]
        where = server.origin.location if server.origin is not None else None
        for glob in server.require_approval:
            if any(fnmatchcase(name, glob) for name in names):
                continue
            meant = None if is_tool_glob(glob) else c.hints.closest_name(glob, names)
            said = (
                f'; did you mean "{meant}"? Until it is fixed it is read as {meant}'
                if meant
                else ""
            )
            yield Finding(
                c.severity(server.origin),
                "approval-matches-nothing",
                f"RequireApproval of MCP server \"{server.name}\" names '{glob}', which matches "
                f"none of its tools{said} (it lists: {', '.join(names) or 'no tools'}); a "
                "misspelled name leaves the calls it meant unapproved",
                where,
            )


def _limit_globs(c: _Context) -> Iterable[Finding]:
    """A `DataGateway.CallLimits` glob that matches no known tool: a misspelled one leaves the
    calls it meant unlimited, so it is an error in an organization plugin, as an approval's is."""
    from policy.quotas import CALL_LIMITS

    yield from _globs_matching_nothing(
        c,
        CALL_LIMITS,
        tuple(c.table(CALL_LIMITS)),
        "limit-matches-nothing",
        "no call is limited because of it; a misspelled glob leaves the calls it meant unlimited",
    )


def _globs_matching_nothing(
    c: _Context, key: str, entries: Iterable[str], code: str, consequence: str
) -> Iterable[Finding]:
    """Each glob among `entries` of setting `key` that matches no known tool (a warning while
    an MCP server whose tools it could match is not listed)."""
    from fnmatch import fnmatchcase

    from policy.approvals import is_tool_glob

    setting = c.setting(key)
    known = list(c.definitions)
    unlisted = [
        s
        for s in c.configuration.mcp_servers
        if not (listing := c.mcp_listings.get(s.id)) or not listing.ok
    ]
    for glob in (g for g in entries if is_tool_glob(g)):
        if any(fnmatchcase(tool_id, glob) for tool_id in known):
            continue
        assert setting is not None
        from policy.mcp import TOOL_ID_SEPARATOR  # only for a glob that matches nothing

        location = setting.entry_locations.get(glob, setting.origin.location)
        literal = re.split(r"[*?\[]", glob, maxsplit=1)[0]
        unseen = [
            s.name
            for s in unlisted
            if (s.name + TOOL_ID_SEPARATOR).startswith(literal)
            or literal.startswith(s.name + TOOL_ID_SEPARATOR)
        ]
        if unseen:
            yield _warning(
                "unchecked-tool-id",
                f"{key} names '{glob}', which matches no known tool; not checked against MCP "
                f"server {', '.join(unseen)} (not listed)",
                location,
            )
            continue
        yield Finding(
            c.severity(setting.origin),
            code,
            f"{key} names '{glob}', which matches no tool (known: {c.known_list()}): {consequence}",
            location,
        )


def _unknown_datatools_keys(c: _Context) -> Iterable[Finding]:
    known = ", ".join(k for k in SETTING_KEYS if k.startswith("DataTools."))
    for key, setting in c.configuration.settings.items():
        base = key[: -len(OVERRIDE_SUFFIX)] if key.endswith(OVERRIDE_SUFFIX) else key
        if (
            base.startswith("DataTools.")
            and base not in SETTING_KEYS
            and not c.already_said(setting.origin.location, key)
        ):
            unknown = unknown_key(base, c.hints)
            yield Finding(
                c.severity(setting.origin) if unknown.misses_a_key_in_force else Severity.WARNING,
                "unknown-datatools-key",
                f'unknown key "{key}"{unknown.hint}; toolpolicy ignores it. '
                f"DataTools keys: {known}",
                setting.origin.location,
            )


def _tool_setting_values(c: _Context) -> Iterable[Finding]:
    closed: dict[str, frozenset[tuple[str, str]]] = {}

    def keeps_closed(tool_id: str, table: str, entry: str) -> bool:
        """The entry is a near miss that keeps its tool from being offered (the runtime's rule,
        `resolve.misspelled_fields`)."""
        if tool_id not in closed:
            settings = c.settings_of(tool_id) if c.settings_of is not None else None
            missed = settings.misspelled if settings is not None else ()
            closed[tool_id] = frozenset((m.table, m.entry) for m in missed)
        return (table, entry) in closed[tool_id]

    for key in (LOCKED, DEFAULTS):
        for entry, value in c.table(key).items():
            tool_id, field_name = _split_tool_key(entry)
            definition = c.definitions.get(tool_id)
            if definition is None:
                continue
            properties = definition.settings_schema.properties
            location = c.where(key, entry)
            if not field_name or field_name not in properties:
                fields = ", ".join(properties) or "none"
                hint = c.hints.did_you_mean(field_name, properties)
                setting = c.setting(key)
                if keeps_closed(tool_id, key, entry):
                    severity, effect = Severity.ERROR, f"{tool_id} is not offered until it is fixed"
                else:
                    severity = c.severity(setting.origin if setting else None)
                    severity = severity if hint else Severity.WARNING
                    effect = "the entry has no effect"
                yield Finding(
                    severity,
                    "unknown-tool-setting",
                    f'{key}["{entry}"]: {tool_id} has no setting "{field_name}"{hint} '
                    f"(its settings: {fields}); {effect}",
                    location,
                )
                continue
            if properties[field_name].secret:
                continue
            problem = _value_problem(c, definition, field_name, setting_text(value))
            if problem is not None:
                code = (
                    "value-not-allowed"
                    if setting_choices(properties[field_name])
                    else "invalid-tool-setting"
                )
                yield Finding(
                    Severity.ERROR,
                    code,
                    f'{key}["{entry}"]: {problem}. {tool_id} is not configured until it is fixed',
                    location,
                )


def _value_problem(c: _Context, definition: ToolDefinition, name: str, text: str) -> str | None:
    """The field's rule; for the value in force also the rules across fields (`value_problem`)."""
    tool = c.tools.get(definition.id)
    resolved = c.settings_of(definition.id) if c.settings_of is not None else None
    if resolved is None or resolved.fields[name].plain() != text:
        return field_problem(definition, name, text, tool)
    return value_problem(
        definition,
        resolved.values_for_tool(),
        name,
        text,
        cast("Tool", tool) if hasattr(tool, "validate_configuration") else None,
        resolved.value_below(name),
    )


def _secrets(c: _Context) -> Iterable[Finding]:
    for key in (LOCKED, DEFAULTS):
        for entry, value in c.table(key).items():
            tool_id, field_name = _split_tool_key(entry)
            definition = c.definitions.get(tool_id)
            spec = definition.settings_schema.properties.get(field_name) if definition else None
            if spec is None or not spec.secret:
                continue
            location = c.where(key, entry)
            if key == DEFAULTS:
                yield _warning(
                    "secret-in-defaults",
                    f'{DEFAULTS}["{entry}"] sets a secret; secrets are never taken from '
                    f"defaults. Put it, encrypted, in {LOCKED} instead",
                    location,
                )
            elif str(value).strip() and not is_encrypted(value):
                yield _warning(
                    "plaintext-secret",
                    f'{LOCKED}["{entry}"] holds a plaintext secret, which is refused (the field '
                    "stays empty). Encrypt it with `policy encrypt` and use the ENC:v1: value",
                    location,
                )
    for provider in c.configuration.providers:
        raw = provider.additional.get("APIKey") if provider.additional else None
        if isinstance(raw, str) and raw.strip() and not is_encrypted(raw):
            location = provider.origin.location if provider.origin else None
            yield _warning(
                "plaintext-secret",
                f"provider '{provider.name}' has a plaintext APIKey, which is ignored; "
                "encrypt it with `policy encrypt`",
                location,
            )


def _override_not_honored(plugins: Sequence[ConfigurationPlugin]) -> Iterable[Finding]:
    for plugin in plugins:
        for key, setting in plugin.settings.items():
            if setting.override_requested and not setting.allow_user_override:
                yield _warning(
                    "override-not-honored",
                    f"{key}{OVERRIDE_SUFFIX} = true has no effect: {key} is always locked "
                    f"(plugin {plugin.name})",
                    setting.override_location or setting.location,
                )


def _replaced_lists(c: _Context) -> Iterable[Finding]:
    for key, setting in c.configuration.settings.items():
        spec = SETTING_KEYS.get(key)
        if spec is not None and spec.adds_up:
            continue
        winner = _entries(setting.value)
        if winner is None:
            continue
        kept = set(winner)
        for beaten in setting.beaten:
            lost = _entries(beaten.value)
            if lost is None:
                continue
            dropped = [entry for entry in lost if entry not in kept]
            if not dropped:
                continue
            yield _warning(
                "list-replaced",
                f"{key} of {setting.origin.plugin_name} replaces the one of "
                f"{beaten.origin.plugin_name} ({beaten.origin.location}) and so drops: "
                f"{', '.join(dropped)}. Lists and tables replace, they do not merge: repeat "
                "the entries you want to keep",
                setting.origin.location,
            )


def _entries(value: Any) -> list[str] | None:
    if isinstance(value, Mapping):
        return [str(k) for k in value]
    if isinstance(value, tuple | list):
        return [str(v) for v in value]
    return None


def _no_effect(c: _Context) -> Iterable[Finding]:
    enable = c.setting(ENABLE_TOOLS)
    switched_off_by_administrator = not c.configuration.fails_closed
    if (
        enable is not None
        and enable.value is False
        and enable.locked
        and switched_off_by_administrator
    ):
        for key in (_DISABLED, MINIMUMS, LOCKED, DEFAULTS, _DEFAULT_IDS):
            if c.setting(key) is not None:
                yield _warning(
                    "no-effect",
                    f"{key} has no effect while {ENABLE_TOOLS} is false ({enable.origin.location})",
                    c.where(key),
                )
    locked = c.table(LOCKED)
    for entry in c.table(DEFAULTS):
        if entry in locked:
            yield _warning(
                "no-effect",
                f'{DEFAULTS}["{entry}"] has no effect: {LOCKED} sets the same field '
                f"({c.where(LOCKED, entry)})",
                c.where(DEFAULTS, entry),
            )
    disabled = set(c.items(_DISABLED))
    for key in (MINIMUMS, LOCKED, DEFAULTS):
        for entry in c.table(key):
            tool_id = entry if key == MINIMUMS else _split_tool_key(entry)[0]
            if tool_id in disabled:
                yield _warning(
                    "no-effect",
                    f'{key}["{entry}"] has no effect while {tool_id} is in {_DISABLED}',
                    c.where(key, entry),
                )
    context_tools = {
        tool_id for tool_id, d in c.definitions.items() if d.activation is ToolActivation.CONTEXT
    }
    for component, ids in c.table(_DEFAULT_IDS).items():
        for tool_id in ids if isinstance(ids, tuple | list) else ():
            if tool_id in context_tools:
                yield _warning(
                    "no-effect",
                    f'{_DEFAULT_IDS}["{component}"] names {tool_id}, which offers itself from the '
                    "chat's context and is never part of a selection",
                    c.where(_DEFAULT_IDS, component),
                )
    for template in c.configuration.chat_templates:
        for tool_id in template.tool_ids or ():
            if tool_id in context_tools:
                yield _warning(
                    "no-effect",
                    f"chat template '{template.name}' names {tool_id}, which cannot be selected "
                    "(it offers itself when the chat has data sources)",
                    template.origin.location if template.origin else None,
                )


def _ai_studio_compatibility(c: _Context) -> Iterable[Finding]:
    minimums = c.setting(MINIMUMS)
    if minimums is not None and not minimums.locked:
        yield _warning(
            "ai-studio-compat",
            f"{MINIMUMS}{OVERRIDE_SUFFIX} = true is honored by toolpolicy, but AI Studio's "
            "release keeps this table locked",
            minimums.origin.location,
        )
    default_ids = c.setting(_DEFAULT_IDS)
    if default_ids is not None:
        yield _warning(
            "ai-studio-compat",
            f"{_DEFAULT_IDS} is a user setting in AI Studio; configuration plugins cannot set it "
            "there (toolpolicy applies it)",
            default_ids.origin.location,
        )
    for provider in c.configuration.providers:
        if provider.kind in _AI_STUDIO_UNKNOWN_KINDS:
            yield _warning(
                "ai-studio-compat",
                f"provider '{provider.name}' uses the kind {provider.kind.value}, which AI "
                "Studio's release does not know; it would skip this provider",
                provider.origin.location if provider.origin else None,
            )


def _injection_filter(c: _Context) -> Iterable[Finding]:
    """MODEL asked for but not in force is an error: the administrator believes a model checks
    every text while the structural rules do (they stay in force: it fails closed)."""
    from policy.injection_filter import FILTER_KEY, PROVIDER_KEY, injection_filter_choice

    choice = injection_filter_choice(c.configuration)
    if choice.problem:
        yield Finding(
            Severity.ERROR,
            "injection-filter-not-in-force",
            f'CONFIG["SETTINGS"]["{FILTER_KEY}"] = "MODEL" is not in force: {choice.problem}; '
            "the STRUCTURAL filter stays on",
            choice.location,
        )
    elif choice.configured is InjectionFilterKind.STRUCTURAL and c.setting(PROVIDER_KEY):
        yield _warning(
            "no-effect",
            f'{PROVIDER_KEY} has no effect while {FILTER_KEY} is STRUCTURAL (set it to "MODEL")',
            c.where(PROVIDER_KEY),
        )


def _token_exchange(c: _Context) -> Iterable[Finding]:
    """An MCP server acting for the caller that cannot: its calls are refused (fails closed),
    which the administrator did not mean."""
    from policy.sign_in import token_exchange_problems

    for message, where in token_exchange_problems(c.configuration):
        yield Finding(Severity.ERROR, "token-exchange-not-possible", message, where)


def _sign_in_without_audience(c: _Context) -> Iterable[Finding]:
    """A sign-in whose tokens are not checked for an audience: the serving commands refuse to
    serve it, which `policy check` says before a deployment does."""
    from policy.sign_in import audience_problems

    for message, where in audience_problems(c.configuration):
        yield Finding(Severity.ERROR, "sign-in-without-audience", message, where)


def _administrators_without_sign_in(c: _Context) -> Iterable[Finding]:
    """Administrator groups with nobody signed in to be in them: whoever reaches `policy serve`
    (its token, or this machine) may decide for anyone, which the key does not change."""
    from policy.people import ADMINISTRATOR_GROUPS
    from policy.sign_in import SignInSettings

    if c.setting(ADMINISTRATOR_GROUPS) is not None and SignInSettings.of(c.configuration) is None:
        yield _warning(
            "no-effect",
            f"{ADMINISTRATOR_GROUPS} has no effect without DataGateway.Issuer: without sign-in, "
            "whoever reaches policy serve (its --token, or this machine) may simulate anyone",
            c.where(ADMINISTRATOR_GROUPS),
        )


def _undeclared_effects(c: _Context) -> Iterable[Finding]:
    """While a flow rule is on, each tool that declares no effects counts as having all four
    (fail closed), so BLOCK never offers it and APPROVE asks for every call: named, so the
    administrator declares them."""
    from policy.catalog import FLOW_RULE, TOOL_EFFECTS, flow_rule, tool_effects
    from policy.flow import FlowRule

    rule = flow_rule(c.configuration)
    if rule is FlowRule.OFF:
        return
    for tool_id, tool in sorted(c.tools.items()):
        if tool_effects(tool, c.configuration).declares_nothing:
            yield _warning(
                "undeclared-effects",
                f"{tool_id} declares no effects, so under {FLOW_RULE} {rule.value} it counts as "
                "having all four (UNTRUSTED_CONTENT, PRIVATE_DATA, SENDS_OUT, CHANGES_STATE)"
                + (
                    " and is never offered"
                    if rule is FlowRule.BLOCK
                    else " and every call needs approval"
                )
                + f'; declare them in its definition or in {TOOL_EFFECTS}["{tool_id}"]',
                c.where(FLOW_RULE),
            )


def _eri_data_sources(c: _Context) -> Iterable[Finding]:
    """An ERI_V1 entry toolpolicy's client cannot search (its Kerberos sign-in, an address it
    cannot read, a secret over plain http to another machine) is never offered: said at its
    line, so the administrator does not wait for passages that never come. With a sign-in
    configured, an entry that sends the OS user name is named too: the serving commands never
    search it for the people they answer."""
    from policy.config.data_sources import (
        OS_USER_NAME_REFUSAL,
        eri_client_problem,
        sends_os_user_name,
    )
    from policy.sign_in import SignInSettings

    signs_in = SignInSettings.of(c.configuration) is not None
    for source in c.configuration.data_sources:
        if source.kind != "ERI_V1":
            continue
        where = source.origin.location if source.origin else None
        problem = eri_client_problem(
            str(source.raw.get("Hostname", "")), str(source.raw.get("AuthMethod", ""))
        )
        if problem is not None:
            yield _warning(
                "data-source-not-searched",
                f"The data source {source.name!r} is never searched: {problem}.",
                where,
            )
        elif signs_in and sends_os_user_name(source.raw):
            yield _warning(
                "data-source-not-searched",
                f"The data source {source.name!r} is not searched for signed-in people "
                f"(DataGateway.Issuer is set): {OS_USER_NAME_REFUSAL}.",
                where,
            )


_RULES: tuple[Callable[[_Context], Iterable[Finding]], ...] = (
    _injection_filter,
    _undeclared_effects,
    _token_exchange,
    _sign_in_without_audience,
    _administrators_without_sign_in,
    _unknown_tool_ids,
    _approval_globs,
    _limit_globs,
    _unknown_datatools_keys,
    _tool_setting_values,
    _secrets,
    _replaced_lists,
    _no_effect,
    _ai_studio_compatibility,
    _eri_data_sources,
)
