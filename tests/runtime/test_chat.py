"""Chat requirements only ever tighten, survive a restart, and turn away providers that fall short."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from policy.provider_facts import ProviderFacts
from policy.vocabulary import (
    ConfidenceLevel,
    DataSecurity,
    OutboundDataRestriction,
    ProviderKind,
)
from runtime.chat import (
    Chat,
    ChatHolding,
    ChatRecord,
    ChatRequirementError,
    ChatStoreError,
    HoldingKind,
    MemoryChatStore,
    SqliteChatStore,
    default_chat_database_path,
    ensure_provider_allowed,
    open_chat_store,
)
from tests.runtime._racing_store import ReadThenRaced

C = ConfidenceLevel
R = OutboundDataRestriction


@pytest.fixture
def store(tmp_path: Path) -> SqliteChatStore:
    return SqliteChatStore(tmp_path / "chats.sqlite3")


def test_a_new_chat_demands_nothing(store: SqliteChatStore) -> None:
    chat = Chat.open("c1", store)
    assert chat.required_provider_confidence is C.NONE
    assert chat.required_data_security is DataSecurity.NOT_SPECIFIED
    assert chat.outbound_restriction is R.UNRESTRICTED
    assert chat.known_web_addresses == frozenset()
    assert store.load("c1") is None


def test_the_confidence_requirement_only_rises() -> None:
    chat = Chat.open("c", MemoryChatStore())
    assert chat.require_provider_confidence(C.MEDIUM)
    assert not chat.require_provider_confidence(C.LOW)
    assert not chat.require_provider_confidence(C.NONE)
    assert chat.required_provider_confidence is C.MEDIUM
    assert chat.require_provider_confidence(C.HIGH)
    assert chat.required_provider_confidence is C.HIGH


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([DataSecurity.SELF_HOSTED], DataSecurity.SELF_HOSTED),
        ([DataSecurity.SELF_HOSTED, DataSecurity.ALLOW_ANY], DataSecurity.SELF_HOSTED),
        ([DataSecurity.ALLOW_ANY], DataSecurity.ALLOW_ANY),
        ([DataSecurity.ALLOW_ANY, DataSecurity.NOT_SPECIFIED], DataSecurity.ALLOW_ANY),
        ([DataSecurity.NOT_SPECIFIED], DataSecurity.NOT_SPECIFIED),
        ([DataSecurity.ALLOW_ANY, DataSecurity.SELF_HOSTED], DataSecurity.SELF_HOSTED),
    ],
)
def test_data_security_follows_the_ratchet(
    steps: list[DataSecurity], expected: DataSecurity
) -> None:
    chat = Chat.open("c", MemoryChatStore())
    for step in steps:
        chat.require_data_security(step)
    assert chat.required_data_security is expected


def test_a_stricter_mailbox_tightens_the_chat_and_a_restriction_stays() -> None:
    chat = Chat.open("c", MemoryChatStore())
    assert chat.require_outbound_data_restriction(R.ONLY_LINKS_FROM_CHAT, "inbox")
    assert not chat.require_outbound_data_restriction(R.UNRESTRICTED, "other")
    assert not chat.require_outbound_data_restriction(None)
    assert (chat.outbound_restriction, chat.outbound_mailbox_id) == (
        R.ONLY_LINKS_FROM_CHAT,
        "inbox",
    )
    assert chat.require_outbound_data_restriction(R.ONLY_CONFIGURED_SERVICES, "legal")
    assert (chat.outbound_restriction, chat.outbound_mailbox_id) == (
        R.ONLY_CONFIGURED_SERVICES,
        "legal",
    )


def test_on_a_tie_the_mailbox_read_first_stays_named() -> None:
    chat = Chat.open("c", MemoryChatStore())
    chat.require_outbound_data_restriction(R.ONLY_LINKS_FROM_CHAT, "first")
    assert not chat.require_outbound_data_restriction(R.ONLY_LINKS_FROM_CHAT, "second")
    assert chat.outbound_mailbox_id == "first"


def test_the_requirements_survive_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "state" / "chats.sqlite3"
    chat = Chat.open("chat-1", SqliteChatStore(path))
    chat.require_provider_confidence(C.HIGH)
    chat.require_data_security(DataSecurity.SELF_HOSTED)
    chat.require_outbound_data_restriction(R.ONLY_LINKS_FROM_CHAT, "inbox")
    chat.add_known_web_addresses(["https://example.com/a", "https://example.com/b"])
    Chat.open("chat-2", SqliteChatStore(path)).require_provider_confidence(C.LOW)

    script = textwrap.dedent(
        f"""
        from runtime.chat import Chat, SqliteChatStore
        chat = Chat.open("chat-1", SqliteChatStore({str(path)!r}))
        print(chat.required_provider_confidence.name, chat.required_data_security.name,
              chat.outbound_restriction.name, chat.outbound_mailbox_id,
              ",".join(sorted(chat.known_web_addresses)))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert run.stdout.split() == [
        "HIGH",
        "SELF_HOSTED",
        "ONLY_LINKS_FROM_CHAT",
        "inbox",
        "https://example.com/a,https://example.com/b",
    ]
    other = SqliteChatStore(path).load("chat-2")
    assert other is not None and other.required_provider_confidence is C.LOW
    assert other.known_web_addresses == frozenset()


