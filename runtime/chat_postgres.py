"""Chat requirements in PostgreSQL, shared by every instance of an app.

Requirements only tighten. With one SQLite file per instance a second instance could loosen what
the first tightened; here every save is ONE SQL statement that joins the arriving requirements
with the stored ones inside the database (confidence: the higher; data security: the ratchet;
outbound restriction: the stricter, with its mailbox), so whatever the interleaving of instances,
the stored requirement only ever rises. Needs the `postgres` extra (`psycopg` 3 with its pool).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from runtime.chat import (
    HOLDING_COLUMNS,
    STORED_COLUMNS,
    TIGHTENING_UPSERT,
    ChatRecord,
    ChatStoreError,
    holding_row,
    stored_record,
)

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

SCHEMA_VERSION = 1
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
    from policy.secrets import address_secrets

    found = set(address_secrets(dsn, ("password",)))
    try:
        from psycopg.conninfo import conninfo_to_dict

        found.add(str(conninfo_to_dict(dsn).get("password") or ""))
    except Exception:  # unreadable for libpq: the reading of the address above still finds it
        pass
    return frozenset(value for value in found if value)


def _where(dsn: str) -> str:
    """host:port/database of a connection string, never its password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:  # an unreadable string is named without echoing it
        return "the configured PostgreSQL server"
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    database = f"/{parts['dbname']}" if parts.get("dbname") else ""
    return f"{host}{port}{database}"


class PostgresChatStore:
    """Chat requirements in PostgreSQL (`postgresql://…`), through a small connection pool.

    The schema is created on first use (with a version table). A lost or refused connection is a
    `ChatStoreError` naming the server (never the password); it never loosens a chat. A stored
    value this version cannot read counts as the strictest it knows, as in `SqliteChatStore`.
    """

    def __init__(self, dsn: str, *, max_connections: int = 4, timeout: float = 10.0) -> None:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError as error:
            raise ChatStoreError(
                "PostgresChatStore needs psycopg 3 with its pool: pip install 'toolpolicy[postgres]'"
            ) from error
        from policy.redaction import SecretMask, mask_in_logs

        self._where = _where(dsn)
        self._mask = SecretMask.of(_passwords(dsn))
        mask_in_logs(self._mask)  # psycopg_pool logs every failed connection attempt
        self._pool: ConnectionPool[Any] = ConnectionPool(
            dsn,
            min_size=0,
            max_size=max_connections,
            timeout=timeout,
            open=False,
            check=ConnectionPool.check_connection,
        )
        try:
            self._open()
        except BaseException:
            self._pool.close()  # no pool left retrying (and logging) in the background
            raise

    def _open(self) -> None:
        """Connect once and create the schema (one instance at a time)."""
        with self._reported("open"):
            self._pool.open(wait=False)
            with self._pool.connection() as connection, connection.transaction():
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
    def _reported(self, action: str) -> Iterator[None]:
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            yield
        except (psycopg.Error, PoolTimeout) as error:
            detail = str(error).splitlines()[0] if str(error) else type(error).__name__
            detail = self._mask.text(detail)
            raise ChatStoreError(
                f"The chat database at {self._where} cannot {action}: "
                f"{detail.replace(self._where, '').strip() or type(error).__name__}"
            ) from None

    def load(self, chat_id: str) -> ChatRecord | None:
        with self._reported("be read"), self._pool.connection() as connection:
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
        with self._reported("be written"), self._pool.connection() as connection:
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

    def close(self) -> None:
        """Close the pool's connections."""
        self._pool.close()
