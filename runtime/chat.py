"""What a chat demands of every provider that continues it, kept across process restarts.

Tool results can bring data into a chat that only some providers may see. The chat remembers the
strictest demand so far — provider confidence, data security, the outbound-data restriction of a
mailbox read — and these only ever tighten. Before every request `ensure_provider_allowed` refuses a
provider that falls short, so no request is sent to it. It also holds what reached the model that
later decisions may treat more strictly (an injection the guard removed, with its source); holdings
only grow.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from policy import ConfidenceLevel, DataSecurity, ToolPolicyError
from policy._runtime_seam import OutboundDataRestriction, may_receive_data, tighten_data_security

if TYPE_CHECKING:
    from policy import Caller, ChatHoldings
    from policy._runtime_seam import ProviderFacts

_CHAT_DATABASE_ENV = "TOOLPOLICY_CHAT_DB"


class HoldingKind(StrEnum):
    """What a chat can hold."""

    INJECTION_SEEN = "INJECTION_SEEN"
    """The prompt-injection guard removed passages from a tool result that reached the model:
    the rest of that content came from someone who tried to instruct the agent."""
    UNTRUSTED_CONTENT = "UNTRUSTED_CONTENT"
    """Text from outside the organization's control reached the model (`policy.flow`)."""
    PRIVATE_DATA = "PRIVATE_DATA"
    """The organization's or the user's private data reached the model (`policy.flow`)."""


@dataclass(frozen=True, slots=True)
class ChatHolding:
    """Something that reached the model in this chat, kept for the chat's life: what, through
    which tool and call, from which source (as logs show it: a page's address with user info and
    parameter values masked, or the tool's id). One per (kind, tool, source): the first call
    that brought it stays named."""

    kind: HoldingKind
    tool_id: str
    source: str
    call_id: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind.value, self.tool_id, self.source)


@dataclass(frozen=True, slots=True)
class ChatRecord:
    """A chat's requirements as stored. A chat that was never saved demands nothing."""

    chat_id: str
    required_provider_confidence: ConfidenceLevel = ConfidenceLevel.NONE
    required_data_security: DataSecurity = DataSecurity.NOT_SPECIFIED
    outbound_restriction: OutboundDataRestriction = OutboundDataRestriction.UNRESTRICTED
    outbound_mailbox_id: str = ""
    """The mailbox whose mails set the restriction ("" while UNRESTRICTED)."""
    known_web_addresses: frozenset[str] = field(default_factory=frozenset)
    """Request keys of web addresses given to the model word for word (see runtime.web.addresses)."""
    holdings: tuple[ChatHolding, ...] = ()
    """What reached the model that later decisions may treat more strictly, in arrival order."""

    def holds(self, kind: HoldingKind) -> bool:
        return any(holding.kind is kind for holding in self.holdings)


class ChatStore(Protocol):
    """Where chat requirements live; an app can bring its own (its database, its encryption).

    `save` joins the record into what is stored, each requirement at the stricter of both, in
    one atomic step: two writers that read the chat before either saved must not undo each
    other's tightening (every store here does; `Chat` also joins before it saves, for a store
    that only overwrites, but only an atomic save closes the gap between its read and write).
    """

    def load(self, chat_id: str) -> ChatRecord | None: ...

    def save(self, record: ChatRecord) -> None: ...


class SuspendedTurnStore(Protocol):
    """A chat store that also keeps a turn stopped for approval (every store here does): one
    per chat, replaced by the next one kept; `take_suspended_turn` hands it to one caller only
    (read and removed in one step), so two instances never both resume it. Calls that need
    approval are refused in a chat whose store cannot keep them."""

    def keep_suspended_turn(self, chat_id: str, turn: str) -> None: ...

    def take_suspended_turn(self, chat_id: str) -> str | None: ...


class CallCountStore(Protocol):
    """Where each person's calls are counted for `DataGateway.CallLimits` (every store here is
    one; the PostgreSQL one counts across every instance that shares it).

    `take_call` counts one call of `tool_id` by `person` at `now` when fewer than `calls` were
    made in the `seconds` before, and answers None; else it counts nothing and answers the
    seconds until the next call is possible. One atomic step: two instances never both take the
    last call of a window."""

    def take_call(
        self, person: str, tool_id: str, calls: int, seconds: int, now: float
    ) -> float | None: ...


