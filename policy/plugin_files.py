"""Open the files of a plugin folder so that no file can make the loader hang, flood or wander.

Every file the plugin loader reads (a `plugin.lua`, each module `require` loads, the copies kept as
last-known-good) goes through `read_plugin_file`: a symbolic link is followed only to a file in the
same folder, the file is opened without following a link and without blocking (a FIFO cannot hang
the loader), `fstat` comes before any read, only a regular file is read (no device, FIFO or
socket), and never more than the cap + 1 bytes (a sparse or growing file is refused without being
read whole). `read_regular_file` applies the same rules but the folder one to a file the user
names themselves (the user settings file, which may well be a link into a dotfiles folder).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from policy.errors import ToolPolicyError

__all__ = ["PluginFileError", "read_plugin_file", "read_regular_file"]

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_LINK_ERRORS = frozenset({errno.ELOOP, getattr(errno, "EMLINK", errno.ELOOP)})
_CHUNK = 1 << 16
_FOLDER = "this is a folder, not a file"


class PluginFileError(ToolPolicyError):
    """A plugin file was refused or could not be read; str() says why, without the file name."""

    code = "plugin-file"

    def __init__(self, message: str, missing: bool = False) -> None:
        self.message = message
        self.missing = missing
        super().__init__(message)


def read_plugin_file(path: Path, max_bytes: int, folder: Path | None = None) -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes` inside `folder` (its own folder
    by default). A symbolic link counts as the file it names, which must lie in that folder too."""
    descriptor = _open(path, path.parent if folder is None else folder)
    return _read_descriptor(
        descriptor, max_bytes, "a plugin file may have (SandboxLimits.file_bytes)"
    )


def read_regular_file(path: Path, max_bytes: int, cap: str) -> bytes:
    """The bytes of `path` (a link is followed), a regular file of at most `max_bytes`: a FIFO or
    device is refused without waiting on it, and never more than the cap + 1 bytes are read.
    `cap` says whose cap it is in the error ("a user settings file may have")."""
    return _read_descriptor(_open_following(path), max_bytes, cap)


def _read_descriptor(descriptor: int, max_bytes: int, cap: str) -> bytes:
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise PluginFileError(_FOLDER)
        if not stat.S_ISREG(info.st_mode):
            raise PluginFileError(
                f"this is {_kind(info.st_mode)}, not a regular file; only regular files are read"
            )
        if info.st_size > max_bytes:
            raise PluginFileError(_too_big(f"{info.st_size:,} bytes", max_bytes, cap))
        return _read_at_most(descriptor, max_bytes, cap)
    finally:
        os.close(descriptor)


def _open(path: Path, folder: Path) -> int:
    try:
        return _open_no_follow(path)
    except _SymbolicLink:
        pass
    target = Path(os.path.realpath(path))
    if target.parent != Path(os.path.realpath(folder)):
        raise PluginFileError(
            "this is a symbolic link that points outside the plugin folder; the plugin loader "
            "follows a link only to a file in the same folder (copy the file instead)"
        )
    try:
        return _open_no_follow(target)
    except _SymbolicLink:
        raise PluginFileError("this symbolic link changed while it was opened") from None


def _open_following(path: Path) -> int:
    try:
        return _open_with(path, _OPEN_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
    except _SymbolicLink:  # a link loop
        raise PluginFileError("this symbolic link points to itself, in a loop") from None


class _SymbolicLink(PluginFileError):
    """The last part of the path is a symbolic link (only `_open` sees this one)."""


def _open_no_follow(path: Path) -> int:
    if not getattr(os, "O_NOFOLLOW", 0) and os.path.islink(path):
        raise _SymbolicLink("symbolic link")
    return _open_with(path, _OPEN_FLAGS)


def _open_with(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        raise PluginFileError("the file does not exist", missing=True) from None
    except IsADirectoryError:
        raise PluginFileError(_FOLDER) from None
    except OSError as error:
        if error.errno in _LINK_ERRORS:
            raise _SymbolicLink("symbolic link") from None
        if error.errno == errno.ENXIO:
            raise PluginFileError(
                "this is a socket or device without a reader, not a regular file; only regular "
                "files are read"
            ) from None
        raise PluginFileError(f"cannot read the file: {error.strerror}") from None


def _read_at_most(descriptor: int, max_bytes: int, cap: str) -> bytes:
    parts: list[bytes] = []
    total = 0
    while total <= max_bytes:
        try:
            chunk = os.read(descriptor, min(_CHUNK, max_bytes + 1 - total))
        except OSError as error:
            raise PluginFileError(f"cannot read the file: {error.strerror}") from None
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
    raise PluginFileError(_too_big(f"more than {max_bytes:,} bytes", max_bytes, cap))


def _too_big(size: str, max_bytes: int, cap: str) -> str:
    return f"the file has {size}, over the cap of {max_bytes:,} bytes {cap}"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"
