"""Hostile plugins are refused with their cap's error under the default caps, each plugin runs
once per command, the data a plugin hands back is capped, and the work after the sandbox grows
linearly (operations counted, never timed)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from policy import _lua_worker, lua_sandbox, suggest
from policy.cli import cli
from policy.lint import lint_configuration
from policy.lua_sandbox import WALL_SECONDS_VARIABLE, SandboxLimits, stop_sandbox_worker
from policy.merge import load_configuration
from policy.plugins import PluginLoadError, load_plugin
from policy.vocabulary import PluginOrigin
from tests.policy.test_plugin_files import policy_check
from tests.policy.test_plugins import write_plugin

DEFAULT = SandboxLimits()
WALL = f"stopped after the wall-clock cap of {DEFAULT.wall_seconds:g} s"
INSTRUCTIONS = f"stopped after the instruction budget of {DEFAULT.instructions:,}"
MEMORY = f"more memory than the cap of {DEFAULT.memory_bytes:,} bytes"

#: Each bomb with the cap that must stop it (the default caps, as `policy check` runs them).
BOMBS: dict[str, tuple[str, str | tuple[str, ...]]] = {
    "pattern": ('X = string.find(string.rep("a", 40), string.rep("a*", 40) .. "b")', WALL),
    "gsub": (
        'X = string.gsub(string.rep("a", 40), string.rep("a*", 40) .. "b", "")',
        WALL,
    ),
    "rep": ('X = string.rep("x", 1 << 30)', MEMORY),
    "concat": ('local s = "0123456789abcdef"\nfor i = 1, 40 do s = s .. s end\nX = s', MEMORY),
    "constructor": (
        "local t = {}\nfor i = 1, 1 << 26 do t[i] = { i, i, i } end\nX = t",
        (MEMORY, INSTRUCTIONS, WALL),  # whichever comes first on this machine
    ),
    "loop": ("while true do end", INSTRUCTIONS),
    "loop in pcall": (
        "while true do pcall(function() while true do end end) end",
        INSTRUCTIONS,
    ),
    "loop in coroutine": (
        "coroutine.resume(coroutine.create(function() while true do end end))",
        INSTRUCTIONS,
    ),
    "loop in metamethod": (
        "local t = setmetatable({}, { __index = function() while true do end end })\nX = t.y",
        INSTRUCTIONS,
    ),
    "huge text": (  # rewriting and compiling it alone takes longer than the wall-clock cap
        "T = {" + "1," * 1_500_000 + "}",
        (WALL, MEMORY),
    ),
    "loop in handler": (
        "xpcall(function() error('x') end, function() while true do end end)",
        INSTRUCTIONS,
    ),
}


@pytest.fixture(scope="module", autouse=True)
def _no_worker_left() -> Iterator[None]:
    yield
    stop_sandbox_worker()


def _bomb_plugin(folder: Path, text: str) -> Path:
    return write_plugin(folder, extra=text, ID=f'"{uuid.uuid4()}"')


@pytest.mark.parametrize("name", list(BOMBS))
def test_every_bomb_is_refused_with_its_cap_under_the_default_caps(
    tmp_path: Path, name: str
) -> None:
    text, cap = BOMBS[name]
    with pytest.raises(PluginLoadError) as caught:
        load_plugin(_bomb_plugin(tmp_path / "bomb", text), PluginOrigin.ORGANIZATION)
    (finding,) = caught.value.findings
    assert finding.code == "lua-error"
    caps = (cap,) if isinstance(cap, str) else cap
    assert any(one in finding.message for one in caps), finding.message


def test_the_default_caps_refuse_within_two_seconds_of_cpu_budget() -> None:
    # The caps themselves (not a measurement): the wall clock, with room for start-up, stays
    # under the 2 s every hostile plugin must be refused in.
    assert DEFAULT.wall_seconds <= 0.75
    assert DEFAULT.instructions <= 20_000_000


def test_policy_check_runs_a_bomb_once_and_reports_its_cap_once(tmp_path: Path) -> None:
    _bomb_plugin(tmp_path / "org" / "bomb", BOMBS["pattern"][0])
    write_plugin(tmp_path / "org" / "fine", ID=f'"{uuid.uuid4()}"')
    done = policy_check(tmp_path / "org")
    assert done.returncode == 1
    assert done.stdout.count(WALL) == 1


def test_the_wall_cap_is_configurable_and_a_bad_value_is_named(tmp_path: Path) -> None:
    _bomb_plugin(tmp_path / "org" / "bomb", BOMBS["pattern"][0])
    done = policy_check(tmp_path / "org", **{WALL_SECONDS_VARIABLE: "0.25"})
    assert "stopped after the wall-clock cap of 0.25 s" in done.stdout
    write_plugin(tmp_path / "fine", ID=f'"{uuid.uuid4()}"')
    done = policy_check(tmp_path / "fine", **{WALL_SECONDS_VARIABLE: "soon"})
    assert done.returncode == 1
    assert (
        f"error [invalid-sandbox-limit]: {WALL_SECONDS_VARIABLE}='soon' is not a number of "
        "seconds from above 0 to 600 (e.g. 1.5); the default wall-clock cap of 0.75 s applies"
    ) in done.stdout


class _Counter:
    """Counts plugins handed to the sandbox and round trips to its worker in this process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.plugins: list[str] = []
        self.round_trips = 0
        run_sources = lua_sandbox.run_plugin_sources
        run_jobs = _lua_worker.run_jobs

        def counting_sources(plugins: Any, limits: Any = DEFAULT) -> Any:
            self.plugins.extend(p.file_name for p in plugins)
            return run_sources(plugins, limits)

        def counting_jobs(*args: Any) -> Any:
            self.round_trips += 1
            return run_jobs(*args)

        monkeypatch.setattr("policy.plugins.run_plugin_sources", counting_sources)
        monkeypatch.setattr(_lua_worker, "run_jobs", counting_jobs)