def next_call_in(
    made: int, oldest: float | None, calls: int, seconds: int, now: float
) -> float | None:
    """The one rule of a sliding window: None when a call may be made now (`made` calls since
    `now - seconds`, the `oldest` of them), else the seconds until the oldest leaves the window
    (the whole window for a limit of no calls)."""
    if made < calls:
        return None
    if oldest is None:
        return float(seconds)
    return max(0.0, oldest + seconds - now)


class MemoryChatStore:
    """Keeps records for the life of the process (tests, short-lived tools)."""

    def __init__(self) -> None:
        self._records: dict[str, ChatRecord] = {}
        self._turns: dict[str, str] = {}
        self._calls: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    def take_call(
        self, person: str, tool_id: str, calls: int, seconds: int, now: float
    ) -> float | None:
        with self._lock:
            made = [at for at in self._calls.get((person, tool_id), ()) if at > now - seconds]
            wait = next_call_in(len(made), min(made, default=None), calls, seconds, now)
            if wait is None:
                made.append(now)
            self._calls[(person, tool_id)] = made
            return wait

    def load(self, chat_id: str) -> ChatRecord | None:
        with self._lock:
            return self._records.get(chat_id)

    def save(self, record: ChatRecord) -> None:
        with self._lock:
            held = self._records.get(record.chat_id)
            self._records[record.chat_id] = record if held is None else _stricter(held, record)

    def keep_suspended_turn(self, chat_id: str, turn: str) -> None:
        with self._lock:
            self._turns[chat_id] = turn

    def take_suspended_turn(self, chat_id: str) -> str | None:
        with self._lock:
            return self._turns.pop(chat_id, None)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_requirements (
    chat_id TEXT PRIMARY KEY,
    required_provider_confidence INTEGER NOT NULL,
    required_data_security TEXT NOT NULL,
    outbound_restriction INTEGER NOT NULL,
    outbound_mailbox_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_known_web_addresses (
    chat_id TEXT NOT NULL,
    request_key TEXT NOT NULL,
    PRIMARY KEY (chat_id, request_key)
);
CREATE TABLE IF NOT EXISTS chat_holdings (
    chat_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool_id TEXT NOT NULL,
    source TEXT NOT NULL,
    call_id TEXT NOT NULL,
    PRIMARY KEY (chat_id, kind, tool_id, source)
);
CREATE TABLE IF NOT EXISTS chat_suspended_turns (
    chat_id TEXT PRIMARY KEY,
    turn TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS call_counts (
    person TEXT NOT NULL,
    tool_id TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL
);
CREATE INDEX IF NOT EXISTS call_counts_by_person ON call_counts (person, tool_id, at);
CREATE TABLE IF NOT EXISTS user_settings (
    subject TEXT PRIMARY KEY,
    settings TEXT NOT NULL
);
"""


def call_count_statements(mark: str) -> tuple[str, str, str]:
    """How every SQL store counts a call (`mark`: its parameter placeholder): drop the calls
    that left the window, count those in it, take one."""
    return (
        f"DELETE FROM call_counts WHERE person = {mark} AND tool_id = {mark} AND at <= {mark}",
        f"SELECT count(*), min(at) FROM call_counts WHERE person = {mark} AND tool_id = {mark}",
        f"INSERT INTO call_counts (person, tool_id, at) VALUES ({mark}, {mark}, {mark})",
    )


STORED_COLUMNS = (
    "required_provider_confidence, required_data_security, outbound_restriction,"
    " outbound_mailbox_id"
)
"""The columns of `chat_requirements` that `stored_record` reads, in its order (every store)."""

HOLDING_COLUMNS = "kind, tool_id, source, call_id"
"""The columns of `chat_holdings` that `stored_record` reads, in its order (every store); rows
are read in arrival order, and a save never replaces a stored row (holdings only grow)."""


_CONFIDENCES = ", ".join(str(int(level)) for level in ConfidenceLevel)
_RESTRICTIONS = ", ".join(str(int(restriction)) for restriction in OutboundDataRestriction)
_NOT_SPECIFIED, _ALLOW_ANY, _SELF_HOSTED = (
    f"'{security.value}'"
    for security in (DataSecurity.NOT_SPECIFIED, DataSecurity.ALLOW_ANY, DataSecurity.SELF_HOSTED)
)


TIGHTENING_UPSERT = f"""
ON CONFLICT (chat_id) DO UPDATE SET
    required_provider_confidence = CASE
        WHEN held.required_provider_confidence IN ({_CONFIDENCES})
            AND excluded.required_provider_confidence > held.required_provider_confidence
            THEN excluded.required_provider_confidence
        ELSE held.required_provider_confidence END,
    required_data_security = CASE
        WHEN held.required_data_security NOT IN ({_NOT_SPECIFIED}, {_ALLOW_ANY})
            THEN held.required_data_security
        WHEN excluded.required_data_security IN ({_SELF_HOSTED}, {_ALLOW_ANY})
            THEN excluded.required_data_security
        ELSE held.required_data_security END,
    outbound_restriction = CASE
        WHEN held.outbound_restriction IN ({_RESTRICTIONS})
            AND excluded.outbound_restriction < held.outbound_restriction
            THEN excluded.outbound_restriction
        ELSE held.outbound_restriction END,
    outbound_mailbox_id = CASE
        WHEN held.outbound_restriction IN ({_RESTRICTIONS})
            AND excluded.outbound_restriction < held.outbound_restriction
            THEN excluded.outbound_mailbox_id
        ELSE held.outbound_mailbox_id END
"""
"""How every SQL store saves a chat's row (`INSERT INTO chat_requirements AS held … ` this): the
arriving requirements joined with the stored ones inside the one statement, so a writer that read
the chat before another one tightened it can never lower it. Written in the SQL that SQLite and
PostgreSQL share. A stored value this version cannot read is kept as it is (it reads as the
strictest, see `stored_record`); data security is the ratchet of `tighten_data_security`."""


class SqliteChatStore:
    """Chat requirements in one SQLite file; each operation opens and closes its own connection.

    A stored value this version cannot read counts as the strictest one it knows: a requirement
    that cannot be read must not be lifted by accident.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            with closing(self._connect()) as connection, connection:
                connection.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as error:
            raise ChatStoreError(
                f"Cannot open the chat database '{self._path}': {error}. "
                f"Give a writable file path (or set {_CHAT_DATABASE_ENV})."
            ) from error

    @property
    def path(self) -> Path:
        return self._path

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self._path, timeout=10)

    @contextmanager
    def _reported(self) -> Iterator[None]:
        """A database error names the file, so it reaches the user as a message, not a trace."""
        try:
            yield
        except sqlite3.Error as error:
            raise ChatStoreError(
                f"The chat database '{self._path}' cannot be used: {error}. Give a writable "
                f"SQLite file (or set {_CHAT_DATABASE_ENV})."
            ) from error

    def load(self, chat_id: str) -> ChatRecord | None:
        with self._lock, self._reported(), closing(self._connect()) as connection:
            row = connection.execute(
                f"SELECT {STORED_COLUMNS} FROM chat_requirements WHERE chat_id = ?", (chat_id,)
            ).fetchone()
            if row is None:
                return None
            keys = connection.execute(
                "SELECT request_key FROM chat_known_web_addresses WHERE chat_id = ?", (chat_id,)
            ).fetchall()
            holdings = connection.execute(
                f"SELECT {HOLDING_COLUMNS} FROM chat_holdings WHERE chat_id = ? ORDER BY rowid",
                (chat_id,),
            ).fetchall()
        return stored_record(chat_id, row, keys, holdings)

    def save(self, record: ChatRecord) -> None:
        with self._lock, self._reported(), closing(self._connect()) as connection, connection:
            connection.execute(
                "INSERT INTO chat_requirements AS held VALUES (?, ?, ?, ?, ?)" + TIGHTENING_UPSERT,
                (
                    record.chat_id,
                    int(record.required_provider_confidence),
                    record.required_data_security.value,
                    int(record.outbound_restriction),
                    record.outbound_mailbox_id,
                ),
            )
            connection.executemany(
                "INSERT OR IGNORE INTO chat_known_web_addresses VALUES (?, ?)",
                [(record.chat_id, key) for key in sorted(record.known_web_addresses)],
            )
            connection.executemany(
                "INSERT OR IGNORE INTO chat_holdings VALUES (?, ?, ?, ?, ?)",
                [(record.chat_id, *holding_row(h)) for h in record.holdings],
            )

    def keep_suspended_turn(self, chat_id: str, turn: str) -> None:
        with self._lock, self._reported(), closing(self._connect()) as connection, connection:
            connection.execute(
                "INSERT OR REPLACE INTO chat_suspended_turns VALUES (?, ?)", (chat_id, turn)
            )

    def take_suspended_turn(self, chat_id: str) -> str | None:
        with self._lock, self._reported(), closing(self._connect()) as connection, connection:
            row = connection.execute(
                "DELETE FROM chat_suspended_turns WHERE chat_id = ? RETURNING turn", (chat_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def user_settings_text(self, subject: str) -> str | None:
        """The YAML of one person's own user settings (None: they saved none)."""
        with self._lock, self._reported(), closing(self._connect()) as connection:
            row = connection.execute(
                "SELECT settings FROM user_settings WHERE subject = ?", (subject,)
            ).fetchone()
        return None if row is None else str(row[0])

    def save_user_settings_text(self, subject: str, text: str) -> None:
        with self._lock, self._reported(), closing(self._connect()) as connection, connection:
            connection.execute(
                "INSERT INTO user_settings VALUES (?, ?) "
                "ON CONFLICT (subject) DO UPDATE SET settings = excluded.settings",
                (subject, text),
            )

    def take_call(
        self, person: str, tool_id: str, calls: int, seconds: int, now: float
    ) -> float | None:
        """Counted under an immediate transaction: processes on one file take turns."""
        prune, count, take = call_count_statements("?")
        with self._lock, self._reported(), closing(self._connect()) as connection:
            connection.isolation_level = None
            connection.execute("BEGIN IMMEDIATE")
            try:
                connection.execute(prune, (person, tool_id, now - seconds))
                made, oldest = connection.execute(count, (person, tool_id)).fetchone()
                wait = next_call_in(made, oldest, calls, seconds, now)
                if wait is None:
                    connection.execute(take, (person, tool_id, now))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        return wait


class ChatStoreError(ToolPolicyError):
    """The chat store cannot be opened or written; the message names the file."""

    code = "chat-store"


def stored_record(
    chat_id: str,
    row: Sequence[object],
    keys: Iterable[Sequence[object]],
    holdings: Iterable[Sequence[object]] = (),
) -> ChatRecord:
    """A chat's record from its stored row (`STORED_COLUMNS`), its known addresses' rows and its
    holdings' rows (`HOLDING_COLUMNS`, in arrival order).

    Every store reads its rows through here, so a value this version cannot read counts as the
    strictest it knows in all of them.
    """
    confidence, security, restriction, mailbox = row
    return ChatRecord(
        chat_id=chat_id,
        required_provider_confidence=_stored_confidence(confidence),
        required_data_security=_stored_data_security(security),
        outbound_restriction=_stored_restriction(restriction),
        outbound_mailbox_id=str(mailbox or ""),
        known_web_addresses=frozenset(str(key) for (key,) in keys),
        holdings=_joined_holdings((), (_stored_holding(h) for h in holdings)),
    )


def holding_row(holding: ChatHolding) -> tuple[str, str, str, str]:
    """A holding as `HOLDING_COLUMNS` store it."""
    return (holding.kind.value, holding.tool_id, holding.source, holding.call_id)


def _stored_holding(row: Sequence[object]) -> ChatHolding:
    """A stored holding; a kind this version cannot read counts as the strictest it knows."""
    kind, tool_id, source, call_id = row
    try:
        read = HoldingKind(str(kind))
    except ValueError:
        read = HoldingKind.INJECTION_SEEN
    return ChatHolding(read, str(tool_id or ""), str(source or ""), str(call_id or ""))


def flow_holdings(holdings: Iterable[ChatHolding]) -> ChatHoldings:
    """Stored holdings as the flow rule reads them (an injection seen is untrusted content)."""
    from policy import ChatHoldings, Effect, Holding

    return ChatHoldings(
        tuple(
            Holding(
                Effect.PRIVATE_DATA
                if holding.kind is HoldingKind.PRIVATE_DATA
                else Effect.UNTRUSTED_CONTENT,
                holding.tool_id,
                holding.call_id,
                holding.source,
            )
            for holding in holdings
        )
    ).joined(())


def _joined_holdings(
    held: Iterable[ChatHolding], arriving: Iterable[ChatHolding]
) -> tuple[ChatHolding, ...]:
    """Both, in arrival order, one per key (the first one stays)."""
    joined: dict[tuple[str, str, str], ChatHolding] = {}
    for holding in (*held, *arriving):
        joined.setdefault(holding.key, holding)
    return tuple(joined.values())


def _stored_confidence(value: object) -> ConfidenceLevel:
    """A stored confidence requirement; one this version cannot read is the strictest (HIGH)."""
    try:
        return ConfidenceLevel(int(value))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return ConfidenceLevel.HIGH


def _stored_data_security(value: object) -> DataSecurity:
    """A stored data security; one this version cannot read is the strictest (SELF_HOSTED)."""
    try:
        return DataSecurity(str(value))
    except ValueError:
        return DataSecurity.SELF_HOSTED


def _stored_restriction(value: object) -> OutboundDataRestriction:
    """A stored outbound restriction; one this version cannot read is the strictest."""
    try:
        return OutboundDataRestriction(int(value))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return OutboundDataRestriction.ONLY_CONFIGURED_SERVICES


_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_chat_store(location: str | os.PathLike[str] | None = None) -> ChatStore:
    """The store a location names: `postgresql://…` (or `postgres://…`) → `PostgresChatStore`,
    anything else → a SQLite file; None → `$TOOLPOLICY_CHAT_DB` read the same way, else the
    default SQLite file (so instances configured with a PostgreSQL address share their chats)."""
    if location is None:
        configured = os.environ.get(_CHAT_DATABASE_ENV, "").strip()
        if not configured.startswith(_POSTGRES_SCHEMES):
            return SqliteChatStore(default_chat_database_path())
        location = configured
    text = os.fspath(location)
    if text.startswith(_POSTGRES_SCHEMES):
        from runtime.chat_postgres import PostgresChatStore

        return PostgresChatStore(text)
    return SqliteChatStore(text)


_shared_stores: dict[str, ChatStore] = {}
_shared_stores_lock = threading.Lock()


def _default_store() -> ChatStore:
    """The store of a chat opened without one: a PostgreSQL address in `$TOOLPOLICY_CHAT_DB` is
    opened once per process (one pool serves every such chat, none is left open per chat); a
    SQLite file, which holds no connection, for each chat."""
    configured = os.environ.get(_CHAT_DATABASE_ENV, "").strip()
    if not configured.startswith(_POSTGRES_SCHEMES):
        return SqliteChatStore(default_chat_database_path())
    with _shared_stores_lock:
        store = _shared_stores.get(configured)
        if store is None:
            store = _shared_stores[configured] = open_chat_store(configured)
        return store


def default_chat_database_path() -> Path:
    """The SQLite file chats are kept in by default: `$TOOLPOLICY_CHAT_DB` when it names a file
    (not a `postgresql://` address), else `chats.sqlite3` in the user's data folder."""
    configured = os.environ.get(_CHAT_DATABASE_ENV, "").strip()
    if configured and not configured.startswith(_POSTGRES_SCHEMES):
        return Path(configured).expanduser()
    base = os.environ.get("XDG_DATA_HOME", "").strip() or str(Path.home() / ".local" / "share")
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA", "").strip() or base
    return Path(base) / "toolpolicy" / "chats.sqlite3"


class Chat:
    """One chat's requirements. Every change is saved to the store right away."""

    def __init__(self, record: ChatRecord, store: ChatStore) -> None:
        self._record = record
        self._store = store
        self._flow_read: tuple[tuple[ChatHolding, ...], ChatHoldings] | None = None
        """The holdings as the flow rule read them last, with what they were read from."""

    @classmethod
    def open(
        cls, chat_id: str, store: ChatStore | None = None, *, caller: Caller | None = None
    ) -> Chat:
        """The chat as stored, or a new one demanding nothing; without `store`, in the store
        `$TOOLPOLICY_CHAT_DB` names (a PostgreSQL one opened once per process), else the default
        SQLite file. With `caller` (a signed-in person), the chat is that person's own: their
        `chat_id` in their own space, so one person can neither read nor raise another's chat
        whatever id they send (`ChatRuntime.for_caller` refuses a chat outside it)."""
        if not chat_id.strip():
            raise ValueError("A chat needs a non-blank id to keep its requirements under.")
        if caller is not None:
            from policy._runtime_seam import person_chat_id

            chat_id = person_chat_id(caller, chat_id)
        store = store if store is not None else _default_store()
        return cls(store.load(chat_id) or ChatRecord(chat_id), store)

    @property
    def id(self) -> str:
        return self._record.chat_id

    @property
    def record(self) -> ChatRecord:
        return self._record

    @property
    def required_provider_confidence(self) -> ConfidenceLevel:
        return self._record.required_provider_confidence

    @property
    def required_data_security(self) -> DataSecurity:
        return self._record.required_data_security

    @property
    def outbound_restriction(self) -> OutboundDataRestriction:
        return self._record.outbound_restriction

    @property
    def outbound_mailbox_id(self) -> str:
        return self._record.outbound_mailbox_id

    @property
    def known_web_addresses(self) -> frozenset[str]:
        return self._record.known_web_addresses

    @property
    def holdings(self) -> tuple[ChatHolding, ...]:
        return self._record.holdings

    @property
    def flow_holdings(self) -> ChatHoldings:
        """What the chat holds as the flow rule reads it (`policy.flow.ChatHoldings`): the
        effects that reached the model, each with the tool, call and source that brought it.
        An injection the guard removed counts as untrusted content. Read once per change of
        the holdings (the gateway asks it several times per call)."""
        holdings = self._record.holdings
        read = self._flow_read
        if read is None or read[0] is not holdings:
            read = self._flow_read = (holdings, flow_holdings(holdings))
        return read[1]

    def note_untrusted(self, source: str) -> bool:
        """Content the app put into the chat itself (an attached document, a pasted mail) came
        from outside the organization's control: hold UNTRUSTED_CONTENT from `source`."""
        if not source.strip():
            raise ValueError("note_untrusted needs the source the content came from.")
        return self.add_holdings((ChatHolding(HoldingKind.UNTRUSTED_CONTENT, "", source),))

    def require_provider_confidence(self, level: ConfidenceLevel) -> bool:
        """Raise the requirement to `level` if that is higher; True when it changed."""
        if level <= self._record.required_provider_confidence:
            return False
        return self._update(replace(self._record, required_provider_confidence=level))

    def require_data_security(self, arriving: DataSecurity) -> bool:
        """SELF_HOSTED sticks, ALLOW_ANY marks, NOT_SPECIFIED changes nothing."""
        held = self._record.required_data_security
        tightened = tighten_data_security(held, arriving)
        if tightened is held:
            return False
        return self._update(replace(self._record, required_data_security=tightened))

    def require_outbound_data_restriction(
        self, restriction: OutboundDataRestriction | None, mailbox_id: str = ""
    ) -> bool:
        """Keep the stricter restriction; on a tie the mailbox read first stays named."""
        if restriction is None or restriction is OutboundDataRestriction.UNRESTRICTED:
            return False
        if restriction >= self._record.outbound_restriction:
            return False
        return self._update(
            replace(self._record, outbound_restriction=restriction, outbound_mailbox_id=mailbox_id)
        )

    def add_known_web_addresses(self, request_keys: Iterable[str]) -> bool:
        """Remember addresses given to the model; they stay known for the chat's life."""
        added = frozenset(k for k in request_keys if k) - self._record.known_web_addresses
        if not added:
            return False
        return self._update(
            replace(self._record, known_web_addresses=self._record.known_web_addresses | added)
        )

    def add_holdings(self, holdings: Iterable[ChatHolding]) -> bool:
        """Remember what reached the model; holdings stay for the chat's life."""
        joined = _joined_holdings(self._record.holdings, holdings)
        if len(joined) == len(self._record.holdings):
            return False
        return self._update(replace(self._record, holdings=joined))

    @property
    def can_suspend(self) -> bool:
        """Whether its store keeps a turn stopped for approval (`SuspendedTurnStore`)."""
        return callable(getattr(self._store, "keep_suspended_turn", None)) and callable(
            getattr(self._store, "take_suspended_turn", None)
        )

    def keep_suspended_turn(self, turn: str) -> None:
        """Keep the turn stopped for approval (replacing one kept before)."""
        store: SuspendedTurnStore = self._store  # type: ignore[assignment]
        store.keep_suspended_turn(self.id, turn)

    def take_suspended_turn(self) -> str | None:
        """The turn stopped for approval, removed from the store (None: none waits)."""
        if not self.can_suspend:
            return None
        store: SuspendedTurnStore = self._store  # type: ignore[assignment]
        return store.take_suspended_turn(self.id)

    def _update(self, record: ChatRecord) -> bool:
        """Save `record` joined with what the store holds now, so no other writer is undone."""
        stored = self._store.load(record.chat_id)
        if stored is not None:
            record = _stricter(stored, record)
        self._store.save(record)
        self._record = record
        return True


def _stricter(held: ChatRecord, arriving: ChatRecord) -> ChatRecord:
    """Each requirement at the stricter of both; on a tied restriction the held mailbox stays."""
    keep_held_restriction = held.outbound_restriction <= arriving.outbound_restriction
    restricting = held if keep_held_restriction else arriving
    return replace(
        arriving,
        required_provider_confidence=max(
            held.required_provider_confidence, arriving.required_provider_confidence
        ),
        required_data_security=tighten_data_security(
            held.required_data_security, arriving.required_data_security
        ),
        outbound_restriction=restricting.outbound_restriction,
        outbound_mailbox_id=restricting.outbound_mailbox_id,
        known_web_addresses=held.known_web_addresses | arriving.known_web_addresses,
        holdings=_joined_holdings(held.holdings, arriving.holdings),
    )


class ChatRequirementError(ToolPolicyError):
    """A provider the chat's requirements rule out; raised before any request is sent."""

    code = "chat-requirement"


def ensure_provider_allowed(chat: Chat, provider: ProviderFacts) -> None:
    """Refuse a provider below what the chat demands (`ChatRequirementError`)."""
    refusal = provider_refusal(
        chat.required_provider_confidence, chat.required_data_security, provider
    )
    if refusal is not None:
        raise ChatRequirementError(refusal)


def provider_refusal(
    required_confidence: ConfidenceLevel,
    required_security: DataSecurity,
    provider: ProviderFacts,
) -> str | None:
    """Why a chat with these requirements refuses the provider, or None when it may answer.

    The one rule `ensure_provider_allowed` enforces and `policy replay` re-decides; a provider the
    organization trusts (`ProviderFacts.trusted`) stands in for self-hosting where data security
    is concerned, never for confidence."""
    if provider.confidence < required_confidence:
        return (
            f"This chat requires a provider with confidence {required_confidence.name} or higher, "
            "because of data a tool brought into it; the selected provider has "
            f"{provider.confidence.name}. Choose a provider at that level or start a new chat."
        )
    if not may_receive_data(required_security, provider.kind, provider.trusted):
        return (
            "This chat contains data that may only be sent to self-hosted providers; the "
            f"selected provider is {provider.kind.name}. Choose a self-hosted provider (or one the "
            "organization trusts in DataSourceSecuritySettings.TrustedProviderIds) or start a "
            "new chat."
        )
    return None
