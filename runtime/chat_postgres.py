"""Chat requirements in PostgreSQL, shared by every instance of an app (with each person's call
counts and user settings, which instances share the same way).

Requirements only tighten. With one SQLite file per instance a second instance could loosen what
the first tightened; here every save is ONE SQL statement that joins the arriving requirements
with the stored ones inside the database (confidence: the higher; data security: the ratchet;
outbound restriction: the stricter, with its mailbox), so whatever the interleaving of instances,
the stored requirement only ever rises. Needs the `postgres` extra (`psycopg` 3 with its pool).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from runtime.chat import (
    HOLDING_COLUMNS,
    STORED_COLUMNS,
    TIGHTENING_UPSERT,
    ChatRecord,
    ChatStoreError,
    call_count_statements,
    holding_row,
    next_call_in,
    stored_record,
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

SCHEMA_VERSION = 1
_DEFAULT_CONNECT_TIMEOUT = 2
"""Seconds a connection to the chat database may take to open (libpq's minimum, 2, is also ours:
a chat is opened on the request's path)."""
_LOCK_KEY = 0x746F6F6C  # "tool": serializes schema creation across instances

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS toolpolicy_schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS chat_requirements (
        chat_id TEXT PRIMARY KEY,
        required_provider_confidence INTEGER NOT NULL,
        required_data_security TEXT NOT NULL,
        outbound_restriction INTEGER NOT NULL,
        outbound_mailbox_id TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS chat_known_web_addresses (
        chat_id TEXT NOT NULL,
        request_key TEXT NOT NULL,
        PRIMARY KEY (chat_id, request_key)
    )""",
    """CREATE TABLE IF NOT EXISTS chat_holdings (
        chat_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        source TEXT NOT NULL,
        call_id TEXT NOT NULL,
        arrived BIGINT GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (chat_id, kind, tool_id, source)
    )""",
    """CREATE TABLE IF NOT EXISTS chat_suspended_turns (
        chat_id TEXT PRIMARY KEY,
        turn TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS call_counts (
        person TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS call_counts_by_person ON call_counts (person, tool_id, at)",
    """CREATE TABLE IF NOT EXISTS user_settings (
        subject TEXT PRIMARY KEY,
        settings TEXT NOT NULL
    )""",
)

_TIGHTEN = f"""
WITH saved AS (
    INSERT INTO chat_requirements AS held VALUES (%(id)s, %(confidence)s, %(security)s,
        %(restriction)s, %(mailbox)s)
    {TIGHTENING_UPSERT}
    RETURNING chat_id
)
INSERT INTO chat_known_web_addresses (chat_id, request_key)
SELECT saved.chat_id, key FROM saved, unnest(%(keys)s::text[]) AS key
ON CONFLICT DO NOTHING
"""

_HOLD = f"""
INSERT INTO chat_holdings (chat_id, {HOLDING_COLUMNS})
SELECT %(id)s, kind, tool_id, source, call_id
FROM unnest(%(kinds)s::text[], %(tools)s::text[], %(sources)s::text[], %(calls)s::text[])
    WITH ORDINALITY AS arriving (kind, tool_id, source, call_id, position)
ORDER BY position
ON CONFLICT DO NOTHING
"""
"""Holdings only grow: a stored one is never replaced, so the call that first brought it stays."""


def _passwords(dsn: str) -> frozenset[str]:
    """The password of a connection string in every form a library may quote it: as libpq reads
    it (also from `key=value` strings), and as written in a URI's user info or `?password=`,
    percent-decoded or not (libpq's error for a token it cannot decode, `%zz`, quotes it as
    written, and psycopg_pool logs that error on every retry)."""
    from policy._runtime_seam import address_secrets

    found = set(address_secrets(dsn, ("password",)))
    try:
        from psycopg.conninfo import conninfo_to_dict

        found.add(str(conninfo_to_dict(dsn).get("password") or ""))
    except Exception:  # unreadable for libpq: the reading of the address above still finds it
        pass
    return frozenset(value for value in found if value)


def _where(dsn: str) -> str:
    """host:port/database of a connection string, never its password (the port libpq would use
    when none is written: `$PGPORT`, else 5432)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:  # an unreadable string is named without echoing it
        return "the configured PostgreSQL server"
    host = str(parts.get("host") or os.environ.get("PGHOST") or "localhost")
    port = str(parts.get("port") or os.environ.get("PGPORT") or "5432")
    database = f"/{parts['dbname']}" if parts.get("dbname") else ""
    return f"{host}:{port}{database}"


class _OneWarningPerOutage(logging.Filter):
    """psycopg_pool warns on every failed attempt to reconnect its pool (1 s, 2 s, 4 s … apart,
    for minutes): of one pool's, the first of an outage reaches the log, the rest are only kept
    as the cause a request's error names. A connection given again ends the outage."""

    def __init__(self, pool_name: str) -> None:
        super().__init__()
        self._pool_name = pool_name
        self.cause: str | None = None
        self._warned = False

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not (isinstance(args, tuple) and args and args[0] == self._pool_name):
            return True
        if str(record.msg).startswith("error connecting"):
            self.cause = str(args[1]) if len(args) > 1 else None
            first = not self._warned
            self._warned = True
            return first
        return not str(record.msg).startswith("reconnection attempt")

    def connected(self) -> None:
        self.cause = None
        self._warned = False


class PostgresChatStore:
    """Chat requirements in PostgreSQL (`postgresql://…`), through a small connection pool.

    The schema is created on first use (with a version table), over a connection of its own: an
    unreachable server fails the opening at once (refused) or after `connect_timeout` seconds (no
    answer), never after a pool's retries. A lost or refused connection is a `ChatStoreError`
    naming the server's host and port (never the password); it never loosens a chat. Once open,
    a request waits at most `connect_timeout` seconds for a connection (the pool reconnects in
    the background, and warns once per outage). A stored value this version cannot read counts
    as the strictest it knows, as in `SqliteChatStore`.
    """

    def __init__(
        self,
        dsn: str,
        *,
        max_connections: int = 4,
        connect_timeout: int = _DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, int):
            raise TypeError(
                f"PostgresChatStore(connect_timeout=...) takes whole seconds, got "
                f"{connect_timeout!r}."
            )
        if connect_timeout < 2:
            raise ValueError(
                f"PostgresChatStore needs connect_timeout >= 2 (seconds; libpq's minimum), got "
                f"{connect_timeout}."
            )
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as error:
            raise ChatStoreError(
                "PostgresChatStore needs psycopg 3 with its pool: pip install 'toolpolicy[postgres]'"
            ) from error
        from policy._runtime_seam import SecretMask, mask_in_logs

        self._dsn = dsn
        self._where = _where(dsn)
        self._mask = SecretMask.of(_passwords(dsn))
        mask_in_logs(self._mask)  # psycopg and its pool log failed connection attempts
        self.connect_timeout = connect_timeout
        self._open()
        self._pool: ConnectionPool[Any] = ConnectionPool(
            dsn,
            kwargs={"connect_timeout": connect_timeout},
            min_size=0,
            max_size=max_connections,
            timeout=connect_timeout,
            open=False,
            check=ConnectionPool.check_connection,
        )
        self._outage = _OneWarningPerOutage(self._pool.name)
        logging.getLogger("psycopg.pool").addFilter(self._outage)
        self._pool.open(wait=False)

    def _open(self) -> None:
        """Connect once and create the schema (one instance at a time)."""
        import psycopg

        with (
            self._reported("be opened"),
            psycopg.connect(self._dsn, connect_timeout=self.connect_timeout) as connection,
            connection.transaction(),
        ):
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            for statement in _SCHEMA:
                connection.execute(statement)
            row = connection.execute(
                "SELECT max(version) FROM toolpolicy_schema_version"
            ).fetchone()
            stored = row[0] if row else None
            if stored is None:
                connection.execute(
                    "INSERT INTO toolpolicy_schema_version VALUES (%s)", (SCHEMA_VERSION,)
                )
            elif stored > SCHEMA_VERSION:
                raise ChatStoreError(
                    f"The chat database at {self._where} has schema version {stored}; this "
                    f"version of toolpolicy reads version {SCHEMA_VERSION}. Upgrade toolpolicy."
                )

    @contextmanager
    def _connection(self, action: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, waited for at most `connect_timeout` seconds."""
        from psycopg_pool import PoolTimeout

        with self._reported(action), ExitStack() as stack:
            try:
                connection = stack.enter_context(self._pool.connection())
            except PoolTimeout:
                cause = self._outage.cause
                raise ChatStoreError(
                    f"The chat database at {self._where} cannot {action}: no connection within "
                    f"{self.connect_timeout} s"
                    + (f" ({self._detail(cause)})" if cause else "")
                    + "; the pool goes on reconnecting in the background."
                ) from None
            self._outage.connected()
            yield connection

    def _detail(self, message: str) -> str:
        """The first line of a driver's message, its password and our own address taken out."""
        first = message.splitlines()[0] if message else ""
        return self._mask.text(first).replace(self._where, "").strip()

    @contextmanager
    def _reported(self, action: str) -> Iterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as error:
            detail = self._detail(str(error)) or type(error).__name__
            timeout = (
                f" (connect_timeout {self.connect_timeout} s)"
                if isinstance(error, psycopg.errors.ConnectionTimeout)
                else ""
            )
            raise ChatStoreError(
                f"The chat database at {self._where} cannot {action}: {detail}{timeout}"
            ) from None

    def load(self, chat_id: str) -> ChatRecord | None:
        with self._connection("be read") as connection:
            row = connection.execute(
                f"SELECT {STORED_COLUMNS} FROM chat_requirements WHERE chat_id = %s", (chat_id,)
            ).fetchone()
            if row is None:
                return None
            keys = connection.execute(
                "SELECT request_key FROM chat_known_web_addresses WHERE chat_id = %s",
                (chat_id,),
            ).fetchall()
            holdings = connection.execute(
                f"SELECT {HOLDING_COLUMNS} FROM chat_holdings WHERE chat_id = %s ORDER BY arrived",
                (chat_id,),
            ).fetchall()
        return stored_record(chat_id, row, keys, holdings)

    def save(self, record: ChatRecord) -> None:
        """Join `record` into the stored requirements in one statement (they only tighten)."""
        parameters = {
            "id": record.chat_id,
            "confidence": int(record.required_provider_confidence),
            "security": record.required_data_security.value,
            "restriction": int(record.outbound_restriction),
            "mailbox": record.outbound_mailbox_id,
            "keys": sorted(record.known_web_addresses),
        }
        with self._connection("be written") as connection:
            connection.execute(_TIGHTEN, parameters)
            if record.holdings:
                rows = [holding_row(holding) for holding in record.holdings]
                kinds, tools, sources, calls = (list(column) for column in zip(*rows, strict=True))
                connection.execute(
                    _HOLD,
                    {
                        "id": record.chat_id,
                        "kinds": kinds,
                        "tools": tools,
                        "sources": sources,
                        "calls": calls,
                    },
                )

    def keep_suspended_turn(self, chat_id: str, turn: str) -> None:
        """Keep a turn stopped for approval, replacing the one kept before."""
        with self._connection("be written") as connection:
            connection.execute(
                "INSERT INTO chat_suspended_turns VALUES (%s, %s) "
                "ON CONFLICT (chat_id) DO UPDATE SET turn = excluded.turn",
                (chat_id, turn),
            )

    def take_suspended_turn(self, chat_id: str) -> str | None:
        """The kept turn, removed in the same statement: one instance resumes it."""
        with self._connection("be written") as connection:
            row = connection.execute(
                "DELETE FROM chat_suspended_turns WHERE chat_id = %s RETURNING turn", (chat_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def user_settings_text(self, subject: str) -> str | None:
        """The YAML of one person's own user settings (None: they saved none)."""
        with self._connection("be read") as connection:
            row = connection.execute(
                "SELECT settings FROM user_settings WHERE subject = %s", (subject,)
            ).fetchone()
        return None if row is None else str(row[0])

    def save_user_settings_text(self, subject: str, text: str) -> None:
        with self._connection("be written") as connection:
            connection.execute(
                "INSERT INTO user_settings VALUES (%s, %s) "
                "ON CONFLICT (subject) DO UPDATE SET settings = excluded.settings",
                (subject, text),
            )

    def take_call(
        self, person: str, tool_id: str, calls: int, seconds: int, now: float
    ) -> float | None:
        """Counted in one transaction holding a lock on (person, tool): every instance sharing
        the database takes turns, so none takes a call past the limit."""
        prune, count, take = call_count_statements("%s")
        with self._connection("count a call") as connection, connection.transaction():
            connection.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"{person}/{tool_id}",)
            )
            connection.execute(prune, (person, tool_id, now - seconds))
            row = connection.execute(count, (person, tool_id)).fetchone()
            made, oldest = (row[0], row[1]) if row else (0, None)
            wait = next_call_in(int(made), oldest, calls, seconds, now)
            if wait is None:
                connection.execute(take, (person, tool_id, now))
        return wait

    def close(self) -> None:
        """Close the pool's connections."""
        self._pool.close()
        logging.getLogger("psycopg.pool").removeFilter(self._outage)
