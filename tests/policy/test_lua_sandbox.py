"""The Lua sandbox: plain data with source lines for normal plugins, refusals for attacks."""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy._lua_worker import JobOutcome, run_jobs, shutdown
from policy.lua_sandbox import (
    LuaFunction,
    LuaRunResult,
    LuaSandboxError,
    LuaTable,
    PluginSource,
    SandboxLimits,
    run_plugin,
    run_plugin_source,
    run_plugin_sources,
    stop_sandbox_worker,
)
from policy.provenance import SourceLocation

FIXTURES = Path(__file__).parent / "lua_fixtures"
# Small caps keep the attack tests quick; the defaults are far larger.
FAST = SandboxLimits(instructions=2_000_000, wall_seconds=1.0, memory_bytes=32 * 1024 * 1024)


@pytest.fixture(scope="module", autouse=True)
def _no_worker_left() -> Iterator[None]:
    yield
    stop_sandbox_worker()


@pytest.fixture
def org(tmp_path: Path) -> Path:
    folder = tmp_path / "org"
    shutil.copytree(FIXTURES / "org", folder)
    return folder


def _table(value: object) -> LuaTable:
    assert isinstance(value, LuaTable), value
    return value


def _run(source: str, plugin_dir: Path | None = None) -> LuaRunResult:
    return run_plugin_source(source, "plugin.lua", plugin_dir, FAST)


# --- normal plugins ---------------------------------------------------------------------------


def test_globals_of_a_typical_plugin(org: Path) -> None:
    result = run_plugin(org / "plugin.lua")
    plugin = str(org / "plugin.lua")
    icon = str(org / "icon.lua")
    assert result.files == (plugin, icon)
    assert result.globals["ID"] == "43065dbc-78d0-45b7-92be-f14c2926e2dc"
    assert result.globals["ICON_SVG"] == result.globals["SVG"]
    assert str(result.globals["SVG"]).startswith("<svg")
    assert result.globals["IS_MAINTAINED"] is True
    assert result.globals["GREETING"] == "Grüße aus Köln ✓"
    assert _table(result.globals["AUTHORS"]).sequence() == ["IT"]
    assert "print" not in result.globals and "string" not in result.globals
    assert list(result.globals)[:4] == ["SVG", "ID", "ICON_SVG", "NAME"]


