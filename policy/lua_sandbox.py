"""Run a configuration plugin's Lua in a sandbox and hand back plain data with source lines.

Each run gets a fresh Lua 5.4 state inside a forked worker process (see `_lua_worker`) with a
memory cap (lupa's allocator limit) and an instruction budget (a count hook that `pcall` cannot
swallow and that covers coroutines); the parent kills the worker at a wall-clock cap, which also
stops C-level bombs such as pathological patterns. The plugin sees only an allow-listed environment;
`require(name)` loads `<plugin folder>/<name>.lua` and nothing else. Every global, table entry and
table remembers the file and line that set it.
"""

from __future__ import annotations

import json
import marshal
import math
import os
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from policy._dataclass import dataclass
from policy._lua_compile import CompiledChunk, compile_chunk, prelude_bytecode
from policy._lua_rewrite import NO_CONSTRUCTORS, normalize_newlines, prepare_chunk
from policy._patterns import LazyPattern
from policy.errors import ToolPolicyError
from policy.plugin_files import PluginFileError, read_plugin_file
from policy.provenance import SourceLocation

if TYPE_CHECKING:
    from policy import _lua_worker

__all__ = [
    "WALL_SECONDS_VARIABLE",
    "LuaFunction",
    "LuaRunResult",
    "LuaSandboxError",
    "LuaScalar",
    "LuaTable",
    "LuaValue",
    "PluginSource",
    "SandboxLimits",
    "limits_from_environment",
    "read_plugin_source",
    "run_plugin",
    "run_plugin_source",
    "run_plugin_sources",
    "stop_sandbox_worker",
]

LuaScalar: TypeAlias = str | int | float | bool
_ErrorKind = Literal["read", "syntax", "runtime", "limit", "result"]

_POSITION = LazyPattern(r"^@(\d+):(\d+): ?(.*)\Z", re.DOTALL)
_FORBIDDEN_IN_MODULE_NAME = ("..", "/", "\\", "\0", ":")


@dataclass(frozen=True, slots=True)
class LuaFunction:
    """A function value the plugin stored (e.g. a helper); only where it was defined survives."""

    location: SourceLocation | None


@dataclass(frozen=True, slots=True)
class LuaTable:
    """A Lua table as read-only data, with the place each entry was written."""

    entries: Mapping[LuaScalar, LuaValue]
    locations: Mapping[LuaScalar, SourceLocation] = field(
        default_factory=lambda: MappingProxyType({})
    )
    location: SourceLocation | None = None

    def is_sequence(self) -> bool:
        """Keys are exactly 1..n; the empty table counts as a sequence."""
        count = len(self.entries)
        return all(type(key) is int and 1 <= key <= count for key in self.entries)

    def sequence(self) -> list[LuaValue]:
        """The contiguous array part from index 1 (how AI Studio reads lists)."""
        items: list[LuaValue] = []
        index = 1
        while index in self.entries:
            items.append(self.entries[index])
            index += 1
        return items

    def get(self, key: LuaScalar, default: LuaValue | None = None) -> LuaValue | None:
        return self.entries.get(key, default)


LuaValue: TypeAlias = LuaScalar | LuaTable | LuaFunction


@dataclass(frozen=True, slots=True)
class LuaRunResult:
    """The globals a plugin defined (the sandbox's own are left out) and where each was set."""

    globals: Mapping[str, LuaValue]
    locations: Mapping[str, SourceLocation]
    files: tuple[str, ...]
    module_bytes: tuple[bytes, ...] = ()
    """The bytes of each module the plugin required (`files[1:]`), as the sandbox read and ran
    them."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Caps for one plugin run.

    `instructions` counts Lua VM instructions: a 900-line plugin like AI Studio's template needs
    about 10,000, one with 80 providers about 100,000; the default stops an endless loop in well
    under a second. `wall_seconds` stops what the count cannot see (a pattern match inside one C
    call): a real plugin runs in milliseconds, so the default refuses every bomb within a second
    while leaving a slow machine a hundredfold margin (`TOOLPOLICY_PLUGIN_WALL_SECONDS` changes it
    for the CLI and `load_policy`). `max_values`, `max_depth` and `max_text_bytes` bound the data
    handed back to Python (values, nesting, bytes of all strings); `file_bytes` caps each file
    the loader reads (`plugin.lua` and every module it requires).
    """

    memory_bytes: int = 64 * 1024 * 1024
    instructions: int = 20_000_000
    wall_seconds: float = 0.75
    max_values: int = 200_000
    max_depth: int = 100
    max_text_bytes: int = 16 * 1024 * 1024
    file_bytes: int = 4 * 1024 * 1024


