"""Live reload: a PolicyWatcher swaps the ChatRuntime when the configuration changes, keeps the
policy in force when a change does not load, and follows the configuration server and local
plugin folders. Real plugins through lupa, real HTTP over loopback, real file events."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from policy import Policy, load_policy
from policy.config_sources import (
    ConfigurationReference,
    ConfigurationReferences,
    DeliveryStatus,
    configuration_references,
    delivered_folder,
)
from runtime import ChatRuntime, PolicyWatcher
from runtime.config_fetch import fetch_configurations, recorded_statuses
from runtime.policy_watch import DEFAULT_INTERVAL_SECONDS
from tests.servers.cli_runner import run_policy
from tests.servers.config_server import ConfigServer, plugin_text, zip_of
from tests.servers.loopback import RunningApp, running_app

CONFIG_A = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
LOCK_OFF = 'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "%s" }'


def _disabled(watcher: PolicyWatcher) -> tuple[str, ...]:
    setting = watcher.runtime.policy.configuration.setting("DataTools.DisabledToolIds")
    return tuple(setting.value) if setting is not None else ()


def _write_plugin(folder: Path, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.lua").write_text(text, encoding="utf-8")


@pytest.fixture
def server() -> Iterator[tuple[ConfigServer, RunningApp]]:
    served = ConfigServer()
    with running_app(served.app()) as running:
        yield served, running


def _local_watcher(folder: Path) -> PolicyWatcher:
    return PolicyWatcher(lambda: load_policy(org=[folder], use_entry_points=False), watch=[folder])


def _delivered_watcher(
    state: Path, reference: ConfigurationReference, **options: float
) -> PolicyWatcher:
    """A watcher that fetches `reference` into `state` and loads what is in force there."""
    return PolicyWatcher(
        lambda: load_policy(state_dir=state, use_entry_points=False),
        references=[reference],
        state_dir=state,
        **options,
    )


async def test_a_changed_plugin_swaps_the_runtime_and_an_in_flight_reference_keeps_the_old(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "org"
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "web_search"))
    watcher = _local_watcher(folder)
    in_flight = watcher.runtime
    assert _disabled(watcher) == ("web_search",)

    unchanged = await watcher.reload()
    assert not unchanged.swapped and unchanged.error is None
    assert watcher.runtime is in_flight

    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "read_web_page"))
    with caplog.at_level(logging.INFO, logger="runtime.policy_watch"):
        result = await watcher.reload()
    assert result.swapped and result.old_revision != result.new_revision
    assert watcher.revision == result.new_revision
    assert _disabled(watcher) == ("read_web_page",)
    # a request that read the runtime before the swap still sees the whole old policy
    setting = in_flight.policy.configuration.setting("DataTools.DisabledToolIds")
    assert setting is not None and tuple(setting.value) == ("web_search",)
    assert f"{result.old_revision} -> {result.new_revision}" in caplog.text


async def test_a_plugin_that_stops_loading_keeps_the_last_good_policy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "org"
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "web_search"))
    watcher = _local_watcher(folder)
    before = watcher.runtime
    _write_plugin(folder, "ID = ")
    with caplog.at_level(logging.ERROR, logger="runtime.policy_watch"):
        result = await watcher.reload()
    assert not result.swapped and result.error is not None
    assert f"organization plugin does not load: {folder / 'plugin.lua'}:1: " in result.error
    assert watcher.runtime is before and watcher.revision == result.old_revision
    assert _disabled(watcher) == ("web_search",)
    assert "keeping configuration revision" in caplog.text

    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "read_web_page"))
    assert (await watcher.reload()).swapped
    assert _disabled(watcher) == ("read_web_page",)


async def test_a_user_settings_file_that_does_not_parse_keeps_the_policy(tmp_path: Path) -> None:
    folder = tmp_path / "org"
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "web_search"))
    user = tmp_path / "user.yaml"
    user.write_text("tools: {}\n", encoding="utf-8")
    watcher = PolicyWatcher(
        lambda: load_policy(org=[folder], user_settings=user, use_entry_points=False),
        watch=[folder, user],
    )
    before = watcher.runtime
    user.write_text("tools: [unclosed\n", encoding="utf-8")
    result = await watcher.reload()
    assert not result.swapped and result.error and str(user) in result.error
    assert watcher.runtime is before


async def test_a_server_change_reaches_the_runtime_and_a_broken_delivery_keeps_it(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_A, LOCK_OFF % "web_search")}
    )
    state = tmp_path / "state"
    reference = ConfigurationReference(CONFIG_A, running.url("/configs"), "test")
    watcher = _delivered_watcher(state, reference)  # a fixed sequence of references
    assert _disabled(watcher) == ()
    await watcher.fetch()
    assert (await watcher.reload()).swapped
    assert _disabled(watcher) == ("web_search",)
    assert watcher.references == (reference,) and watcher.sources_error is None

    await watcher.fetch()  # 304: nothing changed, nothing reloaded
    assert not (await watcher.reload()).swapped

    served.archives[CONFIG_A] = b"not a zip"
    await watcher.fetch()
    assert not (await watcher.reload()).swapped
    assert _disabled(watcher) == ("web_search",)

    served.archives[CONFIG_A] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_A, LOCK_OFF % "read_web_page")}
    )
    await watcher.fetch()
    assert (await watcher.reload()).swapped
    assert _disabled(watcher) == ("read_web_page",)


async def test_run_reloads_when_a_watched_folder_changes(tmp_path: Path) -> None:
    folder = tmp_path / "org"
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "web_search"))
    watcher = _local_watcher(folder)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    # The first change may be read by the reload `run` starts with, the second only by watching.
    for switched_off in ("read_web_page", "web_search"):
        async with asyncio.timeout(30):
            while _disabled(watcher) != (switched_off,):
                # saved on every turn: under load watchfiles may start watching after a save
                _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % switched_off))
                await asyncio.sleep(0.2)
    stop.set()
    await task


def test_bad_arguments_are_refused_with_what_would_be_valid(tmp_path: Path) -> None:
    def load() -> object:
        raise AssertionError("not loaded")

    with pytest.raises(ValueError, match="interval must be > 0"):
        PolicyWatcher(load, interval=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"jitter must be in \[0, 1\)"):
        PolicyWatcher(load, jitter=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs state_dir"):
        PolicyWatcher(
            load,  # type: ignore[arg-type]
            references=[ConfigurationReference(CONFIG_A, "https://config.example", "test")],
        )


def test_the_interval_is_16_minutes_by_default_jittered_and_configurable() -> None:
    def load() -> Policy:
        return load_policy(use_entry_points=False)

    assert DEFAULT_INTERVAL_SECONDS == 16 * 60
    watcher = PolicyWatcher(load)
    default = [watcher.next_delay() for _ in range(200)]
    assert all(16 * 60 * 0.9 <= delay <= 16 * 60 * 1.1 for delay in default)
    assert len(set(default)) > 100  # spread, so a fleet does not ask in the same second
    configured = PolicyWatcher(load, interval=120, jitter=0.25)
    delays = [configured.next_delay() for _ in range(200)]
    assert all(90 <= delay <= 150 for delay in delays) and max(delays) - min(delays) > 30
    assert {PolicyWatcher(load, interval=5, jitter=0).next_delay() for _ in range(10)} == {5}


async def test_run_fetches_again_on_the_configured_interval(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_A, LOCK_OFF % "web_search")}
    )
    reference = ConfigurationReference(CONFIG_A, running.url("/configs"), "test")
    watcher = _delivered_watcher(tmp_path / "state", reference, interval=0.2, jitter=0)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    async with asyncio.timeout(30):
        while len(served.requests) < 3:
            await asyncio.sleep(0.05)
    stop.set()
    await task
    first, *again = served.requests
    assert first == (f"{CONFIG_A}.zip", None)  # then only ETag checks, answered 304
    assert again and all(request == (f"{CONFIG_A}.zip", served.etag(CONFIG_A)) for request in again)
    assert _disabled(watcher) == ("web_search",)
    await watcher.aclose()


async def test_fetch_errors_are_kept_for_the_app_and_shown_by_policy_status(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_A, LOCK_OFF % "web_search")}
    )
    state = tmp_path / "state"
    reference = ConfigurationReference(CONFIG_A, running.url("/configs"), "test")
    watcher = _delivered_watcher(state, reference)
    (before,) = watcher.delivery
    assert before.state == "never fetched" and watcher.last_change is None
    (fetched,) = await watcher.fetch()
    assert fetched.state == "current" and watcher.delivery == (fetched,)
    assert (await watcher.reload()).swapped and watcher.last_change is not None

    served.down = True
    (failed,) = await watcher.fetch()
    assert watcher.delivery == (failed,)
    assert failed.state == "last-known-good" and "503" in (failed.error or "")
    assert failed.last_success == fetched.last_success
    assert _disabled(watcher) == ("web_search",)
    shown = run_policy(["status", "--state-dir", str(state), "-f", "json"])
    assert shown.returncode == 1, shown.stderr
    (record,) = json.loads(shown.stdout)["configurations"]
    assert record["state"] == "last-known-good" and record["error"] == failed.error

    # a watcher started later on the same state dir reports what the rounds recorded
    later = _delivered_watcher(state, reference)
    assert later.delivery == (failed,)
    await watcher.aclose()
    await later.aclose()


async def test_a_round_into_a_state_dir_that_cannot_be_written_fails_every_configuration(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    state = blocker / "state"
    watcher = PolicyWatcher(
        lambda: load_policy(use_entry_points=False),
        references=[ConfigurationReference(CONFIG_A, "http://127.0.0.1:9/configs", "test")],
        state_dir=state,
    )
    (status,) = await watcher.fetch()
    assert status.state == "never fetched" and status.last_attempt is not None
    assert f"the state dir {state} cannot be written" in (status.error or "")
    await watcher.aclose()


async def test_a_load_or_build_that_fails_unexpectedly_keeps_the_policy_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "org"
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "web_search"))
    failures = {"load": False, "build": False}

    def load() -> Policy:
        if failures["load"]:
            raise RuntimeError("the Lua worker died")
        return load_policy(org=[folder], use_entry_points=False)

    def build(policy: Policy) -> ChatRuntime:
        if failures["build"]:
            raise KeyError("the app's ticket service is not configured")
        return ChatRuntime(policy)

    watcher = PolicyWatcher(load, build=build, watch=[folder])
    before = watcher.runtime
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "read_web_page"))
    failures["load"] = True
    with caplog.at_level(logging.ERROR, logger="runtime.policy_watch"):
        result = await watcher.reload()
    assert not result.swapped and watcher.last_change == result
    assert result.error == "RuntimeError: the Lua worker died"
    assert "keeping configuration revision" in caplog.text
    failures.update(load=False, build=True)
    result = await watcher.reload()
    assert not result.swapped and "KeyError" in (result.error or "")
    assert watcher.runtime is before and _disabled(watcher) == ("web_search",)
    failures["build"] = False
    assert (await watcher.reload()).swapped
    assert _disabled(watcher) == ("read_web_page",)
    await watcher.aclose()


async def test_a_changed_encryption_secret_reloads_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from policy.secrets import AI_STUDIO_ENV_SECRET, ENV_SECRET, generate_secret

    monkeypatch.delenv(AI_STUDIO_ENV_SECRET, raising=False)
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "policy-files"))
    monkeypatch.setenv(ENV_SECRET, generate_secret())
    folder = tmp_path / "org"
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "web_search"))
    watcher = _local_watcher(folder)
    assert not (await watcher.reload()).swapped
    monkeypatch.setenv(ENV_SECRET, generate_secret())
    changed = await watcher.reload()
    assert changed.swapped and changed.old_revision != changed.new_revision
    await watcher.aclose()


async def test_a_fetch_by_another_process_into_the_state_dir_is_picked_up_at_once(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_A, LOCK_OFF % "web_search")}
    )
    state = tmp_path / "state"
    watcher = PolicyWatcher(  # no references: a systemd timer runs `policy fetch` instead
        lambda: load_policy(state_dir=state, use_entry_points=False), state_dir=state
    )
    assert _disabled(watcher) == ()
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    reference = ConfigurationReference(CONFIG_A, running.url("/configs"), "test")
    # The first change may be read by the reload `run` starts with, the second only by watching
    # (the next interval is 16 minutes away). Each turn fetches a changed archive, since under
    # load watchfiles may start watching after a fetch.
    turn = 0
    for switched_off in ("web_search", "read_web_page"):
        async with asyncio.timeout(30):
            while _disabled(watcher) != (switched_off,):
                turn += 1
                served.archives[CONFIG_A] = zip_of(
                    {"plugin.lua": plugin_text(CONFIG_A, LOCK_OFF % switched_off + f" -- {turn}")}
                )
                await asyncio.to_thread(fetch_configurations, [reference], state)
                await asyncio.sleep(0.2)
    stop.set()
    await task
    await watcher.aclose()


async def test_a_watched_file_is_followed_across_saves_that_replace_it(tmp_path: Path) -> None:
    """A watched file (the user settings file, a plugin.lua named by itself) is saved by
    replacing it (`policy settings set`, most editors): every save is noticed, not only the
    first, and so is a file that did not exist when the watcher started."""
    from policy.user_settings import save_tool_setting

    folder = tmp_path / "org"
    _write_plugin(folder, plugin_text(CONFIG_A, LOCK_OFF % "read_web_page"))
    user = tmp_path / "user" / "settings.yaml"
    user.parent.mkdir()
    watcher = PolicyWatcher(
        lambda: load_policy(org=[folder], user_settings=user, use_entry_points=False),
        watch=[folder, user],
    )

    def language() -> str | None:
        return watcher.policy.user.tool_settings.get("web_search", {}).get("defaultLanguage")

    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    for wanted in ("de-DE", "fr-FR", "it-IT"):
        async with asyncio.timeout(30):
            while language() != wanted:  # saved on every turn, as above
                save_tool_setting(user, "web_search", "defaultLanguage", wanted)
                await asyncio.sleep(0.5)
    stop.set()
    await task
    await watcher.aclose()


CONFIG_B = "0b9a8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d"


class _PolicyFiles:
    """AI Studio's policy folder of one device, as an administrator's tooling edits it; the app
    reads it with `configuration_references` (or fails to: `failure` is raised instead)."""

    def __init__(self, root: Path, server_url: str) -> None:
        self.root = root
        self.folder = root / "mindwork-ai-studio"
        self.folder.mkdir(parents=True)
        self.server_url = server_url
        self.failure: Exception | None = None

    def name(self, slot: str, configuration_id: str) -> None:
        (self.folder / f"config_{slot}.yaml").write_text(
            f"id: {configuration_id}\nserver_url: {self.server_url}\n", encoding="utf-8"
        )

    def read(self) -> ConfigurationReferences:
        if self.failure is not None:
            raise self.failure
        return configuration_references(environ={"XDG_CONFIG_DIRS": str(self.root)})


@pytest.fixture
def two_configurations(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> tuple[_PolicyFiles, PolicyWatcher, Path]:
    """A device whose policy files name A (web_search off) and B (read_web_page off), both
    fetched and in force; the watcher re-reads the policy files before every round."""
    served, running = server
    served.archives[CONFIG_A] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_A, LOCK_OFF % "web_search")}
    )
    served.archives[CONFIG_B] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_B, LOCK_OFF % "read_web_page", name="Other")}
    )
    files = _PolicyFiles(tmp_path / "xdg", running.url("/configs"))
    files.name("00000", CONFIG_A)
    files.name("00001", CONFIG_B)
    state = tmp_path / "state"
    watcher = PolicyWatcher(
        lambda: load_policy(state_dir=state, use_entry_points=False),
        references=files.read,
        state_dir=state,
    )
    return files, watcher, state


def _in_force(watcher: PolicyWatcher) -> list[str]:
    return sorted(plugin.id for plugin in watcher.policy.configuration.plugins_in_force)


def _ids(statuses: Sequence[DeliveryStatus]) -> list[str]:
    return sorted(status.id for status in statuses)


async def test_a_configuration_no_longer_named_is_withdrawn_and_a_newly_named_one_fetched(
    two_configurations: tuple[_PolicyFiles, PolicyWatcher, Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    files, watcher, state = two_configurations
    assert _ids(watcher.delivery) == sorted([CONFIG_A, CONFIG_B])  # read at construction
    (files.folder / "config_00001.yaml").unlink()
    assert _ids(await watcher.fetch()) == [CONFIG_A]  # re-read before the round
    assert [r.id for r in watcher.references] == [CONFIG_A]
    assert (await watcher.reload()).swapped
    assert _disabled(watcher) == ("web_search",)

    files.name("00001", CONFIG_B)  # newly named: fetched at the next round
    with caplog.at_level(logging.INFO, logger="runtime.policy_watch"):
        assert _ids(await watcher.fetch()) == sorted([CONFIG_A, CONFIG_B])
    assert f"configuration {CONFIG_B} is named by the sources" in caplog.text
    assert (await watcher.reload()).swapped
    assert _in_force(watcher) == sorted([CONFIG_A, CONFIG_B])

    (files.folder / "config_00000.yaml").unlink()  # no longer named: withdrawn
    with caplog.at_level(logging.INFO, logger="runtime.policy_watch"):
        assert _ids(await watcher.fetch()) == [CONFIG_B]
    assert f"configuration {CONFIG_A} is no longer named: withdrawing it" in caplog.text
    assert delivered_folder(state, CONFIG_A) is None and watcher.sources_error is None
    with caplog.at_level(logging.INFO, logger="runtime.policy_watch"):
        swapped = await watcher.reload()
    assert swapped.swapped and _disabled(watcher) == ("read_web_page",)
    assert f"{swapped.old_revision} -> {swapped.new_revision}" in caplog.text
    assert _ids(recorded_statuses(state, [], others=True)) == [CONFIG_B]
    await watcher.aclose()


async def test_a_policy_file_that_breaks_withdraws_nothing_and_says_why(
    two_configurations: tuple[_PolicyFiles, PolicyWatcher, Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    files, watcher, state = two_configurations
    await watcher.fetch()
    assert (await watcher.reload()).swapped
    before = watcher.runtime
    broken = files.folder / "config_00000.yaml"
    broken.write_text("id 'half-saved\n", encoding="utf-8")  # A's file: ignored whole
    with caplog.at_level(logging.WARNING, logger="runtime.policy_watch"):
        statuses = await watcher.fetch()
    assert _ids(statuses) == sorted([CONFIG_A, CONFIG_B])  # A is still in force and still fetched
    assert all(status.state == "current" for status in statuses)
    assert delivered_folder(state, CONFIG_A) is not None
    assert f"{broken} is not a valid policy file" in (watcher.sources_error or "")
    assert "nothing is withdrawn" in caplog.text
    assert not (await watcher.reload()).swapped and watcher.runtime is before
    assert _in_force(watcher) == sorted([CONFIG_A, CONFIG_B])
    shown = run_policy(["status", "--state-dir", str(state), "-f", "json"])
    assert [c["id"] for c in json.loads(shown.stdout)["configurations"]] == sorted(
        [CONFIG_A, CONFIG_B]
    ), shown.stderr
    # an app started while the file is broken never named A, and still withdraws nothing
    restarted = PolicyWatcher(
        lambda: load_policy(state_dir=state, use_entry_points=False),
        references=files.read,
        state_dir=state,
    )
    assert [r.id for r in restarted.references] == [CONFIG_B]
    assert _ids(await restarted.fetch()) == [CONFIG_B]
    assert delivered_folder(state, CONFIG_A) is not None
    assert _in_force(restarted) == sorted([CONFIG_A, CONFIG_B])
    await restarted.aclose()

    broken.unlink()  # the administrator's removal, read whole: now A is withdrawn
    assert _ids(await watcher.fetch()) == [CONFIG_B] and watcher.sources_error is None
    assert delivered_folder(state, CONFIG_A) is None
    assert (await watcher.reload()).swapped and _disabled(watcher) == ("read_web_page",)
    await watcher.aclose()


async def test_sources_that_cannot_be_read_or_name_nothing_keep_every_configuration(
    two_configurations: tuple[_PolicyFiles, PolicyWatcher, Path],
) -> None:
    files, watcher, state = two_configurations
    await watcher.fetch()
    assert (await watcher.reload()).swapped
    in_force = watcher.runtime
    files.failure = RuntimeError("the registry service is restarting")
    statuses = await watcher.fetch()
    assert _ids(statuses) == sorted([CONFIG_A, CONFIG_B])
    assert watcher.sources_error == (
        "reading the configuration sources failed "
        "(RuntimeError: the registry service is restarting)"
    )
    assert delivered_folder(state, CONFIG_A) and delivered_folder(state, CONFIG_B)
    assert not (await watcher.reload()).swapped and watcher.runtime is in_force

    files.failure = OSError("cannot reach https://admin:s3cr3t-pw@registry.example/v1?token=t0k3n")
    await watcher.fetch()
    error = watcher.sources_error or ""
    assert "registry.example" in error
    assert "s3cr3t-pw" not in error and "t0k3n" not in error

    files.failure = None
    for slot in ("00000", "00001"):
        (files.folder / f"config_{slot}.yaml").unlink()  # nothing named: absent is not empty
    assert _ids(await watcher.fetch()) == sorted([CONFIG_A, CONFIG_B])
    assert watcher.sources_error == "no configuration source names a configuration"
    assert delivered_folder(state, CONFIG_A) and delivered_folder(state, CONFIG_B)
    assert not (await watcher.reload()).swapped and watcher.runtime is in_force
    await watcher.aclose()


async def test_sources_that_name_nothing_on_a_device_without_configurations_are_quiet(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    files = _PolicyFiles(tmp_path / "xdg", "http://127.0.0.1:9/configs")
    state = tmp_path / "state"
    watcher = PolicyWatcher(
        lambda: load_policy(state_dir=state, use_entry_points=False),
        references=files.read,
        state_dir=state,
    )
    with caplog.at_level(logging.WARNING, logger="runtime.policy_watch"):
        assert await watcher.fetch() == ()
    assert watcher.sources_error is None and caplog.text == ""
    await watcher.aclose()
