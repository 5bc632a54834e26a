"""`policy serve`: the administrator's read-only web page over the same documents as the CLI.

Every page is a view of the JSON documents `policy.explain` builds for `--format json` (the status,
the settings of each tool, the decision matrix, one decision with its checks and evidence), and
each has its JSON twin under `/api/`. Jinja2 escapes everything it prints, so text from a plugin
is shown as text; the Content-Security-Policy header forbids scripts altogether.
"""

from __future__ import annotations

import hmac
import ipaddress
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from policy.vocabulary import Component

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import ProviderConfig

__all__ = ["CONTENT_SECURITY_POLICY", "build_app", "is_loopback_host"]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_TEMPLATES = Path(__file__).with_name("web_templates")
_COMPONENTS = tuple(c.value for c in Component if c is not Component.NONE)
_TOKEN_COOKIE = "toolpolicy_token"


def is_loopback_host(host: str) -> bool:
    """Whether `--host` only listens on this machine (localhost or a loopback address)."""
    if host.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _PolicyView:
    """The loaded policy, replaced as a whole on reload so a request never sees half of one."""

    def __init__(self, load: Callable[[], Policy]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._policy = load()

    @property
    def policy(self) -> Policy:
        return self._policy

    def reload(self) -> None:
        loaded = self._load()
        with self._lock:
            self._policy = loaded


def _status_document(policy: Policy) -> dict[str, Any]:
    from policy.explain import origin_document

    def finding(f: Any) -> dict[str, Any]:
        return {
            "severity": f.severity.value,
            "code": f.code,
            "message": f.message,
            "file": f.location.file if f.location else None,
            "line": f.location.line if f.location else None,
        }

    return {
        "plugins": [origin_document(origin) for origin in policy.configuration.plugins],
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
        "errors": [finding(f) for f in policy.errors],
        "warnings": [finding(f) for f in policy.warnings],
    }


def _settings_documents(policy: Policy) -> list[dict[str, Any]]:
    from policy.explain import settings_document

    return [settings_document(policy, tool_id) for tool_id in sorted(policy.tool_ids)]


def _component(request: Request) -> Component | None:
    wanted = request.query_params.get("component", "CHAT").upper()
    return Component(wanted) if wanted in _COMPONENTS else None


def _unknown_component(request: Request) -> str:
    wanted = request.query_params.get("component", "")
    return f"unknown component '{wanted}'; valid: {', '.join(_COMPONENTS)}"


def _provider(policy: Policy, provider_id: str) -> ProviderConfig | None:
    return policy.provider(provider_id)


def build_app(load: Callable[[], Policy], token: str | None = None) -> Starlette:
    """The web app over `load()`'s policy; with `token`, every request must present it."""
    from policy.explain import build_matrix, decision_document, matrix_document

    view = _PolicyView(load)
    templates = Environment(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = templates.get_template(name).render(components=_COMPONENTS, **context)
        return HTMLResponse(html, status_code=status)

    def not_found(message: str, api: bool) -> Response:
        if api:
            return JSONResponse({"error": message}, status_code=404)
        return page("error.html", message=message, status=404)

    def ordered_tool_ids(policy: Policy) -> list[str]:
        tools = sorted(policy.tools, key=lambda t: (t.display_name.casefold(), t.definition.id))
        return [tool.definition.id for tool in tools]

    async def status(request: Request) -> Response:
        document = _status_document(view.policy)
        if request.url.path.startswith("/api/"):
            return JSONResponse(document)
        return page("status.html", document=document)

    async def settings(request: Request) -> Response:
        documents = _settings_documents(view.policy)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"tools": documents})
        return page("settings.html", tools=documents)

    async def decisions(request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        component = _component(request)
        if component is None:
            return not_found(_unknown_component(request), api)
        policy = view.policy
        matrix = build_matrix(
            policy.registry, ordered_tool_ids(policy), policy.providers, component
        )
        document = matrix_document(matrix)
        if api:
            return JSONResponse(document)
        cells = {(d["tool"], d["provider"]["id"]): d for d in document["decisions"]}
        return page("decisions.html", matrix=document, cells=cells)

    async def decision(request: Request) -> Response:
        api = request.url.path.startswith("/api/")
        policy = view.policy
        component = _component(request)
        tool_id = request.query_params.get("tool", "")
        provider = _provider(policy, request.query_params.get("provider", ""))
        if component is None:
            return not_found(_unknown_component(request), api)
        if tool_id not in policy.tool_ids:
            return not_found(f"unknown tool '{tool_id}'", api)
        if provider is None:
            wanted = request.query_params.get("provider", "")
            return not_found(f"no configured provider '{wanted}'", api)
        document = decision_document(policy.offer_decision(tool_id, provider, component))
        if api:
            return JSONResponse(document)
        return page("decision.html", decision=document)

    async def reload(request: Request) -> Response:
        view.reload()
        if request.url.path.startswith("/api/"):
            return JSONResponse({"reloaded": True})
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
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        if set_cookie and token is not None:
            response.set_cookie(_TOKEN_COOKIE, token, httponly=True, samesite="strict")
        return response

    return Starlette(routes=routes, middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)])
