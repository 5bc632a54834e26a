"""`policy serve`: the administrator's read-only web page over the same documents as the CLI.

Every page is a view of the JSON documents `policy.explain` builds for `--format json` (the status,
the settings of each tool, the decision matrix, one decision with its checks and evidence, a diff),
and each has its JSON twin under `/api/`. The policy comes from a `PolicySource` (in `policy serve`,
`runtime.PolicyWatcher`, which reloads it when a plugin file changes); the documents of one policy
are built once and kept until the next one is in force. Jinja2 escapes everything it prints, so
text from a plugin is shown as text; the Content-Security-Policy header forbids scripts altogether.

The simulate form and the diff page decide what-ifs: other user settings are applied to the
loaded plugins in memory, and a candidate configuration is loaded without a state directory, so
neither writes anything.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from policy.vocabulary import (
    COMPONENT_NAMES,
    PROVIDER_KIND_NAMES,
    Component,
    ProviderKind,
    SettingSource,
)

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import Finding, ProviderConfig, UserSettings

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "ConfigurationPaths",
    "PolicySource",
    "ReloadOutcome",
    "build_app",
    "is_loopback_host",
]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_TEMPLATES = Path(__file__).with_name("web_templates")
_TOKEN_COOKIE = "toolpolicy_token"
_MAX_PASTED_CHARS = 256 * 1024
_PASTED_USER_SETTINGS = "pasted user settings"
_SET_BY_CONFIGURATION = frozenset(
    {SettingSource.LOCKED, SettingSource.USER, SettingSource.ORG_DEFAULT}
)


def is_loopback_host(host: str) -> bool:
    """Whether `--host` only listens on this machine (localhost or a loopback address)."""
    if host.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


class PolicySource(Protocol):
    """Where the page reads the policy in force from: `runtime.PolicyWatcher` in `policy serve`."""

    @property
    def policy(self) -> Policy: ...
    @property
    def revision(self) -> str: ...
    @property
    def last_change(self) -> ReloadOutcome | None: ...
    async def reload(self) -> ReloadOutcome: ...
    async def run(self, stop: asyncio.Event | None = None) -> None: ...
    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class ConfigurationPaths:
    """The configuration options of `policy serve` (--org, --local, --user-settings, --state-dir)."""

    org: tuple[Path, ...] = ()
    local: tuple[Path, ...] = ()
    user_settings: Path | None = None
    state_dir: Path | None = None

    def load(self) -> Policy:
        """The policy of these paths, as every other command loads it."""
        from policy import load_policy

        return load_policy(self.org, self.local, self.user_settings, state_dir=self.state_dir)

    def watched(self) -> tuple[Path, ...]:
        """The files and folders whose change is a new configuration (the fetched copies too)."""
        paths = [*self.org, *self.local]
        if self.user_settings is not None:
            paths.append(self.user_settings)
        if self.state_dir is not None:
            from policy.config_sources import DELIVERED_DIR

            paths.append(self.state_dir / DELIVERED_DIR)
        return tuple(paths)

    def document(self) -> dict[str, Any]:
        return {
            "org": [str(p) for p in self.org],
            "local": [str(p) for p in self.local],
            "user_settings": str(self.user_settings) if self.user_settings else None,
            "state_dir": str(self.state_dir) if self.state_dir else None,
        }


class _DocumentTemplates(Environment):
    """Templates that render JSON documents: `row.keys` is the document's key `keys`, never the
    dict method of that name (a key is looked up before an attribute)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


