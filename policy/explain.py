"""Rendering decisions for people and for CI: text, JSON and YAML; the matrix; the diff.

Decisions arrive as data (`policy.decision`); this module only turns them into documents and
tables and never decides anything itself. Secrets are masked on the way: whatever reaches a
document went through `to_document`, which never emits a `SecretValue`'s content.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policy._dataclass import dataclass
from policy.configuration import PolicyConfiguration, ProviderConfig, SecretValue
from policy.decision import Evidence, OfferDecision, ProviderSummary
from policy.provenance import Origin, SourceLocation
from policy.redaction import MASK
from policy.secrets import is_encrypted, without_user_info
from policy.terminal import terminal_document, terminal_json, terminal_yaml
from policy.terminal import terminal_safe as terminal_safe  # still importable from here
from policy.vocabulary import (
    COMPONENT_NAMES,
    Component,
    ConfidenceLevel,
    ProviderKind,
    SettingSource,
    ToolActivation,
    ToolOfferBlockReason,
)

if TYPE_CHECKING:
    from policy import Policy
    from policy.decide.registry import ToolRegistry
    from policy.flow import ChatHoldings
    from policy.resolve import MinimumConfidence, ResolvedSetting
    from policy.tools import Tool

_OUTPUT_FORMATS = ("table", "json", "yaml")


def to_document(value: Any) -> Any:
    """Plain JSON-ready data from decisions, settings, origins; secrets masked."""
    if isinstance(value, SecretValue) or hasattr(value, "reveal"):
        return MASK
    if isinstance(value, Enum):
        return value.name if isinstance(value.value, int) else value.value
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Origin):
        return _origin_document(value)
    if isinstance(value, SourceLocation):
        return {"file": value.file, "line": value.line}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_document(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return to_document(value.model_dump(mode="python", by_alias=True))
    if isinstance(value, Mapping):
        return {str(to_document(k)): to_document(v) for k, v in value.items()}
    if isinstance(value, Iterable):
        return [to_document(item) for item in value]
    return str(value)


def _origin_document(origin: Origin | None) -> dict[str, Any] | None:
    if origin is None:
        return None
    return {
        "plugin": origin.plugin_name or origin.plugin_id,
        "file": origin.location.file,
        "line": origin.location.line,
    }


# --- single decisions -------------------------------------------------------------------------


def decision_document(decision: OfferDecision) -> dict[str, Any]:
    """The JSON contract of `policy explain TOOL_ID`."""
    return {
        "tool": decision.tool_id,
        "component": decision.component.value,
        "provider": _decision_provider(decision.provider),
        "offered": decision.reason is ToolOfferBlockReason.NONE,
        "reason": decision.reason.value,
        "message": decision.message,
        "checks": [
            {
                "check": check.guards.value,
                "name": check.title,
                "passed": bool(check.passed),
                "detail": check.detail,
                "evidence": [evidence_document(e) for e in check.evidence],
            }
            for check in decision.checks
        ],
    }


def _decision_provider(provider: ProviderSummary | None) -> dict[str, Any]:
    if provider is None:
        return {"id": None, "kind": None, "model": None, "confidence": None}
    return {
        "id": provider.id,
        "kind": provider.kind.value,
        "model": provider.model,
        "confidence": provider.confidence.name,
    }


def evidence_document(evidence: Evidence) -> dict[str, Any]:
    """Evidence as JSON data, its value as its maker masked it (a configured value's user info,
    a secret): never a pattern applied to every text, which hid parts of a pin's diff."""
    document: dict[str, Any] = to_document(evidence)
    return document


def _evidence_text(evidence: Evidence) -> str:
    """One line: the setting looked at, its value, and who set it (plugin and file:line); every
    value `terminal_safe`."""
    document = terminal_document(evidence_document(evidence))
    parts = [str(document.get("key") or "")]
    if "value" in document:
        parts.append(f"= {value_text(document['value'])}")
    where = [str(document["source"])] if document.get("source") else []
    origin = document.get("origin")
    if isinstance(origin, dict):
        where.append(f"{origin.get('plugin') or ''} ({_location_text(origin)})".strip())
    elif isinstance(document.get("location"), dict):
        where.append(_location_text(document["location"]))
    text = " ".join(p for p in parts if p)
    return f"{text} — {', '.join(where)}" if where else text


def _location_text(location: Any) -> str:
    if not isinstance(location, dict) or not location.get("file"):
        return ""
    line = location.get("line") or 0
    return f"{location['file']}:{line}" if line else str(location["file"])