def test_a_chat_open_twice_never_loosens_what_the_other_tightened(
    store: SqliteChatStore,
) -> None:
    """Two workers answering one chat: the later save must not undo the earlier tightening."""
    first, second = Chat.open("c", store), Chat.open("c", store)
    first.require_provider_confidence(C.HIGH)
    first.require_outbound_data_restriction(R.ONLY_CONFIGURED_SERVICES, "mailbox-a")
    first.add_known_web_addresses(["https://a.example/"])

    second.require_data_security(DataSecurity.SELF_HOSTED)
    second.require_outbound_data_restriction(R.ONLY_LINKS_FROM_CHAT, "mailbox-b")

    for chat in (second, Chat.open("c", store)):
        assert chat.required_provider_confidence is C.HIGH
        assert chat.required_data_security is DataSecurity.SELF_HOSTED
        assert chat.outbound_restriction is R.ONLY_CONFIGURED_SERVICES
        assert chat.outbound_mailbox_id == "mailbox-a"
        assert chat.known_web_addresses == {"https://a.example/"}
    with pytest.raises(ChatRequirementError):
        ensure_provider_allowed(second, ProviderFacts(ProviderKind.SELF_HOSTED, C.MEDIUM))


def test_known_addresses_only_grow(store: SqliteChatStore) -> None:
    chat = Chat.open("c", store)
    assert chat.add_known_web_addresses(["https://a.example/"])
    assert not chat.add_known_web_addresses(["https://a.example/", ""])
    assert chat.add_known_web_addresses(["https://b.example/"])
    assert Chat.open("c", store).known_web_addresses == {"https://a.example/", "https://b.example/"}


SEEN_ON_PAGE = ChatHolding(HoldingKind.INJECTION_SEEN, "read_web_page", "https://a.example/x", "c1")
SEEN_IN_TICKET = ChatHolding(HoldingKind.INJECTION_SEEN, "tickets", "tickets", "c2")


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_holdings_only_grow_keep_the_first_call_and_survive_a_restart(
    kind: str, tmp_path: Path
) -> None:
    store = SqliteChatStore(tmp_path / "c.sqlite3") if kind == "sqlite" else MemoryChatStore()
    chat = Chat.open("c", store)
    assert chat.add_holdings([SEEN_ON_PAGE])
    later = ChatHolding(HoldingKind.INJECTION_SEEN, "read_web_page", "https://a.example/x", "c9")
    assert not chat.add_holdings([later])  # the same source again: the first call stays named
    assert chat.add_holdings([SEEN_IN_TICKET])
    # a stale writer saving a record without them cannot take them away
    store.save(ChatRecord("c"))
    reopened = Chat.open("c", store)
    assert reopened.holdings == (SEEN_ON_PAGE, SEEN_IN_TICKET)
    assert reopened.record.holds(HoldingKind.INJECTION_SEEN)


