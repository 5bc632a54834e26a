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
import functools
import hashlib
import hmac
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from policy import web_what_if
from policy.flow import HELD_EFFECTS
from policy.hosts import is_loopback_host
from policy.vocabulary import COMPONENT_NAMES, PROVIDER_KIND_NAMES, Component
from policy.web_documents import (
    ConfigurationPaths,
    Deliveries,
    ReloadOutcome,
    SettingsFilter,
    Snapshot,
    reload_document,
    settings_page_document,
)
from policy.web_what_if import WhatIfError, form_holdings, form_list

if TYPE_CHECKING:
    from policy import Policy
    from policy.configuration import ProviderConfig
    from policy.identity import Caller
    from policy.people import PeoplePolicies

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "ConfigurationPaths",
    "PolicySource",
    "ReloadOutcome",
    "build_app",
]

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
_TEMPLATES = Path(__file__).with_name("web_templates")
_log = logging.getLogger(__name__)
_TOKEN_COOKIE = "toolpolicy_token"


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


class _DocumentTemplates(Environment):
    """Templates that render JSON documents: `row.keys` is the document's key `keys`, never the
    dict method of that name (a key is looked up before an attribute)."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Mapping) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


def build_app(
    source: PolicySource,
    paths: ConfigurationPaths | None = None,
    token: str | None = None,
    *,
    watch: bool = True,
    debug: bool = False,
    signed_in: bool = False,
    caller_of: Callable[[Request], Caller | None] | None = None,
    people_of: Callable[[Policy], PeoplePolicies | None] | None = None,
) -> Starlette:
    """The web app over `source`'s policy; with `token`, every request must present it; with
    `signed_in`, the server wraps the app in the organization's sign-in (`policy serve` with
    `DataGateway.Issuer`), which lets only signed-in people through, on any host name, and
    `caller_of` names who asks (`runtime.signin.request_caller`): the status, settings and
    decision pages then show that person's policy (their groups' configurations); without a
    caller they show a person in no group's. The simulate and diff forms start from every
    loaded configuration (the simulate form decides for whomever it names); with `signed_in`,
    only for a member of `DataGateway.AdministratorGroups` — everyone else simulates as
    themselves and is refused Diff (403). `people_of` gives a
    policy's people as loaded with their groups' own MCP server entries listed
    (`runtime.cli_serve.ServedPolicy.people_of`); without it, or where it gives None, such an entry is not listed.

    With `watch`, the app runs `source.run()` for as long as it serves (and closes the source
    when it stops), so a changed plugin file is in force without a click on Reload. Without a
    token, only requests addressed to a loopback name are answered (a DNS-rebinding page cannot
    read it). A failure no page expects is logged in one line (with its traceback only with
    `debug`) and answered with a 500 that names its type.
    """
    from policy.explain import decision_document, held_names, value_text

    paths = paths or ConfigurationPaths()
    templates = _DocumentTemplates(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    templates.filters["value"] = value_text
    current: list[Snapshot] = []
    deliveries = Deliveries(paths.state_dir)

    def snapshot() -> Snapshot:
        policy = source.policy
        if not current or current[0].policy is not policy:
            people = people_of(policy) if people_of is not None else None
            current[:] = [Snapshot(policy, paths, people=people)]
        return current[0]

    def decided(request: Request) -> tuple[Snapshot, dict[str, Any]]:
        """The snapshot of what decides for the person asking, and whom the page decided for."""
        caller = caller_of(request) if caller_of is not None else None
        whole = snapshot()
        said = whole.people().decided_for(caller)
        return whole.decided_for(caller), ({} if said is None else {"decided_for": said})

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
        current_snapshot, decided_for = decided(request)
        document = {
            **current_snapshot.status(),
            **decided_for,
            "deliveries": deliveries.documents(),
            "revision": source.revision,
            "last_change": reload_document(source.last_change),
        }
        if is_api(request):
            return JSONResponse(document)
        return page("status.html", document=document, **decided_for)

    async def settings(request: Request) -> Response:
        chosen = SettingsFilter.of(request.query_params)
        current_snapshot, decided_for = decided(request)
        if chosen.tool and chosen.tool not in current_snapshot.policy.tool_ids:
            return not_found(f"unknown tool '{chosen.tool}'", is_api(request))
        document = {**settings_page_document(current_snapshot, chosen), **decided_for}
        if is_api(request):
            return JSONResponse(document)
        tool_ids = sorted(current_snapshot.policy.tool_ids)
        return page(
            "settings.html", document=document, chosen=chosen, tool_ids=tool_ids, **decided_for
        )

    async def decisions(request: Request) -> Response:
        component = component_of(request)
        if component is None:
            return not_found(unknown_component(request), is_api(request))
        try:
            holdings = form_holdings(request.query_params)
        except WhatIfError as error:
            return what_if_error(
                request, error, "error.html", message=error.message, title="Bad what-if"
            )
        current_snapshot, decided_for = decided(request)
        document = {**current_snapshot.matrix(component, holdings), **decided_for}
        if is_api(request):
            return JSONResponse(document)
        cells = {(d["tool"], d["provider"]["id"]): d for d in document["decisions"]}
        return page(
            "decisions.html",
            matrix=document,
            cells=cells,
            **held_context(document),
            **decided_for,
        )

    async def decision(request: Request) -> Response:
        api = is_api(request)
        current_snapshot, decided_for = decided(request)
        policy = current_snapshot.policy
        component = component_of(request)
        tool_id = request.query_params.get("tool", "")
        provider = _provider(policy, request.query_params.get("provider", ""))
        if component is None:
            return not_found(unknown_component(request), api)
        if tool_id not in policy.tool_ids:
            return not_found(f"unknown tool '{tool_id}'", api)
        if provider is None:
            wanted = request.query_params.get("provider", "")
            return not_found(f"no configured provider '{wanted}'", api)
        try:
            holdings = form_holdings(request.query_params)
        except WhatIfError as error:
            return what_if_error(
                request, error, "error.html", message=error.message, title="Bad what-if"
            )
        offered = policy.offer_decision(tool_id, provider, component, holdings=holdings)
        document = {**decision_document(offered), **decided_for}
        if api:
            return JSONResponse(document)
        held = {} if holdings is None else {"chat_holds": held_names(holdings)}
        return page(
            "decision.html",
            decision=document,
            provider_name=provider.name,
            **held_context(held),
            **decided_for,
        )

    async def form_of(request: Request) -> Mapping[str, Any]:
        if is_api(request):
            try:
                body = await request.json()
            except ValueError:
                raise WhatIfError("the request body must be a JSON object", "body") from None
            if not isinstance(body, dict):
                raise WhatIfError("the request body must be a JSON object", "body")
            return body
        return await request.form()

    def held_context(document: Mapping[str, Any]) -> dict[str, Any]:
        """What a page shows of a what-if on the chat's holdings: the effects, the choices, and
        the query that carries them on to the next page."""
        held = list(document.get("chat_holds") or ())
        return {
            "chat_holds": held,
            "held_effects": [effect.value for effect in HELD_EFFECTS],
            "held_query": {"chat_holds": ",".join(held)} if held else {},
        }

    def what_if_error(request: Request, error: WhatIfError, name: str, **context: Any) -> Response:
        if is_api(request):
            return JSONResponse(
                {"error": error.message, "field": error.field}, status_code=error.status
            )
        return page(name, status=error.status, error=error.message, **context)

    def only_as(request: Request) -> Caller | None:
        """The signed-in person when they may decide only for themselves (not a member of
        `DataGateway.AdministratorGroups`); None when the asker may decide for anyone (no
        sign-in: whoever reaches the page holds its token or this machine)."""
        from policy.people import decides_for_others

        if not signed_in:
            return None
        caller = caller_of(request) if caller_of is not None else None
        if caller is None:
            raise web_what_if.others_refused("Deciding without a signed-in person")
        if decides_for_others(source.policy.configuration, caller):
            return None
        return caller

    async def simulate(request: Request) -> Response:
        current_snapshot = snapshot()
        context: dict[str, Any] = {
            "providers": current_snapshot.policy.providers,
            "tool_ids": sorted(current_snapshot.policy.tool_ids),
            "form": {},
            "only_as": None,
            **held_context({}),
        }
        try:
            person = context["only_as"] = only_as(request)
            if request.method == "GET":
                return page("simulate.html", result=None, **context)
            form = await form_of(request)
            context["form"] = form
            context["chat_holds"] = ",".join(form_list(form, "chat_holds")).upper().split(",")
            result, notes = await asyncio.to_thread(
                functools.partial(web_what_if.simulate, only_as=person),
                current_snapshot.people(),
                form,
                current_snapshot.findings(),
            )
        except WhatIfError as error:
            return what_if_error(request, error, "simulate.html", result=None, **context)
        if is_api(request):
            return JSONResponse(result)
        return page("simulate.html", result=result, notes=notes, **context)

    async def diff(request: Request) -> Response:
        current_snapshot = snapshot()
        context: dict[str, Any] = {"form": {}, "chosen_components": []}
        try:
            if only_as(request) is not None:
                raise web_what_if.others_refused("Comparing configurations (Diff)")
        except WhatIfError as error:
            return what_if_error(
                request, error, "error.html", message=error.message, title="Not allowed"
            )
        if request.method == "GET":
            return page("diff.html", result=None, **context)
        try:
            form = await form_of(request)
            context["form"] = form
            context["chosen_components"] = form_list(form, "component")
            result = await asyncio.to_thread(web_what_if.diff, current_snapshot.policy, form, paths)
        except WhatIfError as error:
            return what_if_error(request, error, "diff.html", result=None, **context)
        if is_api(request):
            return JSONResponse(result)
        return page("diff.html", result=result, **context)

    async def reload(request: Request) -> Response:
        outcome = await source.reload()
        if is_api(request):
            return JSONResponse({**(reload_document(outcome) or {}), "revision": source.revision})
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

    def unexpected(request: Request, error: Exception) -> Response:
        """A failure no page expects: its text goes only to the log (it is no plugin's text
        to show), its traceback only with `debug` (`policy --debug serve`)."""
        _log.error(
            "%s %s failed unexpectedly (%s: %s)",
            request.method,
            request.url.path,
            type(error).__name__,
            error,
            exc_info=error if debug else None,
        )
        message = (
            f"unexpected failure ({type(error).__name__}); the terminal running policy serve "
            "says more"
        )
        if is_api(request):
            return JSONResponse({"error": message}, status_code=500)
        return page("error.html", message=message, title="Something went wrong", status=500)

    cookie_value = _cookie_value(token) if token is not None else ""

    async def guard(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        set_cookie = False
        if token is not None:
            in_query = request.query_params.get("token", "")
            presented = (
                request.headers.get("authorization", "").removeprefix("Bearer ").strip(),
                in_query,
            )
            cookie = request.cookies.get(_TOKEN_COOKIE, "")
            if not any(_same(p, token) for p in presented if p) and not (
                cookie and _same(cookie, cookie_value)
            ):
                return JSONResponse({"error": "a valid token is required"}, status_code=401)
            set_cookie = _same(in_query, token)
            if set_cookie and request.method in ("GET", "HEAD") and not is_api(request):
                kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
                target = request.url.path + (f"?{urlencode(kept)}" if kept else "")
                return secured(request, RedirectResponse(target, status_code=303), set_cookie)
        elif not signed_in and not is_loopback_host(_host_name(request.headers.get("host", ""))):
            return JSONResponse(
                {"error": "without --token, only requests to a loopback address are answered"},
                status_code=421,
            )
        if request.method not in ("GET", "HEAD") and _cross_site(request):
            return JSONResponse(
                {"error": "a form of another site cannot post here"}, status_code=403
            )
        try:
            response = await call_next(request)
        except Exception as error:  # a defect: one line in the log, one clear answer
            response = unexpected(request, error)
        return secured(request, response, set_cookie)

    def secured(request: Request, response: Response, set_cookie: bool) -> Response:
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "same-origin"
        response.headers["Cache-Control"] = "no-store"
        if set_cookie:
            response.set_cookie(
                _TOKEN_COOKIE,
                cookie_value,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
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

    api_paths = [r.path for r in routes if r.path.startswith("/api/")]
    page_paths = [r.path for r in routes if not r.path.startswith("/api/") and "." not in r.path]

    async def http_error(request: Request, error: Exception) -> Response:
        """No such address or method: said in kind (JSON under /api/), naming what is valid."""
        assert isinstance(error, HTTPException)
        path, api = request.url.path, is_api(request)
        if error.status_code == 405:
            allowed = [m for m in (error.headers or {}).get("Allow", "").split(", ") if m != "HEAD"]
            message, title = f"{request.method} {path}: use {' or '.join(allowed)}", "Not allowed"
        elif error.status_code == 404:
            known = ", ".join(api_paths if api else page_paths)
            message = f"no page {path}; the {'JSON twins' if api else 'pages'}: {known}"
            title = "Not found"
        else:
            message, title = str(error.detail), "Error"
        if api:
            return JSONResponse({"error": message}, status_code=error.status_code)
        return page("error.html", message=message, title=title, status=error.status_code)

    return Starlette(
        routes=routes,
        middleware=[Middleware(BaseHTTPMiddleware, dispatch=guard)],
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
    )


def _provider(policy: Policy, provider_id: str) -> ProviderConfig | None:
    from policy.errors import UnknownProviderError

    try:
        return policy.provider(provider_id)
    except UnknownProviderError:
        return None


def _cross_site(request: Request) -> bool:
    """A browser's post from another page than this server's (Origin `null`, Fetch Metadata says
    so, or the Origin is another host): refused, so another site cannot make the server load a
    plugin. Origin `null` is an opaque origin (a sandboxed frame, a `data:` page, a redirect from
    another site); this server's own forms send their origin, as the pages' `Referrer-Policy:
    same-origin` keeps it."""
    origin = request.headers.get("origin")
    if origin == "null":
        return True
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None:
        return fetch_site not in ("same-origin", "none")
    if origin is None:
        return False
    return origin.partition("://")[2].rstrip("/") != request.headers.get("host", "")


def _cookie_value(token: str) -> str:
    """What the browser keeps in place of the token: its HMAC under a key made for this app, so
    the token itself never sits in a cookie jar, and a cookie read off a disk or a proxy log
    opens this server only until it stops."""
    return hmac.new(secrets.token_bytes(32), token.encode(), hashlib.sha256).hexdigest()


def _same(presented: str, expected: str) -> bool:
    return hmac.compare_digest(presented.encode(), expected.encode())


def _host_name(host_header: str) -> str:
    """The name in a Host header, without its port (`[::1]:8765` → `::1`)."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")] if "]" in host_header else host_header
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header