def value_text(value: Any) -> str:
    """A configured value as an administrator writes it, in Lua/JSON notation: `true`, `42`,
    `{"chat": true}`, `""` for an empty text, `(not set)` for none; other text as it is.
    `policy explain` prints evidence so, and `policy serve`'s pages show every value so."""
    if value is None:
        return "(not set)"
    if isinstance(value, str):
        return value if value else '""'
    return json.dumps(value, ensure_ascii=False)


def decision_text(decision: OfferDecision, provider_name: str = "") -> str:
    """What `policy explain TOOL_ID` prints: the verdict, then every check in order; every value
    from the configuration is `terminal_safe`."""
    document = terminal_document(decision_document(decision))
    provider_name = terminal_safe(provider_name)
    provider = document["provider"]
    provider_text = (
        f"{provider_name or provider['id']} ({provider['kind']}, model "
        f"{provider['model'] or '-'}, confidence {provider['confidence']})"
        if provider["id"] is not None or provider["kind"] is not None
        else "no provider"
    )
    verdict = "OFFERED" if document["offered"] else f"NOT OFFERED: {document['reason']}"
    lines = [
        f"{document['tool']} in {document['component']} for {provider_text}",
        f"  {verdict}",
    ]
    if document["message"]:
        lines.append(f"  {document['message']}")
    lines.append("")
    for number, (check, raw) in enumerate(
        zip(document["checks"], decision.checks, strict=True), start=1
    ):
        mark = "pass" if check["passed"] else "FAIL"
        lines.append(f"  {number}. [{mark}] {check['name']}: {check['detail']}")
        lines.extend(f"       - {_evidence_text(e)}" for e in raw.evidence)
    return "\n".join(lines)


# --- the matrix -------------------------------------------------------------------------------


def ordered_tool_ids(policy: Policy) -> list[str]:
    """The tools in the order every view lists them: by display name, then id."""
    tools = sorted(policy.tools, key=lambda t: (t.display_name.casefold(), t.definition.id))
    return [tool.definition.id for tool in tools]


def kind_provider(kind: ProviderKind, model: str = "") -> ProviderConfig:
    """A stand-in for any provider of `kind` (and `model`), to decide for one not configured."""
    return ProviderConfig(
        id=f"any-{kind.value.lower()}",
        name=f"any {kind.value} provider",
        kind=kind,
        model=model,
    )


@dataclass(frozen=True, slots=True)
class _Matrix:
    """Decisions for every tool (rows) × provider (columns) in one component."""

    component: Component
    providers: tuple[ProviderConfig, ...]
    tool_ids: tuple[str, ...]
    decisions: Mapping[tuple[str, str], OfferDecision]
    context_tool_ids: frozenset[str] = frozenset()
    """Tools that offer themselves from the chat's context (semantic_search): "offered" there
    means "offered whenever the chat gives them something to do"."""
    holdings: ChatHoldings | None = None
    """What the chat was supposed to hold (`--chat-holds`, `--chat-id`, the web page's
    what-if); None: decided for a chat that holds nothing."""

    def decision(self, tool_id: str, provider_id: str) -> OfferDecision:
        return self.decisions[(tool_id, provider_id)]


def build_matrix(
    registry: ToolRegistry,
    tool_ids: Sequence[str],
    providers: Sequence[ProviderConfig],
    component: Component,
    holdings: ChatHoldings | None = None,
) -> _Matrix:
    """Every decision of the matrix; with `holdings`, FLOW_RULE decides as if the chat held
    them."""
    from policy.flow import NO_HOLDINGS

    held = NO_HOLDINGS if holdings is None else holdings
    decisions = {
        (tool_id, provider.id): registry.offer_decision(tool_id, provider, component, holdings=held)
        for tool_id in tool_ids
        for provider in providers
    }
    context = frozenset(
        tool_id
        for tool_id in tool_ids
        if registry.is_known(tool_id)
        and registry.definition(tool_id).activation is ToolActivation.CONTEXT
    )
    return _Matrix(component, tuple(providers), tuple(tool_ids), decisions, context, holdings)