def _organization(root: Path) -> Path:
    for name in ("base", "dept", "lab"):
        write_plugin(root / "org" / name, ID=f'"{uuid.uuid4()}"')
    write_plugin(root / "mine", ID=f'"{uuid.uuid4()}"')
    return root


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["check", "--user-settings", "{broken}"],
        ["explain", "--all"],
        ["explain", "web_search"],
        ["settings", "show", "web_search"],
        ["tools"],
        ["diff", "--against-user-settings", "{settings}"],
    ],
)
def test_each_plugin_runs_once_per_command_in_one_round_trip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    root = _organization(tmp_path)
    broken = tmp_path / "broken.yaml"
    broken.write_text("tools: [unclosed\n", encoding="utf-8")
    other = tmp_path / "other.yaml"
    other.write_text("tools:\n  enabled: false\n", encoding="utf-8")
    given = {"{broken}": str(broken), "{settings}": str(other)}
    arguments = [given.get(part, part) for part in command]
    counter = _Counter(monkeypatch)
    result = CliRunner().invoke(
        cli, [*arguments, "--org", str(root / "org"), "--local", str(root / "mine")]
    )
    assert "Traceback" not in result.output
    assert sorted(counter.plugins) == sorted(
        str(p) for p in (*root.glob("org/*/plugin.lua"), root / "mine" / "plugin.lua")
    )
    assert counter.round_trips == 1


def test_a_bomb_among_good_plugins_stops_only_itself(tmp_path: Path) -> None:
    good = [
        write_plugin(tmp_path / "org" / name, ID=f'"{uuid.uuid4()}"') for name in ("a", "c", "d")
    ]
    _bomb_plugin(tmp_path / "org" / "b", BOMBS["pattern"][0])
    configuration = load_configuration([tmp_path / "org"], limits=SandboxLimits(wall_seconds=0.3))
    assert sorted(p.location.file for p in configuration.plugins) == sorted(map(str, good))
    (broken,) = configuration.broken_organization_plugins
    assert "stopped after the wall-clock cap of 0.3 s" in broken.message


