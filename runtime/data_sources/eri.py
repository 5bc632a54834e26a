"""AI Studio's External Retrieval Interface, version 1: the client side of the protocol.

An ERI server answers JSON whose names are camelCase and whose enumeration values are written in
upper snake case:

- `GET /auth/methods` — the sign-ins it takes (`[{authMethod, authFieldMappings}]`);
- `POST /auth?authMethod=NONE|USERNAME_PASSWORD|TOKEN` — a session token (`{success, token,
  message}`); the user name and password travel in the `user` and `password` headers, a token
  as `Authorization: Bearer`; every later request carries the session token in a `token` header;
- `GET /dataSource` — its name and description;
- `GET /retrieval/info` — its retrieval processes (`[{id, name, description, ...}]`);
- `GET /security/requirements` — which providers may read its data (`{allowedProviderType:
  NONE|ANY|SELF_HOSTED}`);
- `POST /retrieval` — the contexts matching a prompt (`[{name, category, path, type,
  matchedContent, surroundingContent, links}]`).

Each call is one request straight to a transport (the shared exchange of the configured search
services: no proxy variables, no logged URLs, the answer cut at a size). An `EriServerError`
names the step and the status, never a body (a server may echo what it was sent) nor a secret.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from runtime.tools.web_search.backends import SearchBackendError, exchange, outgoing_request

if TYPE_CHECKING:
    import httpx

DEFAULT_TIMEOUT_SECONDS = 10.0
"""How long one request to an ERI server may take."""


class EriServerError(SearchBackendError):
    """An ERI server could not be asked, or answered what ERI v1 does not allow; the message
    names the server's address (redacted) and the step, safe to log and show."""

    code = "eri-server"


class EriAuthMethod(StrEnum):
    NONE = "NONE"
    KERBEROS = "KERBEROS"
    USERNAME_PASSWORD = "USERNAME_PASSWORD"
    TOKEN = "TOKEN"


class EriProviderType(StrEnum):
    """Which providers an ERI server lets read its data."""

    NONE = "NONE"
    ANY = "ANY"
    SELF_HOSTED = "SELF_HOSTED"


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


class EriAuthFieldMapping(_Wire):
    auth_field: str
    field_name: str


class EriAuthScheme(_Wire):
    auth_method: str
    auth_field_mappings: tuple[EriAuthFieldMapping, ...] = ()


class _AuthResponse(_Wire):
    success: bool
    token: str | None = None
    message: str | None = None


class EriDataSourceInfo(_Wire):
    name: str = ""
    description: str = ""


class EriRetrievalInfo(_Wire):
    id: str
    name: str = ""
    description: str = ""
    link: str | None = None


class EriSecurityRequirements(_Wire):
    allowed_provider_type: str

    @property
    def provider_type(self) -> EriProviderType:
        """What the server allows; a value ERI v1 does not define allows no provider."""
        try:
            return EriProviderType(self.allowed_provider_type)
        except ValueError:
            return EriProviderType.NONE


class EriContext(_Wire):
    """One match a server returned; every text in it is untrusted."""

    name: str = ""
    category: str = ""
    path: str | None = None
    type: str = "TEXT"
    matched_content: str = ""
    surrounding_content: tuple[str, ...] = Field(default=())
    links: tuple[str, ...] = Field(default=())


@dataclass(frozen=True, slots=True)
class EriCredentials:
    """How to sign in; `secret` is the password or token (never shown by repr)."""

    method: EriAuthMethod
    username: str = ""
    secret: str = ""

    def __repr__(self) -> str:
        from policy._runtime_seam import MASK

        return f"EriCredentials({self.method.value}, username={self.username!r}, secret={MASK})"