def test_a_stored_holding_this_version_cannot_read_counts_as_an_injection_seen(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats.sqlite3"
    store = SqliteChatStore(path)
    store.save(ChatRecord("c", holdings=(SEEN_ON_PAGE,)))
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE chat_holdings SET kind = 'SOMETHING_NEW'")
    record = store.load("c")
    assert record is not None and record.holdings == (SEEN_ON_PAGE,)


def test_a_stored_value_this_version_cannot_read_counts_as_the_strictest(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    store = SqliteChatStore(path)
    store.save(ChatRecord("c"))
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE chat_requirements SET required_provider_confidence = 77,"
            " required_data_security = 'SOMETHING_NEW', outbound_restriction = 9"
        )
    connection.close()
    record = store.load("c")
    assert record is not None
    assert record.required_provider_confidence is C.HIGH
    assert record.required_data_security is DataSecurity.SELF_HOSTED
    assert record.outbound_restriction is R.ONLY_CONFIGURED_SERVICES


def test_a_database_spoilt_after_opening_is_reported_with_the_path(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    store = SqliteChatStore(path)
    chat = Chat.open("c", store)
    path.write_bytes(b"this is no SQLite database, someone overwrote it" * 100)

    with pytest.raises(ChatStoreError, match=r"chats\.sqlite3") as on_save:
        chat.require_provider_confidence(C.HIGH)
    with pytest.raises(ChatStoreError, match=r"chats\.sqlite3") as on_load:
        store.load("c")
    for refused in (on_save, on_load):
        assert "not a database" in str(refused.value)


def test_an_unusable_database_path_is_reported_with_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    with pytest.raises(ChatStoreError, match="not-a-folder"):
        SqliteChatStore(blocker / "chats.sqlite3")


def test_a_chat_needs_an_id() -> None:
    with pytest.raises(ValueError, match="non-blank id"):
        Chat.open("  ", MemoryChatStore())


def test_the_default_database_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPOLICY_CHAT_DB", str(tmp_path / "mine.db"))
    assert default_chat_database_path() == tmp_path / "mine.db"
    monkeypatch.delenv("TOOLPOLICY_CHAT_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_chat_database_path() == tmp_path / "data" / "toolpolicy" / "chats.sqlite3"
    chat = Chat.open("c")
    chat.require_provider_confidence(C.LOW)
    assert (tmp_path / "data" / "toolpolicy" / "chats.sqlite3").is_file()


def test_a_postgresql_address_in_the_environment_is_never_a_sqlite_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOOLPOLICY_CHAT_DB=postgresql://… opens the shared store (here: an unreachable one, an
    error naming it); it never becomes a local SQLite file an instance would keep alone."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv(
        "TOOLPOLICY_CHAT_DB", "postgresql://app:S3cretPa55@127.0.0.1:9/chats?connect_timeout=2"
    )
    for opening in (open_chat_store, lambda: Chat.open("c")):
        with pytest.raises(ChatStoreError) as raised:
            opening()
        assert "127.0.0.1:9/chats" in str(raised.value)
        assert "S3cretPa55" not in str(raised.value)
    assert default_chat_database_path() == tmp_path / "data" / "toolpolicy" / "chats.sqlite3"
    assert list(tmp_path.iterdir()) == []  # no "postgresql:" folder, no data folder


# -- providers -------------------------------------------------------------------------------------


def test_a_provider_below_the_chat_requirement_is_refused_naming_both_levels() -> None:
    chat = Chat.open("c", MemoryChatStore())
    chat.require_provider_confidence(C.HIGH)
    with pytest.raises(ChatRequirementError) as caught:
        ensure_provider_allowed(chat, ProviderFacts(ProviderKind.OPEN_AI, C.MEDIUM))
    assert "HIGH" in str(caught.value) and "MEDIUM" in str(caught.value)
    ensure_provider_allowed(chat, ProviderFacts(ProviderKind.SELF_HOSTED, C.HIGH))


def test_a_chat_which_demands_nothing_takes_any_provider() -> None:
    chat = Chat.open("c", MemoryChatStore())
    for kind in ProviderKind:
        for level in C:
            ensure_provider_allowed(chat, ProviderFacts(kind, level))
    chat.require_provider_confidence(C.LOW)
    with pytest.raises(ChatRequirementError):
        ensure_provider_allowed(chat, ProviderFacts(ProviderKind.GROQ, C.UNKNOWN))


def test_self_hosted_data_admits_only_self_hosted_or_trusted_providers() -> None:
    chat = Chat.open("c", MemoryChatStore())
    chat.require_data_security(DataSecurity.SELF_HOSTED)
    with pytest.raises(ChatRequirementError, match="self-hosted") as caught:
        ensure_provider_allowed(chat, ProviderFacts(ProviderKind.OPEN_AI, C.HIGH))
    assert "OPEN_AI" in str(caught.value)
    ensure_provider_allowed(chat, ProviderFacts(ProviderKind.SELF_HOSTED, C.HIGH))
    ensure_provider_allowed(chat, ProviderFacts(ProviderKind.OPEN_AI, C.HIGH, True))


def test_being_trusted_does_not_meet_a_confidence_requirement() -> None:
    chat = Chat.open("c", MemoryChatStore())
    chat.require_provider_confidence(C.HIGH)
    with pytest.raises(ChatRequirementError):
        ensure_provider_allowed(chat, ProviderFacts(ProviderKind.OPEN_AI, C.MEDIUM, True))


def test_a_stale_writer_saving_a_looser_record_never_lowers_the_stored_one(
    store: SqliteChatStore,
) -> None:
    """Another worker saves what it read before this one tightened: the file keeps the stricter."""
    Chat.open("c", store).require_provider_confidence(C.HIGH)
    Chat.open("c", store).require_data_security(DataSecurity.SELF_HOSTED)
    Chat.open("c", store).require_outbound_data_restriction(R.ONLY_LINKS_FROM_CHAT, "inbox")
    store.save(ChatRecord("c", C.LOW, DataSecurity.ALLOW_ANY, R.UNRESTRICTED))
    stored = store.load("c")
    assert stored is not None
    assert stored.required_provider_confidence is C.HIGH
    assert stored.required_data_security is DataSecurity.SELF_HOSTED
    assert stored.outbound_restriction is R.ONLY_LINKS_FROM_CHAT
    assert stored.outbound_mailbox_id == "inbox"
    store.save(
        ChatRecord("c", outbound_restriction=R.ONLY_CONFIGURED_SERVICES, outbound_mailbox_id="m2")
    )
    stored = store.load("c")
    assert stored is not None
    assert (stored.outbound_restriction, stored.outbound_mailbox_id) == (
        R.ONLY_CONFIGURED_SERVICES,
        "m2",
    )


def test_a_tightening_never_lifts_a_stored_value_this_version_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "chats.sqlite3"
    store = SqliteChatStore(path)
    store.save(ChatRecord("c"))
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(
            "UPDATE chat_requirements SET required_data_security = 'SOMETHING_NEW',"
            " outbound_restriction = 9"
        )
    chat = Chat.open("c", store)
    chat.require_data_security(DataSecurity.ALLOW_ANY)
    chat.require_outbound_data_restriction(R.ONLY_LINKS_FROM_CHAT, "inbox")
    stored = store.load("c")
    assert stored is not None
    assert stored.required_data_security is DataSecurity.SELF_HOSTED
    assert stored.outbound_restriction is R.ONLY_CONFIGURED_SERVICES


def test_a_worker_saving_after_another_tightened_since_its_read_keeps_the_stricter(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chats.sqlite3"
    Chat.open("c", SqliteChatStore(path)).require_provider_confidence(C.VERY_LOW)

    def other_worker() -> None:
        other = Chat.open("c", SqliteChatStore(path))
        other.require_provider_confidence(C.HIGH)
        other.require_data_security(DataSecurity.SELF_HOSTED)

    store = ReadThenRaced(SqliteChatStore(path))
    racing = Chat.open("c", store)
    store.other_writer = other_worker  # between this worker's next read and its save
    assert racing.require_provider_confidence(C.LOW)
    stored = SqliteChatStore(path).load("c")
    assert stored is not None
    assert stored.required_provider_confidence is C.HIGH
    assert stored.required_data_security is DataSecurity.SELF_HOSTED


_RACING_WRITER = textwrap.dedent(
    """
    import pathlib, sys
    sys.path.insert(0, sys.argv[5])
    from policy.vocabulary import ConfidenceLevel
    from runtime.chat import Chat, SqliteChatStore

    path, go, chats, level = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    store = SqliteChatStore(path)
    pathlib.Path(f"{go}-{level}-{sys.argv[6]}").touch()  # ready
    while not go.exists():
        pass
    for n in range(chats):
        Chat.open(f"chat-{n}", store).require_provider_confidence(ConfidenceLevel[level])
    """
)


def test_processes_racing_to_tighten_sqlite_chats_leave_the_strictest(tmp_path: Path) -> None:
    """Workers of one app share the SQLite file; each opens the same chats and raises their
    requirement to its own level at the same moments. Whatever the interleaving, every chat
    keeps the strictest level any worker set."""
    path, go, chats = tmp_path / "chats.sqlite3", tmp_path / "go", 200
    SqliteChatStore(path)
    root = Path(__file__).resolve().parents[2]
    levels = ["LOW", "HIGH", "MEDIUM", "HIGH"]
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _RACING_WRITER,
                str(path),
                str(go),
                str(chats),
                level,
                str(root),
                str(n),
            ]
        )
        for n, level in enumerate(levels)
    ]
    while len(list(tmp_path.glob("go-*"))) < len(workers):  # every worker ready: start at once
        assert all(w.poll() is None for w in workers)
    go.touch()
    assert [w.wait(timeout=300) for w in workers] == [0] * len(workers)
    store = SqliteChatStore(path)
    lowered = [
        n
        for n in range(chats)
        if (stored := store.load(f"chat-{n}")) is None
        or stored.required_provider_confidence is not C.HIGH
    ]
    assert lowered == []


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_what_the_chat_holds_for_the_flow_rule_persists_and_only_grows(
    tmp_path: Path, kind: str
) -> None:
    from policy.flow import Effect

    store = MemoryChatStore() if kind == "memory" else SqliteChatStore(tmp_path / "c.sqlite3")
    chat = Chat.open("flow", store)
    assert chat.flow_holdings.effects == frozenset()
    assert chat.note_untrusted("attachment mail.eml")
    assert not chat.note_untrusted("attachment mail.eml")  # held once
    chat.add_holdings([ChatHolding(HoldingKind.PRIVATE_DATA, "semantic_search", "hr-docs", "c2")])
    store.save(ChatRecord("flow"))  # a stale writer without them takes nothing away
    held = Chat.open("flow", store).flow_holdings
    assert held.effects == {Effect.UNTRUSTED_CONTENT, Effect.PRIVATE_DATA}
    (private,) = held.brought(Effect.PRIVATE_DATA)
    assert (private.tool_id, private.call_id, private.source) == (
        "semantic_search",
        "c2",
        "hr-docs",
    )
    with pytest.raises(ValueError, match="needs the source"):
        chat.note_untrusted("  ")
