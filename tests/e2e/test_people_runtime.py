"""One runtime, many people: each signed-in `Caller` is decided with everyone's configurations
merged with their groups' (`DataGateway.ConfigurationsByGroup`), has their own user settings and
their own chats — one person's result never raises another's chat, and a chat id one person
sends never reaches another's chat. Real Lua plugins, the example organization, the example
tools and the loopback provider."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from policy import Caller, ConfidenceLevel, Policy, load_policy
from policy.people import UserSettingsFolder
from policy.user_settings import UserSettingsError
from runtime import Chat, ChatRuntime, FinalAnswer
from runtime.chat import MemoryChatStore, SqliteChatStore
from runtime.tools import builtin_executable_tools
from tests.e2e._kit import (
    ORGANIZATION,
    VLLM_ID,
    InternalNotesTool,
    client,
    load_example_tools,
    organization_provider,
)
from tests.e2e.test_end_to_end import QUESTION
from tests.servers.config_server import plugin_text
from tests.servers.postgres import running_postgres, server_binaries
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply

GROUPS_ID = "4b1d5c7e-6f20-4a3b-9c8d-7e6f5a4b3c21"
ENGINEERING_ID = "5c2e6d8f-7a31-4b4c-8d9e-8f7a6b5c4d32"
FINANCE_ID = "6d3f7e9a-8b42-4c5d-9eaf-9a8b7c6d5e43"
ALICE = Caller("alice@example.org", frozenset({"engineering", "staff"}))
BOB = Caller("bob@example.org", frozenset({"finance"}))


def write_plugin(folder: Path, plugin_id: str, body: str, name: str) -> None:
    folder.mkdir(parents=True)
    text = plugin_text(plugin_id, body, name=name) + "PRIORITY = 200\n"
    (folder / "plugin.lua").write_text(text, encoding="utf-8")


def people_organization(tmp_path: Path) -> Path:
    """The groups map beside the example organization (and tools a person may switch off for
    themselves); engineering switches current_time off, finance the calculator (each replaces
    the base plugin's list for its members)."""
    org = tmp_path / "people"
    write_plugin(
        org / "groups",
        GROUPS_ID,
        'CONFIG["SETTINGS"]["DataTools.EnableTools"] = true\n'
        'CONFIG["SETTINGS"]["DataTools.EnableTools.AllowUserOverride"] = true\n'
        'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = {\n'
        f'    ["engineering"] = {{ "{ENGINEERING_ID}" }},\n'
        f'    ["finance"] = {{ "{FINANCE_ID}" }},\n'
        "}\n",
        "Groups",
    )
    write_plugin(
        org / "engineering",
        ENGINEERING_ID,
        'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "current_time" }\n',
        "Engineering",
    )
    write_plugin(
        org / "finance",
        FINANCE_ID,
        'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "calculator" }\n',
        "Finance",
    )
    return org


@pytest.fixture
def notes_tool() -> InternalNotesTool:
    return InternalNotesTool()


@pytest.fixture
def people_policy(tmp_path: Path, notes_tool: InternalNotesTool) -> Policy:
    tools = [*builtin_executable_tools(), *load_example_tools().create_tools(), notes_tool]
    loaded = load_policy(org=[ORGANIZATION, people_organization(tmp_path)], tools=tools)
    assert not loaded.errors, loaded.errors
    return loaded


async def offered_to(runtime: ChatRuntime, caller: Caller, server: ProviderServer) -> set[str]:
    person = runtime.for_caller(caller)
    provider = organization_provider(person.policy, VLLM_ID, server)
    chat = Chat.open("listing", MemoryChatStore(), caller=caller)
    offer = await person.executable_tools(
        chat, provider, selected_tool_ids=("calculator", "current_time", "internal_notes")
    )
    return {definition.id for definition, _ in offer.tools}


async def test_two_people_in_different_groups_are_offered_different_tools(
    people_policy: Policy, server: ProviderServer
) -> None:
    async with ChatRuntime(people_policy) as runtime:
        alice = await offered_to(runtime, ALICE, server)
        bob = await offered_to(runtime, BOB, server)
        outsider = await offered_to(runtime, Caller("carol@example.org"), server)
        assert "current_time" not in alice and "calculator" in alice
        assert "calculator" not in bob and "current_time" in bob
        assert {"calculator", "current_time"} <= outsider
        assert runtime.for_caller(ALICE) is runtime.for_caller(ALICE), "kept, not rebuilt"
        same_groups = runtime.for_caller(Caller("dave@example.org", frozenset({"engineering"})))
        assert same_groups.policy is runtime.for_caller(ALICE).policy, "merged once per group set"


async def _respond(
    runtime: ChatRuntime, chat: Chat, server: ProviderServer, selected: tuple[str, ...]
) -> list[Any]:
    provider = organization_provider(runtime.policy, VLLM_ID, server)
    events: list[Any] = []
    async with client(provider) as provider_client:
        async for event in runtime.respond(
            chat, provider, [QUESTION], selected_tool_ids=list(selected), client=provider_client
        ):
            events.append(event)
    return events


async def test_one_persons_result_does_not_raise_another_persons_chat_of_the_same_id(
    people_policy: Policy, server: ProviderServer, tmp_path: Path
) -> None:
    store = SqliteChatStore(tmp_path / "chats.sqlite3")
    server.queue(
        Reply([chat_call(0, "call_1", "internal_notes", "{}")]),
        Reply(chat_text("The plan: hire two engineers.")),
    )
    async with ChatRuntime(people_policy) as runtime:
        alice = runtime.for_caller(ALICE)
        alices_chat = Chat.open("team-chat", store, caller=ALICE)
        events = await _respond(alice, alices_chat, server, ("internal_notes",))
        assert isinstance(events[-1], FinalAnswer)
        assert alices_chat.required_provider_confidence is ConfidenceLevel.HIGH

        bobs_chat = Chat.open("team-chat", store, caller=BOB)
        assert bobs_chat.required_provider_confidence is ConfidenceLevel.NONE, (
            "the same chat id sent by another person is another chat"
        )
        forged = Chat.open(alices_chat.id, store, caller=BOB)
        assert forged.required_provider_confidence is ConfidenceLevel.NONE, (
            "not even Alice's stored id reaches her chat for Bob"
        )
        with pytest.raises(ValueError, match="not the signed-in person's own"):
            await _respond(runtime.for_caller(BOB), alices_chat, server, ("calculator",))
        assert Chat.open("team-chat", store, caller=ALICE).required_provider_confidence is (
            ConfidenceLevel.HIGH
        )


async def test_each_person_has_their_own_user_settings(
    people_policy: Policy, server: ProviderServer, tmp_path: Path
) -> None:
    folder = tmp_path / "user-settings"
    folder.mkdir()
    settings = UserSettingsFolder(folder)
    settings.path_for(BOB.subject).write_text("tools:\n  enabled: false\n", encoding="utf-8")
    async with ChatRuntime(people_policy, settings_by_subject=settings) as runtime:
        assert await offered_to(runtime, BOB, server) == set(), "Bob switched his tools off"
        assert "calculator" in await offered_to(runtime, ALICE, server), "Alice did not"
        settings.path_for(BOB.subject).write_text("tools:\n  enabled: true\n", encoding="utf-8")
        assert "current_time" in await offered_to(runtime, BOB, server), "a saved change counts"


def test_a_subject_never_names_a_file_outside_the_settings_folder(tmp_path: Path) -> None:
    settings = UserSettingsFolder(tmp_path)
    for subject in ("../../etc/passwd", "..", ".hidden", "a/b", "x" * 400, json.dumps({"a": 1})):
        path = settings.path_for(subject)
        assert path.parent == tmp_path and not path.name.startswith("."), subject


@pytest.mark.skipif(
    server_binaries() is None and not os.environ.get("CI"),
    reason="PostgreSQL's server binaries are not installed here (apt-get install postgresql); "
    "CI installs them and always runs these tests",
)
async def test_a_persons_settings_saved_through_one_instance_count_on_another_via_postgresql(
    people_policy: Policy, server: ProviderServer
) -> None:
    from runtime import PostgresChatStore, StoredUserSettings

    with running_postgres() as dsn:
        first, second = PostgresChatStore(dsn), PostgresChatStore(dsn)
        try:
            saving = StoredUserSettings(first)
            with pytest.raises(UserSettingsError) as refused:
                saving.save(BOB.subject, "tools:\n  enabled: [not, a, flag]\n")
            assert f"the user settings of {BOB.subject}:2" in str(refused.value)
            assert first.user_settings_text(BOB.subject) is None, "nothing half-saved"
            reading = StoredUserSettings(second, refresh_seconds=0)
            async with ChatRuntime(people_policy, settings_by_subject=reading) as runtime:
                assert "current_time" in await offered_to(runtime, BOB, server)
                saving.save(BOB.subject, "tools:\n  enabled: false\n")
                assert await offered_to(runtime, BOB, server) == set(), "seen by the other"
                assert "calculator" in await offered_to(runtime, ALICE, server)
        finally:
            first.close()
            second.close()
