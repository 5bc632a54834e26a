"""End-to-end fixtures: the example organization's policy with the example tools, a loopback
provider server (one per module, emptied for each test) and a chat kept in a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from policy import Policy, load_policy
from runtime.chat import Chat, SqliteChatStore
from runtime.tools import builtin_executable_tools
from tests.e2e._kit import ORGANIZATION, InternalNotesTool, load_example_tools
from tests.servers.provider_server import ProviderServer, running_provider_server


@pytest.fixture(scope="session")
def example_tools() -> ModuleType:
    return load_example_tools()


@pytest.fixture
def notes_tool() -> InternalNotesTool:
    return InternalNotesTool()


@pytest.fixture
def policy(example_tools: ModuleType, notes_tool: InternalNotesTool) -> Policy:
    tools = [*builtin_executable_tools(), *example_tools.create_tools(), notes_tool]
    loaded = load_policy(org=[ORGANIZATION], tools=tools)
    assert not loaded.errors, loaded.errors
    return loaded


@pytest.fixture(scope="module")
def _server() -> Iterator[ProviderServer]:
    with running_provider_server() as server:
        yield server


@pytest.fixture
def server(_server: ProviderServer) -> ProviderServer:
    _server.replies.clear()
    _server.requests.clear()
    return _server


@pytest.fixture
def chat(tmp_path: Path) -> Chat:
    return Chat.open("e2e-chat", SqliteChatStore(tmp_path / "chats.sqlite3"))