WALL_SECONDS_VARIABLE = "TOOLPOLICY_PLUGIN_WALL_SECONDS"


def limits_from_environment() -> tuple[SandboxLimits, str | None]:
    """The default caps, with the wall-clock cap from `TOOLPOLICY_PLUGIN_WALL_SECONDS` when set;
    a value that is not a number of seconds keeps the default and says why."""
    raw = os.environ.get(WALL_SECONDS_VARIABLE, "").strip()
    default = SandboxLimits()
    if not raw:
        return default, None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (0 < seconds <= 600):
        return default, (
            f"{WALL_SECONDS_VARIABLE}={raw!r} is not a number of seconds from above 0 to 600 "
            f"(e.g. 1.5); the default wall-clock cap of {default.wall_seconds:g} s applies"
        )
    return replace(default, wall_seconds=seconds), None


class LuaSandboxError(ToolPolicyError):
    """A plugin could not be run; str() is `file:line: message` (or `file: message`)."""

    code = "lua"

    message: str
    location: SourceLocation | None
    kind: _ErrorKind

    def __init__(
        self, message: str, location: SourceLocation | None, kind: _ErrorKind = "runtime"
    ) -> None:
        self.message = message
        self.location = location
        self.kind = kind
        super().__init__(f"{location}: {message}" if location is not None else message)

    def __reduce__(self) -> tuple[type[LuaSandboxError], tuple[str, SourceLocation | None, str]]:
        return (type(self), (self.message, self.location, self.kind))


def run_plugin(plugin_file: Path, limits: SandboxLimits = SandboxLimits()) -> LuaRunResult:
    """Run `plugin_file` (UTF-8 Lua); modules it requires come from the same folder."""
    source = read_plugin_source(plugin_file, limits)
    return run_plugin_source(source, str(plugin_file), plugin_file.parent, limits)


def read_plugin_source(plugin_file: Path, limits: SandboxLimits = SandboxLimits()) -> str:
    """The text of a plugin file, read safely (`policy.plugin_files`) within `limits.file_bytes`;
    a refused or unreadable file is a LuaSandboxError of kind "read"."""
    return _read_source(plugin_file, str(plugin_file), limits)


@dataclass(frozen=True, slots=True)
class PluginSource:
    """A plugin's text to run as if it were the file `file_name` (modules from `plugin_dir`)."""

    source: str
    file_name: str
    plugin_dir: Path | None


def run_plugin_source(
    source: str,
    file_name: str,
    plugin_dir: Path | None,
    limits: SandboxLimits = SandboxLimits(),
) -> LuaRunResult:
    """Run Lua text as if it were the file `file_name`; without `plugin_dir`, `require` finds nothing."""
    (outcome,) = run_plugin_sources([PluginSource(source, file_name, plugin_dir)], limits)
    if isinstance(outcome, LuaSandboxError):
        raise outcome
    return outcome


def run_plugin_sources(
    plugins: Sequence[PluginSource], limits: SandboxLimits = SandboxLimits()
) -> list[LuaRunResult | LuaSandboxError]:
    """Run several plugins (one configuration) in one round trip to the worker, each in its own
    fresh Lua state under its own caps; the outcome of each, in order (an error is returned,
    never raised, so one bad plugin leaves the others' results intact)."""
    _check_limits(limits)
    outcomes: list[LuaRunResult | LuaSandboxError | None] = [None] * len(plugins)
    jobs: list[tuple[int, tuple[Any, ...]]] = []
    for index, plugin in enumerate(plugins):
        try:
            jobs.append((index, _job(plugin)))
        except LuaSandboxError as error:
            outcomes[index] = error
    if jobs:
        from policy import _lua_worker

        prelude_bytecode()  # compiled before the worker is forked, so the worker keeps it
        while jobs:
            request = marshal.dumps(([job for _, job in jobs], _limits_on_the_wire(limits)))
            replies = _lua_worker.run_jobs(_serve_request, request, len(jobs), limits.wall_seconds)
            for (index, job), outcome in zip(jobs, replies, strict=False):
                outcomes[index] = _outcome(outcome, job[1], limits)
            jobs = jobs[len(replies) :]
    return [outcome for outcome in outcomes if outcome is not None]


