"""A loopback stand-in for an external prompt-injection filtering service.

It speaks the single and batch endpoints of the filtering service (docs/security/prompt-injection.md) and removes one known phrase, so
tests see real HTTP without depending on a detector. Modes make it fail (HTTP 500), answer a
batch with one result too few, or demand a bearer token. Every request is recorded.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.servers.loopback import running_app

REMOVED_PHRASE = re.compile(r"ignore previous instructions", re.IGNORECASE)
SERVICE_MARKER = "[service removed this]"


@dataclass
class GuardServiceState:
    """What the service does next and what it has seen."""

    mode: str = "ok"
    """One of "ok", "fail" (HTTP 500), "wrong_length" (a batch answer one short), "not_json",
    "slow" (answers after `delay_seconds`)."""
    delay_seconds: float = 1.0
    token: str | None = None
    requests: list[tuple[str, dict[str, Any], str | None]] = field(default_factory=list)


def _sanitize(text: str) -> dict[str, Any]:
    findings = [
        {"rule_id": "test_phrase", "category": "override", "snippet": match.group(0)}
        for match in REMOVED_PHRASE.finditer(text)
    ]
    return {
        "sanitized_text": REMOVED_PHRASE.sub(SERVICE_MARKER, text),
        "findings": findings,
        "redacted_count": len(findings),
    }


def create_app(state: GuardServiceState) -> Starlette:
    async def answer(request: Request) -> JSONResponse:
        body = await request.json()
        state.requests.append((request.url.path, body, request.headers.get("authorization")))
        if (
            state.token is not None
            and request.headers.get("authorization") != f"Bearer {state.token}"
        ):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        if state.mode == "slow":
            await asyncio.sleep(state.delay_seconds)
        if state.mode == "fail":
            return JSONResponse({"error": "scanner failed"}, status_code=500)
        if state.mode == "not_json":
            return JSONResponse(["not", "a", "result"])
        if request.url.path.endswith("/sanitize"):
            return JSONResponse(_sanitize(body["text"]))
        results = [_sanitize(text) for text in body["texts"]]
        if state.mode == "wrong_length":
            results = results[:-1]
        return JSONResponse({"results": results})

    return Starlette(
        routes=[
            Route("/security/prompt-injection/sanitize", answer, methods=["POST"]),
            Route("/security/prompt-injection/sanitize-batch", answer, methods=["POST"]),
        ]
    )


@dataclass(frozen=True)
class RunningGuardService:
    base_url: str
    state: GuardServiceState


@contextmanager
def running_guard_service() -> Iterator[RunningGuardService]:
    """Serve on 127.0.0.1 with a free port for the duration of the block, then stop."""
    state = GuardServiceState()
    with running_app(create_app(state)) as app:
        yield RunningGuardService(base_url=app.url(), state=state)
