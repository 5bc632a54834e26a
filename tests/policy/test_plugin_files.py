"""Every file the plugin loader reads is opened safely: links stay in the folder, FIFOs, devices,
sockets and folders are refused, and nothing is read past the cap (hostile files made here)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from policy.lua_sandbox import LuaSandboxError, SandboxLimits, run_plugin
from policy.merge import load_configuration
from policy.plugin_files import PluginFileError, read_plugin_file
from policy.plugins import PluginLoadError, load_plugin
from policy.provenance import SourceLocation
from policy.vocabulary import PluginOrigin
from tests.policy.test_plugins import line_of, write_plugin
from tests.servers.cli_runner import CliRun, run_policy

ORG = PluginOrigin.ORGANIZATION
CREDENTIALS = "aws_secret_access_key = CANARY-7d1f0c"


def policy_check(org: Path, **environment: str) -> CliRun:
    """`policy check --org ORG` (TOOLPOLICY_* variables from `environment`)."""
    variables = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    done = run_policy(["check", "--org", str(org)], env={**variables, **environment})
    assert "Traceback" not in done.stdout + done.stderr
    return done


def _refused(path: Path, limits: SandboxLimits | None = None) -> str:
    with pytest.raises(PluginLoadError) as caught:
        load_plugin(path, ORG, limits)
    assert [f.code for f in caught.value.findings] == ["unreadable"]
    assert caught.value.findings[0].location == SourceLocation(str(path), 0)
    return caught.value.message


def _credentials(tmp_path: Path) -> Path:
    target = tmp_path / "credentials"
    target.write_text(f"[default]\n{CREDENTIALS}\n", encoding="utf-8")
    return target


def test_a_plugin_file_linked_to_a_credentials_file_is_refused_unread(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "plugin.lua").symlink_to(_credentials(tmp_path))
    message = _refused(folder / "plugin.lua")
    assert "symbolic link that points outside the plugin folder" in message
    assert "CANARY" not in message and "aws_secret" not in message


def test_a_plugin_file_linked_to_another_plugin_is_not_applied(tmp_path: Path) -> None:
    other = write_plugin(
        tmp_path / "elsewhere", 'CONFIG["SETTINGS"]["DataTools.EnableTools"] = false'
    )
    folder = tmp_path / "org" / "linked"
    folder.mkdir(parents=True)
    (folder / "plugin.lua").symlink_to(other)
    configuration = load_configuration([tmp_path / "org"])
    assert not configuration.plugins
    assert configuration.fails_closed
    (broken,) = configuration.broken_organization_plugins
    assert "points outside the plugin folder" in broken.message


def test_a_module_linked_outside_the_folder_is_refused_at_the_require_line(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "plugin"
    plugin = write_plugin(folder, extra='require("icon")')
    (folder / "icon.lua").symlink_to(_credentials(tmp_path))
    with pytest.raises(PluginLoadError) as caught:
        load_plugin(plugin, ORG)
    assert "points outside the plugin folder" in caught.value.message
    assert "CANARY" not in caught.value.message
    assert caught.value.location == SourceLocation(str(plugin), line_of(plugin, "require"))


def test_a_link_to_a_file_in_the_same_folder_is_followed(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    plugin = write_plugin(folder, extra='require("icon")')
    (folder / "icon-v2.lua").write_text('ICON = "<svg/>"', encoding="utf-8")
    (folder / "icon.lua").symlink_to("icon-v2.lua")
    assert load_plugin(plugin, ORG).files == (str(plugin), str(folder / "icon.lua"))
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / "plugin.lua").symlink_to(plugin)  # a link from another folder is refused
    assert "outside the plugin folder" in _refused(moved / "plugin.lua")


def test_a_dangling_link_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "plugin.lua").symlink_to(folder / "gone.lua")
    assert "the file does not exist" in _refused(folder / "plugin.lua")


def test_a_fifo_named_plugin_lua_is_refused_by_policy_check_without_hanging(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "org" / "fifo"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "plugin.lua")
    done = policy_check(tmp_path / "org")
    assert done.returncode == 1
    assert "this is a FIFO (named pipe), not a regular file" in done.stdout


def test_a_fifo_module_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    plugin = write_plugin(folder, extra='require("icon")')
    os.mkfifo(folder / "icon.lua")
    with pytest.raises(PluginLoadError, match=r"icon\.lua: this is a FIFO \(named pipe\)"):
        load_plugin(plugin, ORG)


def test_a_socket_and_a_folder_named_plugin_lua_are_refused(tmp_path: Path) -> None:
    short = Path(os.environ.get("TMPDIR", "/tmp"))
    folder = Path(os.path.realpath(short)) / f"tp-sock-{os.getpid()}"
    folder.mkdir()
    try:
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(folder / "plugin.lua"))
        try:
            assert "not a regular file" in _refused(folder / "plugin.lua")
        finally:
            server.close()
    finally:
        (folder / "plugin.lua").unlink(missing_ok=True)
        folder.rmdir()
    (tmp_path / "plugin.lua").mkdir()
    assert "this is a folder" in _refused(tmp_path / "plugin.lua")


def test_a_device_is_refused_and_never_read() -> None:
    zero = Path("/dev/zero")
    if not zero.exists() or not stat.S_ISCHR(zero.stat().st_mode):
        pytest.skip("no /dev/zero here")
    with pytest.raises(PluginFileError, match="this is a character device, not a regular file"):
        read_plugin_file(zero, 1024)


def test_a_link_to_dev_zero_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plugin.lua").symlink_to("/dev/zero")
    assert "points outside the plugin folder" in _refused(tmp_path / "plugin.lua")


def test_a_sparse_file_over_the_cap_is_refused_by_its_size_alone(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.lua"
    with plugin.open("wb") as handle:
        handle.truncate(3 * 1024**3)  # 3 GiB of holes: reading it whole would take minutes
    message = _refused(plugin)
    assert "the file has 3,221,225,472 bytes, over the cap of 4,194,304 bytes" in message


def test_the_cap_holds_to_the_byte(tmp_path: Path) -> None:
    limits = SandboxLimits(file_bytes=64)
    plugin = tmp_path / "plugin.lua"
    plugin.write_bytes(b"A = 1" + b" " * 59)
    assert run_plugin(plugin, limits).globals["A"] == 1
    plugin.write_bytes(b"A = 1" + b" " * 60)
    with pytest.raises(LuaSandboxError, match="the file has 65 bytes, over the cap of 64"):
        run_plugin(plugin, limits)


def test_a_file_that_reads_longer_than_its_size_stops_at_the_cap() -> None:
    maps = Path("/proc/self/maps")  # a regular file whose fstat size is 0
    if not maps.exists():
        pytest.skip("no /proc here")
    with pytest.raises(PluginFileError, match="more than 100 bytes, over the cap of 100"):
        read_plugin_file(maps, 100, Path("/proc/self"))


def test_a_module_over_the_cap_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    plugin = write_plugin(folder, extra='require("icon")')
    with (folder / "icon.lua").open("wb") as handle:
        handle.truncate(10 * 1024**2)
    with pytest.raises(PluginLoadError, match=r"icon\.lua: the file has 10,485,760 bytes, over"):
        load_plugin(plugin, ORG)


# --- the user settings file: the same rules, but a link is the user's own choice ----------------


def test_a_fifo_as_user_settings_is_refused_by_policy_check_without_hanging(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "plugin"
    write_plugin(folder)
    os.mkfifo(tmp_path / "settings.yaml")
    variables = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPOLICY_")}
    done = run_policy(
        ["check", "--org", str(folder), "--user-settings", str(tmp_path / "settings.yaml")],
        env=variables,
    )
    assert done.returncode == 1
    assert (
        f"{tmp_path / 'settings.yaml'}: error [user-settings]: cannot be read: this is a FIFO "
        "(named pipe), not a regular file; only regular files are read"
    ) in done.stdout


def test_a_device_or_an_oversized_user_settings_file_is_refused_unread(tmp_path: Path) -> None:
    from policy.user_settings import MAX_FILE_BYTES, UserSettingsError, load_user_settings

    sparse = tmp_path / "settings.yaml"
    with sparse.open("wb") as handle:
        handle.truncate(3 * 1024**3)
    with pytest.raises(UserSettingsError, match=f"over the cap of {MAX_FILE_BYTES:,} bytes a user"):
        load_user_settings(sparse)
    zero = Path("/dev/zero")
    if zero.exists():
        with pytest.raises(UserSettingsError, match="this is a character device"):
            load_user_settings(zero)


def test_a_user_settings_file_linked_from_a_dotfiles_folder_is_read(tmp_path: Path) -> None:
    from policy.user_settings import load_user_settings

    (tmp_path / "dotfiles").mkdir()
    real = tmp_path / "dotfiles" / "settings.yaml"
    real.write_text("tools:\n  enabled: false\n", encoding="utf-8")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.yaml").symlink_to(real)
    assert load_user_settings(tmp_path / "config" / "settings.yaml").tools_enabled is False
