"""Chat requirements shared in a real PostgreSQL server: they only tighten, across processes and
connection losses. The server is started for the session (tests/servers/postgres.py)."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from policy.vocabulary import ConfidenceLevel, DataSecurity, OutboundDataRestriction
from runtime.chat import Chat, ChatHolding, ChatRecord, ChatStoreError, HoldingKind
from tests.runtime._racing_store import ReadThenRaced
from tests.servers.postgres import running_postgres, server_binaries
from tests.servers.processes import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    server_binaries() is None and not os.environ.get("CI"),
    reason="PostgreSQL's server binaries are not installed here (apt-get install postgresql); "
    "CI installs them and always runs these tests",
)


@pytest.fixture(scope="module")
def dsn() -> Iterator[str]:
    with running_postgres() as address:
        yield address


@pytest.fixture
def store(dsn: str) -> Iterator[object]:
    from runtime.chat_postgres import PostgresChatStore

    opened = PostgresChatStore(dsn)
    yield opened
    opened.close()


def test_holdings_round_trip_in_arrival_order_and_only_grow(store: object) -> None:
    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    page = ChatHolding(HoldingKind.INJECTION_SEEN, "read_web_page", "https://z.example/", "c1")
    ticket = ChatHolding(HoldingKind.INJECTION_SEEN, "tickets", "tickets", "c2")
    chat = Chat.open(chat_id, store)
    chat.add_holdings([page])
    chat.add_holdings([ticket, ChatHolding(page.kind, page.tool_id, page.source, "c3")])
    store.save(ChatRecord(chat_id))  # a stale writer without them takes nothing away
    stored = store.load(chat_id)
    assert stored is not None and stored.holdings == (page, ticket)


def test_requirements_round_trip_and_only_tighten(store: object) -> None:
    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    assert store.load(chat_id) is None
    chat = Chat.open(chat_id, store)
    chat.require_provider_confidence(ConfidenceLevel.HIGH)
    chat.require_data_security(DataSecurity.SELF_HOSTED)
    chat.add_known_web_addresses(["https://a.example/"])
    # a stale writer saving a looser record cannot undo any of it
    store.save(ChatRecord(chat_id, ConfidenceLevel.LOW, DataSecurity.ALLOW_ANY))
    stored = store.load(chat_id)
    assert stored is not None
    assert stored.required_provider_confidence is ConfidenceLevel.HIGH
    assert stored.required_data_security is DataSecurity.SELF_HOSTED
    assert stored.known_web_addresses == frozenset({"https://a.example/"})
    store.save(
        ChatRecord(
            chat_id,
            outbound_restriction=OutboundDataRestriction.ONLY_LINKS_FROM_CHAT,
            outbound_mailbox_id="mailbox-1",
        )
    )
    store.save(ChatRecord(chat_id, outbound_restriction=OutboundDataRestriction.UNRESTRICTED))
    stored = store.load(chat_id)
    assert stored is not None
    assert stored.outbound_restriction is OutboundDataRestriction.ONLY_LINKS_FROM_CHAT
    assert stored.outbound_mailbox_id == "mailbox-1"


_WORKER = textwrap.dedent(
    """
    import random, sys
    sys.path.insert(0, sys.argv[4])
    from policy.vocabulary import ConfidenceLevel
    from runtime.chat import Chat, ChatRecord
    from runtime.chat_postgres import PostgresChatStore

    dsn, chat_id, top = sys.argv[1], sys.argv[2], ConfidenceLevel[sys.argv[3]]
    store = PostgresChatStore(dsn)
    levels = [level for level in ConfidenceLevel if level <= top]
    for _ in range(30):
        level = random.choice(levels)
        Chat.open(chat_id, store).require_provider_confidence(level)
        store.save(ChatRecord(chat_id, ConfidenceLevel.NONE))  # a stale, looser writer
    Chat.open(chat_id, store).require_provider_confidence(top)
    store.close()
    """
)


def test_eight_processes_tightening_one_chat_leave_the_maximum(dsn: str, store: object) -> None:
    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    tops = ["LOW", "MEDIUM", "VERY_LOW", "MODERATE", "HIGH", "UNKNOWN", "LOW", "MEDIUM"]
    workers = [
        subprocess.Popen([sys.executable, "-c", _WORKER, dsn, chat_id, top, str(ROOT)])
        for top in tops
    ]
    assert [w.wait(timeout=120) for w in workers] == [0] * len(workers)
    stored = store.load(chat_id)
    assert stored is not None
    assert stored.required_provider_confidence is ConfidenceLevel.HIGH


def test_a_dropped_connection_loses_nothing_and_never_loosens(dsn: str, store: object) -> None:
    import psycopg

    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    Chat.open(chat_id, store).require_provider_confidence(ConfidenceLevel.MEDIUM)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE pid <> pg_backend_pid() AND datname = current_database()"
        )
    # the pool notices the dropped connection and the next save goes through on a new one
    Chat.open(chat_id, store).require_provider_confidence(ConfidenceLevel.HIGH)
    stored = store.load(chat_id)
    assert stored is not None and stored.required_provider_confidence is ConfidenceLevel.HIGH


def test_open_chat_store_picks_postgres_by_scheme(dsn: str, tmp_path: Path) -> None:
    from runtime.chat import SqliteChatStore, open_chat_store
    from runtime.chat_postgres import PostgresChatStore

    shared = open_chat_store(dsn)
    assert isinstance(shared, PostgresChatStore)
    shared.close()
    assert isinstance(open_chat_store(tmp_path / "chats.db"), SqliteChatStore)


def test_the_environment_names_the_shared_store_for_chats_opened_without_one(
    dsn: str, store: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtime.chat import open_chat_store
    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    store.save(ChatRecord(chat_id, required_provider_confidence=ConfidenceLevel.HIGH))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", dsn)
    opened = open_chat_store()
    assert isinstance(opened, PostgresChatStore)
    opened.close()
    # another instance's tightening is what a chat opened without a store starts from
    assert Chat.open(chat_id).required_provider_confidence is ConfidenceLevel.HIGH
    threads = threading.active_count()
    chats = [Chat.open(str(uuid.uuid4())) for _ in range(5)]  # an app's open conversations
    for chat in chats:
        chat.require_provider_confidence(ConfidenceLevel.LOW)
    # one pool serves every chat opened so: no pool, threads or connections of its own per chat
    assert threading.active_count() == threads
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_server_fails_each_open_at_once_naming_it_without_the_password(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A closed port on loopback: refused at once, never after a pool's retries, and no pool left
    reconnecting (and warning) in the background, however many chats are opened."""
    from runtime.chat_postgres import PostgresChatStore

    port = free_port()
    dsn = f"postgresql://admin:S3cretPa55@127.0.0.1:{port}/chats"
    threads = threading.active_count()
    caplog.set_level(logging.WARNING)
    with pytest.raises(ChatStoreError) as raised:
        PostgresChatStore(dsn)
    message = str(raised.value)
    assert message.startswith(f"The chat database at 127.0.0.1:{port}/chats cannot be opened: ")
    assert "refused" in message.lower() and "S3cretPa55" not in message
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", dsn)
    for number in range(3):  # every chat of an app opened without a store
        with pytest.raises(ChatStoreError, match=f"127.0.0.1:{port}/chats cannot be opened"):
            Chat.open(f"chat-{number}")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("psycopg")] == []
    assert threading.active_count() == threads


