"""An ERI_V1 entry of `CONFIG["DATA_SOURCES"]`, as semantic_search offers and searches it.

`EriDataSource` is both halves a chat's data source needs: the searcher (one page of passages
for a query, over `POST /retrieval`) and what the server says of itself (`ServerDetails`: its
description, filtered through the prompt-injection guard, and the providers it allows), which
offering reads. The details are kept five minutes, as AI Studio keeps the descriptions of ERI
data sources, so offering is a lookup; a server that could not be asked is asked again after
`RETRY_SECONDS`, not on every request, and offers nothing meanwhile. A refresh (every request
it makes) and a search each finish within the time-out, and requests that need the same refresh
share it. Offering waits only for a server's first answer; later refreshes run in the background
while the details known are offered, and a search always waits for a due refresh, so data is
only ever searched under requirements at most five minutes old.

Secrets: the entry's `ENC:v1:` password or token is decrypted on first use and kept; it is masked
in every log record of the process and, with the latest session tokens the server handed out, in
every text the server returns (no session token is ever logged). A password or token goes over
plain http only to this machine.

Identity: an entry that sends the operating-system user name (OS_USERNAME_SHARED_PASSWORD) is
searched only by a runtime whose OS user is the person asking (`os_user_is_person`: a desktop
app, `policy chat`, a stdio gateway). A server answering people over the network runs as its own
service account, so there the entry is refused before anything is sent: nobody gets passages
retrieved as another identity.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from policy import DataSecurity
from policy._runtime_seam import (
    OS_USER_NAME_REFUSAL,
    SecretMask,
    SecretValue,
    mask_in_logs,
    sends_os_user_name,
)
from runtime.data_sources import (
    MAX_RESULT_WINDOW,
    DataSourceKind,
    Passage,
    PassagePage,
    SearchableDataSource,
    SearchGap,
    ServerDetails,
    configured_page_size,
)
from runtime.data_sources.eri import (
    DEFAULT_TIMEOUT_SECONDS,
    EriAuthMethod,
    EriClient,
    EriContext,
    EriCredentials,
    EriProviderType,
    EriServerError,
)

if TYPE_CHECKING:
    import httpx

    from policy._runtime_seam import DataSourceConfig
    from runtime.web.guard import PromptInjectionGuard

_log = logging.getLogger(__name__)

DETAILS_SECONDS = 300.0
"""How long what a server said of itself is used before it is asked again (five minutes)."""
RETRY_SECONDS = 30.0
"""How long a server that could not be asked is left alone before the next try."""

_SECURITY = {
    EriProviderType.ANY: DataSecurity.ALLOW_ANY,
    EriProviderType.SELF_HOSTED: DataSecurity.SELF_HOSTED,
    EriProviderType.NONE: DataSecurity.SELF_HOSTED,
}
_SHOWN_PROCESSES = 10
_KEPT_SESSIONS = 8
"""Session tokens masked in a server's texts: the latest ones (a server may hand out one per
sign-in, and a mask over every token ever seen would only grow)."""


class EriDataSource:
    """One configured ERI v1 data source: its server's details, kept a while, and its search."""

    def __init__(
        self,
        config: DataSourceConfig,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        transport: Callable[[], httpx.AsyncBaseTransport] | None = None,
        clock: Callable[[], float] = time.monotonic,
        os_user_is_person: bool = True,
    ) -> None:
        raw = config.raw
        self.config = config
        self._label = f"The ERI server of the data source '{config.name}'"
        self._retrieval_id = str(raw.get("SelectedRetrievalId", "")).strip()
        self._method = EriAuthMethod(str(raw.get("AuthMethod", "NONE")))
        secret = raw.get("Token") or raw.get("Password")
        self._secret_value = secret if isinstance(secret, SecretValue) else None
        self._secret: str | None = None
        self._sessions: deque[str] = deque(maxlen=_KEPT_SESSIONS)
        self._clock = clock
        self._details: ServerDetails | None = None
        self._fetched_at = 0.0
        self._failed_at: float | None = None
        base, self._problem = _base_url(config, self._method, self._label)
        self._sends_os_user = sends_os_user_name(raw)
        if self._sends_os_user and not os_user_is_person and not self._problem:
            self._problem = (
                f"{self._label} is not searched for the people this runtime answers: "
                f"{OS_USER_NAME_REFUSAL}."
            )
        self._problem_told = False
        self._timeout = timeout_seconds
        self._refreshing: asyncio.Task[None] | None = None
        self._client = EriClient(
            base, self._label, timeout_seconds=timeout_seconds, transport=transport
        )

    def searchable(self, num: int) -> SearchableDataSource:
        """This source as the chat's data sources list it."""
        return SearchableDataSource(
            id=self.config.id,
            name=self.config.name,
            searcher=self,
            page_size=configured_page_size(self.config),
            kind=DataSourceKind.EXTERNAL,
            num=num,
            security=self.config.security,
            required_confidence=self.config.minimum_confidence,
            server=self,
        )

    # --- what the server says of itself ---------------------------------------------------------

    def current(self) -> ServerDetails | None:
        if self._problem:
            return ServerDetails(refusal=self._problem)
        return self._details

    async def refresh(self, guard: PromptInjectionGuard, *, wait: bool = True) -> None:
        if self._problem:
            if not self._problem_told:
                _log.warning("%s is not offered: %s", self.config.name, self._problem)
                self._problem_told = True
            return
        now = self._clock()
        if self._details is not None and now - self._fetched_at < DETAILS_SECONDS:
            return
        if self._failed_at is not None and now - self._failed_at < RETRY_SECONDS:
            return
        loop = asyncio.get_running_loop()
        task = self._refreshing
        if task is None or task.done() or task.get_loop() is not loop:
            task = self._refreshing = loop.create_task(self._refreshed(guard, now))
        if not wait and (self._details is not None or self._failed_at is not None):
            return  # offering goes on with what is known; the answer lands in the background
        # Requests that arrive meanwhile wait for the same answer; one that is cancelled leaves
        # it running for the others.
        await asyncio.shield(task)

    async def _refreshed(self, guard: PromptInjectionGuard, now: float) -> None:
        from runtime.web.guard import GuardSource

        try:
            async with self._bounded():
                described, allowed = await self._fetch_details()
        except EriServerError as error:
            _log.warning("%s is not offered for now: %s", self.config.name, error)
            self._details, self._failed_at = None, now
            return
        source = GuardSource(kind="data_source_description", label=self.config.name)
        description = await guard.sanitize(self._mask().text(described), source)
        refusal = ""
        if allowed is EriProviderType.NONE:
            refusal = f"{self._label} allows no provider to read its data."
            _log.warning("%s is not offered: %s", self.config.name, refusal)
        details = ServerDetails(description, _SECURITY[allowed], refusal)
        self._details, self._fetched_at, self._failed_at = details, now, None

    async def _fetch_details(self) -> tuple[str, EriProviderType]:
        """The server's description (unfiltered) and the providers it allows."""
        offered = {scheme.auth_method for scheme in await self._client.auth_methods()}
        if self._method.value not in offered:
            raise EriServerError(
                f"{self._label} does not take the sign-in {self._method.value} "
                f"(AuthMethod); it takes: {', '.join(sorted(map(repr, offered))) or 'none'}."
            )
        session = await self._sign_in()
        info = await self._client.data_source_info(session)
        processes = {p.id for p in await self._client.retrieval_info(session)}
        if self._retrieval_id and self._retrieval_id not in processes:
            shown = ", ".join(sorted(map(repr, processes))[:_SHOWN_PROCESSES]) or "none"
            raise EriServerError(
                f"{self._label} has no retrieval process {self._retrieval_id!r} "
                f"(SelectedRetrievalId); it has: {shown}."
            )
        allowed = (await self._client.security_requirements(session)).provider_type
        return info.description, allowed

    @asynccontextmanager
    async def _bounded(self) -> AsyncIterator[None]:
        """All requests of one refresh or one search within one time-out, not one each."""
        try:
            async with asyncio.timeout(self._timeout):
                yield
        except TimeoutError:
            raise EriServerError(
                f"{self._label} did not answer within {self._timeout:g} seconds."
            ) from None

    # --- searching ------------------------------------------------------------------------------

    async def search(self, query: str, page: int, page_size: int) -> PassagePage:
        """One page of the server's matches; ERI has no pages, so the window up to this page
        (and one more, to know whether there is a next page) is asked for."""
        if self._problem:
            raise EriServerError(self._problem)
        window = min(page * page_size + 1, MAX_RESULT_WINDOW + 1)
        async with self._bounded():
            session = await self._sign_in()
            contexts = await self._client.retrieve(session, query, self._retrieval_id, window)
        texts = [c for c in contexts if c.type == "TEXT"]
        start = (page - 1) * page_size
        chosen = texts[start : start + page_size]
        gaps = frozenset({SearchGap.PARTIAL}) if len(texts) < len(contexts) else frozenset()
        return PassagePage(
            tuple(self._passage(c) for c in chosen),
            has_more=len(texts) > start + page_size,
            gaps=gaps,
        )

    def _passage(self, context: EriContext) -> Passage:
        from policy._runtime_seam import read_web_address

        mask = self._mask()
        text = "\n\n".join(
            part for part in (context.matched_content, *context.surrounding_content) if part
        )
        if context.links:
            text += "\n\nLinks: " + ", ".join(context.links)
        path = context.path or ""
        url = path if read_web_address(path) is not None else ""
        title = context.name or path
        return Passage(mask.text(text), mask.text(title), mask.text(url), path or context.name)

    # --- signing in -----------------------------------------------------------------------------

    async def _sign_in(self) -> str:
        session = await self._client.authenticate(self._credentials())
        if session and session not in self._sessions:
            self._sessions.append(session)
        return session

    def _credentials(self) -> EriCredentials:
        raw = self.config.raw
        if self._method is EriAuthMethod.NONE:
            return EriCredentials(EriAuthMethod.NONE)
        secret = self._plaintext()
        if self._method is EriAuthMethod.TOKEN:
            return EriCredentials(EriAuthMethod.TOKEN, secret=secret)
        username = getpass.getuser() if self._sends_os_user else str(raw.get("Username", ""))
        return EriCredentials(EriAuthMethod.USERNAME_PASSWORD, username, secret)

    def _plaintext(self) -> str:
        """The password or token, decrypted once; from then on masked in every log record."""
        if self._secret is not None:
            return self._secret
        from policy._runtime_seam import SECRET_SOURCES, configured_secret, decrypt

        if self._secret_value is None:
            raise EriServerError(f"{self._label}: the entry has no password or token.")
        key = configured_secret()
        if key is None:
            raise EriServerError(
                f"{self._label}: its ENC:v1: secret cannot be decrypted: no encryption secret is "
                f"configured ({SECRET_SOURCES})."
            )
        try:
            plaintext = decrypt(self._secret_value.encrypted, key)
        except Exception as error:
            raise EriServerError(
                f"{self._label}: its ENC:v1: secret cannot be decrypted ({type(error).__name__})."
            ) from None
        mask_in_logs(SecretMask.of([plaintext]))
        self._secret = plaintext
        return plaintext

    def _mask(self) -> SecretMask:
        """What a server's texts must not show: the secret and the latest session tokens (a
        server that echoes what it was sent); we never log a session token ourselves."""
        return SecretMask.of([s for s in (self._secret, *self._sessions) if s])

    def __repr__(self) -> str:
        return f"EriDataSource({self.config.id!r}, {self.config.name!r})"


def _base_url(config: DataSourceConfig, method: EriAuthMethod, label: str) -> tuple[str, str]:
    """The server's address with the entry's port, or why the entry cannot be used."""
    import httpx

    from policy._runtime_seam import eri_client_problem

    hostname = str(config.raw.get("Hostname", "")).strip()
    problem = eri_client_problem(hostname, method.value)
    if problem is not None:
        return "", f"{label}: {problem}."
    port = config.raw.get("Port")
    url = httpx.URL(hostname)
    if isinstance(port, int) and not isinstance(port, bool):
        url = url.copy_with(port=port)
    return str(url), ""