# --- what a plugin may hand back ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # one row shared 201 times: little Lua work, 201,000 values to hand back
            "local row = {}\nfor i = 1, 1000 do row[i] = i end\n"
            "T = {}\nfor i = 1, 201 do T[i] = row end",
            "is one value too many: the plugin's globals may hold at most 200000 values",
        ),
        (
            "local t = {}\nfor i = 1, 150 do t = { t } end\nDEEP = t",
            "nests tables deeper than 100 levels",
        ),
        (
            'A = string.rep("x", 9 * 1024 * 1024)\nB = string.rep("y", 8 * 1024 * 1024)',
            "B is one string too many: the plugin's globals may hold at most 16777216 bytes "
            "of strings (keys and values together)",
        ),
        (
            'T = {}\nT[string.rep("k", 17 * 1024 * 1024)] = 1',
            'T["kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk..."] is one string too many',
        ),
    ],
    ids=["entries", "depth", "string bytes", "key bytes"],
)
def test_the_data_a_plugin_hands_back_is_capped_with_a_clear_error(
    tmp_path: Path, text: str, message: str
) -> None:
    plugin = _bomb_plugin(tmp_path / "big", text)
    roomy = SandboxLimits(wall_seconds=30)  # the data caps, not a busy machine's clock, decide
    with pytest.raises(PluginLoadError) as caught:
        load_plugin(plugin, PluginOrigin.ORGANIZATION, roomy)
    assert message in caught.value.message
    assert caught.value.findings[0].location is not None
    assert caught.value.findings[0].location.file == str(plugin)


# --- linear work after the sandbox ----------------------------------------------------------


def _python_calls(action: Any) -> int:
    """Python and C function calls made by `action` (an operation count, not a time)."""
    count = 0

    def profile(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return count


def _unknown_keys(folder: Path, count: int) -> Path:
    lines = [f'CONFIG["SETTINGS"]["DataTools.Unknown{i:05d}"] = "x"' for i in range(count)]
    write_plugin(folder / "keys", "\n".join(lines), ID=f'"{uuid.uuid4()}"')
    return folder


def _disabled_ids(folder: Path, count: int) -> Path:
    for name in ("a", "b"):
        ids = ", ".join(f'"tool_{name}_{i:05d}"' for i in range(count))
        write_plugin(
            folder / name,
            f'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {{ {ids} }}',
            ID=f'"{uuid.uuid4()}"',
        )
    return folder


def _looped_unknown_keys(folder: Path, count: int) -> Path:
    """Unknown keys set in a loop: every finding about them shares one line."""
    loop = (
        f"for i = 1, {count} do "
        'CONFIG["SETTINGS"]["DataTools.Unknown" .. string.format("%05d", i)] = "x" end'
    )
    write_plugin(folder / "loop", loop, ID=f'"{uuid.uuid4()}"')
    return folder


@pytest.mark.parametrize(
    "shape",
    [_unknown_keys, _looped_unknown_keys, _disabled_ids],
    ids=["keys", "keys on one line", "disabled ids"],
)
def test_loading_merging_and_linting_grow_linearly(tmp_path: Path, shape: Any) -> None:
    def work(count: int) -> tuple[int, int]:
        """Calls made loading and merging, and calls made linting (apart, so that neither
        hides the other's growth)."""
        folder = shape(tmp_path / str(count), count)
        load_configuration([folder])  # compiled and cached once, so both sizes are measured alike
        loaded: list[Any] = []
        loading = _python_calls(lambda: loaded.append(load_configuration([folder])))
        configuration = loaded[0]
        linting = _python_calls(
            lambda: lint_configuration(configuration, {}, None, configuration.findings)
        )
        return loading, linting  # names of one length: alike but for their count

    small, large = work(100), work(1000)
    for part, before, after in zip(("load", "lint"), small, large, strict=True):
        assert after < 12 * before, (part, before, after)  # linear: 10x; quadratic: 100x


def test_did_you_mean_hints_stop_after_a_budget_so_unknown_names_cost_little(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: list[str] = []
    search = suggest.closest_name

    def counted(wanted: str, known: Any) -> str | None:
        searched.append(wanted)
        return search(wanted, known)

    monkeypatch.setattr(suggest, "closest_name", counted)
    near_misses = 'for i = 1, 1000 do CONFIG["SETTINGS"]["DataTools.EnableTool" .. i] = true end'
    write_plugin(tmp_path / "typos", near_misses, ID=f'"{uuid.uuid4()}"')
    configuration = load_configuration([], [tmp_path])  # local: unknown keys are kept
    later = lint_configuration(configuration, {}, None, configuration.findings)
    unknown = [
        f
        for f in configuration.findings
        if f.code in ("not-used-by-toolpolicy", "unknown-setting-key")
    ]
    assert len(unknown) == 1000
    hinted = [f for f in unknown if 'did you mean "DataTools.EnableTools"?' in f.message]
    assert hinted == unknown[: suggest.MAX_HINTS]
    assert len(searched) == suggest.MAX_HINTS  # each search compares with every known key
    assert not [f for f in later if f.code == "unknown-datatools-key"], "said once, at loading"