def test_a_server_that_never_answers_fails_after_the_connect_timeout() -> None:
    """A port that accepts the connection and then says nothing (a hung server)."""
    from runtime.chat_postgres import PostgresChatStore

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        with pytest.raises(ChatStoreError) as raised:
            PostgresChatStore(f"postgresql://app@127.0.0.1:{port}/chats")
    assert str(raised.value) == (
        f"The chat database at 127.0.0.1:{port}/chats cannot be opened: connection timeout "
        "expired (connect_timeout 2 s)"
    )


def test_the_connect_timeout_is_whole_seconds_from_two() -> None:
    from runtime.chat_postgres import PostgresChatStore

    with pytest.raises(
        ValueError, match=r"connect_timeout >= 2 \(seconds; libpq's minimum\), got 1"
    ):
        PostgresChatStore("postgresql://app@127.0.0.1:9/chats", connect_timeout=1)
    with pytest.raises(TypeError, match=r"takes whole seconds, got 2\.5"):
        PostgresChatStore("postgresql://app@127.0.0.1:9/chats", connect_timeout=2.5)  # type: ignore[arg-type]


def test_a_server_gone_after_opening_fails_each_request_within_the_timeout_and_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from runtime.chat_postgres import PostgresChatStore

    chat_id = str(uuid.uuid4())
    with running_postgres() as address:
        store = PostgresChatStore(address, connect_timeout=3)
        Chat.open(chat_id, store).require_provider_confidence(ConfidenceLevel.LOW)
        where = address.split("@", 1)[1]
    try:
        # what the pool is given: each connection attempt and each wait for a connection
        assert store._pool.kwargs == {"connect_timeout": 3} and store._pool.timeout == 3
        caplog.set_level(logging.WARNING)
        for action in ("be read", "be read", "be written"):
            with pytest.raises(ChatStoreError) as raised:
                if action == "be read":
                    store.load(chat_id)
                else:
                    store.save(ChatRecord(chat_id, ConfidenceLevel.HIGH))
            message = str(raised.value)
            assert message.startswith(
                f"The chat database at {where} cannot {action}: no connection within 3 s ("
            ), message
            assert "refused" in message.lower(), message
        attempts = [
            r for r in caplog.records if r.name == "psycopg.pool" and "error connecting" in r.msg
        ]
        assert len(attempts) == 1, [r.getMessage() for r in attempts]
    finally:
        store.close()