class _WhatIfError(Exception):
    """A what-if the page cannot decide (a bad path, YAML that does not parse): shown as 400."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


# --- documents --------------------------------------------------------------------------------


def _finding_document(finding: Finding) -> dict[str, Any]:
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


def _reload_document(outcome: ReloadOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {
        "swapped": outcome.swapped,
        "old_revision": outcome.old_revision,
        "new_revision": outcome.new_revision,
        "error": outcome.error,
        "finished_at": outcome.finished_at.isoformat() if outcome.finished_at else None,
    }


class _Deliveries:
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
        "errors": [_finding_document(f) for f in findings if f.severity.value == "error"],
        "warnings": [_finding_document(f) for f in findings if f.severity.value != "error"],
    }


@dataclass(frozen=True, slots=True)
class _SettingsFilter:
    """The filters of the settings page: one tool, locked only, set by the configuration only,
    and whether settings with no value are shown."""

    tool: str = ""
    locked: bool = False
    overridden: bool = False
    unset: bool = False

    @staticmethod
    def of(query: Mapping[str, str]) -> _SettingsFilter:
        def flag(name: str) -> bool:
            return query.get(name, "").strip().lower() in ("1", "true", "on", "yes")

        return _SettingsFilter(
            query.get("tool", "").strip(), flag("locked"), flag("overridden"), flag("unset")
        )

    def keeps(self, row: Mapping[str, Any], set_by_configuration: bool) -> bool:
        if self.locked and not row["locked"]:
            return False
        if self.overridden and not set_by_configuration:
            return False
        return self.unset or row["value"] is not None


class _Snapshot:
    """The documents of one policy, built on first use and kept while that policy is in force."""

    def __init__(self, policy: Policy, paths: ConfigurationPaths) -> None:
        self.policy = policy
        self.paths = paths
        self._cache: dict[Any, Any] = {}

    def _once(self, key: Any, build: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def findings(self) -> tuple[Finding, ...]:
        from policy.lint import check_findings

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

    def matrix(self, component: Component) -> dict[str, Any]:
        from policy.explain import build_matrix, matrix_document, ordered_tool_ids

        def build() -> dict[str, Any]:
            policy = self.policy
            matrix = build_matrix(
                policy.registry, ordered_tool_ids(policy), policy.providers, component
            )
            return matrix_document(matrix)

        document: dict[str, Any] = self._once(("matrix", component), build)
        return document


def _settings_page_document(snapshot: _Snapshot, chosen: _SettingsFilter) -> dict[str, Any]:
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


# --- what-ifs ---------------------------------------------------------------------------------


def _pasted(form: Mapping[str, Any], name: str) -> str:
    text = str(form.get(name) or "")
    if len(text) > _MAX_PASTED_CHARS:
        raise _WhatIfError(
            f"{name}: {len(text)} characters pasted; at most {_MAX_PASTED_CHARS} are read", name
        )
    return text.replace("\r\n", "\n")


def _what_if_user(form: Mapping[str, Any]) -> UserSettings | None:
    """The user settings a what-if asks for: pasted YAML, a file, or None (those in force)."""
    from policy.user_settings import UserSettingsError, load_user_settings, parse_user_settings

    pasted = _pasted(form, "user_settings_yaml")
    named = str(form.get("user_settings_file") or "").strip()
    if pasted.strip() and named:
        raise _WhatIfError(
            "give either pasted user settings or a user settings file, not both",
            "user_settings_file",
        )
    try:
        if pasted.strip():
            return parse_user_settings(pasted, _PASTED_USER_SETTINGS)
        if named:
            path = Path(named).expanduser()
            if not path.is_file():
                raise _WhatIfError(
                    f"user_settings_file: '{named}' is not a file on this machine",
                    "user_settings_file",
                )
            return load_user_settings(path)
    except UserSettingsError as error:
        field = "user_settings_yaml" if pasted.strip() else "user_settings_file"
        raise _WhatIfError(str(error), field) from None
    return None


def _simulated_provider(form: Mapping[str, Any], policy: Policy) -> ProviderConfig:
    from policy.explain import kind_provider

    configured = str(form.get("provider") or "").strip()
    kind = str(form.get("provider_kind") or "").strip().upper()
    model = str(form.get("model") or "").strip()
    if configured and kind:
        raise _WhatIfError("choose a configured provider or a provider kind, not both", "provider")
    if model and not kind:
        raise _WhatIfError("model only goes with provider_kind", "model")
    if configured:
        provider = policy.provider(configured)
        if provider is None:
            known = ", ".join(p.id for p in policy.providers) or "none"
            raise _WhatIfError(
                f"provider: no configured provider '{configured}'; configured: {known}",
                "provider",
            )
        return provider
    if kind not in PROVIDER_KIND_NAMES:
        raise _WhatIfError(
            f"provider_kind: '{kind}' is not a provider kind; valid: {', '.join(PROVIDER_KIND_NAMES)}"
            if kind
            else "choose a configured provider or a provider kind",
            "provider_kind",
        )
    return kind_provider(ProviderKind(kind), model)


def _form_component(form: Mapping[str, Any]) -> Component:
    wanted = str(form.get("component") or "CHAT").strip().upper()
    if wanted not in COMPONENT_NAMES:
        raise _WhatIfError(
            f"component: unknown component '{wanted}'; valid: {', '.join(COMPONENT_NAMES)}",
            "component",
        )
    return Component(wanted)


def _simulate(policy: Policy, form: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The matrix for one provider (configured, or any of a kind and model) in one component,
    decided for the user settings the form gives (the contract of `explain --all --format
    json`), and what the what-if's user settings cannot change (a lock overrides them)."""
    from policy.explain import build_matrix, matrix_document, ordered_tool_ids

    provider = _simulated_provider(form, policy)
    component = _form_component(form)
    user = _what_if_user(form)
    decided = policy.with_user_settings(user) if user is not None else policy
    tool = str(form.get("tool") or "").strip()
    if tool and tool not in decided.tool_ids:
        raise _WhatIfError(f"tool: unknown tool '{tool}'", "tool")
    tool_ids = [tool] if tool else ordered_tool_ids(decided)
    document = matrix_document(build_matrix(decided.registry, tool_ids, [provider], component))
    notes = [
        f"{f.location}: {f.message}" if f.location else f.message
        for f in decided.findings
        if f not in policy.findings
    ]
    return document, notes


