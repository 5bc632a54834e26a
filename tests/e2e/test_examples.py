"""The example apps in examples/ run as a user runs them, against the loopback provider."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e._kit import ROOT
from tests.servers.provider_scripts import chat_call, chat_text
from tests.servers.provider_server import ProviderServer, Reply


def _run_example(name: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environment = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOOLPOLICY_") and "API_KEY" not in k
    }
    environment.update(env)
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_the_embedding_example_answers_with_a_tool_call(
    server: ProviderServer, tmp_path: Path
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "calculator", '{"expression":"(17 + 4) * 3"}')]),
        Reply(chat_text("63")),
    )
    done = _run_example(
        "embedding.py",
        env={
            "TOOLPOLICY_BASE_URL": server.base_url,
            "TOOLPOLICY_CHAT_DB": str(tmp_path / "chats.sqlite3"),
        },
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == "63\n"
    assert "[Calculator: SUCCESS]" in done.stderr
    assert server.bodies[0]["messages"][-1] == {"role": "user", "content": "What is (17 + 4) * 3?"}


def test_the_embedding_example_keeps_its_chats_in_the_users_data_folder(
    server: ProviderServer, tmp_path: Path
) -> None:
    server.queue(Reply(chat_text("Hello.")))
    data_home = tmp_path / "data"
    before = sorted(p.name for p in ROOT.iterdir())
    done = _run_example(
        "embedding.py",
        "Hi",
        env={"TOOLPOLICY_BASE_URL": server.base_url, "XDG_DATA_HOME": str(data_home)},
    )
    assert done.returncode == 0, done.stderr
    assert (data_home / "toolpolicy" / "chats.sqlite3").is_file()
    assert sorted(p.name for p in ROOT.iterdir()) == before


def test_the_chat_example_talks_to_a_self_hosted_server_from_the_environment(
    server: ProviderServer,
) -> None:
    server.queue(
        Reply([chat_call(0, "call_1", "current_time", '{"time_zone":"Asia/Tokyo"}')]),
        Reply(chat_text("It is morning in Tokyo.")),
    )
    done = _run_example(
        "chat.py",
        "What time is it in Tokyo?",
        env={"TOOLPOLICY_BASE_URL": server.base_url, "TOOLPOLICY_MODEL": "qwen-test"},
    )

    assert done.returncode == 0, done.stderr
    assert "It is morning in Tokyo." in done.stdout
    assert "[offered: calculator, current_time]" in done.stderr
    assert "[Current time: SUCCESS" in done.stderr
    assert server.bodies[0]["model"] == "qwen-test"


def test_the_chat_example_says_what_to_set_when_nothing_is_configured() -> None:
    done = _run_example("chat.py", env={})
    assert done.returncode == 1
    assert "Set TOOLPOLICY_BASE_URL (+ TOOLPOLICY_MODEL), OPENAI_API_KEY or ANTHROPIC_API_KEY." in (
        done.stderr
    )
