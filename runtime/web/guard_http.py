"""Client for an external prompt-injection filtering service (e.g. a model-based detector).

Wire format:
`POST {base}/security/prompt-injection/sanitize` with `{"text": ...}` answers one result object
`{"sanitized_text", "findings": [{"rule_id", "category", "snippet"}], "redacted_count"}`;
`POST {base}/security/prompt-injection/sanitize-batch` with `{"texts": [...]}` answers
`{"results": [...]}` in the same order and length. Any other answer is a failure, which the guard
turns into a pass-through with a warning.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policy import ToolPolicyError
from runtime.web.addresses import redact_url_for_log
from runtime.web.guard import (
    MAX_LISTED_FINDINGS,
    NO_FILTER_CONTEXT,
    FilterContext,
    FilterResult,
    Finding,
)

_SINGLE_PATH = "/security/prompt-injection/sanitize"
_BATCH_PATH = "/security/prompt-injection/sanitize-batch"
_MAX_SNIPPET_CHARACTERS = 240
_Model = TypeVar("_Model", bound=BaseModel)


class InjectionFilterError(ToolPolicyError):
    """The filtering service could not be used; the message names the service, never the token."""

    code = "injection-filter"


class _WireFinding(BaseModel):
    model_config = ConfigDict(extra="ignore")
    rule_id: str
    category: str
    snippet: str = ""


class _WireResult(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sanitized_text: str
    findings: list[_WireFinding] = Field(default_factory=list)
    redacted_count: int = Field(default=0, ge=0)


class _WireBatch(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_WireResult]


@cache
def _tls_context() -> ssl.SSLContext:
    """Built once: loading the trust store costs far more than the request to a local service."""
    return httpx.create_ssl_context()


def _to_result(wire: _WireResult) -> FilterResult:
    findings = tuple(
        Finding(
            rule_id=finding.rule_id,
            category=finding.category,
            snippet=finding.snippet[:_MAX_SNIPPET_CHARACTERS],
        )
        for finding in wire.findings[:MAX_LISTED_FINDINGS]
    )
    return FilterResult(
        sanitized_text=wire.sanitized_text,
        findings=findings,
        redacted_count=max(wire.redacted_count, len(wire.findings)),
    )


class HttpInjectionFilter:
    """Sends one text to the single endpoint and several to the batch endpoint, in one request."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        timeout_single: float = 30.0,
        timeout_batch: float = 120.0,
    ) -> None:
        parsed = httpx.URL(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(
                f"The filtering service address must be an http or https URL, but it was '{base_url}'."
            )
        self._base_url = base_url.rstrip("/")
        self._shown_url = redact_url_for_log(self._base_url)
        self._token = token
        self._timeout_single = timeout_single
        self._timeout_batch = timeout_batch

    def __repr__(self) -> str:
        return f"HttpInjectionFilter(base_url={self._shown_url!r})"

    async def filter_batch(
        self, texts: Sequence[str], context: FilterContext = NO_FILTER_CONTEXT
    ) -> Sequence[FilterResult]:
        """The service's wire format has no place for the call's context, so it is not sent."""
        if not texts:
            return []
        if len(texts) == 1:
            answer = await self._post(_SINGLE_PATH, {"text": texts[0]}, self._timeout_single)
            return [_to_result(self._parse(_WireResult, answer, _SINGLE_PATH))]
        answer = await self._post(_BATCH_PATH, {"texts": list(texts)}, self._timeout_batch)
        batch = self._parse(_WireBatch, answer, _BATCH_PATH)
        if len(batch.results) != len(texts):
            raise InjectionFilterError(
                f"The filtering service at {self._shown_url} answered {len(batch.results)} "
                f"result(s) for {len(texts)} text(s)."
            )
        return [_to_result(result) for result in batch.results]

    async def _post(self, path: str, body: dict[str, Any], timeout: float) -> bytes:
        headers = {"Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        url = httpx.URL(self._base_url + path)
        shown = self._shown_url + path
        request = httpx.Request(
            "POST",
            url,
            json=body,
            headers=headers,
            extensions={"timeout": httpx.Timeout(timeout).as_dict()},
        )
        if url.userinfo and not self._token:
            request = next(httpx.BasicAuth(url.username, url.password).sync_auth_flow(request))
        try:
            # Straight to a transport: httpx's client logs each URL in full, credentials included.
            async with httpx.AsyncHTTPTransport(verify=_tls_context()) as transport:
                response = await transport.handle_async_request(request)
                try:
                    await response.aread()
                finally:
                    await response.aclose()
        except httpx.TimeoutException as error:
            raise InjectionFilterError(
                f"The filtering service at {shown} did not answer within {timeout:g} seconds."
            ) from error
        except httpx.HTTPError as error:
            raise InjectionFilterError(
                f"The filtering service at {shown} could not be reached: {type(error).__name__}."
            ) from error
        if response.status_code != 200:
            raise InjectionFilterError(
                f"The filtering service at {shown} answered HTTP {response.status_code} "
                f"({response.reason_phrase or 'Unknown'})."
            )
        return response.content

    def _parse(self, model: type[_Model], content: bytes, path: str) -> _Model:
        try:
            return model.model_validate_json(content)
        except ValidationError as error:
            raise InjectionFilterError(
                f"The filtering service at {self._shown_url}{path} sent an answer that is not "
                f"a valid result ({error.error_count()} problem(s), first: "
                f"{error.errors()[0]['msg']})."
            ) from error