def test_relative_paths_follow_the_callers_working_directory(
    org: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run("A = 1")  # the worker exists before the working directory changes
    monkeypatch.chdir(org.parent)
    result = run_plugin(Path("org") / "plugin.lua")
    assert result.files == (str(Path("org/plugin.lua")), str(Path("org/icon.lua")))
    assert result.locations["SVG"] == SourceLocation(str(Path("org/icon.lua")), 1)


def test_integers_stay_integers_and_floats_stay_floats(org: Path) -> None:
    result = run_plugin(org / "plugin.lua")
    assert type(result.globals["PRIORITY"]) is int and result.globals["PRIORITY"] == 100
    assert type(result.globals["TEMPERATURE"]) is float
    assert type(result.globals["WHOLE_FLOAT"]) is float and result.globals["WHOLE_FLOAT"] == 2.0


def test_each_global_remembers_its_file_and_line(org: Path) -> None:
    result = run_plugin(org / "plugin.lua")
    plugin = str(org / "plugin.lua")
    assert result.locations["ID"] == SourceLocation(plugin, 2)
    assert result.locations["NAME"] == SourceLocation(plugin, 4)
    assert result.locations["SUPPORT_CONTACT"] == SourceLocation(plugin, 4)
    assert result.locations["PRIORITY"] == SourceLocation(plugin, 6)
    assert result.locations["HELPER"] == SourceLocation(plugin, 33)
    # A multi-line long string counts from the line where the statement starts.
    assert result.locations["SVG"] == SourceLocation(str(org / "icon.lua"), 1)


def test_constructor_fields_and_assignments_keep_their_own_lines(org: Path) -> None:
    result = run_plugin(org / "plugin.lua")
    plugin = str(org / "plugin.lua")
    config = _table(result.globals["CONFIG"])
    providers = _table(config.get("LLM_PROVIDERS"))
    assert providers.locations[1] == SourceLocation(plugin, 12)
    provider = _table(providers.get(1))
    assert provider.location == SourceLocation(plugin, 12)
    assert provider.locations["Id"] == SourceLocation(plugin, 13)
    assert provider.locations["UsedLLMProvider"] == SourceLocation(plugin, 13)
    assert provider.locations["Hostname"] == SourceLocation(plugin, 14)
    model = _table(provider.get("Model"))
    assert model.entries == {"Id": "llama3", "DisplayName": "Llama 3"}
    assert model.location == SourceLocation(plugin, 15)

    settings = _table(config.get("SETTINGS"))
    assert settings.locations["DataTools.DisabledToolIds"] == SourceLocation(plugin, 19)
    disabled = _table(settings.get("DataTools.DisabledToolIds"))
    assert disabled.sequence() == ["web_search", "read_web_page", "semantic_search"]
    assert [disabled.locations[i].line for i in (1, 2, 3)] == [20, 21, 27]
    locked = _table(settings.get("DataTools.LockedToolSettings"))
    assert locked.locations["search_confluence.baseUrl"] == SourceLocation(plugin, 24)
    assert locked.locations["maxResults"] == SourceLocation(plugin, 25)


def test_a_reassignment_moves_the_location_but_not_the_order(org: Path) -> None:
    result = run_plugin(org / "plugin.lua")
    settings = _table(_table(result.globals["CONFIG"]).get("SETTINGS"))
    assert settings.get("DataTools.EnableTools") is False
    assert settings.locations["DataTools.EnableTools"].line == 28
    assert list(settings.entries) == [
        "DataTools.EnableTools",
        "DataTools.DisabledToolIds",
        "DataTools.LockedToolSettings",
    ]


def test_functions_carry_where_they_were_defined(org: Path) -> None:
    result = run_plugin(org / "plugin.lua")
    helper = result.globals["HELPER"]
    assert helper == LuaFunction(SourceLocation(str(org / "plugin.lua"), 30))
    assert _run("P = print").globals["P"] == LuaFunction(None)


def test_entry_order_is_array_part_then_assignment_order() -> None:
    result = _run('T = { z = 1, "a", [10] = 2, "b", y = 3 }\nT.x = 4\nT[3] = "c"\nT.z = nil')
    table = _table(result.globals["T"])
    assert list(table.entries) == [1, 2, 3, 10, "y", "x"]
    assert table.locations[3] == SourceLocation("plugin.lua", 3)
    assert table.locations["x"] == SourceLocation("plugin.lua", 2)
    assert not table.is_sequence()
    assert table.sequence() == ["a", "b", "c"]


def test_sequences_and_lookups() -> None:
    result = _run('L = {"a", "b"}\nE = {}\nM = {k = "v"}')
    assert _table(result.globals["L"]).is_sequence()
    assert _table(result.globals["E"]).is_sequence()
    assert _table(result.globals["E"]).sequence() == []
    assert _table(result.globals["M"]).get("k") == "v"
    assert _table(result.globals["M"]).get("missing", "default") == "default"


def test_computed_bracket_keys_get_their_field_lines() -> None:
    source = 'local prefix = "Data"\nT = {\n  [prefix .. ".A"] = 1,\n  [prefix .. ".B"] = {\n    2,\n  },\n}'
    table = _table(_run(source).globals["T"])
    assert table.entries["Data.A"] == 1
    assert table.locations["Data.A"].line == 3
    assert table.locations["Data.B"].line == 4
    assert _table(table.entries["Data.B"]).locations[1].line == 5


def test_tables_built_by_helper_functions_and_loops() -> None:
    source = (
        "local function provider(name)\n"
        "  return { Name = name }\n"
        "end\n"
        "LIST = {}\n"
        'for _, name in ipairs({"a", "b"}) do\n'
        "  LIST[#LIST + 1] = provider(name)\n"
        "end\n"
        "COUNT = 0\n"
        "for _ in pairs(LIST[1]) do COUNT = COUNT + 1 end\n"
        "FIRST = next(LIST)\n"
        'JOINED = table.concat({"x", "y"}, ",")\n'
    )
    result = _run(source)
    items = _table(result.globals["LIST"])
    assert [_table(item).get("Name") for item in items.sequence()] == ["a", "b"]
    assert items.locations[2].line == 6
    assert _table(items.get(1)).locations["Name"].line == 2
    assert result.globals["COUNT"] == 1
    assert result.globals["FIRST"] == 1
    assert result.globals["JOINED"] == "x,y"


def test_function_call_with_a_table_argument_and_load_of_text() -> None:
    source = (
        "local function wrap(t) return t end\n"
        'W = wrap{ a = 1 }\nS = wrap"text"\nL = load("return 1 + 1")()\nload("LOADED = true")()'
    )
    result = _run(source)
    assert _table(result.globals["W"]).entries == {"a": 1}
    assert result.globals["S"] == "text"
    assert result.globals["L"] == 2
    assert result.globals["LOADED"] is True


def test_globals_set_to_nil_are_absent_and_overridden_builtins_are_kept() -> None:
    result = _run("A = 1\nA = nil\nprint = 42\nB = type(print)")
    assert "A" not in result.globals
    assert result.globals["print"] == 42
    assert result.globals["B"] == "number"


def test_user_metatables_on_plugin_tables_work() -> None:
    source = (
        "local defaults = { Port = 443 }\n"
        "local t = setmetatable({}, { __index = defaults })\n"
        "PORT = t.Port\n"
        "PROTECTED = getmetatable(setmetatable({}, { __metatable = 'locked' }))\n"
    )
    result = _run(source)
    assert result.globals["PORT"] == 443
    assert result.globals["PROTECTED"] == "locked"


def test_strings_with_quotes_escapes_and_odd_numbers_survive() -> None:
    result = _run(
        'S = "a\\"b\\\\c\\n\\0d"\nK = { ["q\\"k"] = -0.5, [2.5] = 1e300 }\nBIG = 9007199254740993'
    )
    assert result.globals["S"] == 'a"b\\c\n\x00d'
    assert _table(result.globals["K"]).entries == {'q"k': -0.5, 2.5: 1e300}
    assert result.globals["BIG"] == 9007199254740993


def test_crlf_line_endings_keep_line_numbers() -> None:
    result = _run("A = 1\r\nB = {\r\n  x = 1,\r\n}\r\n")
    assert result.locations["B"].line == 2
    assert _table(result.globals["B"]).locations["x"].line == 3


# --- errors that name the file and line --------------------------------------------------------


def test_syntax_error_names_file_and_line() -> None:
    with pytest.raises(LuaSandboxError) as caught:
        _run("A = {1, 2\nB = 3")
    assert caught.value.kind == "syntax"
    assert caught.value.location == SourceLocation("plugin.lua", 2)
    assert str(caught.value).startswith("plugin.lua:2: ")
    assert "'}' expected" in caught.value.message


def test_runtime_error_names_file_and_line() -> None:
    with pytest.raises(LuaSandboxError) as caught:
        _run("A = 1\nB = nil + 1")
    assert caught.value.kind == "runtime"
    assert str(caught.value).startswith("plugin.lua:2: attempt to perform arithmetic")


def test_errors_without_position_get_the_plugin_line() -> None:
    with pytest.raises(LuaSandboxError, match=r"^plugin\.lua:2: error raised with a table value"):
        _run("A = 1\nerror({})")
    with pytest.raises(LuaSandboxError, match=r"^plugin\.lua:1: plain"):
        _run('error("plain", 0)')


def test_error_inside_a_required_module_names_the_module(org: Path) -> None:
    (org / "icon.lua").write_text("SVG = 1\nlocal x = nil .. 'a'\n", encoding="utf-8")
    with pytest.raises(LuaSandboxError) as caught:
        run_plugin(org / "plugin.lua")
    assert caught.value.location == SourceLocation(str(org / "icon.lua"), 2)


def test_syntax_error_in_a_required_module_names_the_module(org: Path) -> None:
    (org / "icon.lua").write_text("SVG = {\n", encoding="utf-8")
    with pytest.raises(LuaSandboxError) as caught:
        run_plugin(org / "plugin.lua")
    assert caught.value.location is not None
    assert caught.value.location.file == str(org / "icon.lua")


def test_missing_module_is_refused_at_the_require_line(org: Path) -> None:
    (org / "icon.lua").unlink()
    with pytest.raises(LuaSandboxError) as caught:
        run_plugin(org / "plugin.lua")
    assert caught.value.location == SourceLocation(str(org / "plugin.lua"), 1)
    assert "module 'icon' not found" in caught.value.message


def test_require_without_a_plugin_folder_finds_nothing() -> None:
    with pytest.raises(LuaSandboxError, match="module 'icon' not found: this plugin has no folder"):
        _run('require("icon")')


def test_a_module_is_run_once_and_a_circular_require_is_refused(tmp_path: Path) -> None:
    (tmp_path / "counter.lua").write_text("RUNS = (RUNS or 0) + 1\nreturn RUNS", encoding="utf-8")
    result = _run('A = require("counter")\nB = require("counter")', tmp_path)
    assert (result.globals["A"], result.globals["B"], result.globals["RUNS"]) == (1, 1, 1)
    (tmp_path / "self.lua").write_text('require("self")', encoding="utf-8")
    with pytest.raises(LuaSandboxError, match="requires itself"):
        _run('require("self")', tmp_path)


def test_missing_file_unreadable_encoding_and_folders_are_read_errors(tmp_path: Path) -> None:
    with pytest.raises(LuaSandboxError, match="does not exist") as caught:
        run_plugin(tmp_path / "plugin.lua")
    assert caught.value.kind == "read"
    bad = tmp_path / "bad.lua"
    bad.write_bytes(b'A = 1\nB = "\xff"\n')
    with pytest.raises(LuaSandboxError, match=r"bad\.lua:2: not valid UTF-8 \(byte 0xff\)"):
        run_plugin(bad)
    with pytest.raises(LuaSandboxError, match="folder"):
        run_plugin(tmp_path)


def test_bad_limits_are_rejected_with_the_argument_name() -> None:
    with pytest.raises(ValueError, match=r"SandboxLimits\.wall_seconds must be positive"):
        run_plugin_source("A = 1", "plugin.lua", None, SandboxLimits(wall_seconds=0))


def test_too_many_values_are_refused() -> None:
    limits = SandboxLimits(max_values=50)
    with pytest.raises(LuaSandboxError) as caught:
        run_plugin_source("T = {}\nfor i = 1, 100 do T[i] = i end", "plugin.lua", None, limits)
    assert caught.value.kind == "result"
    assert "at most 50 values" in caught.value.message


def test_error_string_without_line_and_pickling() -> None:
    error = LuaSandboxError("boom", SourceLocation("plugin.lua", 0), "limit")
    assert str(error) == "plugin.lua: boom"
    assert str(LuaSandboxError("boom", None)) == "boom"
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.location, copy.kind) == ("plugin.lua: boom", error.location, "limit")


