"""The what-ifs of `policy serve`: the simulate form (other provider, model, component or user
settings, decided in memory) and the diff page (a candidate configuration loaded without a state
directory). Neither writes anything; a bad field is a `WhatIfError` naming it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policy.errors import ToolPolicyError
from policy.vocabulary import COMPONENT_NAMES, PROVIDER_KIND_NAMES, Component, ProviderKind
from policy.web_documents import ConfigurationPaths, finding_document

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import Finding, ProviderConfig, UserSettings
    from policy.flow import ChatHoldings
    from policy.identity import Caller
    from policy.people import PeoplePolicies

__all__ = ["WhatIfError", "diff", "form_holdings", "form_list", "others_refused", "simulate"]

_MAX_PASTED_CHARS = 256 * 1024
_PASTED_USER_SETTINGS = "pasted user settings"


class WhatIfError(ToolPolicyError):
    """A what-if the page cannot decide (a bad path, YAML that does not parse): shown as 400;
    one the asking person may not ask (another person's policy) as 403."""

    code = "what-if"

    def __init__(self, message: str, field: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.status = status


def _pasted(form: Mapping[str, Any], name: str) -> str:
    text = str(form.get(name) or "")
    if len(text) > _MAX_PASTED_CHARS:
        raise WhatIfError(
            f"{name}: {len(text)} characters pasted; at most {_MAX_PASTED_CHARS} are read", name
        )
    return text.replace("\r\n", "\n")


def _what_if_user(form: Mapping[str, Any]) -> UserSettings | None:
    """The user settings a what-if asks for: pasted YAML, a file, or None (those in force)."""
    from policy.user_settings import UserSettingsError, load_user_settings, parse_user_settings

    pasted = _pasted(form, "user_settings_yaml")
    named = str(form.get("user_settings_file") or "").strip()
    if pasted.strip() and named:
        raise WhatIfError(
            "give either pasted user settings or a user settings file, not both",
            "user_settings_file",
        )
    try:
        if pasted.strip():
            return parse_user_settings(pasted, _PASTED_USER_SETTINGS)
        if named:
            path = _path_on_this_machine(named, "user_settings_file")
            if not path.is_file():
                raise WhatIfError(
                    f"user_settings_file: '{named}' is not a file on this machine",
                    "user_settings_file",
                )
            return load_user_settings(path)
    except UserSettingsError as error:
        field = "user_settings_yaml" if pasted.strip() else "user_settings_file"
        raise WhatIfError(str(error), field) from None
    return None


def _path_on_this_machine(text: str, field: str) -> Path:
    """A path a form names (`~` and `~user` expanded); a user that does not exist says so."""
    try:
        return Path(text).expanduser()
    except RuntimeError:
        raise WhatIfError(
            f"{field}: '{text}': no such user to expand '{text.split('/')[0]}' for", field
        ) from None


def _simulated_provider(form: Mapping[str, Any], policy: Policy) -> ProviderConfig:
    from policy.explain import kind_provider

    configured = str(form.get("provider") or "").strip()
    kind = str(form.get("provider_kind") or "").strip().upper()
    model = str(form.get("model") or "").strip()
    if configured and kind:
        raise WhatIfError("choose a configured provider or a provider kind, not both", "provider")
    if model and not kind:
        raise WhatIfError("model only goes with provider_kind", "model")
    if configured:
        from policy.errors import UnknownProviderError

        try:
            return policy.provider(configured)
        except UnknownProviderError as error:
            raise WhatIfError(f"provider: {error}", "provider") from None
    if kind not in PROVIDER_KIND_NAMES:
        raise WhatIfError(
            f"provider_kind: '{kind}' is not a provider kind; valid: {', '.join(PROVIDER_KIND_NAMES)}"
            if kind
            else "choose a configured provider or a provider kind",
            "provider_kind",
        )
    return kind_provider(ProviderKind(kind), model)


def _form_component(form: Mapping[str, Any]) -> Component:
    wanted = str(form.get("component") or "CHAT").strip().upper()
    if wanted not in COMPONENT_NAMES:
        raise WhatIfError(
            f"component: unknown component '{wanted}'; valid: {', '.join(COMPONENT_NAMES)}",
            "component",
        )
    return Component(wanted)


def form_holdings(form: Any) -> ChatHoldings | None:
    """What the chat is supposed to hold (`chat_holds`: checkbox values, or one comma-separated
    text as `explain --chat-holds` takes it); None when nothing is chosen."""
    from policy.flow import ChatHoldings, parse_held_effects

    chosen = ",".join(form_list(form, "chat_holds"))
    try:
        held = parse_held_effects(chosen)
    except ValueError as error:
        raise WhatIfError(f"chat_holds: {error}", "chat_holds") from None
    return ChatHoldings.what_if(held) if held else None


def simulate(
    people: PeoplePolicies,
    form: Mapping[str, Any],
    in_force: Sequence[Finding] | None = None,
    *,
    only_as: Caller | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The matrix for one provider (configured, or any of a kind and model) in one component,
    decided for the user settings and what the chat holds (`chat_holds`) the form gives (the
    contract of `explain --all --format json`) — for a person when it names one (`as_subject`,
    `groups`: with which configurations applied, and why, as `explain --as` shows; else for a
    person in no group, as `explain` without `--as`) — and what
    `policy check` says of those settings and not of the policy in force (`in_force`: its
    findings, when the caller has them already). `people` is the policy in force's, with its
    groups' own MCP server entries as listed when it was loaded.

    `only_as`: the signed-in person who may decide only for themselves (not a member of
    `DataGateway.AdministratorGroups`): decided as them, and a form that names anyone else or a
    user settings file of this machine is refused (`WhatIfError` with status 403)."""
    from policy.explain import build_matrix, matrix_report, ordered_tool_ids
    from policy.people import what_if_caller

    policy = people.policy
    caller = what_if_caller(str(form.get("as_subject") or ""), str(form.get("groups") or ""))
    if only_as is not None:
        _only_own(form, caller, only_as)
        caller = only_as
    for_caller = people.for_caller(caller)
    provider = _simulated_provider(form, for_caller)
    component = _form_component(form)
    holdings = form_holdings(form)
    user = _what_if_user(form)
    decided = for_caller.with_user_settings(user) if user is not None else for_caller
    tool = str(form.get("tool") or "").strip()
    if tool and tool not in decided.tool_ids:
        raise WhatIfError(f"tool: unknown tool '{tool}'", "tool")
    tool_ids = [tool] if tool else ordered_tool_ids(decided)
    matrix = build_matrix(decided.registry, tool_ids, [provider], component, holdings)
    document = matrix_report(decided, matrix)
    if caller is not None:
        document = {**people.caller_document(caller), **document}
    elif (note := people.without_caller_note()) is not None:
        document = {"decided_for": note, **document}
    notes = [
        f"{f.location}: {f.message}" if f.location else f.message
        for f in ([] if decided is for_caller else _said_only_for(decided, policy, in_force))
    ]
    return document, notes


_FOR_OTHERS = "is for members of DataGateway.AdministratorGroups; you may simulate only as yourself"


def _only_own(form: Mapping[str, Any], named: Caller | None, person: Caller) -> None:
    """Refuse what a person who decides only for themselves asks beyond that."""
    if named is not None and named != person:
        raise WhatIfError(
            f"as_subject/groups: simulating another person {_FOR_OTHERS} "
            f"({person.subject}, groups: {', '.join(sorted(person.groups)) or 'none'}); leave "
            "them blank",
            "as_subject",
            status=403,
        )
    if str(form.get("user_settings_file") or "").strip():
        raise WhatIfError(
            f"user_settings_file: reading a file of the server's machine {_FOR_OTHERS}, "
            "with settings you paste",
            "user_settings_file",
            status=403,
        )


def others_refused(what: str) -> WhatIfError:
    """A page that decides for other people, refused to a person who may decide only for
    themselves."""
    return WhatIfError(
        f"{what} is for members of DataGateway.AdministratorGroups: it shows every group's "
        "configurations",
        "",
        status=403,
    )


def _said_only_for(
    decided: Policy, policy: Policy, in_force: Sequence[Finding] | None
) -> list[Finding]:
    """What `policy check` says of the what-if's user settings and not of those in force: a
    setting a lock overrides, a tool or setting name that does not exist (the entry has no
    effect)."""
    if decided is policy:
        return []
    from policy.lint import check_findings

    known = set(check_findings(policy) if in_force is None else in_force)
    return [f for f in check_findings(decided) if f not in known]


def _candidate(form: Mapping[str, Any], paths: ConfigurationPaths, folder: Path) -> Policy:
    """The candidate configuration of a diff, loaded without a state directory (nothing is
    written): other organization plugins and/or one pasted plugin.lua, other user settings.
    The configurations `policy fetch` put in force stay in force on both sides."""
    from policy.explain import load_candidate

    org_lines = [line.strip() for line in str(form.get("org") or "").splitlines() if line.strip()]
    pasted = _pasted(form, "plugin_lua")
    if not org_lines and not pasted.strip() and not _has_user_what_if(form):
        raise WhatIfError(
            "name the candidate: organization plugin paths, a pasted plugin.lua, "
            "or other user settings",
            "org",
        )
    organization = [_path_on_this_machine(line, "org") for line in org_lines] or list(paths.org)
    for path, line in zip(organization, org_lines, strict=False):
        if not path.exists():
            raise WhatIfError(f"org: '{line}' does not exist on this machine", "org")
    if pasted.strip():
        plugin = folder / "pasted" / "plugin.lua"
        plugin.parent.mkdir()
        plugin.write_text(pasted, encoding="utf-8")
        organization.append(plugin.parent)
    user = _what_if_user(form)
    user_file: Path | None = paths.user_settings
    candidate = load_candidate(
        organization,
        paths.local,
        user_file if user is None else None,
        paths.state_dir,
        extra_tools=paths.extra_tools(),
    )
    return candidate.with_user_settings(user) if user is not None else candidate


def _has_user_what_if(form: Mapping[str, Any]) -> bool:
    return bool(str(form.get("user_settings_yaml") or "").strip()) or bool(
        str(form.get("user_settings_file") or "").strip()
    )


def diff(policy: Policy, form: Mapping[str, Any], paths: ConfigurationPaths) -> dict[str, Any]:
    """`policy diff --format json` from the configuration in force to the candidate, with the
    candidate's own errors (a pasted plugin that does not load says why)."""
    from policy.explain import diff_document, diff_policies

    components = [
        _form_component({"component": c}) for c in form_list(form, "component") if c.strip()
    ]
    with tempfile.TemporaryDirectory(prefix="toolpolicy-diff-") as folder:
        candidate = _candidate(form, paths, Path(folder))
        changes = diff_policies(policy, candidate, components)
        document = diff_document(changes)
        document["candidate_errors"] = [
            finding_document(f) for f in candidate.errors if f not in policy.errors
        ]
    pasted_at = Path(folder) / "pasted"
    renamed: dict[str, Any] = _renamed(
        _renamed(document, str(pasted_at / "plugin.lua"), "pasted plugin.lua"),
        str(pasted_at),
        "pasted plugin",
    )
    return renamed


def _renamed(document: Any, old: str, new: str) -> Any:
    """`document` with the temporary folder of a pasted plugin named as what it is."""
    if isinstance(document, str):
        return document.replace(old, new)
    if isinstance(document, list):
        return [_renamed(item, old, new) for item in document]
    if isinstance(document, dict):
        return {key: _renamed(value, old, new) for key, value in document.items()}
    return document


def form_list(form: Any, name: str) -> list[str]:
    if hasattr(form, "getlist"):
        return [str(v) for v in form.getlist(name)]
    value = form.get(name)
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)] if value else []