class EriClient:
    """The ERI v1 calls to one server (`base_url`: scheme, host and port)."""

    def __init__(
        self,
        base_url: str,
        label: str,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        transport: Callable[[], httpx.AsyncBaseTransport] | None = None,
    ) -> None:
        from runtime.web.addresses import redact_url_for_log

        self._base = base_url.rstrip("/")
        self._label = label
        self._shown = redact_url_for_log(self._base)
        self._timeout = timeout_seconds
        self._transport = transport

    async def auth_methods(self) -> tuple[EriAuthScheme, ...]:
        body = await self._call("GET", "/auth/methods", "list its sign-in methods")
        schemes: list[EriAuthScheme] = self._read(body, list[EriAuthScheme], "its sign-in methods")
        return tuple(schemes)

    async def authenticate(self, credentials: EriCredentials) -> str:
        """The session token the server hands out for `credentials` (may be empty)."""
        headers: dict[str, str] = {}
        if credentials.method is EriAuthMethod.USERNAME_PASSWORD:
            headers = {"user": credentials.username, "password": credentials.secret}
        elif credentials.method is EriAuthMethod.TOKEN:
            headers = {"Authorization": f"Bearer {credentials.secret}"}
        elif credentials.method is not EriAuthMethod.NONE:
            raise EriServerError(
                f"{self._label}: signing in with {credentials.method.value} is not supported; "
                "use NONE, USERNAME_PASSWORD or TOKEN."
            )
        body = await self._call(
            "POST",
            f"/auth?authMethod={credentials.method.value}",
            "sign in",
            headers=headers,
        )
        answer: _AuthResponse = self._read(body, _AuthResponse, "its sign-in answer")
        if not answer.success:
            raise EriServerError(f"{self._label} at '{self._shown}' refused the sign-in.")
        return answer.token or ""

    async def data_source_info(self, session: str) -> EriDataSourceInfo:
        body = await self._call("GET", "/dataSource", "describe itself", session=session)
        info: EriDataSourceInfo = self._read(body, EriDataSourceInfo, "its description")
        return info

    async def retrieval_info(self, session: str) -> tuple[EriRetrievalInfo, ...]:
        body = await self._call(
            "GET", "/retrieval/info", "list its retrieval processes", session=session
        )
        processes: list[EriRetrievalInfo] = self._read(
            body, list[EriRetrievalInfo], "its retrieval processes"
        )
        return tuple(processes)

    async def security_requirements(self, session: str) -> EriSecurityRequirements:
        body = await self._call(
            "GET", "/security/requirements", "state its security requirements", session=session
        )
        requirements: EriSecurityRequirements = self._read(
            body, EriSecurityRequirements, "its security requirements"
        )
        return requirements

    async def retrieve(
        self, session: str, prompt: str, retrieval_id: str, max_matches: int
    ) -> tuple[EriContext, ...]:
        """The contexts matching `prompt`, best first, at most `max_matches` of them asked for.

        The prompt goes as the latest user prompt and as a one-block thread: the model's query
        is all a search sends, never the conversation."""
        request = {
            "latestUserPrompt": prompt,
            "latestUserPromptType": "TEXT",
            "thread": {"contentBlocks": [{"content": prompt, "role": "USER", "type": "TEXT"}]},
            "retrievalProcessId": retrieval_id or None,
            "parameters": None,
            "maxMatches": max_matches,
        }
        body = await self._call("POST", "/retrieval", "search", session=session, json=request)
        contexts: list[EriContext] = self._read(body, list[EriContext], "its matches")
        return tuple(contexts)

    async def _call(
        self,
        method: str,
        path: str,
        step: str,
        *,
        session: str | None = None,
        headers: Mapping[str, str] | None = None,
        json: Mapping[str, Any] | None = None,
    ) -> bytes:
        sent = dict(headers or {})
        if session is not None:
            sent["token"] = session
        request = outgoing_request(
            method, self._base + path, self._timeout, headers=sent, json_body=json
        )

        def check_status(response: httpx.Response) -> None:
            if response.status_code >= 400:
                raise EriServerError(
                    f"{self._label} at '{self._shown}' could not {step}: HTTP "
                    f"{response.status_code}."
                )

        try:
            return await exchange(
                request,
                label=self._label,
                shown=self._shown,
                timeout_seconds=self._timeout,
                transport=self._transport() if self._transport else None,
                check_status=check_status,
            )
        except EriServerError:
            raise
        except SearchBackendError as error:
            raise EriServerError(str(error)) from error

    def _read(self, body: bytes, shape: Any, what: str) -> Any:
        try:
            return _adapter(shape).validate_json(body)
        except ValidationError as error:
            places = sorted(
                {
                    ".".join(str(part) for part in e["loc"]) or "(the whole answer)"
                    for e in error.errors(include_input=False)
                }
            )
            raise EriServerError(
                f"{self._label} at '{self._shown}' answered with {what} not in ERI v1's shape "
                f"(at {', '.join(places[:5])})."
            ) from None


@cache
def _adapter(shape: Any) -> TypeAdapter[Any]:
    """One validator per answer shape, built on first use."""
    return TypeAdapter(shape)
