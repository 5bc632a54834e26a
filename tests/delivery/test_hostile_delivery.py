"""Configuration delivery attacked from the server's and the network's side: a redirect through
plain http, a plain http source, hostile ETags, a server that trickles its answer, a damaged
status file. Each attack is run as a device runs it (`policy fetch` and `policy status` through
the console script's `main`, real servers on loopback); the lockdown a configuration delivered
stays in force."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.delivery.test_fetch import CONFIG_A, CONFIG_B, LOCK_WEB_SEARCH_OFF, _disabled, _policy
from tests.servers.config_server import ConfigServer, plugin_text, zip_of
from tests.servers.loopback import RunningApp, running_app
from tests.servers.tls import TlsFiles, self_signed

LOCKED = zip_of({"plugin.lua": plugin_text(CONFIG_A, LOCK_WEB_SEARCH_OFF)})
LOOSENED = zip_of({"plugin.lua": plugin_text(CONFIG_A)})


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    (tmp_path / "tls").mkdir()
    return self_signed(tmp_path / "tls", ["localhost"])


@pytest.fixture
def two_servers() -> Iterator[tuple[ConfigServer, RunningApp, ConfigServer, RunningApp]]:
    first, second = ConfigServer(), ConfigServer()
    with running_app(first.app()) as one, running_app(second.app()) as two:
        yield first, one, second, two


def _fetch(state: Path, *arguments: str | Path) -> tuple[int, list[dict[str, object]], str]:
    done = _policy("fetch", "--state-dir", state, "-f", "json", *arguments)
    assert "Traceback" not in done.stderr, done.stderr
    shown = json.loads(done.stdout)["configurations"] if done.stdout.strip() else []
    return done.returncode, shown, done.stderr


def test_a_redirect_through_plain_http_is_refused_at_that_hop_and_the_lockdown_stays(
    tmp_path: Path, tls: TlsFiles
) -> None:
    """https → http → https: the final address is https again, but the plain hop could have been
    answered by anyone on the network. Nothing is sent over plain http at all."""
    secure, plain, attacker = ConfigServer(), ConfigServer(), ConfigServer()
    secure.archives[CONFIG_A] = LOCKED
    attacker.archives[CONFIG_A] = LOOSENED
    state = tmp_path / "state"
    certificate = ("--ca-bundle", tls.certfile)
    with (
        running_app(attacker.app(), certfile=tls.certfile, keyfile=tls.keyfile) as far,
        running_app(plain.app()) as middle,
        running_app(secure.app(), certfile=tls.certfile, keyfile=tls.keyfile) as near,
    ):
        source = f"{CONFIG_A}@{near.url('/configs', host='localhost')}"
        code, _, stderr = _fetch(state, "--config-server", source, *certificate)
        assert code == 0 and _disabled(state) == ("web_search",)
        assert "plain http" not in stderr  # an https source is not warned about

        plain.redirect_to = far.url("/configs", host="localhost")
        secure.redirect_to = middle.url("/configs")
        code, (shown,), _ = _fetch(state, "--config-server", source, *certificate)
    assert code == 1
    assert shown["state"] == "last-known-good"
    assert "redirected" in str(shown["error"]) and "every hop must stay on https" in str(
        shown["error"]
    )
    assert plain.requests == [] and attacker.requests == []
    assert _disabled(state) == ("web_search",)
    status = _policy("status", "--state-dir", state, "-f", "json")
    assert status.returncode == 1
    assert json.loads(status.stdout)["configurations"][0]["state"] == "last-known-good"


def test_a_plain_http_source_is_fetched_with_a_warning(
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp], tmp_path: Path
) -> None:
    served, running, _, _ = two_servers
    served.archives[CONFIG_A] = LOCKED
    source = f"{CONFIG_A}@{running.url('/configs')}"
    code, (shown,), stderr = _fetch(tmp_path, "--config-server", source)
    assert code == 0 and shown["state"] == "current"
    assert f"configuration {CONFIG_A} (--config-server) is fetched over plain http" in stderr
    assert "serve it over https" in stderr
    status = _policy(
        "status",
        "--state-dir",
        tmp_path,
        env={"TOOLPOLICY_CONFIG_SERVERS": source},
    )
    assert status.returncode == 0
    assert f"configuration {CONFIG_A} (TOOLPOLICY_CONFIG_SERVERS) is fetched over plain http" in (
        status.stderr
    )


async def test_an_app_s_watcher_logs_the_plain_http_warning_each_round(
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from policy import load_policy
    from policy.config_sources import ConfigurationReference
    from runtime import PolicyWatcher

    served, running, _, _ = two_servers
    served.archives[CONFIG_A] = LOCKED
    reference = ConfigurationReference(CONFIG_A, running.url("/configs"), "the app's list")
    async with PolicyWatcher(
        lambda: load_policy(state_dir=tmp_path, use_entry_points=False),
        references=[reference],
        state_dir=tmp_path,
    ) as watcher:
        caplog.set_level(logging.WARNING, logger="runtime.policy_watch")
        for _ in range(2):
            (status,) = await watcher.fetch()
            assert status.state == "current"
    warned = [r.getMessage() for r in caplog.records if "over plain http" in r.getMessage()]
    assert (
        warned
        == [
            f"configuration {CONFIG_A} (the app's list) is fetched over plain http: anyone on the "
            "network path can change or replace it; serve it over https"
        ]
        * 2
    )


HOSTILE_ETAGS = {
    "non-ASCII": '"caf\u00e9"',
    "not quoted": "v1",
    "too long": '"' + "x" * 300 + '"',
    "quote inside": '"a"b"',
}


@pytest.mark.parametrize("case", sorted(HOSTILE_ETAGS))
def test_a_hostile_etag_is_never_kept_or_sent_back_and_stops_no_other_configuration(
    case: str,
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp],
    tmp_path: Path,
) -> None:
    hostile, hostile_app, honest, honest_app = two_servers
    hostile.archives[CONFIG_A] = LOCKED
    hostile.etag_text = HOSTILE_ETAGS[case]
    honest.archives[CONFIG_B] = zip_of({"plugin.lua": plugin_text(CONFIG_B, name="Other")})
    sources = {
        "TOOLPOLICY_CONFIG_SERVERS": (
            f"{CONFIG_A}@{hostile_app.url('/configs')};{CONFIG_B}@{honest_app.url('/configs')}"
        )
    }
    for _ in range(2):
        done = _policy("fetch", "--state-dir", tmp_path, "-f", "json", env=sources)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        shown = {c["id"]: c for c in json.loads(done.stdout)["configurations"]}
        assert shown[CONFIG_A]["state"] == "current" and shown[CONFIG_A]["etag"] is None
        assert shown[CONFIG_B]["state"] == "current"
        assert shown[CONFIG_B]["etag"] == honest.etag(CONFIG_B)
        assert f"configuration {CONFIG_A}: the server's ETag is not used" in done.stderr
    assert [sent for _, sent in hostile.requests] == [None, None]  # never sent back
    assert honest.answers == [200, 304]
    assert _disabled(tmp_path) == ("web_search",)
    status = _policy("status", "--state-dir", tmp_path, env=sources)
    assert status.returncode == 0, status.stdout + status.stderr


def test_a_server_trickling_its_answer_is_cut_off_at_the_timeout_and_the_round_goes_on(
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp], tmp_path: Path
) -> None:
    """A byte every 0.2 s is well within any read timeout; only a deadline on the whole download
    ends it (the archive would take minutes)."""
    slow, slow_app, honest, honest_app = two_servers
    slow.archives[CONFIG_A] = LOCKED
    honest.archives[CONFIG_B] = zip_of({"plugin.lua": plugin_text(CONFIG_B, name="Other")})
    source_a = f"{CONFIG_A}@{slow_app.url('/configs')}"
    source_b = f"{CONFIG_B}@{honest_app.url('/configs')}"
    code, _, _ = _fetch(tmp_path, "--config-server", source_a)
    assert code == 0
    slow.archives[CONFIG_A] = zip_of(
        {"plugin.lua": plugin_text(CONFIG_A), "filler.lua": os.urandom(4096).hex()}
    )
    slow.trickle = 0.2
    code, shown, _ = _fetch(
        tmp_path,
        "--config-server",
        source_a,
        "--config-server",
        source_b,
        "--timeout",
        "2",
    )
    assert code == 1
    by_id = {c["id"]: c for c in shown}
    assert by_id[CONFIG_A]["state"] == "last-known-good"
    assert "did not answer in time" in str(by_id[CONFIG_A]["error"])
    assert "longer than 2 s in all" in str(by_id[CONFIG_A]["error"])
    assert by_id[CONFIG_B]["state"] == "current"
    assert _disabled(tmp_path) == ("web_search",)


DAMAGED_STATUS_FILES = {
    "truncated": ('{"configurations": [{"id": "', "is not valid JSON"),
    "a list": ("[]", 'is not {"configurations": [...]}'),
    "an entry that is no object": ('{"configurations": [7]}', "configurations[0] is int"),
    "a number for the ETag": (
        json.dumps(
            {"configurations": [{"id": CONFIG_A, "server_url": "x", "state": "current", "etag": 5}]}
        ),
        "an ETag is text, not int",
    ),
    "a non-ASCII ETag": (
        json.dumps(
            {
                "configurations": [
                    {"id": CONFIG_A, "server_url": "x", "state": "current", "etag": '"caf\u00e9"'}
                ]
            }
        ),
        "is not an entity tag",
    ),
    "an unknown state": (
        json.dumps({"configurations": [{"id": CONFIG_A, "server_url": "x", "state": "trusted"}]}),
        "has the state 'trusted'",
    ),
    "a list for the state": (
        json.dumps({"configurations": [{"id": CONFIG_A, "server_url": "x", "state": ["current"]}]}),
        "has no text 'state'",
    ),
}


@pytest.mark.parametrize("case", sorted(DAMAGED_STATUS_FILES))
def test_a_damaged_status_file_is_named_and_the_next_fetch_repairs_it(
    case: str,
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp],
    tmp_path: Path,
) -> None:
    served, running, _, _ = two_servers
    served.archives[CONFIG_A] = LOCKED
    source = ("--config-server", f"{CONFIG_A}@{running.url('/configs')}")
    assert _fetch(tmp_path, *source)[0] == 0
    text, what = DAMAGED_STATUS_FILES[case]
    (tmp_path / "delivery.json").write_text(text, encoding="utf-8")

    status = _policy("status", "--state-dir", tmp_path, *source, "-f", "json")
    assert status.returncode == 1 and "Traceback" not in status.stderr
    assert f"error: {tmp_path / 'delivery.json'}" in status.stderr and what in status.stderr
    (row,) = json.loads(status.stdout)["configurations"]
    assert row["state"] == "last-known-good"  # a copy is in force, not known to be current
    assert _disabled(tmp_path) == ("web_search",)

    code, (shown,), stderr = _fetch(tmp_path, *source)
    assert code == 0 and shown["state"] == "current"
    assert "the status records are damaged" in stderr and what in stderr
    assert served.requests[-1] == (f"{CONFIG_A}.zip", None)  # no ETag taken from the damage
    assert _policy("status", "--state-dir", tmp_path, *source).returncode == 0
    assert _disabled(tmp_path) == ("web_search",)


def test_a_server_address_s_password_never_reaches_a_log_record(
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """httpx logs every request line with the address as given (user info included)."""
    from policy.config_sources import ConfigurationReference
    from runtime.config_fetch import fetch_configurations

    served, running, _, _ = two_servers
    served.archives[CONFIG_A] = LOCKED
    address = running.url("/configs").replace("http://", "http://fleet:Pa55-Canary-7@")
    caplog.set_level(logging.DEBUG)
    (status,) = fetch_configurations([ConfigurationReference(CONFIG_A, address, "test")], tmp_path)
    assert status.state == "current"
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert any(record.name == "httpx" for record in caplog.records)
    assert "Pa55-Canary-7" not in logged


def _truncate_pointer(home: Path, copy: Path) -> None:
    (home / "current.json").write_text('{"copy": "' + copy.name[:7], encoding="utf-8")


def _remove_copy(home: Path, copy: Path) -> None:
    shutil.rmtree(copy)


def _point_elsewhere(home: Path, copy: Path) -> None:
    (home / "current.json").write_text(json.dumps({"copy": "0" * 32}), encoding="utf-8")


def _remove_pointer(home: Path, copy: Path) -> None:
    (home / "current.json").unlink()


def _empty_copy(home: Path, copy: Path) -> None:
    (copy / "plugin.lua").unlink()


DAMAGE = {
    "truncated current.json": (_truncate_pointer, "current.json"),
    "copy folder removed": (_remove_copy, "is missing"),
    "current.json names a folder that is not there": (_point_elsewhere, "0" * 32),
    "current.json removed, copies kept": (_remove_pointer, "current.json is missing"),
    "plugin.lua removed from the copy": (_empty_copy, "holds no plugin.lua"),
}


def _active(state: Path) -> dict[str, bool]:
    done = _policy("tools", "--state-dir", state, "-f", "json")
    assert "Traceback" not in done.stderr, done.stderr
    return {tool["id"]: tool["active"] for tool in json.loads(done.stdout)["tools"]}


@pytest.mark.parametrize("kept_before", [True, False], ids=["last-known-good", "none kept"])
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_copy_in_force_never_drops_its_lockdown_and_status_says_so(
    case: str,
    kept_before: bool,
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp],
    tmp_path: Path,
) -> None:
    """The delivered configuration switches web_search off. With its copy damaged, a command
    loads the last-known-good copy it kept when the policy last loaded (else it switches every
    tool off); it never offers web_search again, and `policy status` stops saying "current"."""
    from policy.config_sources import delivered_folder, delivered_home

    served, running, _, _ = two_servers
    served.archives[CONFIG_A] = LOCKED
    source = ("--config-server", f"{CONFIG_A}@{running.url('/configs')}")
    assert _fetch(tmp_path, *source)[0] == 0
    if kept_before:  # a command loaded the policy once: its last-known-good copy is kept
        assert _active(tmp_path)["web_search"] is False
    copy = delivered_folder(tmp_path, CONFIG_A)
    assert copy is not None
    damage, named = DAMAGE[case]
    damage(delivered_home(tmp_path, CONFIG_A), copy)

    active = _active(tmp_path)
    assert active["web_search"] is False
    assert active["read_web_page"] is kept_before  # without a kept copy, every tool is off
    status = _policy("status", "--state-dir", tmp_path, *source, "-f", "json")
    assert status.returncode == 1 and "Traceback" not in status.stderr
    (row,) = json.loads(status.stdout)["configurations"]
    assert row["state"] == "last-known-good"
    assert "the copy in force is damaged" in row["error"] and named in row["error"]

    code, (shown,), _ = _fetch(tmp_path, *source)
    assert code == 0 and shown["state"] == "current"
    assert _policy("status", "--state-dir", tmp_path, *source).returncode == 0
    repaired = _active(tmp_path)
    assert repaired["web_search"] is False and repaired["read_web_page"] is True


def test_a_diff_against_a_damaged_copy_never_shows_its_lockdown_lifted(
    two_servers: tuple[ConfigServer, RunningApp, ConfigServer, RunningApp], tmp_path: Path
) -> None:
    """`policy diff` loads its candidate side with the fetched configurations too: a damaged one
    is replaced by its kept copy there as well (read, never written), so changing the user
    settings is not shown as offering the tools the configuration locked off."""
    from policy.config_sources import delivered_folder, delivered_home

    served, running, _, _ = two_servers
    cloud = (
        '{ Id = "16e70c4d-b7aa-4c16-b770-2737343f1b32", InstanceName = "Cloud", '
        'UsedLLMProvider = "OPEN_AI", Host = "NONE", Hostname = "", '
        'Model = { Id = "gpt-4.1", DisplayName = "GPT-4.1" } }'
    )
    with_provider = f'{LOCK_WEB_SEARCH_OFF}\nCONFIG["LLM_PROVIDERS"] = {{ {cloud} }}\n'
    served.archives[CONFIG_A] = zip_of({"plugin.lua": plugin_text(CONFIG_A, with_provider)})
    state = tmp_path / "state"
    assert _fetch(state, "--config-server", f"{CONFIG_A}@{running.url('/configs')}")[0] == 0
    assert _active(state)["web_search"] is False  # a command loaded it: a copy is kept
    copy = delivered_folder(state, CONFIG_A)
    assert copy is not None
    _truncate_pointer(delivered_home(state, CONFIG_A), copy)
    kept = sorted(str(p.relative_to(state)) for p in state.rglob("*"))
    settings = tmp_path / "settings.yaml"
    settings.write_text("{}\n", encoding="utf-8")
    done = _policy("diff", "--state-dir", state, "--against-user-settings", settings, "-f", "json")
    assert "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout) == {"changed": 0, "changes": []}, done.stdout[:2000]
    assert sorted(str(p.relative_to(state)) for p in state.rglob("*")) == kept