# --- attacks ------------------------------------------------------------------------------------

# attack file -> (what the message says, the line it names or None when only the file is known)
ATTACKS: dict[str, tuple[str, int | None]] = {
    "dofile.lua": ("global 'dofile'", 3),
    "string_dump.lua": ("field 'dump'", 3),
    "binary_chunk.lua": ("binary chunk", 3),
    "require_parent.lua": ("'../secret' is not allowed", 2),
    "require_separator.lua": ("'sub/module' is not allowed", 2),
    "string_metatable.lua": ("string metatable is read-only", 3),
    "string_metatable_rawset.lua": ("string metatable is read-only", 2),
    "loop.lua": ("instruction budget", 3),
    "loop_in_pcall.lua": ("instruction budget", None),
    "loop_in_coroutine.lua": ("instruction budget", 2),
    "loop_in_wrap.lua": ("instruction budget", None),
    "loop_in_handler.lua": ("instruction budget", 2),
    "rep_bomb.lua": ("memory", None),
    "concat_bomb.lua": ("memory", None),
    "table_concat_bomb.lua": ("", None),
    "pattern_bomb.lua": ("wall-clock cap", None),
    "format_width.lua": ("invalid conversion", 2),
    "deep_nesting.lua": ("nests tables deeper than 100 levels", 3),
    "cycle.lua": ('LOOP["self"] contains itself', 3),
    "finalizer_loop.lua": ("finalizers (__gc) are not available", 3),
}