def test_a_connection_dropped_mid_save_is_an_error_and_loses_nothing(
    dsn: str, store: object
) -> None:
    import psycopg

    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    chat = Chat.open(chat_id, store)
    chat.require_provider_confidence(ConfidenceLevel.MEDIUM)
    raised: list[BaseException] = []
    with psycopg.connect(dsn) as admin:
        # hold the chat's row, so the next save is in the middle of its statement when it drops
        admin.execute("SELECT 1 FROM chat_requirements WHERE chat_id = %s FOR UPDATE", (chat_id,))

        def tighten() -> None:
            try:
                chat.require_provider_confidence(ConfidenceLevel.HIGH)
            except BaseException as error:
                raised.append(error)

        saver = threading.Thread(target=tighten)
        saver.start()
        with psycopg.connect(dsn, autocommit=True) as watcher:
            waiting: list[tuple[int]] = []
            for _ in range(600):  # until the save waits on the row (no clock involved)
                waiting = watcher.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE %s",
                    ("%chat_requirements%",),
                ).fetchall()
                if waiting:
                    break
                saver.join(timeout=0.05)
            assert waiting, "the save never reached the database"
            watcher.execute("SELECT pg_terminate_backend(%s)", (waiting[0][0],))
        saver.join(timeout=60)
        admin.rollback()
    (error,) = raised
    assert isinstance(error, ChatStoreError)
    assert "127.0.0.1" in str(error) and "cannot be written" in str(error)
    stored = store.load(chat_id)
    assert stored is not None and stored.required_provider_confidence is ConfidenceLevel.MEDIUM
    assert chat.required_provider_confidence is ConfidenceLevel.MEDIUM  # not claimed saved
    # the same tightening, tried again on a healthy connection, is stored
    assert chat.require_provider_confidence(ConfidenceLevel.HIGH)
    stored = store.load(chat_id)
    assert stored is not None and stored.required_provider_confidence is ConfidenceLevel.HIGH


