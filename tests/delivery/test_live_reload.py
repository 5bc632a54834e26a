"""A ChatRuntime answers requests while its configuration is reloaded live: every request is
answered, each under one whole configuration — the old one until the new one is complete, then the
new one — never a half-applied or an empty one. Real plugins through lupa, real HTTP over loopback
(a configuration server and a provider), real fetch rounds into the state dir."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from policy import load_policy
from policy.config_sources import (
    ConfigurationReference,
    configuration_references,
    delivered_home,
)
from runtime import (
    Chat,
    ChatMessage,
    ChatRuntime,
    FinalAnswer,
    MemoryChatStore,
    PolicyWatcher,
    Role,
    ToolCallFinished,
    ToolsOffered,
    TraceStatus,
)
from runtime.config_fetch import fetch_configurations
from tests.e2e._kit import anthropic_provider, client, load_example_tools
from tests.servers.config_server import ConfigServer, plugin_text, zip_of
from tests.servers.loopback import RunningApp, running_app
from tests.servers.provider_scripts import (
    MESSAGE_STOP,
    anthropic_text_message,
    block_start,
    block_stop,
    json_delta,
    message_delta,
    message_start,
)
from tests.servers.provider_server import ProviderServer, Reply, running_provider_server

ROOT = Path(__file__).resolve().parents[2]
CONFIG_A = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
CONFIG_B = "0b9a8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d"
SELECTED = ("calculator", "current_time")
OLD = ("current_time",)
"""Offered under the old configuration (it switches the calculator off)."""
NEW = ("calculator",)
"""Offered under the new one (it switches the clock off instead)."""
QUESTION = ChatMessage(Role.USER, "What time is it in Berlin?")


def _archive(switched_off: str, configuration_id: str = CONFIG_A) -> bytes:
    lock = f'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {{ "{switched_off}" }}'
    return zip_of({"plugin.lua": plugin_text(configuration_id, lock)})


OLD_ARCHIVE = _archive("calculator")
NEW_ARCHIVE = _archive("current_time")


@pytest.fixture
def config_server() -> Iterator[tuple[ConfigServer, RunningApp]]:
    served = ConfigServer()
    served.archives[CONFIG_A] = OLD_ARCHIVE
    with running_app(served.app()) as running:
        yield served, running


@pytest.fixture(scope="module")
def provider_server() -> Iterator[ProviderServer]:
    with running_provider_server() as server:
        yield server


def _loader(state: Path) -> Any:
    tools = load_example_tools().create_tools()
    return lambda: load_policy(state_dir=state, tools=list(tools), use_entry_points=False)


async def _watcher(state: Path, running: RunningApp, **options: Any) -> PolicyWatcher:
    watcher = PolicyWatcher(
        _loader(state),
        references=[ConfigurationReference(CONFIG_A, running.url("/configs"), "test")],
        state_dir=state,
        **options,
    )
    await watcher.fetch()
    assert (await watcher.reload()).swapped
    return watcher


def _clock_call() -> list[object]:
    return [
        message_start(20),
        block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "current_time", "input": {}}),
        json_delta(0, '{"time_zone": "Europe/Berlin"}'),
        block_stop(0),
        message_delta("tool_use"),
        MESSAGE_STOP,
    ]


def _tools_sent(body: dict[str, Any]) -> tuple[str, ...]:
    return tuple(tool["name"] for tool in body.get("tools", []))


async def _answer(runtime: ChatRuntime, server: ProviderServer) -> tuple[tuple[str, ...], str]:
    """One request, start to end, on the runtime it was given: what it offered, its answer."""
    provider = anthropic_provider(server)
    chat = Chat.open("chat", MemoryChatStore())
    offered: tuple[str, ...] | None = None
    last: object = None
    async with client(provider) as provider_client:
        async for event in runtime.respond(
            chat, provider, [QUESTION], selected_tool_ids=SELECTED, client=provider_client
        ):
            if isinstance(event, ToolsOffered):
                offered = event.tool_ids
            last = event
    assert isinstance(last, FinalAnswer) and offered is not None
    return offered, last.text


async def test_a_request_in_flight_finishes_under_the_old_configuration_the_next_gets_the_new(
    config_server: tuple[ConfigServer, RunningApp],
    provider_server: ProviderServer,
    tmp_path: Path,
) -> None:
    served, running = config_server
    provider_server.reset()
    watcher = await _watcher(tmp_path / "state", running)
    provider = anthropic_provider(provider_server)
    chat = Chat.open("in-flight", MemoryChatStore())

    async with client(provider) as provider_client:
        in_flight = watcher.runtime.respond(
            chat, provider, [QUESTION], selected_tool_ids=SELECTED, client=provider_client
        )
        first = await anext(in_flight)  # the request has started under the old configuration
        assert isinstance(first, ToolsOffered) and first.tool_ids == OLD

        served.archives[CONFIG_A] = NEW_ARCHIVE
        await watcher.fetch()
        swapped = await watcher.reload()
        assert swapped.swapped and watcher.last_change == swapped

        provider_server.queue(Reply(anthropic_text_message("The calculator is ready.")))
        assert await _answer(watcher.runtime, provider_server) == (NEW, "The calculator is ready.")

        provider_server.queue(
            Reply(_clock_call()), Reply(anthropic_text_message("14:05 in Berlin."))
        )
        rest = [event async for event in in_flight]
    # the old request called the clock, which the new configuration switches off, and finished
    (call,) = [e for e in rest if isinstance(e, ToolCallFinished)]
    assert call.trace.tool_id == "current_time" and call.trace.status is TraceStatus.SUCCESS
    assert isinstance(rest[-1], FinalAnswer) and rest[-1].text == "14:05 in Berlin."
    sent = [_tools_sent(r.json) for r in provider_server.requests]
    assert sent == [NEW, OLD, OLD]  # the new request went out while the old one was paused
    await watcher.aclose()


async def test_requests_are_answered_throughout_reloads_each_under_one_whole_configuration(
    config_server: tuple[ConfigServer, RunningApp],
    provider_server: ProviderServer,
    tmp_path: Path,
) -> None:
    served, running = config_server
    provider_server.reset()
    watcher = await _watcher(tmp_path / "state", running)
    answers: list[tuple[tuple[str, ...], str]] = []
    done = asyncio.Event()

    async def keep_asking() -> None:
        while not done.is_set():
            provider_server.queue(Reply(anthropic_text_message("ok")))
            answers.append(await _answer(watcher.runtime, provider_server))

    askers = [asyncio.create_task(keep_asking()) for _ in range(3)]
    swaps = []
    async with asyncio.timeout(120):
        for archive in (NEW_ARCHIVE, OLD_ARCHIVE) * 3:
            served.archives[CONFIG_A] = archive
            await watcher.fetch()
            swaps.append(await watcher.reload())
            seen = len(answers)
            while len(answers) < seen + 3:  # some requests run under this configuration
                assert not any(a.done() for a in askers), [a.exception() for a in askers]
                await asyncio.sleep(0.01)
        done.set()
        await asyncio.gather(*askers)
    await watcher.aclose()

    assert all(result.swapped for result in swaps)
    assert {offered for offered, _ in answers} == {OLD, NEW}  # never neither, never both
    assert all(text == "ok" for _, text in answers)
    assert all(_tools_sent(r.json) in (OLD, NEW) for r in provider_server.requests)


async def test_the_sources_stop_naming_a_configuration_and_the_next_request_runs_without_it(
    config_server: tuple[ConfigServer, RunningApp],
    provider_server: ProviderServer,
    tmp_path: Path,
) -> None:
    """An administrator changes AI Studio's policy files while the app runs: the watcher reads
    them before every round, fetches the configuration they name now and withdraws the one they
    no longer name, and the next request is answered under exactly that."""
    served, running = config_server
    served.archives[CONFIG_B] = _archive("current_time", CONFIG_B)
    provider_server.reset()
    folder = tmp_path / "xdg" / "mindwork-ai-studio"
    folder.mkdir(parents=True)

    def name(slot: str, configuration_id: str) -> None:
        (folder / f"config_{slot}.yaml").write_text(
            f"id: {configuration_id}\nserver_url: {running.url('/configs')}\n", encoding="utf-8"
        )

    name("00000", CONFIG_A)
    state = tmp_path / "state"
    watcher = PolicyWatcher(
        _loader(state),
        references=lambda: configuration_references(
            environ={"XDG_CONFIG_DIRS": str(tmp_path / "xdg")}
        ),
        state_dir=state,
    )
    await watcher.fetch()
    assert (await watcher.reload()).swapped
    provider_server.queue(Reply(anthropic_text_message("It is noon.")))
    assert await _answer(watcher.runtime, provider_server) == (OLD, "It is noon.")

    (folder / "config_00000.yaml").unlink()
    name("00001", CONFIG_B)
    (fetched,) = await watcher.fetch()
    assert (fetched.id, fetched.state) == (CONFIG_B, "current")
    assert not delivered_home(state, CONFIG_A).exists()  # withdrawn by the round
    assert watcher.sources_error is None
    assert (await watcher.reload()).swapped
    provider_server.queue(Reply(anthropic_text_message("The calculator is ready.")))
    assert await _answer(watcher.runtime, provider_server) == (NEW, "The calculator is ready.")
    assert [_tools_sent(r.json) for r in provider_server.requests] == [OLD, NEW]
    await watcher.aclose()


def test_a_reader_of_the_state_dir_sees_one_whole_copy_at_every_step_of_a_swap(
    config_server: tuple[ConfigServer, RunningApp],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another process (an app instance, `policy explain`) may load the state dir at any moment of
    a fetch round. After every rename and every removal the round makes, load it as that process
    would: it must find the old copy or the new one, whole — never no configuration at all."""
    served, running = config_server
    state = tmp_path / "state"
    reference = ConfigurationReference(CONFIG_A, running.url("/configs"), "test")
    fetch_configurations([reference], state)
    seen: list[tuple[str, ...]] = []
    reading = threading.Lock()

    def load_as_another_process() -> None:
        if not reading.acquire(blocking=False):
            return  # the reader's own writes (its last-known-good copies) are not observed
        try:
            setting = load_policy(state_dir=state, use_entry_points=False).configuration.setting(
                "DataTools.DisabledToolIds"
            )
            seen.append(tuple(setting.value) if setting is not None else ())
        finally:
            reading.release()

    real_replace, real_rmtree, real_unlink = os.replace, shutil.rmtree, Path.unlink

    def replace(*args: Any, **kwargs: Any) -> None:
        real_replace(*args, **kwargs)
        load_as_another_process()

    def rmtree(*args: Any, **kwargs: Any) -> None:
        real_rmtree(*args, **kwargs)
        load_as_another_process()

    def unlink(self: Path, *args: Any, **kwargs: Any) -> None:
        real_unlink(self, *args, **kwargs)
        load_as_another_process()

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    monkeypatch.setattr(Path, "unlink", unlink)
    for archive in (NEW_ARCHIVE, OLD_ARCHIVE, NEW_ARCHIVE):
        served.archives[CONFIG_A] = archive
        (status,) = fetch_configurations([reference], state)
        assert status.state == "current"
    monkeypatch.undo()
    assert len(seen) >= 6  # every swap was observed
    assert set(seen) == {("calculator",), ("current_time",)}


def test_the_live_reload_example_reports_each_configurations_state(
    config_server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = config_server
    served.down = True
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment["TOOLPOLICY_CONFIG_SERVERS"] = f"{CONFIG_A}@{running.url('/configs')}"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "live_reload.py"), "--seconds", "1"],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert f"configuration {CONFIG_A}: never fetched (the server answered 503" in done.stdout