def _snapshot(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_is_refused_naming_the_file(
    attack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "plugin"
    folder.mkdir()
    (tmp_path / "secret.lua").write_text('SECRET = "outside"', encoding="utf-8")
    shutil.copy(FIXTURES / "attacks" / attack, folder / "plugin.lua")
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    with pytest.raises(LuaSandboxError) as caught:
        run_plugin(folder / "plugin.lua", FAST)
    fragment, line = ATTACKS[attack]
    error = caught.value
    assert error.location is not None
    assert error.location.file == str(folder / "plugin.lua")
    assert str(error).startswith(str(folder / "plugin.lua"))
    assert fragment in error.message
    if line is not None:
        assert error.location.line == line
    assert _snapshot(tmp_path) == before


def test_a_symlink_out_of_the_plugin_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plugin"
    folder.mkdir()
    (tmp_path / "secret.lua").write_text('SECRET = "outside"', encoding="utf-8")
    os.symlink(tmp_path / "secret.lua", folder / "icon.lua")
    (folder / "plugin.lua").write_text('require("icon")', encoding="utf-8")
    with pytest.raises(LuaSandboxError, match="points outside the plugin folder") as caught:
        run_plugin(folder / "plugin.lua", FAST)
    assert caught.value.location == SourceLocation(str(folder / "plugin.lua"), 1)


@pytest.mark.parametrize(
    "name", ["io", "os", "debug", "package", "python", "dofile", "loadfile", "warn"]
)
def test_removed_globals_are_absent(name: str) -> None:
    assert _run(f"KIND = type({name})").globals["KIND"] == "nil"
    with pytest.raises(LuaSandboxError, match=rf"^plugin\.lua:2: .*'{name}'"):
        _run(f"A = 1\n{name}.x()")


def test_escape_attempts_find_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    stop_sandbox_worker()  # the next worker inherits the captured stdout
    result = run_plugin(FIXTURES / "attacks" / "escape_attempts.lua", FAST)
    assert "IO" not in result.globals
    assert result.globals["OS_VIA_FALLBACK"] == "fallback:os"
    assert result.globals["STRING_META"] is True
    assert result.globals["LOADED"] == "string"
    assert result.globals["GC"] == 0
    assert "PRINTED" not in result.globals
    stop_sandbox_worker()
    assert "hello" not in capfd.readouterr().out


def test_string_methods_still_work_after_a_refused_tampering() -> None:
    with pytest.raises(LuaSandboxError):
        _run('getmetatable("").__index = {}')
    assert _run('X = ("abc"):upper()').globals["X"] == "ABC"


def test_the_sandbox_recovers_after_a_wall_clock_kill() -> None:
    with pytest.raises(LuaSandboxError, match="wall-clock cap"):
        run_plugin(FIXTURES / "attacks" / "pattern_bomb.lua", SandboxLimits(wall_seconds=0.5))
    assert _run("A = 1").globals["A"] == 1


def test_each_run_gets_a_fresh_state() -> None:
    _run("LEAK = 1\nstring.leak = 1")
    result = _run("A = LEAK\nB = string.leak")
    assert "A" not in result.globals and "B" not in result.globals


def test_a_state_prepared_under_other_caps_is_never_used() -> None:
    # The worker prepares fresh states for the next request while it idles; they carry the caps
    # they were set up with, so a request with a smaller budget must not get them.
    for _ in range(2):
        _run("A = 1")
    loop = "local n = 0\nfor i = 1, 50000 do n = n + i end\nN = n"
    assert _run(loop).globals["N"] == 1250025000
    small = SandboxLimits(instructions=10_000, wall_seconds=1.0, memory_bytes=32 * 1024 * 1024)
    with pytest.raises(LuaSandboxError, match="instruction budget of 10,000") as caught:
        run_plugin_source(loop, "plugin.lua", None, small)
    assert caught.value.kind == "limit"
    assert _run(loop).globals["N"] == 1250025000


def test_each_plugin_of_a_request_gets_its_own_state_and_modules(tmp_path: Path) -> None:
    folders = []
    for name in ("one", "two", "three"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "who.lua").write_text(f'return "{name}"', encoding="utf-8")
        folders.append(folder)
    source = (
        "WHO = require('who')\nSEEN = SHARED\nMARK = string.mark\nSHARED = WHO\nstring.mark = WHO"
    )
    plugins = [PluginSource(source, str(f / "plugin.lua"), f) for f in folders]
    for _ in range(3):  # the later rounds run in states prepared after the round before
        outcomes = run_plugin_sources(plugins, FAST)
        assert [o.globals["WHO"] for o in outcomes if isinstance(o, LuaRunResult)] == [
            "one",
            "two",
            "three",
        ]
        assert all(
            isinstance(o, LuaRunResult) and not {"SEEN", "MARK"} & set(o.globals) for o in outcomes
        ), outcomes


def test_a_module_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "icon.lua").write_bytes(b'SVG = "\xff"')
    with pytest.raises(LuaSandboxError, match=r"icon\.lua:1: not valid UTF-8") as caught:
        _run('require("icon")', tmp_path)
    assert caught.value.location == SourceLocation("plugin.lua", 1)


# --- the source rewrite keeps data and lines exact -------------------------------------------------


def test_constructors_with_function_bodies_strings_and_comments() -> None:
    source = (
        "T = {\n"
        "  f = function(a, b) local x, y = 1, 2; if a then do return x end end return y end,\n"
        "  \"a{b}\", '}', [[ { ]], [==[ ]] } ]==],\n"
        "  -- a comment with { and }\n"
        "  --[[ a long comment\n"
        "  with { ]] after = 1;\n"
        "  nested = { repeat_ = (function() repeat local z = 1 until true return 2 end)() },\n"
        "}\n"
        "local obj = { m = function(self, t) return t end }\n"
        "M = obj:m{ k = 1 }\n"
        "local function three() return 7, 8, 9 end\n"
        "MULTI = { 1,\n  three() }\n"
    )
    result = _run(source)
    table = _table(result.globals["T"])
    assert isinstance(table.get("f"), LuaFunction)
    assert table.sequence() == ["a{b}", "}", " { ", " ]] } "]
    assert [table.locations[i].line for i in (1, 2, 3, 4)] == [3, 3, 3, 3]
    assert table.locations["f"].line == 2
    assert table.locations["after"].line == 6
    assert _table(table.get("nested")).entries == {"repeat_": 2}
    assert table.locations["nested"].line == 7
    assert _table(result.globals["M"]).entries == {"k": 1}
    multi = _table(result.globals["MULTI"])
    assert multi.sequence() == [1, 7, 8, 9]
    assert [multi.locations[i].line for i in (1, 2, 3, 4)] == [12, 13, 13, 13]


_IDENTIFIERS = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda name: (
        name
        not in {"and", "do", "end", "for", "if", "in", "nil", "not", "or", "then", "true", "until"}
    )
)
_TEXT = st.text(alphabet=st.sampled_from(list("ab{}[]\"'\\-=, ;ä✓")), max_size=8)
_SCALARS = st.one_of(
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()),
    st.booleans(),
    _TEXT,
)