def _candidate(form: Mapping[str, Any], paths: ConfigurationPaths, folder: Path) -> Policy:
    """The candidate configuration of a diff, loaded without a state directory (nothing is
    written): other organization plugins and/or one pasted plugin.lua, other user settings.
    The configurations `policy fetch` put in force stay in force on both sides."""
    from policy import load_policy
    from policy.config_sources import delivered_roots

    org_lines = [line.strip() for line in str(form.get("org") or "").splitlines() if line.strip()]
    pasted = _pasted(form, "plugin_lua")
    if not org_lines and not pasted.strip() and not _has_user_what_if(form):
        raise _WhatIfError(
            "name the candidate: organization plugin paths, a pasted plugin.lua, "
            "or other user settings",
            "org",
        )
    organization = [Path(line).expanduser() for line in org_lines] or list(paths.org)
    for path, line in zip(organization, org_lines, strict=False):
        if not path.exists():
            raise _WhatIfError(f"org: '{line}' does not exist on this machine", "org")
    if pasted.strip():
        plugin = folder / "pasted" / "plugin.lua"
        plugin.parent.mkdir()
        plugin.write_text(pasted, encoding="utf-8")
        organization.append(plugin.parent)
    if paths.state_dir is not None:
        organization = [*delivered_roots(paths.state_dir), *organization]
    user = _what_if_user(form)
    user_file: Path | None = paths.user_settings
    candidate = load_policy(
        organization,
        paths.local,
        user_file if user is None else None,
        mcp_listing_dir=paths.state_dir,
    )
    return candidate.with_user_settings(user) if user is not None else candidate


def _has_user_what_if(form: Mapping[str, Any]) -> bool:
    return bool(str(form.get("user_settings_yaml") or "").strip()) or bool(
        str(form.get("user_settings_file") or "").strip()
    )


def _diff(policy: Policy, form: Mapping[str, Any], paths: ConfigurationPaths) -> dict[str, Any]:
    """`policy diff --format json` from the configuration in force to the candidate, with the
    candidate's own errors (a pasted plugin that does not load says why)."""
    from policy.explain import diff_document, diff_policies

    components = [
        _form_component({"component": c}) for c in _form_list(form, "component") if c.strip()
    ]
    with tempfile.TemporaryDirectory(prefix="toolpolicy-diff-") as folder:
        candidate = _candidate(form, paths, Path(folder))
        changes = diff_policies(policy, candidate, components)
        document = diff_document(changes)
        document["candidate_errors"] = [
            _finding_document(f) for f in candidate.errors if f not in policy.errors
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


def _form_list(form: Any, name: str) -> list[str]:
    if hasattr(form, "getlist"):
        return [str(v) for v in form.getlist(name)]
    value = form.get(name)
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)] if value else []