def _matrix_document(matrix: _Matrix) -> dict[str, Any]:
    """The matrix as JSON data; `chat_holds` (the effects supposed held) only for a what-if."""
    held = {} if matrix.holdings is None else {"chat_holds": held_names(matrix.holdings)}
    return {
        "component": matrix.component.value,
        **held,
        "providers": [
            {"id": p.id, "name": p.name, "kind": p.kind.value, "model": p.model}
            for p in matrix.providers
        ],
        "tools": list(matrix.tool_ids),
        "context_tools": [t for t in matrix.tool_ids if t in matrix.context_tool_ids],
        "decisions": [
            decision_document(matrix.decision(tool_id, provider.id))
            for tool_id in matrix.tool_ids
            for provider in matrix.providers
        ],
    }


def held_names(holdings: ChatHoldings) -> list[str]:
    """The effects a chat holds, in their declared order."""
    from policy.flow import HELD_EFFECTS

    return [effect.value for effect in HELD_EFFECTS if effect in holdings.effects]


def matrix_table(matrix: _Matrix) -> tuple[list[str], list[list[str]]]:
    """Header and rows: a tool per row, "offered" or the blocking reason per provider."""
    header = [
        "tool",
        *(f"{terminal_safe(p.name or p.id)}\n{p.kind.value}" for p in matrix.providers),
    ]
    rows = [
        [
            f"{tool_id} (context)" if tool_id in matrix.context_tool_ids else tool_id,
            *(_cell(matrix.decision(tool_id, provider.id)) for provider in matrix.providers),
        ]
        for tool_id in matrix.tool_ids
    ]
    return header, rows


def _cell(decision: OfferDecision) -> str:
    return "offered" if decision.reason is ToolOfferBlockReason.NONE else decision.reason.value


# --- the prompt-injection filter ---------------------------------------------------------------


def injection_filter_document(policy: Policy) -> dict[str, Any]:
    """The filter in force (`DataTools.InjectionFilter`), the provider it asks, and why a
    configured MODEL filter is not in force."""
    from policy.injection_filter import injection_filter_choice

    choice = injection_filter_choice(policy.configuration)
    return {
        "in_force": choice.kind.value,
        "configured": choice.configured.value,
        "provider": (
            {"id": choice.provider.id, "name": choice.provider.name, "model": choice.provider.model}
            if choice.provider is not None
            else None
        ),
        "problem": choice.problem,
        "summary": choice.summary,
    }


# --- MCP servers ------------------------------------------------------------------------------


def mcp_servers_document(policy: Policy) -> list[dict[str, Any]]:
    """Every configured MCP server with where its tools come from (`listed live`, `cached at
    <time>`, `not listed: <error>`): a server whose tools are unknown is a row, never silence."""
    from policy.mcp import not_listed

    rows = []
    for server in policy.configuration.mcp_servers:
        listing = policy.mcp_listings.get(server.id) or not_listed(server, "not listed")
        rows.append(
            {
                "name": server.name,
                "id": server.id,
                "transport": server.transport.value,
                "endpoint": server.endpoint,
                **listing.document(),
            }
        )
    return rows


def matrix_report(policy: Policy, matrix: _Matrix) -> dict[str, Any]:
    """The JSON contract of `policy explain --all` (and the web page's `/api/decisions`): the
    matrix, every configured MCP server's row and the prompt-injection filter in force."""
    return {
        **_matrix_document(matrix),
        "mcp_servers": mcp_servers_document(policy),
        "injection_filter": injection_filter_document(policy),
        "skipped_entries": skipped_entries_document(policy.configuration),
    }


def mcp_servers_table(policy: Policy) -> tuple[list[str], list[list[str]]]:
    """Header and rows of `mcp_servers_document`: a server per row, its tools and its listing."""
    rows = [
        [
            f"{s['name']} ({s['transport']})",
            str(len(s["tools"])) if s["source"] != "error" else "?",
            s["listing"],
        ]
        for s in mcp_servers_document(policy)
    ]
    return ["MCP server", "tools", "listing"], rows


# --- skipped entries --------------------------------------------------------------------------


def skipped_entries_document(
    configuration: PolicyConfiguration, section: str | None = None
) -> list[dict[str, Any]]:
    """Every `CONFIG[...]` entry not in force because something in it is wrong (of one
    `section`, when given), with file:line and the reason: what is missing is named."""
    return [
        {
            "section": entry.section,
            "entry": entry.label,
            "name": entry.name,
            "reason": entry.reason,
            "file": entry.location.file,
            "line": entry.location.line,
            "plugin": entry.plugin_name,
            "organization": entry.by_organization,
        }
        for entry in configuration.skipped_entries(section)
    ]