def _lua_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lua_scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _lua_string(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


_Field = tuple[str, object, object]  # (form, key, value); value may be a nested list of fields


@st.composite
def _fields(draw: st.DrawFn, depth: int = 0) -> list[_Field]:
    names = draw(st.lists(_IDENTIFIERS, max_size=4, unique=True))
    strings = draw(
        st.lists(_TEXT, max_size=3, unique=True).map(lambda xs: [x for x in xs if x not in names])
    )
    values = st.one_of(_SCALARS, _fields(depth + 1)) if depth < 3 else _SCALARS
    fields: list[_Field] = [("name", name, draw(values)) for name in names]
    fields += [("string", text, draw(values)) for text in strings]
    fields += [("number", 100 + i, draw(values)) for i in range(draw(st.integers(0, 2)))]
    fields += [("positional", None, draw(values)) for _ in range(draw(st.integers(0, 4)))]
    return draw(st.permutations(fields))


def _render(
    fields: list[_Field], out: list[str], line: int, gaps: Callable[[st.SearchStrategy[str]], str]
) -> tuple[int, dict[object, object], dict[object, int]]:
    """Writes a constructor; returns the line after it, the expected data and field lines."""
    data: dict[object, object] = {}
    lines: dict[object, int] = {}
    position = 0
    out.append("{")
    for form, key, value in fields:
        gap = gaps(st.sampled_from([" ", "\n  ", " -- note {\n  ", " --[[ {\n ]] "]))
        out.append(gap)
        line += gap.count("\n")
        if form == "positional":
            position += 1
            key = position
        elif form == "name":
            out.append(f"{key} = ")
        elif form == "string":
            out.append(f"[{_lua_string(str(key))}] = ")
        else:
            out.append(f"[{key}] = ")
        lines[key] = line
        if isinstance(value, list):
            line, nested, nested_lines = _render(value, out, line, gaps)
            data[key] = (nested, nested_lines)
        else:
            out.append(_lua_scalar(value))
            data[key] = value
        out.append(gaps(st.sampled_from([",", ";"])))
    out.append("}")
    return line, data, lines


def _assert_same(table: LuaTable, data: dict[object, object], lines: dict[object, int]) -> None:
    assert set(table.entries) == set(data)
    for key, expected in data.items():
        assert table.locations[key].line == lines[key], key  # type: ignore[index]
        actual = table.entries[key]  # type: ignore[index]
        if isinstance(expected, tuple):
            _assert_same(_table(actual), *expected)
        else:
            assert actual == expected and type(actual) is type(expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_fields(), data=st.data())
def test_any_constructor_layout_keeps_values_and_field_lines(
    fields: list[_Field], data: st.DataObject
) -> None:
    out: list[str] = ["\n\nT = "]
    _, expected, lines = _render(fields, out, 3, data.draw)
    result = _run("".join(out))
    assert result.locations["T"].line == 3
    _assert_same(_table(result.globals["T"]), expected, lines)


# --- the worker process -------------------------------------------------------------------------


def _pid_handler(request: bytes) -> Iterator[bytes]:
    for job in request.split(b","):
        if job == b"sleep":
            time.sleep(30)
        if job == b"die":
            os._exit(3)
        yield str(os.getpid()).encode()


def run_job(handler: Callable[[bytes], Iterator[bytes]], job: bytes, wall: float) -> JobOutcome:
    (outcome,) = run_jobs(handler, job, 1, wall)
    return outcome


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_worker_is_reused_replaced_after_a_timeout_and_gone_after_shutdown() -> None:
    first = int(run_job(_pid_handler, b"pid", 5).reply or b"0")
    assert first != os.getpid()
    assert int(run_job(_pid_handler, b"pid", 5).reply or b"0") == first
    outcome = run_job(_pid_handler, b"sleep", 0.2)
    assert outcome.timed_out and outcome.reply is None
    assert not _alive(first)
    second = int(run_job(_pid_handler, b"pid", 5).reply or b"0")
    assert second not in (0, first)
    shutdown()
    assert not _alive(second)


def test_one_request_answers_job_by_job_and_stops_at_the_job_that_overruns() -> None:
    first, second = run_jobs(_pid_handler, b"pid,pid", 2, 5)
    assert first.reply == second.reply and first.reply is not None
    worker = int(first.reply)
    done, stopped = run_jobs(_pid_handler, b"pid,sleep,pid", 3, 0.3)
    assert int(done.reply or b"0") == worker
    assert stopped.timed_out and stopped.reply is None
    assert not _alive(worker)
    (alone,) = run_jobs(_pid_handler, b"pid", 1, 5)  # the caller sends the rest again
    assert int(alone.reply or b"0") not in (0, worker)
    shutdown()


def test_a_worker_that_dies_is_reported_and_one_killed_between_jobs_is_replaced() -> None:
    outcome = run_job(_pid_handler, b"die", 5)
    assert outcome.reply is None and outcome.death == "exit status 3"
    pid = int(run_job(_pid_handler, b"pid", 5).reply or b"0")
    os.kill(pid, signal.SIGKILL)
    for _ in range(1000):  # until the kernel has made it a zombie
        if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.005)
    assert int(run_job(_pid_handler, b"pid", 5).reply or b"0") not in (0, pid)
    shutdown()