# --- the app ----------------------------------------------------------------------------------


def build_app(
    source: PolicySource,
    paths: ConfigurationPaths | None = None,
    token: str | None = None,
    *,
    watch: bool = True,
) -> Starlette:
    """The web app over `source`'s policy; with `token`, every request must present it.

    With `watch`, the app runs `source.run()` for as long as it serves (and closes the source
    when it stops), so a changed plugin file is in force without a click on Reload. Without a token, only requests addressed to a
    loopback name are answered (a DNS-rebinding page cannot read it).
    """
    from policy.explain import decision_document

    paths = paths or ConfigurationPaths()
    templates = _DocumentTemplates(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    current: list[_Snapshot] = []
    deliveries = _Deliveries(paths.state_dir)

    def snapshot() -> _Snapshot:
        policy = source.policy
        if not current or current[0].policy is not policy:
            current[:] = [_Snapshot(policy, paths)]
        return current[0]

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = templates.get_template(name).render(
            components=COMPONENT_NAMES, provider_kinds=PROVIDER_KIND_NAMES, **context
        )
        return HTMLResponse(html, status_code=status)

    def is_api(request: Request) -> bool:
        return request.url.path.startswith("/api/")

    def not_found(message: str, api: bool) -> Response:
        if api:
            return JSONResponse({"error": message}, status_code=404)
        return page("error.html", message=message, title="Not found", status=404)

    def component_of(request: Request) -> Component | None:
        wanted = request.query_params.get("component", "CHAT").upper()
        return Component(wanted) if wanted in COMPONENT_NAMES else None

    def unknown_component(request: Request) -> str:
        wanted = request.query_params.get("component", "")
        return f"unknown component '{wanted}'; valid: {', '.join(COMPONENT_NAMES)}"

    async def status(request: Request) -> Response:
        document = {
            **snapshot().status(),
            "deliveries": deliveries.documents(),
            "revision": source.revision,
            "last_change": _reload_document(source.last_change),
        }
        if is_api(request):
            return JSONResponse(document)
        return page("status.html", document=document)

    async def settings(request: Request) -> Response:
        chosen = _SettingsFilter.of(request.query_params)
        current_snapshot = snapshot()
        if chosen.tool and chosen.tool not in current_snapshot.policy.tool_ids:
            return not_found(f"unknown tool '{chosen.tool}'", is_api(request))
        document = _settings_page_document(current_snapshot, chosen)
        if is_api(request):
            return JSONResponse(document)
        tool_ids = sorted(current_snapshot.policy.tool_ids)
        return page("settings.html", document=document, chosen=chosen, tool_ids=tool_ids)

    async def decisions(request: Request) -> Response:
        component = component_of(request)
        if component is None:
            return not_found(unknown_component(request), is_api(request))
        document = snapshot().matrix(component)
        if is_api(request):
            return JSONResponse(document)
        cells = {(d["tool"], d["provider"]["id"]): d for d in document["decisions"]}
        return page("decisions.html", matrix=document, cells=cells)

    async def decision(request: Request) -> Response:
        api = is_api(request)
        policy = snapshot().policy
        component = component_of(request)
        tool_id = request.query_params.get("tool", "")
        provider = policy.provider(request.query_params.get("provider", ""))
        if component is None:
            return not_found(unknown_component(request), api)
        if tool_id not in policy.tool_ids:
            return not_found(f"unknown tool '{tool_id}'", api)
        if provider is None:
            wanted = request.query_params.get("provider", "")
            return not_found(f"no configured provider '{wanted}'", api)
        document = decision_document(policy.offer_decision(tool_id, provider, component))
        if api:
            return JSONResponse(document)
        return page("decision.html", decision=document)

    async def form_of(request: Request) -> Mapping[str, Any]:
        if is_api(request):
            try:
                body = await request.json()
            except ValueError:
                raise _WhatIfError("the request body must be a JSON object", "body") from None
            if not isinstance(body, dict):
                raise _WhatIfError("the request body must be a JSON object", "body")
            return body
        return await request.form()

    def what_if_error(request: Request, error: _WhatIfError, name: str, **context: Any) -> Response:
        if is_api(request):
            return JSONResponse({"error": error.message, "field": error.field}, status_code=400)
        return page(name, status=400, error=error.message, **context)

    async def simulate(request: Request) -> Response:
        current_snapshot = snapshot()
        context: dict[str, Any] = {
            "providers": current_snapshot.policy.providers,
            "tool_ids": sorted(current_snapshot.policy.tool_ids),
            "form": {},
        }
        if request.method == "GET":
            return page("simulate.html", result=None, **context)
        try:
            form = await form_of(request)
            context["form"] = form
            result, notes = await asyncio.to_thread(_simulate, current_snapshot.policy, form)
        except _WhatIfError as error:
            return what_if_error(request, error, "simulate.html", result=None, **context)
        if is_api(request):
            return JSONResponse(result)
        return page("simulate.html", result=result, notes=notes, **context)

    async def diff(request: Request) -> Response:
        current_snapshot = snapshot()
        context: dict[str, Any] = {"form": {}, "chosen_components": []}
        if request.method == "GET":
            return page("diff.html", result=None, **context)
        try:
            form = await form_of(request)
            context["form"] = form
            context["chosen_components"] = _form_list(form, "component")
            result = await asyncio.to_thread(_diff, current_snapshot.policy, form, paths)
        except _WhatIfError as error:
            return what_if_error(request, error, "diff.html", result=None, **context)
        if is_api(request):
            return JSONResponse(result)
        return page("diff.html", result=result, **context)

    async def reload(request: Request) -> Response:
        outcome = await source.reload()
        if is_api(request):
            return JSONResponse({**(_reload_document(outcome) or {}), "revision": source.revision})
        return RedirectResponse("/", status_code=303)

    async def stylesheet(request: Request) -> Response:
        return Response((_TEMPLATES / "style.css").read_text(), media_type="text/css")

    routes = [
        Route("/", status),
        Route("/api/status", status),
        Route("/settings", settings),
        Route("/api/settings", settings),
        Route("/decisions", decisions),
        Route("/api/decisions", decisions),
        Route("/decision", decision),
        Route("/api/decision", decision),
        Route("/simulate", simulate, methods=["GET", "POST"]),
        Route("/api/simulate", simulate, methods=["POST"]),
        Route("/diff", diff, methods=["GET", "POST"]),
        Route("/api/diff", diff, methods=["POST"]),
        Route("/reload", reload, methods=["POST"]),
        Route("/api/reload", reload, methods=["POST"]),
        Route("/style.css", stylesheet),
    ]

    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        set_cookie = False
        if token is not None:
            presented = (
                request.headers.get("authorization", "").removeprefix("Bearer ").strip()
                or request.cookies.get(_TOKEN_COOKIE, "")
                or request.query_params.get("token", "")
            )
            if not hmac.compare_digest(presented.encode(), token.encode()):
                return JSONResponse({"error": "a valid token is required"}, status_code=401)
            set_cookie = "token" in request.query_params
        elif not is_loopback_host(_host_name(request.headers.get("host", ""))):
            return JSONResponse(
                {"error": "without --token, only requests to a loopback address are answered"},
                status_code=421,
            )
        if request.method not in ("GET", "HEAD") and _cross_site(request):
            return JSONResponse(
                {"error": "a form of another site cannot post here"}, status_code=403
            )
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        if set_cookie and token is not None:
            response.set_cookie(_TOKEN_COOKIE, token, httponly=True, samesite="strict")
        return response

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if not watch:
            yield
            return
        stop = asyncio.Event()
        watcher = asyncio.create_task(source.run(stop))
        try:
            yield
        finally:
            stop.set()
            await watcher
            await source.aclose()

    return Starlette(
        routes=routes,
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
        lifespan=lifespan,
    )


def _cross_site(request: Request) -> bool:
    """A browser's post from another page than this server's (Fetch Metadata says so, or the
    Origin is another host): refused, so another site cannot make the server load a plugin."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site not in ("same-origin", "none")
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return False
    return origin.partition("://")[2].rstrip("/") != request.headers.get("host", "")


def _host_name(host_header: str) -> str:
    """The name in a Host header, without its port (`[::1]:8765` → `::1`)."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header