def test_the_schema_is_created_with_its_version_and_a_newer_one_is_refused(dsn: str) -> None:
    import psycopg

    from runtime.chat_postgres import SCHEMA_VERSION, PostgresChatStore

    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("CREATE DATABASE schema_check")
    fresh = dsn.rsplit("/", 1)[0] + "/schema_check"
    PostgresChatStore(fresh).close()
    with psycopg.connect(fresh, autocommit=True) as connection:
        rows = connection.execute("SELECT version FROM toolpolicy_schema_version").fetchall()
        assert rows == [(SCHEMA_VERSION,)]
        PostgresChatStore(fresh).close()  # opening again adds no second version row
        assert connection.execute("SELECT count(*) FROM toolpolicy_schema_version").fetchone() == (
            1,
        )
        connection.execute(
            "INSERT INTO toolpolicy_schema_version VALUES (%s)", (SCHEMA_VERSION + 1,)
        )
    with pytest.raises(ChatStoreError, match=f"schema version {SCHEMA_VERSION + 1}.*Upgrade"):
        PostgresChatStore(fresh)


def _policy_chat(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLPOLICY_") and "API_KEY" not in k
    }
    environment["TOOLPOLICY_API_KEY"] = "sk-postgres-test-0123456789"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "policy.cli",
            "chat",
            "--org",
            str(ROOT / "examples/organization"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=ROOT,
        check=False,
    )


def test_policy_chat_reads_the_shared_chat_from_postgresql(dsn: str, store: object) -> None:
    from runtime.chat_postgres import PostgresChatStore
    from tests.servers.provider_server import running_provider_server

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    store.save(ChatRecord(chat_id, required_provider_confidence=ConfidenceLevel.HIGH))
    with running_provider_server() as server:
        done = _policy_chat(
            "Summarize the plan.",
            "--provider",
            "OpenAI GPT-4.1",
            "--base-url",
            server.base_url,
            "--chat-id",
            chat_id,
            "--chat-db",
            dsn,
        )
        assert server.requests == []  # another instance tightened the chat: nothing is sent
    assert done.returncode == 1
    assert "requires a provider with confidence HIGH" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_worker_saving_after_another_tightened_since_its_read_keeps_the_stricter(
    dsn: str, store: object
) -> None:
    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    Chat.open(chat_id, store).require_provider_confidence(ConfidenceLevel.VERY_LOW)
    own = PostgresChatStore(dsn)
    racing_store = ReadThenRaced(own)
    racing = Chat.open(chat_id, racing_store)
    racing_store.other_writer = lambda: Chat.open(chat_id, store).require_provider_confidence(
        ConfidenceLevel.HIGH
    )
    assert racing.require_provider_confidence(ConfidenceLevel.LOW)
    own.close()
    stored = store.load(chat_id)
    assert stored is not None and stored.required_provider_confidence is ConfidenceLevel.HIGH


@pytest.fixture(scope="module")
def locked_dsn() -> Iterator[str]:
    """A server that asks for a password over TCP (the canaries below are all wrong)."""
    with running_postgres(password="the-right-one-4711") as address:
        yield address


def _with_password(dsn: str, written: str, *, in_query: bool = False) -> str:
    server = dsn.split("@", 1)[1]
    if in_query:
        return f"postgresql://toolpolicy@{server}?password={written}"
    return f"postgresql://toolpolicy:{written}@{server}"


@pytest.mark.parametrize(
    ("written", "in_query"),
    [
        ("Canary%zzUndecodable1", False),  # libpq cannot decode it and quotes it in its error
        ("Canary%zzInQuery2", True),
        ("Canary%2FWrong3", False),  # well-formed and wrong: the server refuses it
    ],
)
def test_a_password_never_reaches_a_log_record_or_the_error(
    written: str, in_query: bool, locked_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    from policy.redaction import SecretMask
    from runtime.chat_postgres import PostgresChatStore

    canary = written.replace("%2F", "/")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ChatStoreError) as raised:
        PostgresChatStore(_with_password(locked_dsn, written, in_query=in_query))
    logged = "\n".join(
        f"{record.getMessage()}\n{record.exc_text or ''}" for record in caplog.records
    )
    shown = f"{logged}\n{raised.value}"
    core = canary.split("%zz")[-1]
    assert core not in shown and not SecretMask.of([written, canary]).shows_secret(shown)


