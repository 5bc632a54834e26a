"""Configurations from a configuration server: which copy is in force after each kind of answer,
and what `policy status` says. Real HTTP(S) over loopback, real zips, real plugin loading."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from policy import load_policy
from policy.config_sources import (
    ConfigurationReference,
    configuration_references,
    delivered_folder,
    delivered_home,
    policy_directories,
    read_statuses,
)
from runtime import PolicyWatcher
from runtime.config_fetch import (
    MAX_ARCHIVE_BYTES,
    MAX_FILES,
    MAX_UNPACKED_BYTES,
    CaBundleError,
    fetch_configurations,
    recorded_statuses,
)
from tests.servers.cli_runner import CliRun, run_policy
from tests.servers.config_server import ConfigServer, assistant_text, plugin_text, zip_of
from tests.servers.loopback import RunningApp, running_app
from tests.servers.tls import self_signed

CONFIG_A = "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b"
CONFIG_B = "0b9a8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d"
LOCK_WEB_SEARCH_OFF = 'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_search" }'


@pytest.fixture
def server() -> Iterator[tuple[ConfigServer, RunningApp]]:
    served = ConfigServer()
    with running_app(served.app()) as running:
        yield served, running


def _reference(running: RunningApp, configuration_id: str = CONFIG_A) -> ConfigurationReference:
    return ConfigurationReference(configuration_id, running.url("/configs"), "test")


def _status_says(state_dir: Path, reference: ConfigurationReference) -> dict[str, object]:
    """The block `policy status --state-dir` shows for `reference` (read back from the disk)."""
    (shown,) = recorded_statuses(state_dir, [reference], others=True)
    return shown.document()


def _disabled(state_dir: Path) -> tuple[str, ...]:
    setting = load_policy(state_dir=state_dir, use_entry_points=False).configuration.setting(
        "DataTools.DisabledToolIds"
    )
    return tuple(setting.value) if setting is not None else ()


def test_a_fetched_configuration_is_in_force_and_a_304_keeps_it(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    (first,) = fetch_configurations([_reference(running)], tmp_path)
    assert first.state == "current" and first.error is None
    assert first.etag == served.etag(CONFIG_A)
    assert _disabled(tmp_path) == ("web_search",)

    (second,) = fetch_configurations([_reference(running)], tmp_path)
    assert served.requests[-1] == (f"{CONFIG_A}.zip", served.etag(CONFIG_A))
    assert second.state == "current" and second.etag == first.etag
    assert _disabled(tmp_path) == ("web_search",)  # a 304 is never read as "empty"
    shown = _status_says(tmp_path, _reference(running))
    assert (shown["state"], shown["etag"], shown["error"]) == ("current", first.etag, None)
    assert shown["last_success"] == second.last_success


def test_a_changed_archive_replaces_the_copy(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    fetch_configurations([_reference(running)], tmp_path)
    served.archives[CONFIG_A] = zip_of(
        {
            "plugin.lua": plugin_text(
                CONFIG_A, LOCK_WEB_SEARCH_OFF.replace("web_search", "read_web_page")
            )
        }
    )
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert status.state == "current"
    assert _disabled(tmp_path) == ("read_web_page",)
    shown = _status_says(tmp_path, _reference(running))
    assert (shown["state"], shown["etag"]) == ("current", served.etag(CONFIG_A))


def _directory_with_data() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("plugin.lua", plugin_text(CONFIG_A))
        archive.writestr(zipfile.ZipInfo("icons/"), b"hidden payload")
    return buffer.getvalue()


def _duplicate_entry() -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore")
        archive.writestr("plugin.lua", plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF))
        archive.writestr("plugin.lua", plugin_text(CONFIG_A))
    return buffer.getvalue()


BAD_ARCHIVES = {
    "broken zip": (b"PK\x03\x04 this is not a zip", "not a valid zip"),
    "parent segment": (
        zip_of({"plugin.lua": plugin_text(CONFIG_A), "../escape.lua": "x = 1"}),
        "'..' segment",
    ),
    "absolute path": (zip_of({"/etc/evil.lua": "x = 1"}), "absolute path"),
    "symbolic link": (
        zip_of({"plugin.lua": plugin_text(CONFIG_A)}, symlinks={"icon.lua": "/etc/passwd"}),
        "not a regular file",
    ),
    "other plugin id": (zip_of({"plugin.lua": plugin_text(CONFIG_B)}), "not the configuration id"),
    "plugin does not load": (zip_of({"plugin.lua": "ID = = 1"}), "does not load"),
    "no plugin": (zip_of({"readme.txt": "hello"}), "no plugin.lua"),
    "empty answer": (b"", "not a valid zip"),
    "directory entry with data": (_directory_with_data(), "carries data"),
    "duplicate file": (_duplicate_entry(), "appears twice"),
    "too many files": (
        zip_of({"plugin.lua": plugin_text(CONFIG_A)} | {f"f{n}.lua": "" for n in range(MAX_FILES)}),
        f"at most {MAX_FILES}",
    ),
    "unpacks too large": (
        zip_of({"plugin.lua": plugin_text(CONFIG_A), "big.lua": b"-" * (MAX_UNPACKED_BYTES + 1)}),
        f"more than {MAX_UNPACKED_BYTES} bytes",
    ),
    "nested plugin does not load": (
        zip_of({"plugin.lua": plugin_text(CONFIG_A), "extra/plugin.lua": "ID = = 1"}),
        "<archive>/extra/plugin.lua",
    ),
    "two configuration plugins": (
        zip_of({"a/plugin.lua": plugin_text(CONFIG_A), "b/plugin.lua": plugin_text(CONFIG_A)}),
        "2 configuration plugins",
    ),
    "only an assistant": (
        zip_of({"plugin.lua": assistant_text(CONFIG_A)}),
        "no configuration plugin",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ARCHIVES))
def test_a_refused_archive_keeps_the_last_known_good_copy(
    case: str, server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    fetch_configurations([_reference(running)], tmp_path)
    archive, reason = BAD_ARCHIVES[case]
    served.archives[CONFIG_A] = archive
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert status.state == "last-known-good"
    assert status.error is not None and reason in status.error
    assert status.last_success is not None
    assert read_statuses(tmp_path) == {CONFIG_A: status}  # what `policy status` shows
    assert _disabled(tmp_path) == ("web_search",)
    assert not (tmp_path.parent / "escape.lua").exists()
    assert sorted(p.name for p in (tmp_path / "delivered").iterdir()) == [CONFIG_A]


def test_a_server_that_is_down_or_answers_404_keeps_the_copy(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    fetch_configurations([_reference(running)], tmp_path)
    served.down = True
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert status.state == "last-known-good" and "503" in (status.error or "")
    served.down = False
    del served.archives[CONFIG_A]
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert status.state == "last-known-good" and "404" in (status.error or "")
    assert _disabled(tmp_path) == ("web_search",)
    shown = _status_says(tmp_path, _reference(running))
    assert shown["state"] == "last-known-good" and "404" in str(shown["error"])
    assert shown["last_success"] is not None and shown["last_attempt"] == status.last_attempt


def test_an_assistant_next_to_the_configuration_is_delivered_and_stray_files_are_left_out(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of(
        {
            "config/plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF),
            "config/icon.lua": "ICON = 1",
            "helper/plugin.lua": assistant_text(CONFIG_B),
            "README.md": "how we build this zip",
            "__MACOSX/config/._plugin.lua": b"\x00\x05\x16\x07",
        }
    )
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert status.state == "current", status.error
    delivered = delivered_folder(tmp_path, CONFIG_A)
    assert delivered is not None
    kept = sorted(p.relative_to(delivered).as_posix() for p in delivered.rglob("*") if p.is_file())
    assert kept == ["config/icon.lua", "config/plugin.lua", "helper/plugin.lua"]
    assert _disabled(tmp_path) == ("web_search",)


def test_a_download_larger_than_the_cap_is_refused_with_or_without_a_length(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    fetch_configurations([_reference(running)], tmp_path)
    served.archives[CONFIG_A] = b"\0" * (MAX_ARCHIVE_BYTES + 1)
    for chunked in (False, True):
        served.chunked = chunked
        (status,) = fetch_configurations([_reference(running)], tmp_path)
        assert status.state == "last-known-good"
        assert f"larger than {MAX_ARCHIVE_BYTES} bytes" in (status.error or "")
        assert _disabled(tmp_path) == ("web_search",)
        shown = _status_says(tmp_path, _reference(running))
        assert shown["state"] == "last-known-good" and shown["error"] == status.error


def test_a_server_that_goes_away_or_stalls_never_empties_the_configuration(tmp_path: Path) -> None:
    served = ConfigServer()
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    with running_app(served.app()) as running:
        reference = _reference(running)
        (first,) = fetch_configurations([reference], tmp_path)
        served.stall = 5.0
        (stalled,) = fetch_configurations([reference], tmp_path, timeout=0.5)
        served.stall = 0.0
    assert stalled.state == "last-known-good"
    assert "did not answer in time" in (stalled.error or "")
    assert stalled.etag == first.etag and stalled.last_success == first.last_success
    (gone,) = fetch_configurations([reference], tmp_path, timeout=2)  # nothing listens any more
    assert gone.state == "last-known-good" and "could not be reached" in (gone.error or "")
    assert _disabled(tmp_path) == ("web_search",)
    (record,) = read_statuses(tmp_path).values()
    assert record.state == "last-known-good" and record.error == gone.error


def test_a_copy_removed_by_hand_is_downloaded_again_without_a_stale_etag(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    fetch_configurations([_reference(running)], tmp_path)
    shutil.rmtree(delivered_home(tmp_path, CONFIG_A))
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert served.requests[-1] == (f"{CONFIG_A}.zip", None)
    assert status.state == "current" and _disabled(tmp_path) == ("web_search",)
    assert _status_says(tmp_path, _reference(running))["state"] == "current"


def test_an_unreachable_server_on_first_fetch_is_never_fetched(tmp_path: Path) -> None:
    unreachable = ConfigurationReference(CONFIG_A, "http://127.0.0.1:9/configs", "test")
    (status,) = fetch_configurations([unreachable], tmp_path, timeout=2)
    assert status.state == "never fetched"
    assert "could not be reached" in (status.error or "")
    assert _disabled(tmp_path) == ()
    shown = _status_says(tmp_path, unreachable)
    assert (shown["state"], shown["etag"], shown["last_success"]) == ("never fetched", None, None)
    assert "could not be reached" in str(shown["error"])


def test_an_unreferenced_configuration_is_withdrawn(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    served.archives[CONFIG_B] = zip_of({"plugin.lua": plugin_text(CONFIG_B, name="Other")})
    fetch_configurations([_reference(running), _reference(running, CONFIG_B)], tmp_path)
    assert delivered_folder(tmp_path, CONFIG_A) is not None
    fetch_configurations([_reference(running, CONFIG_B)], tmp_path)
    assert not delivered_home(tmp_path, CONFIG_A).exists()
    assert _disabled(tmp_path) == ()
    assert set(read_statuses(tmp_path)) == {CONFIG_B}
    assert [s.id for s in recorded_statuses(tmp_path, [], others=True)] == [CONFIG_B]


def test_https_with_an_intranet_ca_bundle_and_without_it(tmp_path: Path) -> None:
    (tmp_path / "tls").mkdir()
    tls = self_signed(tmp_path / "tls", ["localhost"])
    served = ConfigServer()
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    with running_app(served.app(), certfile=tls.certfile, keyfile=tls.keyfile) as running:
        reference = ConfigurationReference(
            CONFIG_A, running.url("/configs", host="localhost"), "test"
        )
        (untrusted,) = fetch_configurations([reference], tmp_path / "a")
        (trusted,) = fetch_configurations([reference], tmp_path / "b", ca_bundle=tls.certfile)
        # the intranet CA is no longer trusted (a device lost the bundle): the copy stays
        (failed,) = fetch_configurations([reference], tmp_path / "c", ca_bundle=tls.certfile)
        (failed,) = fetch_configurations([reference], tmp_path / "c")
    assert failed.state == "last-known-good" and "certificate" in (failed.error or "")
    assert failed.last_success is not None and _disabled(tmp_path / "c") == ("web_search",)
    assert _status_says(tmp_path / "c", reference)["state"] == "last-known-good"
    assert untrusted.state == "never fetched" and "certificate" in (untrusted.error or "")
    assert trusted.state == "current"
    assert _status_says(tmp_path / "a", reference)["state"] == "never fetched"
    assert "certificate" in str(_status_says(tmp_path / "a", reference)["error"])
    assert _status_says(tmp_path / "b", reference)["state"] == "current"
    assert _disabled(tmp_path / "a") == () and _disabled(tmp_path / "b") == ("web_search",)


def test_references_from_ai_studio_environment_and_policy_files(tmp_path: Path) -> None:
    environ = {
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ID_00001": CONFIG_B.upper(),
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_SERVER_URL_00001": "https://b.example.org/c/",
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ID_00000": CONFIG_A,
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_SERVER_URL_00000": "https://a.example.org/c",
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIGS": f"{CONFIG_A}@https://dup.example.org;bad@x",
    }
    found = configuration_references(environ=environ, directories=[tmp_path / "none"])
    assert [(r.id, r.server_url) for r in found.references] == [
        (CONFIG_A, "https://a.example.org/c"),
        (CONFIG_B, "https://b.example.org/c/"),
    ]
    assert found.references[1].download_url == f"https://b.example.org/c/{CONFIG_B}.zip"
    assert any("not a configuration id" in f.message for f in found.findings)

    policy_dir = tmp_path / "xdg" / "mindwork-ai-studio"
    policy_dir.mkdir(parents=True)
    (policy_dir / "config_00000.yaml").write_text(
        f'# deployed by IT\nid: "{CONFIG_B}"\nserver_url: https://files.example.org\n'
    )
    (policy_dir / "config_00001.yaml").write_text("id 'broken\n")
    files = configuration_references(environ={**environ, "XDG_CONFIG_DIRS": str(tmp_path / "xdg")})
    assert files.source == "policy files"  # the first source with a valid pair wins, no merging
    assert [r.id for r in files.references] == [CONFIG_B]
    assert any("config_00001.yaml is not a valid policy file" in f.message for f in files.findings)

    own = configuration_references(
        environ={**environ, "TOOLPOLICY_CONFIG_SERVERS": f"{CONFIG_A}@http://127.0.0.1:1/x"}
    )
    assert own.source == "TOOLPOLICY_CONFIG_SERVERS"
    with pytest.raises(ValueError, match="not ID@URL"):
        configuration_references(["no-at-sign"], environ={})


def _policy(
    *args: str | Path, env: dict[str, str] | None = None, installed: bool = False
) -> CliRun:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    environment.update(env or {})
    return run_policy(args, env=environment, installed=installed)


def test_policy_fetch_status_and_explain_from_the_state_dir(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    spec = f"{CONFIG_A}@{running.url('/configs')}"
    fetched = _policy(
        "fetch", "--state-dir", tmp_path, "--config-server", spec, "-f", "json", installed=True
    )
    assert fetched.returncode == 0, fetched.stderr
    assert json.loads(fetched.stdout)["configurations"][0]["state"] == "current"

    served.down = True
    failed = _policy("fetch", "--state-dir", tmp_path, "--config-server", spec)
    assert failed.returncode == 1
    assert "last-known-good" in failed.stdout and "Traceback" not in failed.stderr

    shown = _policy("status", "--state-dir", tmp_path, "--format", "json")
    assert shown.returncode == 1, shown.stderr  # not every configuration is current
    (record,) = json.loads(shown.stdout)["configurations"]
    assert set(record) == {
        "id",
        "server_url",
        "state",
        "etag",
        "last_attempt",
        "last_success",
        "error",
    }
    assert record["state"] == "last-known-good" and "503" in record["error"]

    explained = _policy(
        "explain",
        "web_search",
        "--state-dir",
        tmp_path,
        "--provider-kind",
        "OPEN_AI",
        "--model",
        "gpt-4o",
        "-f",
        "json",
    )
    assert "TOOL_SWITCHED_OFF" in explained.stdout, explained.stdout + explained.stderr

    nothing = _policy("fetch", "--state-dir", tmp_path / "empty")
    assert nothing.returncode == 2 and "no configuration to fetch" in nothing.stderr
    bad = _policy("fetch", "--state-dir", tmp_path, "--config-server", "nonsense")
    assert bad.returncode == 2 and "not ID@URL" in bad.stderr


def test_the_other_commands_read_the_fetched_configuration_from_the_state_dir(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    """check, tools and settings keys load what `policy fetch` put in force (explain: above)."""
    served, running = server
    lock = LOCK_WEB_SEARCH_OFF.replace('"web_search"', '"web_search", "no_such_tool"')
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, lock)})
    state = tmp_path / "state"
    (status,) = fetch_configurations([_reference(running)], state)
    delivered = delivered_folder(state, CONFIG_A)
    assert status.state == "current" and delivered is not None

    checked = _policy("check", "--state-dir", state)
    assert checked.returncode == 1, checked.stderr  # an unknown id in DisabledToolIds: an error
    assert f"{delivered / 'plugin.lua'}:" in checked.stdout + checked.stderr
    assert "no_such_tool" in checked.stdout + checked.stderr

    tools = _policy("tools", "--state-dir", state, "-f", "json")
    assert tools.returncode == 0, tools.stderr
    active = {tool["id"]: tool["active"] for tool in json.loads(tools.stdout)["tools"]}
    assert active["web_search"] is False and active["read_web_page"] is True

    keys = _policy("settings", "keys", "--state-dir", state, "-f", "json")
    assert keys.returncode == 0, keys.stderr
    (disabled,) = [
        k for k in json.loads(keys.stdout)["keys"] if k["key"] == "DataTools.DisabledToolIds"
    ]
    assert disabled["locked"] is True and "web_search" in disabled["value"]
    assert disabled["origin"]["plugin"] == "Fleet"

    without = _policy("tools", "-f", "json")  # the same command without the state dir
    assert {t["id"]: t["active"] for t in json.loads(without.stdout)["tools"]}["web_search"]


def test_policy_status_names_configurations_never_fetched_and_exits_0_only_when_all_current(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    spec_a = f"{CONFIG_A}@{running.url('/configs')}"
    spec_b = f"{CONFIG_B}@https://admin:pa55word@config.example.org/ai"
    fetched = _policy("fetch", "--state-dir", tmp_path, "--config-server", spec_a)
    assert fetched.returncode == 0, fetched.stderr
    current = _policy("status", "--state-dir", tmp_path, "--config-server", spec_a, "-f", "json")
    assert current.returncode == 0, current.stderr
    assert [c["state"] for c in json.loads(current.stdout)["configurations"]] == ["current"]

    both = _policy(
        "status", "--state-dir", tmp_path, "--config-server", spec_a, "--config-server", spec_b
    )
    assert both.returncode == 1
    (line,) = [row for row in both.stdout.splitlines() if row.startswith(CONFIG_B)]
    assert "never fetched" in line and "config.example.org" in line
    assert "pa55word" not in both.stdout + both.stderr


def test_policy_fetch_into_a_state_dir_that_cannot_be_written_keeps_everything(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A)})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    spec = f"{CONFIG_A}@{running.url('/configs')}"
    done = _policy("fetch", "--state-dir", blocker / "state", "--config-server", spec)
    assert done.returncode == 1
    assert f"--state-dir {blocker / 'state'} cannot be written" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "not allowed"),
        (403, "not allowed"),
        (204, "answers 200 with the zip"),
        (500, "failed or is down"),
    ],
)
def test_an_answer_that_is_not_a_configuration_keeps_the_copy_and_says_what_to_check(
    status: int, hint: str, server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    fetch_configurations([_reference(running)], tmp_path)
    served.status = status
    (failed,) = fetch_configurations([_reference(running)], tmp_path)
    assert failed.state == "last-known-good"
    assert _status_says(tmp_path, _reference(running))["error"] == failed.error
    assert f"answered {status} for {CONFIG_A}.zip" in (failed.error or "")
    assert hint in (failed.error or "")
    assert _disabled(tmp_path) == ("web_search",)


def test_a_304_nobody_asked_for_is_not_read_as_unchanged(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.status = 304  # a broken proxy: no copy, no ETag sent, yet "not modified"
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert status.state == "never fetched" and "misbehaves" in (status.error or "")
    assert served.requests == [(f"{CONFIG_A}.zip", None)]
    assert _status_says(tmp_path, _reference(running))["state"] == "never fetched"
    assert _disabled(tmp_path) == ()


def test_a_404_names_what_to_check(tmp_path: Path, server: tuple[ConfigServer, RunningApp]) -> None:
    _, running = server
    (status,) = fetch_configurations([_reference(running)], tmp_path)
    assert status.state == "never fetched"
    assert "check the configuration id and that the zip is on the server" in (status.error or "")


def test_an_https_server_redirecting_to_plain_http_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tls").mkdir()
    tls = self_signed(tmp_path / "tls", ["localhost"])
    plain = ConfigServer()
    plain.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    with running_app(plain.app()) as insecure:
        secure = ConfigServer(redirect_to=insecure.url("/configs"))
        with running_app(secure.app(), certfile=tls.certfile, keyfile=tls.keyfile) as running:
            reference = ConfigurationReference(
                CONFIG_A, running.url("/configs", host="localhost"), "test"
            )
            (status,) = fetch_configurations([reference], tmp_path, ca_bundle=tls.certfile)
    assert status.state == "never fetched"
    assert "redirected" in (status.error or "") and "plain http" in (status.error or "")
    assert _disabled(tmp_path) == ()
    assert _status_says(tmp_path, reference)["error"] == status.error


def test_a_ca_bundle_that_is_not_pem_is_a_clear_error_before_anything_is_fetched(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A)})
    bundle = tmp_path / "intranet-ca.pem"
    bundle.write_text("this is not a certificate\n", encoding="utf-8")
    spec = f"{CONFIG_A}@{running.url('/configs')}"
    done = _policy(
        "fetch", "--state-dir", tmp_path / "state", "--config-server", spec, "--ca-bundle", bundle
    )
    assert done.returncode == 2
    assert "--ca-bundle" in done.stderr and f"{bundle} is not a PEM file" in done.stderr
    assert "Traceback" not in done.stderr and served.requests == []
    with pytest.raises(CaBundleError, match="not a PEM file"):
        fetch_configurations([_reference(running)], tmp_path / "state", ca_bundle=bundle)
    with pytest.raises(ValueError, match="not a PEM file"):
        PolicyWatcher(lambda: load_policy(use_entry_points=False), ca_bundle=bundle)


def test_slots_are_matched_as_text_ordered_by_number_and_half_pairs_are_named() -> None:
    ids = [f"00000000-0000-4000-8000-00000000000{n}" for n in range(6)]
    prefix = "MINDWORK_AI_STUDIO_ENTERPRISE_"
    environ = {
        f"{prefix}CONFIG_ID_2": ids[0],
        f"{prefix}CONFIG_SERVER_URL_2": "https://two.example.org",
        f"{prefix}CONFIG_ID_00001": ids[1],
        f"{prefix}CONFIG_SERVER_URL_00001": "https://five-digit-one.example.org",
        f"{prefix}CONFIG_ID_01": ids[2],
        f"{prefix}CONFIG_SERVER_URL_01": "https://short-one.example.org",
        f"{prefix}CONFIG_ID3": ids[3],  # no underscore: slot 3 as well
        f"{prefix}CONFIG_SERVER_URL3": "https://three.example.org",
        f"{prefix}CONFIG_ID_00004": ids[4],  # an id without its server
        f"{prefix}CONFIG_ID": "{" + ids[5].upper() + "}",
        f"{prefix}CONFIG_SERVER_URL": "https://single.example.org",
    }
    found = configuration_references(environ=environ, directories=[])
    assert [(r.id, r.server_url) for r in found.references] == [
        (ids[1], "https://five-digit-one.example.org"),  # slot 1, the 5-digit form first
        (ids[2], "https://short-one.example.org"),  # "01" is another slot with the same number
        (ids[0], "https://two.example.org"),
        (ids[3], "https://three.example.org"),
        (ids[5], "https://single.example.org"),  # braces and upper case read as the GUID
    ]
    assert any(
        "CONFIG_ID_00004" in f.message and "without a server URL" in f.message
        for f in found.findings
    )


def test_the_combined_list_alone_and_the_policy_folder_when_xdg_is_unset() -> None:
    environ = {
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIGS": (
            f" {CONFIG_B.upper()}@https://b.example.org/c ; {CONFIG_A}@https://a.example.org;"
        )
    }
    found = configuration_references(environ=environ, directories=[])
    assert found.source == "environment"
    assert [(r.id, r.server_url) for r in found.references] == [
        (CONFIG_B, "https://b.example.org/c"),
        (CONFIG_A, "https://a.example.org"),
    ]
    assert found.references[0].download_url == f"https://b.example.org/c/{CONFIG_B}.zip"
    assert policy_directories({}) == (Path("/etc/xdg/mindwork-ai-studio"),)
    assert policy_directories({"XDG_CONFIG_DIRS": "/opt/a::/opt/b"}) == (
        Path("/opt/a/mindwork-ai-studio"),
        Path("/opt/b/mindwork-ai-studio"),
    )


def test_policy_fetch_reads_the_sources_each_run_and_withdraws_what_they_no_longer_name(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    """A timer runs `policy fetch` with no --config-server: each run reads the device's sources
    anew. A configuration they stop naming is withdrawn; one they name newly is fetched; a run
    whose sources cannot be read whole, or name nothing, withdraws nothing."""
    served, running = server
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    served.archives[CONFIG_B] = zip_of({"plugin.lua": plugin_text(CONFIG_B, name="Other")})
    url = running.url("/configs")
    state = tmp_path / "state"
    folder = tmp_path / "xdg" / "mindwork-ai-studio"
    folder.mkdir(parents=True)
    device = {"XDG_CONFIG_DIRS": str(tmp_path / "xdg")}

    def fetched(env: dict[str, str]) -> CliRun:
        return _policy("fetch", "--state-dir", state, "-f", "json", env={**device, **env})

    def in_force() -> list[str]:
        return sorted(c for c in (CONFIG_A, CONFIG_B) if delivered_folder(state, c) is not None)

    both = fetched({"TOOLPOLICY_CONFIG_SERVERS": f"{CONFIG_A}@{url};{CONFIG_B}@{url}"})
    assert both.returncode == 0, both.stderr
    assert in_force() == sorted([CONFIG_A, CONFIG_B])
    only_b = fetched({"TOOLPOLICY_CONFIG_SERVERS": f"{CONFIG_B}@{url}"})
    assert only_b.returncode == 0, only_b.stderr
    assert in_force() == [CONFIG_B] and _disabled(state) == ()
    assert [c["id"] for c in json.loads(only_b.stdout)["configurations"]] == [CONFIG_B]

    # the policy files name A again (new) and B; then A's file is saved half-written
    (folder / "config_00000.yaml").write_text(f"id: {CONFIG_A}\nserver_url: {url}\n")
    (folder / "config_00001.yaml").write_text(f"id: {CONFIG_B}\nserver_url: {url}\n")
    assert fetched({}).returncode == 0 and in_force() == sorted([CONFIG_A, CONFIG_B])
    (folder / "config_00000.yaml").write_text(f"id: '{CONFIG_A}\n")
    broken = fetched({})
    assert "config_00000.yaml is not a valid policy file" in broken.stderr
    assert "nothing is withdrawn" in broken.stderr
    assert in_force() == sorted([CONFIG_A, CONFIG_B]) and _disabled(state) == ("web_search",)
    shown = _policy("status", "--state-dir", state, "-f", "json", env=device)
    assert sorted(c["id"] for c in json.loads(shown.stdout)["configurations"]) == in_force()

    (folder / "config_00000.yaml").unlink()
    (folder / "config_00001.yaml").unlink()
    nothing = fetched({})  # nothing named (a lost environment reads the same): kept
    assert nothing.returncode == 2 and "every copy in force is kept" in nothing.stderr
    assert in_force() == sorted([CONFIG_A, CONFIG_B])


def test_a_policy_folder_that_cannot_be_read_is_named_and_withdraws_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "xdg").mkdir()
    (tmp_path / "xdg" / "mindwork-ai-studio").write_text("a file where the folder should be")
    environ = {
        "XDG_CONFIG_DIRS": str(tmp_path / "xdg"),
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_ID": CONFIG_B,
        "MINDWORK_AI_STUDIO_ENTERPRISE_CONFIG_SERVER_URL": "https://b.example.org",
    }
    found = configuration_references(environ=environ)
    assert [r.id for r in found.references] == [CONFIG_B]
    (finding,) = found.findings
    assert f"the policy folder {tmp_path / 'xdg' / 'mindwork-ai-studio'} cannot be read" in (
        finding.message
    )
    assert "cannot be read" in (found.withdrawal_refused or "")
    absent = configuration_references(environ={**environ, "XDG_CONFIG_DIRS": str(tmp_path / "no")})
    assert absent.findings == () and absent.withdrawal_refused is None


def test_a_malformed_source_entry_never_shows_its_password(tmp_path: Path) -> None:
    """The warnings name what is wrong (and `PolicyWatcher.sources_error` and its log repeat
    them): an address typed where the id belongs, or a server address that is not http(s),
    is described without the user info it carries."""
    found = configuration_references(
        environ={
            "TOOLPOLICY_CONFIG_SERVERS": (
                f"https://admin:s3cr3t@config.example.org/ai;{CONFIG_A}@ftp://it:s3cr3t@files"
            )
        },
        directories=[],
    )
    messages = [f.message for f in found.findings]
    assert any("starts with an address, not a configuration id" in m for m in messages)
    assert any("'ftp://*****@files' is not a configuration server address" in m for m in messages)
    assert "s3cr3t" not in " ".join(messages) + (found.withdrawal_refused or "")
    shown = _policy(
        "fetch",
        "--state-dir",
        tmp_path,
        env={"TOOLPOLICY_CONFIG_SERVERS": "https://admin:s3cr3t@config.example.org/ai"},
    )
    assert shown.returncode == 2 and "starts with an address" in shown.stderr
    assert "s3cr3t" not in shown.stdout + shown.stderr


def test_a_server_without_etag_is_named_once_and_an_unchanged_archive_is_not_applied_again(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running = server
    served.no_etag = True
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    spec = f"{CONFIG_A}@{running.url('/configs')}"
    pointer = delivered_home(tmp_path, CONFIG_A) / "current.json"

    first = _policy("fetch", "--state-dir", tmp_path, "--config-server", spec, "-f", "json")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("sends no ETag") == 1, first.stderr
    assert "recognised by its SHA-256 digest" in first.stderr
    in_force = pointer.stat()
    copy = delivered_folder(tmp_path, CONFIG_A)
    assert copy is not None

    second = _policy("fetch", "--state-dir", tmp_path, "--config-server", spec, "-f", "json")
    assert second.returncode == 0, second.stderr
    assert "ETag" not in second.stderr, second.stderr  # said once, not every round
    (record,) = json.loads(second.stdout)["configurations"]
    assert (record["state"], record["etag"], record["error"]) == ("current", None, None)
    assert served.answers == [200, 200] and served.requests[-1] == (f"{CONFIG_A}.zip", None)
    again = pointer.stat()  # not re-applied: the pointer was not rewritten
    assert (again.st_ino, again.st_mtime_ns) == (in_force.st_ino, in_force.st_mtime_ns)
    assert delivered_folder(tmp_path, CONFIG_A) == copy
    assert _disabled(tmp_path) == ("web_search",)

    served.archives[CONFIG_A] = zip_of(
        {
            "plugin.lua": plugin_text(
                CONFIG_A, LOCK_WEB_SEARCH_OFF.replace("web_search", "read_web_page")
            )
        }
    )
    changed = _policy("fetch", "--state-dir", tmp_path, "--config-server", spec)
    assert changed.returncode == 0 and "ETag" not in changed.stderr, changed.stderr
    assert delivered_folder(tmp_path, CONFIG_A) != copy
    assert _disabled(tmp_path) == ("read_web_page",)


def test_rounds_in_one_process_name_a_server_without_etag_once(
    server: tuple[ConfigServer, RunningApp], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    served, running = server
    served.no_etag = True
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
    with caplog.at_level(logging.INFO, logger="runtime.config_fetch"):
        for _round in range(3):
            (status,) = fetch_configurations([_reference(running)], tmp_path)
            assert (status.state, status.error) == ("current", None)
    assert caplog.text.count("sends no ETag") == 1
    assert caplog.text.count("unchanged (same digest); the copy in force stays") == 2