def _limits_on_the_wire(limits: SandboxLimits) -> tuple[Any, ...]:
    """The caps as the worker reads them back (`SandboxLimits(*wired)`): requests and replies
    travel as `marshal` data, plain values only (no `pickle`, which a command would import)."""
    return tuple(getattr(limits, f.name) for f in fields(limits))


def _reply_on_the_wire(reply: tuple[Any, ...], file_name: str) -> bytes:
    try:
        return marshal.dumps(reply)
    except ValueError as error:  # a value that is not plain data: the worker still answers
        failed = ("error", f"internal sandbox error: {error}", 0, 0, "runtime", [file_name])
        return marshal.dumps(failed)


def _job(plugin: PluginSource) -> tuple[Any, ...]:
    """What the worker needs for one plugin: its text, names and folder. The worker rewrites and
    compiles the text (cached there per distinct text), so even that work on a hostile file runs
    under the wall-clock cap."""
    file_name = plugin.file_name
    if not hasattr(os, "fork"):
        raise LuaSandboxError(
            "cannot run Lua plugins here: the sandbox needs fork() (Linux or macOS) to enforce "
            "its wall-clock cap",
            SourceLocation(file_name, 0),
            "limit",
        )
    from lupa import lua54  # noqa: F401  (imported here, before the worker is forked)

    text = normalize_newlines(plugin.source.removeprefix("\ufeff"))
    # The worker keeps the working directory it was forked with, so it gets absolute paths.
    plugin_dir = plugin.plugin_dir
    folder = None if plugin_dir is None else _absolute(plugin_dir, file_name)
    return (text, file_name, _path_text(plugin_dir), _path_text(folder))