def skipped_entries_text(configuration: PolicyConfiguration, section: str | None = None) -> str:
    """`Skipped entries (not in force):` and a line per entry, or "" when none was skipped."""
    entries = configuration.skipped_entries(section)
    if not entries:
        return ""
    lines = [terminal_safe(str(entry)) for entry in entries]
    return "Skipped entries (not in force):\n" + "\n".join(f"  {line}" for line in lines)


def skipped_entry_findings(configuration: PolicyConfiguration) -> frozenset[tuple[Any, str]]:
    """The (location, message) of each finding that reported a skipped entry, so a command that
    shows the entries does not say it twice."""
    return frozenset((entry.location, entry.message) for entry in configuration.skipped_entries())


# --- the diff ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _DecisionChange:
    """One (tool, provider, component) whose answer differs between two configurations."""

    tool_id: str
    provider_id: str
    component: Component
    old_reason: ToolOfferBlockReason
    new_reason: ToolOfferBlockReason
    old_message: str
    new_message: str
    provider_name: str = ""


def _diff_decisions(
    old_registry: ToolRegistry,
    new_registry: ToolRegistry,
    tool_ids: Sequence[str],
    providers: Sequence[ProviderConfig],
    components: Sequence[Component],
) -> tuple[_DecisionChange, ...]:
    """Every triple whose blocking reason changes; the rest is left out."""
    changes: list[_DecisionChange] = []
    for component in components:
        for tool_id in tool_ids:
            for provider in providers:
                old = old_registry.offer_decision(tool_id, provider, component)
                new = new_registry.offer_decision(tool_id, provider, component)
                if old.reason is not new.reason:
                    changes.append(
                        _DecisionChange(
                            tool_id,
                            provider.id,
                            component,
                            old.reason,
                            new.reason,
                            old.message,
                            new.message,
                            provider.name,
                        )
                    )
    return tuple(changes)


def diff_policies(
    old: Policy, new: Policy, components: Sequence[Component] = ()
) -> tuple[_DecisionChange, ...]:
    """`policy diff`: every decision that flips over the tools and providers of either side,
    in `components` (every component when none is named)."""
    providers = {p.id: p for p in (*old.providers, *new.providers)}
    tool_ids = sorted({*old.tool_ids, *new.tool_ids})
    chosen = list(components) or [Component(name) for name in COMPONENT_NAMES]
    return _diff_decisions(old.registry, new.registry, tool_ids, list(providers.values()), chosen)


def load_candidate(
    org: Sequence[Path],
    local: Sequence[Path],
    user_settings: Path | None,
    state_dir: Path | None,
    *,
    extra_tools: Sequence[Tool] = (),
    executable_tools: bool = True,
) -> Policy:
    """The candidate side of a diff (`policy diff`, the web page's Diff). It writes nothing
    into `state_dir` (no last-known-good copy is kept of a candidate), but the configurations
    `policy fetch` put in force there load first (a damaged one replaced by its kept copy), and
    the MCP tools come from the listings cached there, as on the side in force (and the app's own `extra_tools`): only what the candidate
    changes can flip a decision."""
    from policy import load_policy

    return load_policy(
        org,
        local,
        user_settings,
        state_dir=state_dir,
        keep_last_known_good=False,
        extra_tools=extra_tools,
        executable_tools=executable_tools,
    )


def diff_document(changes: Sequence[_DecisionChange]) -> dict[str, Any]:
    return {
        "changed": len(changes),
        "changes": [
            {
                "tool": c.tool_id,
                "provider": c.provider_id,
                "provider_name": c.provider_name,
                "component": c.component.value,
                "old": {
                    "offered": c.old_reason is ToolOfferBlockReason.NONE,
                    "reason": c.old_reason.value,
                    "message": c.old_message,
                },
                "new": {
                    "offered": c.new_reason is ToolOfferBlockReason.NONE,
                    "reason": c.new_reason.value,
                    "message": c.new_message,
                },
            }
            for c in changes
        ],
    }


def diff_table(changes: Sequence[_DecisionChange]) -> tuple[list[str], list[list[str]]]:
    header = ["tool", "provider", "component", "old", "new"]
    rows = [
        [
            c.tool_id,
            c.provider_name or c.provider_id,
            c.component.value,
            _reason(c.old_reason),
            _reason(c.new_reason),
        ]
        for c in changes
    ]
    return header, rows


def _reason(reason: ToolOfferBlockReason) -> str:
    return "offered" if reason is ToolOfferBlockReason.NONE else reason.value