@pytest.mark.parametrize("undecodable", [False, True])
def test_policy_chat_with_a_database_it_cannot_open_names_it_without_the_password(
    undecodable: bool, request: pytest.FixtureRequest
) -> None:
    """Unreachable, and reachable with a password libpq cannot decode (`%zz`, which its error
    quotes as written, logged by psycopg_pool on every retry)."""
    if undecodable:
        locked = request.getfixturevalue("locked_dsn")
        dsn, where, canary = (
            _with_password(locked, "Canary%zzOnStderr4"),
            "the configured PostgreSQL server",
            "OnStderr4",
        )
    else:
        dsn = "postgresql://app:S3cretPa55@127.0.0.1:9/chats?connect_timeout=2"
        where, canary = "127.0.0.1:9/chats", "S3cretPa55"
    done = _policy_chat("Hi", "--provider", "OpenAI GPT-4.1", "--chat-id", "c1", "--chat-db", dsn)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"The chat database at {where} cannot be opened" in done.stderr
    assert canary not in done.stdout + done.stderr


def test_flow_holdings_and_noted_untrusted_content_are_shared_by_a_second_instance(
    dsn: str, store: object
) -> None:
    from policy.flow import Effect
    from runtime.chat_postgres import PostgresChatStore

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    Chat.open(chat_id, store).add_holdings(
        [ChatHolding(HoldingKind.PRIVATE_DATA, "search_confluence", "wiki", "c1")]
    )
    Chat.open(chat_id, store).note_untrusted("attachment invoice.pdf")
    other = PostgresChatStore(dsn)
    try:
        held = Chat.open(chat_id, other).flow_holdings
    finally:
        other.close()
    assert held.effects == {Effect.PRIVATE_DATA, Effect.UNTRUSTED_CONTENT}
    assert held.brought(Effect.UNTRUSTED_CONTENT)[0].source == "attachment invoice.pdf"
    assert held.brought(Effect.PRIVATE_DATA)[0].call_id == "c1"


def test_what_a_chat_holds_is_seen_by_a_second_process_and_decides_its_flow_rule(
    dsn: str, store: object, tmp_path: Path
) -> None:
    """One instance's chat brought private data and untrusted content; another process on the
    same PostgreSQL store (`policy explain --chat-id --chat-db`) decides FLOW_RULE with them,
    naming the call and source that brought each."""
    from runtime.chat_postgres import PostgresChatStore
    from tests.servers.cli_runner import run_policy
    from tests.servers.config_server import plugin_text

    assert isinstance(store, PostgresChatStore)
    chat_id = str(uuid.uuid4())
    Chat.open(chat_id, store).add_holdings(
        [ChatHolding(HoldingKind.PRIVATE_DATA, "search_confluence", "wiki", "c7")]
    )
    org = tmp_path / "org"
    org.mkdir()
    (org / "plugin.lua").write_text(
        plugin_text(
            "0e8b2f4a-3c1d-4e5f-8a9b-0c1d2e3f4a5b",
            'CONFIG["SETTINGS"]["DataTools.FlowRule"] = "BLOCK"',
            name="Flow",
        )
    )
    explain = ["explain", "read_web_page", "--org", str(org), "--provider-kind", "SELF_HOSTED"]
    explain += ["--model", "llama-3.3-70b", "--chat-id", chat_id, "--chat-db", dsn]
    held = run_policy(explain, cwd=tmp_path)
    assert held.returncode == 0, held.stderr
    assert "NOT OFFERED: FLOW_CONFLICT" in held.stdout
    assert "chat holds = PRIVATE_DATA from wiki (search_confluence, call c7)" in held.stdout
    other = subprocess.run(
        [sys.executable, "-c", _NOTE_UNTRUSTED, dsn, chat_id, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert other.returncode == 0, other.stderr
    stored = store.load(chat_id)
    assert stored is not None
    assert [(h.kind, h.source) for h in stored.holdings] == [
        (HoldingKind.PRIVATE_DATA, "wiki"),
        (HoldingKind.UNTRUSTED_CONTENT, "attachment from process 2"),
    ], "what another process noted is seen here, after what was held before"


_NOTE_UNTRUSTED = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[3])
    from runtime.chat import Chat
    from runtime.chat_postgres import PostgresChatStore

    store = PostgresChatStore(sys.argv[1])
    Chat.open(sys.argv[2], store).note_untrusted("attachment from process 2")
    store.close()
    """
)