def _path_text(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _text_path(text: str | None) -> Path | None:
    return None if text is None else Path(text)


def _outcome(
    outcome: _lua_worker.JobOutcome, file_name: str, limits: SandboxLimits
) -> LuaRunResult | LuaSandboxError:
    where = SourceLocation(file_name, 0)
    if outcome.timed_out:
        return LuaSandboxError(
            f"stopped after the wall-clock cap of {limits.wall_seconds:g} s; the plugin never "
            "finished (an endless pattern match or string operation?)",
            where,
            "limit",
        )
    if outcome.reply is None:
        return LuaSandboxError(
            f"the sandbox process ended without a result ({outcome.death}); the plugin probably "
            "exhausted a process limit",
            where,
            "limit",
        )
    reply = marshal.loads(outcome.reply)
    if reply[0] == "error":
        _, message, file_index, line, kind, files = reply
        return LuaSandboxError(message, _location(files, file_index, line), kind)
    _, encoded, files, module_bytes = reply
    return replace(_decode_result(encoded, files), module_bytes=tuple(module_bytes))


def stop_sandbox_worker() -> None:
    """End the sandbox's worker process now rather than at exit (it is restarted on demand)."""
    if not hasattr(os, "fork"):
        return
    from policy import _lua_worker

    _lua_worker.shutdown()


def _absolute(plugin_dir: Path, file_name: str) -> Path:
    try:
        return plugin_dir.absolute()
    except OSError as error:
        raise LuaSandboxError(
            f"cannot locate the plugin folder: {error.strerror}",
            SourceLocation(file_name, 0),
            "read",
        ) from None


def _check_limits(limits: SandboxLimits) -> None:
    for name in (
        "memory_bytes",
        "instructions",
        "wall_seconds",
        "max_values",
        "max_depth",
        "max_text_bytes",
        "file_bytes",
    ):
        value = getattr(limits, name)
        if not value > 0:
            raise ValueError(f"SandboxLimits.{name} must be positive, got {value!r}")


def _read_source(path: Path, file_name: str, limits: SandboxLimits) -> str:
    try:
        raw = read_plugin_file(path, limits.file_bytes)
    except PluginFileError as error:
        raise LuaSandboxError(error.message, SourceLocation(file_name, 0), "read") from None
    return _decode_utf8(raw, file_name)


def _decode_utf8(raw: bytes, file_name: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise LuaSandboxError(
            f"not valid UTF-8 (byte 0x{raw[error.start]:02x}); save the file as UTF-8",
            SourceLocation(file_name, line),
            "read",
        ) from None


# --- worker side ------------------------------------------------------------------------------


def _serve_request(request: bytes) -> Iterator[bytes]:
    """The worker's side of one request: each plugin in a fresh Lua state, one reply each; once
    the last reply is out, fresh states for the next request are prepared while the worker idles."""
    from lupa import lua54

    jobs, wired = marshal.loads(request)
    limits = SandboxLimits(*wired)
    prelude = prelude_bytecode()  # inherited from the parent at fork
    for text, file_name, plugin_dir, folder in jobs:
        try:
            compiled = compile_chunk(text, 0, 0)
            if compiled.bytecode is None:
                message, _, line = _split_position(compiled.problem or "")
                reply: tuple[Any, ...] = ("error", message, 0, line, "syntax", [file_name])
            else:
                reply = _run_in_lua(
                    lua54,
                    compiled,
                    prelude,
                    file_name,
                    _text_path(plugin_dir),
                    _text_path(folder),
                    limits,
                )
        except Exception as error:  # the worker must always answer
            reply = ("error", f"internal sandbox error: {error}", 0, 0, "runtime", [file_name])
        yield _reply_on_the_wire(reply, file_name)
    _prepare_states(lua54, prelude, limits, len(jobs))


class _ReaderSlot:
    """The `require` reader a prepared Lua state is set up with; the plugin's own reader is put
    in when the state is given to that plugin."""

    __slots__ = ("reader",)

    def __init__(self) -> None:
        self.reader: _ModuleReader | None = None

    def __call__(self, raw_name: bytes) -> tuple[Any, ...]:
        if self.reader is None:
            return (None, b"module loading is not available before the plugin runs")
        return self.reader(raw_name)


@dataclass(slots=True)
class _FreshState:
    """A new Lua state with the sandbox prelude loaded and set up, never given to any plugin."""

    lua: Any
    control: Any
    sethook: Any
    reader: _ReaderSlot


_MAX_PREPARED = 32
_prepared: list[_FreshState] = []
_prepared_caps: tuple[int, ...] = ()
"""The caps the prepared states were set up under; a request with other caps never gets them."""


def _state_caps(limits: SandboxLimits) -> tuple[int, ...]:
    return (
        limits.memory_bytes,
        limits.instructions,
        limits.max_values,
        limits.max_depth,
        limits.max_text_bytes,
    )


def _new_state(lua54: Any, prelude: bytes, limits: SandboxLimits) -> _FreshState:
    lua = lua54.LuaRuntime(
        max_memory=limits.memory_bytes,
        encoding=None,
        register_eval=False,
        register_builtins=False,
        unpack_returned_tuples=True,
    )
    runtime_globals = lua.globals()
    reader = _ReaderSlot()
    setup = runtime_globals.load(prelude, b"=sandbox", b"b")
    control = setup(
        limits.instructions, limits.max_values, limits.max_depth, reader, limits.max_text_bytes
    )
    return _FreshState(lua, control, runtime_globals.debug.sethook, reader)


def _take_state(lua54: Any, prelude: bytes, limits: SandboxLimits) -> _FreshState:
    """A fresh state for one plugin: a prepared one when the caps match, else a new one. Either
    way no plugin has run in it before, and it is dropped after this one."""
    if _prepared and _prepared_caps == _state_caps(limits):
        return _prepared.pop()
    return _new_state(lua54, prelude, limits)


def _prepare_states(lua54: Any, prelude: bytes, limits: SandboxLimits, count: int) -> None:
    """Prepare up to `count` fresh states (as many as the request just answered had plugins), so
    the next request does not wait for them: the CPU is still spent, but while the worker idles."""
    global _prepared_caps
    caps = _state_caps(limits)
    if caps != _prepared_caps:
        _prepared.clear()
        _prepared_caps = caps
    try:
        while len(_prepared) < min(count, _MAX_PREPARED):
            _prepared.append(_new_state(lua54, prelude, limits))
    except Exception:  # e.g. a memory cap too small for the prelude: each plugin then says so
        _prepared.clear()


def _run_in_lua(
    lua54: Any,
    compiled: CompiledChunk,
    prelude: bytes,
    file_name: str,
    plugin_dir: Path | None,
    folder: Path | None,
    limits: SandboxLimits,
) -> tuple[Any, ...]:
    """Runs in the worker; returns ("ok", json, files, module bytes) or ("error", ..., files)."""
    files = [file_name]

    def fail(message: str, file_index: int, line: int, kind: _ErrorKind) -> tuple[Any, ...]:
        return ("error", message, file_index, line, kind, files)

    try:
        fresh = _take_state(lua54, prelude, limits)
        reader = _ModuleReader(plugin_dir, folder, files, compiled.constructor_count, limits)
        fresh.reader.reader = reader
        control, sethook = fresh.control, fresh.sethook
        chunk = control.load_compiled(compiled.bytecode)
        sethook(control.hook, b"", control.hook_every)
        try:
            outcome = control.run(chunk, 0, compiled.constructors_lua)
            ok, message = (
                (outcome[0], outcome[1]) if isinstance(outcome, tuple) else (outcome, None)
            )
        except lua54.LuaError as error:
            ok, message = False, error.args[0] if error.args else b""
        finally:
            sethook()
        state = control.state
        if state[b"exhausted_file"] is not None:
            return fail(
                f"stopped after the instruction budget of {limits.instructions:,} Lua "
                "instructions; the plugin never finished (an endless loop?)",
                max(int(state[b"exhausted_file"]), 0),
                int(state[b"exhausted_line"]),
                "limit",
            )
        if not ok:
            message_text = _text(message)
            if message_text.endswith("not enough memory"):
                return fail(
                    f"the plugin needed more memory than the cap of {limits.memory_bytes:,} bytes",
                    0,
                    0,
                    "limit",
                )
            return fail(*_split_position(message_text), "runtime")
        encoded = control.encode()
        if isinstance(encoded, tuple):
            _, problem, location = encoded
            file_index, line = _unpack_location(location)
            return fail(_text(problem), file_index, line, "result")
        return ("ok", encoded, files, reader.contents)
    except lua54.LuaMemoryError:
        return fail(
            f"the plugin needed more memory than the cap of {limits.memory_bytes:,} bytes",
            0,
            0,
            "limit",
        )
    except lua54.LuaError as error:
        return fail(*_split_position(_text(error.args[0] if error.args else b"")), "runtime")


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _split_position(message: str) -> tuple[str, int, int]:
    match = _POSITION.match(message)
    if match is None:
        return message, 0, 0
    return match.group(3), int(match.group(1)), int(match.group(2))


def _unpack_location(location: int | None) -> tuple[int, int]:
    if location is None:
        return 0, 0
    return location >> 32, location & 0xFFFFFFFF


class _ModuleReader:
    """Called by the sandbox's `require`: finds, reads and rewrites `<plugin dir>/<name>.lua`."""

    def __init__(
        self,
        plugin_dir: Path | None,
        folder: Path | None,
        files: list[str],
        first_constructor: int,
        limits: SandboxLimits,
    ) -> None:
        self._plugin_dir = plugin_dir
        self._folder = folder
        self._files = files
        self._next_constructor = first_constructor
        self._limits = limits
        self.contents: list[bytes] = []
        """The bytes of each module read, in the order of `files[1:]`."""

    def __call__(self, raw_name: bytes) -> tuple[Any, ...]:
        try:
            return self._read(raw_name.decode("utf-8", "replace"))
        except LuaSandboxError as error:
            return (None, str(error).encode())
        except Exception as error:  # a module problem must become a Lua error, never a crash
            return (None, f"module could not be read: {error}".encode())

    def _read(self, name: str) -> tuple[Any, ...]:
        if not name or any(part in name for part in _FORBIDDEN_IN_MODULE_NAME):
            return (
                None,
                f"module name {name!r} is not allowed: require loads only a file next to the "
                "plugin, so the name may not be empty or contain '..', '/', '\\' or ':'".encode(),
            )
        if self._plugin_dir is None or self._folder is None:
            return (None, f"module '{name}' not found: this plugin has no folder".encode())
        path = self._plugin_dir / f"{name}.lua"
        file_name = str(path)
        try:
            raw = read_plugin_file(self._folder / f"{name}.lua", self._limits.file_bytes)
        except PluginFileError as error:
            if error.missing:
                return (None, f"module '{name}' not found: {path} does not exist".encode())
            return (None, f"module '{name}' refused: {path}: {error.message}".encode())
        text = _decode_utf8(raw, file_name)
        file_index = len(self._files)
        self._files.append(file_name)
        self.contents.append(raw)
        text = normalize_newlines(text.removeprefix("\ufeff"))
        prepared = prepare_chunk(text, file_index, self._next_constructor)
        self._next_constructor += prepared.constructor_count
        if prepared.source is None:
            return (file_index, text.encode(), NO_CONSTRUCTORS.encode())
        return (file_index, prepared.source.encode(), prepared.constructors_lua.encode())


# --- parent side -----------------------------------------------------------------------------


def _location(files: list[str], file_index: int, line: int) -> SourceLocation:
    name = files[file_index] if 0 <= file_index < len(files) else files[0]
    return SourceLocation(name, line)


_RESULTS_KEPT = 64
_RESULT_BYTES_KEPT = 4 * 1024 * 1024
_results: dict[tuple[bytes, tuple[str, ...]], LuaRunResult] = {}
"""Decoded results by their encoding and files, oldest first: a plugin loaded again with the
same outcome (a reload) gets the same read-only result back instead of a new decoding."""
_results_lock = threading.Lock()


def _decode_result(encoded: bytes, files: list[str]) -> LuaRunResult:
    """Builds the result from the sandbox's JSON (shape described in `_lua_prelude`), or hands
    back the one built for the same JSON and files before (at most `_RESULTS_KEPT` results of up
    to `_RESULT_BYTES_KEPT` bytes of JSON in all are kept, the latest)."""
    key = (encoded, tuple(files))
    with _results_lock:
        known = _results.pop(key, None)
        if known is not None:
            _results[key] = known
            return known
    result = _decode_new_result(encoded, files)
    if len(encoded) <= _RESULT_BYTES_KEPT // 4:
        with _results_lock:
            _results[key] = result
            kept = sum(len(encoding) for encoding, _ in _results)
            while len(_results) > _RESULTS_KEPT or kept > _RESULT_BYTES_KEPT:
                oldest = next(iter(_results))
                kept -= len(oldest[0])
                del _results[oldest]
    return result


def _decode_new_result(encoded: bytes, files: list[str]) -> LuaRunResult:
    root = json.loads(encoded.decode("utf-8", "replace"))
    top = _decode_table(root, files, {})
    globals_ = {key: item for key, item in top.entries.items() if isinstance(key, str)}
    global_locations = {key: where for key, where in top.locations.items() if isinstance(key, str)}
    return LuaRunResult(
        MappingProxyType(globals_), MappingProxyType(global_locations), tuple(files)
    )


def _decode_location(
    packed: int | None, files: list[str], cache: dict[int, SourceLocation]
) -> SourceLocation | None:
    if packed is None:
        return None
    known = cache.get(packed)
    if known is None:
        known = cache[packed] = _location(files, packed >> 32, packed & 0xFFFFFFFF)
    return known


def _decode_table(node: list[Any], files: list[str], cache: dict[int, SourceLocation]) -> LuaTable:
    """One encoded table (`[location, key, value, location, ...]`); plain recursion, so the
    decoding leaves no reference cycle behind for the garbage collector."""
    keys = node[1::3]
    values = node[2::3]
    for index, item in enumerate(values):  # scalars stay as they are, in place
        kind = type(item)
        if kind is list:
            values[index] = _decode_table(item, files, cache)
        elif kind is dict:
            values[index] = LuaFunction(_decode_location(item["f"], files, cache))
    entries = dict(zip(keys, values, strict=True))
    locations = {}
    for key, packed in zip(keys, node[3::3], strict=True):
        if packed is not None:
            known = cache.get(packed)
            locations[key] = known if known is not None else _decode_location(packed, files, cache)
    return LuaTable(
        MappingProxyType(entries),
        MappingProxyType(locations),  # type: ignore[arg-type]
        _decode_location(node[0], files, cache),
    )