# --- output -----------------------------------------------------------------------------------


def render_document(document: Any, output_format: str) -> str:
    """JSON (indented, stable) or YAML (block style) of a plain document; no character of a
    value reaches the terminal raw (`policy.terminal`)."""
    if output_format == "json":
        return terminal_json(document, indent=2)
    if output_format == "yaml":
        return terminal_yaml(document)
    raise ValueError(f"unknown output format {output_format!r}; use one of {_OUTPUT_FORMATS}")


def render_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table; every cell is `terminal_safe` (one line, no control character acts).

    Header cells are ours and may break into lines; a value placed in one is escaped by its
    builder (`matrix_table`)."""
    from tabulate import tabulate

    if not rows:
        return "(nothing)"
    safe_rows = [[terminal_safe(cell) for cell in row] for row in rows]
    return tabulate(safe_rows, headers=list(header), tablefmt="simple")


# --- settings and the catalog -----------------------------------------------------------------


def settings_document(policy: Policy, tool_id: str) -> dict[str, Any]:
    """The JSON contract of `policy settings TOOL_ID`; secret values are masked."""
    from policy.resolve import value_problem

    resolved = policy.registry.settings(tool_id)
    values = resolved.values_for_tool()
    tool = next(t for t in policy.tools if t.definition.id == tool_id)
    rows = []
    for setting in resolved.fields.values():
        row = _setting_row(setting, policy)
        plain = setting.plain()
        problem = (
            value_problem(
                tool.definition,
                values,
                setting.field,
                plain,
                tool,
                resolved.value_below(setting.field),
            )
            if plain is not None
            else None
        )
        if problem is not None:
            row["problem"] = f"{problem}; {tool_id} is not configured until it is fixed"
        rows.append(row)
    return {"tool": tool_id, "settings": rows}


def _setting_row(setting: ResolvedSetting, policy: Policy) -> dict[str, Any]:
    value: Any = setting.value
    if setting.secret and value is not None:
        value = MASK
    elif value is not None:
        value = without_user_info(str(value))
    row: dict[str, Any] = {
        "field": setting.field,
        "value": value,
        "source": setting.source.value,
        "locked": bool(setting.locked),
        "origin": _setting_origin(setting, policy),
    }
    if setting.note:
        row["note"] = setting.note
    if setting.beaten:
        row["beaten"] = [
            {
                "value": MASK if setting.secret else without_user_info(str(lost.value)),
                "source": lost.source.value,
                "origin": _setting_origin(lost, policy),
            }
            for lost in setting.beaten
        ]
    return row


def _setting_origin(setting: ResolvedSetting, policy: Policy) -> dict[str, Any] | None:
    if setting.origin is not None:
        return _origin_document(setting.origin)
    location = setting.location
    if location is not None:
        return {"plugin": None, "file": location.file, "line": location.line}
    if setting.source is SettingSource.USER and policy.user.path:
        return {"plugin": None, "file": policy.user.path, "line": 0}
    return None


_TOOL_FIELD_TABLES = frozenset({"DataTools.LockedToolSettings", "DataTools.DefaultToolSettings"})


def settings_keys_document(policy: Policy) -> list[dict[str, Any]]:
    """Every `CONFIG["SETTINGS"]` key toolpolicy acts on (`DataTools.*`, `DataConfidence.*`, ...):
    its value (secrets masked), locked or an editable default, the plugin and file:line that set
    it, and the values it beat; a key no plugin sets has `value` None and shows its `default`."""
    from policy.config.settings import TOOLPOLICY_KEYS

    rows: list[dict[str, Any]] = []
    for spec in TOOLPOLICY_KEYS:
        setting = policy.configuration.setting(spec.name)
        row: dict[str, Any] = {
            "key": spec.name,
            "value": None,
            "default": _shown_managed(policy, spec.name, spec.default),
            "locked": False,
            "origin": None,
            "beaten": [],
            "overridden": setting is not None,
        }
        if setting is not None:
            row["value"] = _shown_managed(policy, spec.name, setting.value, spec.secret)
            row["locked"] = bool(setting.locked)
            row["origin"] = _origin_document(setting.origin)
            row["beaten"] = [
                {
                    "value": _shown_managed(policy, spec.name, beaten.value, spec.secret),
                    "origin": _origin_document(beaten.origin),
                }
                for beaten in setting.beaten
            ]
        rows.append(row)
    return rows


def _shown_managed(policy: Policy, key: str, value: Any, secret: bool = False) -> Any:
    """A managed value fit to show: user info masked in every text, a secret key's value or an
    encrypted one masked whole (`DataGateway.ClientSecret`), and in the tool-setting tables
    every entry that is (or may be) a secret masked whole."""
    if value is not None and (secret or is_encrypted(value)):
        return MASK
    if key in _TOOL_FIELD_TABLES and isinstance(value, Mapping):
        return {
            str(entry): MASK
            if _may_be_secret(policy, str(entry), raw)
            else _without_user_info(to_document(raw))
            for entry, raw in value.items()
        }
    return _without_user_info(to_document(value))


def _may_be_secret(policy: Policy, entry: str, raw: Any) -> bool:
    """Fails closed: an encrypted value, a secret field, or an entry no installed tool declares."""
    if isinstance(raw, SecretValue) or is_encrypted(raw):
        return True
    tool_id, _, field_name = entry.partition(".")
    tool = next((t for t in policy.tools if t.definition.id == tool_id), None)
    if tool is None:
        return True
    spec = tool.definition.settings_schema.properties.get(field_name)
    return spec is None or bool(spec.secret)


def _without_user_info(document: Any) -> Any:
    if isinstance(document, str):
        return without_user_info(document)
    if isinstance(document, list):
        return [_without_user_info(item) for item in document]
    if isinstance(document, dict):
        return {key: _without_user_info(item) for key, item in document.items()}
    return document


def settable_field_problem(
    policy: Policy, tool_id: str, field: str, value: str
) -> tuple[str | None, str] | None:
    """Why `policy settings set` must refuse: (argument at fault or None, message); None = fine."""
    from policy.resolve import value_problem

    tool = next(t for t in policy.tools if t.definition.id == tool_id)
    definition = tool.definition
    properties = definition.settings_schema.properties
    if field not in properties:
        from policy.suggest import did_you_mean

        known = ", ".join(properties) or "(this tool has no settings)"
        hint = did_you_mean(field, properties)
        return "FIELD", f"'{field}' is not a setting of {tool_id}{hint or '.'} Settings: {known}"
    spec = properties[field]
    if spec.secret:
        return (
            "FIELD",
            f"{tool_id}.{field} is a secret: it is kept in the OS keyring (service "
            f"'tool::{tool_id}', name '{field}'), never in the settings file",
        )
    current = policy.registry.settings(tool_id).fields.get(field)
    if current is not None and current.locked:
        who = (
            f"{current.origin.plugin_name or current.origin.plugin_id} ({current.origin.location})"
            if current.origin is not None
            else "the organization"
        )
        return (
            None,
            f"{tool_id}.{field} is locked by {who}; your value would never apply. "
            "Ask whoever maintains that plugin to change it or to make it a default.",
        )
    values = policy.registry.settings(tool_id).values_for_tool()
    problem = value_problem(definition, values, field, value, tool, values.get(field))
    if problem is not None:
        return "VALUE", problem
    return None


def tools_document(policy: Policy, component: Component | None) -> dict[str, Any]:
    """The catalog (`policy tools`): per entry its state and where its minimum comes from."""
    registry = policy.registry
    activation = {t.definition.id: t.definition.activation.value for t in policy.tools}
    rows = []
    for entry in registry.catalog(component):
        minimum = registry.effective_minimum_confidence(entry.id)
        state = entry.configuration_state
        rows.append(
            {
                "id": entry.id,
                "name": entry.display_name,
                "tools": list(entry.tool_ids),
                "activation": activation.get(entry.tool_ids[0] if entry.tool_ids else entry.id, ""),
                "active": bool(entry.is_active),
                "configured": bool(state.is_configured),
                "configuration_message": state.message,
                "missing_required_fields": list(state.missing_required_fields),
                "minimum_confidence": ConfidenceLevel(minimum.level).name,
                "minimum_confidence_source": str(minimum.source),
                "minimum_confidence_set_at": _minimum_set_at(minimum),
                "minimum_confidence_evidence": [evidence_document(e) for e in minimum.evidence],
            }
        )
    return {"component": component.value if component else None, "tools": rows}


def _minimum_set_at(minimum: MinimumConfidence) -> str | None:
    """file:line of the entry that decided the minimum (the user's file or a plugin), if any."""
    for evidence in minimum.evidence:
        location = evidence.origin.location if evidence.origin else evidence.location
        if location is not None:
            return str(location)
    return None