def test_plain_tables_with_plugin_metatables_are_read_raw() -> None:
    source = (
        "local meta = { __index = function() while true do end end, __len = function() return 9 end }\n"
        "T = setmetatable(table.pack(1, 2), meta)\n"
        "LENGTH = #T\n"
        "E = setmetatable({}, { __eq = function() while true do end end })\n"
        "X = T\n"
    )
    result = _run(source)
    assert result.globals["LENGTH"] == 9
    assert _table(result.globals["T"]).entries == {1: 1, 2: 2, "n": 2}
    assert _table(result.globals["X"]).entries == {1: 1, 2: 2, "n": 2}


def test_bit32_of_lua_5_2_works_as_in_ai_studio() -> None:
    result = _run(
        "A = bit32.band(0xFF, 0x0F, 7)\nB = bit32.bor(1, 2, 4)\nC = bit32.bxor(5, 3)\n"
        "D = bit32.bnot(0)\nE = bit32.lshift(1, 31)\nF = bit32.rshift(0x80000000, 31)\n"
        "G = bit32.arshift(0x80000000, 4)\nH = bit32.lrotate(0x80000001, 1)\n"
        "I = bit32.extract(0xABCD, 4, 8)\nJ = bit32.replace(0, 0xF, 28, 4)\n"
        "K = bit32.btest(8, 4)\nL = bit32.band(-1)\nM = bit32.rrotate(1, 1)\n"
        "N = bit32.lshift(1, 32)\nO = bit32.band(2^40 + 5)\n"
    )
    assert dict(result.globals) == {
        "A": 7,
        "B": 7,
        "C": 6,
        "D": 0xFFFFFFFF,
        "E": 0x80000000,
        "F": 1,
        "G": 0xF8000000,
        "H": 3,
        "I": 0xBC,
        "J": 0xF0000000,
        "K": False,
        "L": 0xFFFFFFFF,
        "M": 0x80000000,
        "N": 0,
        "O": 5,
    }


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('X = bit32.band("a")', "number expected, got string"),
        ("X = bit32.extract(1, 30, 4)", "non-existent bits"),
    ],
)
def test_bit32_refuses_bad_arguments_with_the_line(source: str, message: str) -> None:
    with pytest.raises(LuaSandboxError) as refused:
        _run(source)
    assert message in str(refused.value) and ":1:" in str(refused.value)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("rawget(1)", "bad argument #1 to 'rawget' (table expected, got number)"),
        ("rawset(1, 2, 3)", "bad argument #1 to 'rawset' (table expected, got number)"),
        ("rawlen(5)", "bad argument #1 to 'rawlen' (table or string expected, got number)"),
        ("setmetatable(1, {})", "bad argument #1 to 'setmetatable' (table expected, got number)"),
        ("setmetatable({}, 5)", "bad argument #2 to 'setmetatable' (nil or table expected)"),
        ("next(5)", "bad argument #1 to 'next' (table expected, got number)"),
        ("coroutine.create(5)", "bad argument #1 to 'create' (function expected, got number)"),
        ("coroutine.wrap(5)", "bad argument #1 to 'wrap' (function expected, got number)"),
        (
            'X = bit32.lshift(1, "x")',
            "bad argument #2 to bit32 function (number expected, got string)",
        ),
        (
            "X = bit32.rrotate(1, {})",
            "bad argument #2 to bit32 function (number expected, got table)",
        ),
    ],
)
def test_sandbox_functions_name_themselves_in_argument_errors(source: str, message: str) -> None:
    """The sandbox's stand-ins for standard functions report a bad argument as Lua does, at the
    plugin's line, naming the function and never a line of the sandbox's own code."""
    with pytest.raises(LuaSandboxError) as refused:
        _run(source)
    assert str(refused.value).endswith(f":1: {message}")
    assert "sandbox" not in str(refused.value) and "'?'" not in str(refused.value)


def test_bit32_shift_counts_read_numeric_strings_as_math_floor_does() -> None:
    result = _run(
        'X = bit32.lshift(1, "3")  Y = bit32.rshift(16, " 0x2 ")  Z = bit32.lrotate(1, 1.5)'
    )
    assert dict(result.globals) == {"X": 8, "Y": 4, "Z": 2}
