"""A loopback ERI v1 server (AI Studio's External Retrieval Interface), written from the protocol.

`GET /auth/methods` lists the sign-ins of `EriState.methods`; `POST /auth?authMethod=...` checks
the `user`/`password` headers or the Bearer token against the state and hands out a session token
(`session_token`), which every other endpoint requires in its `token` header (401 without it).
`GET /dataSource`, `GET /retrieval/info` and `GET /security/requirements` answer from the state;
`POST /retrieval` returns the documents containing a word of the prompt, at most `maxMatches`, as
ERI contexts. `down` makes every endpoint answer 500, `retrieval_down` only the search; a path in
`stalled` answers only once `release` is set (at most 10 s), one in `answers` answers that JSON
instead. Every request is recorded (path, headers, body) so a test can see what was sent.

`retrieval_gate`, when set, is awaited (in a thread) before a search answers: a test that
searches another source at the same time opens it from there, so the search only completes when
both ran at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.servers.loopback import RunningApp, running_app


@dataclass
class EriDocument:
    name: str
    text: str
    path: str | None = None
    surrounding: tuple[str, ...] = ()
    type: str = "TEXT"
    links: tuple[str, ...] = ()


@dataclass
class EriState:
    methods: tuple[str, ...] = ("NONE", "USERNAME_PASSWORD", "TOKEN")
    username: str = "eri-reader"
    password: str = ""
    token: str = ""
    session_token: str = "session-3f9a1c2d7e"
    name: str = "Contoso knowledge base"
    description: str = "Product manuals and support articles of Contoso."
    retrieval_ids: tuple[str, ...] = ("hybrid", "keyword")
    allowed_provider_type: str = "ANY"
    documents: list[EriDocument] = field(default_factory=list)
    down: bool = False
    retrieval_down: bool = False
    retrieval_started: threading.Event = field(default_factory=threading.Event)
    retrieval_gate: threading.Event | None = None
    stalled: set[str] = field(default_factory=set)
    release: threading.Event = field(default_factory=threading.Event)
    answers: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]


def _words(text: str) -> set[str]:
    return {w.strip(".,;:!?").lower() for w in text.split() if w.strip(".,;:!?")}


def build_app(state: EriState) -> Starlette:
    async def record(request: Request) -> Response | None:
        body = await request.body()
        state.requests.append(
            {
                "path": request.url.path,
                "query": dict(request.query_params),
                "headers": dict(request.headers),
                "body": body.decode("utf-8", "replace"),
            }
        )
        if state.down:
            return Response("internal error", status_code=500)
        if request.url.path in state.stalled:
            await asyncio.to_thread(state.release.wait, 10)
        if request.url.path in state.answers:
            return JSONResponse(state.answers[request.url.path])
        return None

    def signed_in(request: Request) -> bool:
        return request.headers.get("token") == state.session_token

    async def auth_methods(request: Request) -> Response:
        failed = await record(request)
        if failed:
            return failed
        fields = {
            "NONE": [],
            "USERNAME_PASSWORD": [
                {"authField": "USERNAME", "fieldName": "user"},
                {"authField": "PASSWORD", "fieldName": "password"},
            ],
            "TOKEN": [{"authField": "TOKEN", "fieldName": "Authorization"}],
        }
        return JSONResponse(
            [{"authMethod": m, "authFieldMappings": fields.get(m, [])} for m in state.methods]
        )

    async def auth(request: Request) -> Response:
        failed = await record(request)
        if failed:
            return failed
        method = request.query_params.get("authMethod", "")
        headers = request.headers
        accepted = method in state.methods and (
            method == "NONE"
            or (
                method == "USERNAME_PASSWORD"
                and headers.get("user") == state.username
                and headers.get("password") == state.password
            )
            or (method == "TOKEN" and headers.get("authorization") == f"Bearer {state.token}")
        )
        if not accepted:
            return JSONResponse(
                {"success": False, "token": None, "message": "Wrong credentials."},
                status_code=401,
            )
        return JSONResponse({"success": True, "token": state.session_token, "message": None})

    async def data_source(request: Request) -> Response:
        failed = await record(request)
        if failed:
            return failed
        if not signed_in(request):
            return Response(status_code=401)
        return JSONResponse({"name": state.name, "description": state.description})

    async def retrieval_info(request: Request) -> Response:
        failed = await record(request)
        if failed:
            return failed
        if not signed_in(request):
            return Response(status_code=401)
        return JSONResponse(
            [
                {
                    "id": rid,
                    "name": f"{rid} retrieval",
                    "description": "",
                    "link": None,
                    "parametersDescription": None,
                    "embeddings": [],
                }
                for rid in state.retrieval_ids
            ]
        )

    async def security(request: Request) -> Response:
        failed = await record(request)
        if failed:
            return failed
        if not signed_in(request):
            return Response(status_code=401)
        return JSONResponse({"allowedProviderType": state.allowed_provider_type})

    async def retrieval(request: Request) -> Response:
        failed = await record(request)
        if failed:
            return failed
        if not signed_in(request):
            return Response(status_code=401)
        state.retrieval_started.set()
        if state.retrieval_down:
            return Response("index unavailable", status_code=503)
        if state.retrieval_gate is not None:
            await asyncio.to_thread(state.retrieval_gate.wait, 10)
        asked = json.loads(state.requests[-1]["body"])
        wanted = _words(asked["latestUserPrompt"])
        found = [d for d in state.documents if wanted & _words(d.text)]
        limit = asked.get("maxMatches") or len(found)
        return JSONResponse(
            [
                {
                    "name": d.name,
                    "category": "manual",
                    "path": d.path,
                    "type": d.type,
                    "matchedContent": d.text,
                    "surroundingContent": list(d.surrounding),
                    "links": list(d.links),
                }
                for d in found[:limit]
            ]
        )

    return Starlette(
        routes=[
            Route("/auth/methods", auth_methods, methods=["GET"]),
            Route("/auth", auth, methods=["POST"]),
            Route("/dataSource", data_source, methods=["GET"]),
            Route("/retrieval/info", retrieval_info, methods=["GET"]),
            Route("/security/requirements", security, methods=["GET"]),
            Route("/retrieval", retrieval, methods=["POST"]),
        ]
    )


@dataclass
class EriServer:
    state: EriState
    app: RunningApp

    @property
    def hostname(self) -> str:
        """The `Hostname` of a DATA_SOURCES entry (the port goes into `Port`)."""
        return "http://127.0.0.1"

    @property
    def port(self) -> int:
        return self.app.port


@contextmanager
def running_eri_server(state: EriState | None = None) -> Iterator[EriServer]:
    state = state or EriState()
    with running_app(build_app(state)) as app:
        yield EriServer(state, app)
