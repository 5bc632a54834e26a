"""Benchmark: how long the policy takes to decide, to load, and to start. Prints figures.

    .venv/bin/python bench/decide.py [--quick]

1. All offer decisions + the runnable tools of one request, for 10 / 100 / 1000 generated tool
   definitions and 1 / 3 / 10 plugins, after load (target: 100 tools ≤ 0.5 ms, flat in the number
   of plugins). "first" is the first request after the registry was built, "median" the steady
   state.
2. Load + merge of a 900-line plugin.lua (AI Studio's template size) plus two department plugins
   (target ≤ 15 ms).
3. Cold start of `policy --help` (target ≤ 250 ms) and `policy explain --all`.

This is not a test: it asserts nothing and only reports.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from policy.configuration import ProviderConfig, UserSettings
from policy.decide.registry import ToolRegistry
from policy.definitions import SettingField, SettingsSchema, ToolDefinition, ToolFunction
from policy.merge import load_configuration
from policy.tools import DefinedTool, Tool
from policy.vocabulary import Component, ConfidenceLevel, ProviderKind

ROOT = Path(__file__).resolve().parents[1]
_LEVELS = (ConfidenceLevel.NONE, ConfidenceLevel.VERY_LOW, ConfidenceLevel.MEDIUM)


def generated_tools(count: int) -> list[Tool]:
    """`count` small selectable tools with two settings each (one with a choice)."""
    tools: list[Tool] = []
    for number in range(count):
        tool_id = f"tool_{number:04d}"
        definition = ToolDefinition(
            id=tool_id,
            implementation_key=tool_id,
            minimum_provider_confidence=_LEVELS[number % len(_LEVELS)],
            settings_schema=SettingsSchema(
                properties={
                    "baseUrl": SettingField(title="Base URL", default="https://example.org"),
                    "mode": SettingField(title="Mode", enum=("FAST", "THOROUGH"), default="FAST"),
                }
            ),
            system_prompt_instructions=f"Use {tool_id} when it helps.",
            function=ToolFunction(
                name=tool_id,
                description_for_llm=f"Generated tool number {number}.",
                parameters={
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                },
            ),
        )
        tools.append(DefinedTool(definition, display_name=f"Tool {number:04d}"))
    return tools


_GLOBALS = """\
ID = "{id}"
TYPE = "CONFIGURATION"
NAME = "{name}"
DESCRIPTION = "Generated for the benchmark."
VERSION = "1.0.0"
AUTHORS = {{ "bench" }}
SUPPORT_CONTACT = "it@example.org"
SOURCE_URL = "https://example.org/ai"
CATEGORIES = {{ "CORE" }}
TARGET_GROUPS = {{ "EVERYONE" }}
IS_MAINTAINED = true
DEPRECATION_MESSAGE = ""
PRIORITY = {priority}
CONFIG = {{}}
CONFIG["SETTINGS"] = {{}}
"""


def small_plugin(folder: Path, number: int, tool_count: int) -> None:
    """A department-sized plugin touching a few tools."""
    folder.mkdir(parents=True)
    lines = [_GLOBALS.format(id=uuid.uuid4(), name=f"Plugin {number}", priority=number * 10)]
    disabled = ", ".join(f'"tool_{(number * 7 + k) % tool_count:04d}"' for k in range(2))
    lines.append(f'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = {{ {disabled} }}')
    minimums = ", ".join(
        f'["tool_{(number * 3 + k) % tool_count:04d}"] = "MEDIUM"' for k in range(3)
    )
    lines.append(
        f'CONFIG["SETTINGS"]["DataTools.MinimumProviderConfidenceByToolId"] = {{ {minimums} }}'
    )
    locked = ", ".join(
        f'["tool_{(number + k) % tool_count:04d}.mode"] = "THOROUGH"' for k in range(3)
    )
    lines.append(f'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {{ {locked} }}')
    (folder / "plugin.lua").write_text("\n".join(lines) + "\n", encoding="utf-8")


def template_sized_plugin(folder: Path, target_lines: int = 900) -> None:
    """An organization plugin the size of AI Studio's template: comments, settings, objects."""
    folder.mkdir(parents=True)
    lines = _GLOBALS.format(id=uuid.uuid4(), name="Organization", priority=0).splitlines()
    lines.append('CONFIG["LLM_PROVIDERS"] = {}')
    for number in range(12):
        kind = ("OPEN_AI", "SELF_HOSTED", "MISTRAL", "ANTHROPIC")[number % 4]
        lines += [
            f"-- Provider {number}: documented the way AI Studio's template documents them.",
            'CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {',
            f'    ["Id"] = "{uuid.uuid4()}",',
            f'    ["InstanceName"] = "Provider {number}",',
            f'    ["UsedLLMProvider"] = "{kind}",',
            '    ["Host"] = "NONE",',
            '    ["Hostname"] = "https://llm.example.org",',
            '    ["Model"] = { ["Id"] = "gpt-4o", ["DisplayName"] = "Model" },',
            "}",
        ]
    lines.append('CONFIG["CHAT_TEMPLATES"] = {}')
    for number in range(10):
        lines += [
            f"-- Chat template {number}",
            'CONFIG["CHAT_TEMPLATES"][#CONFIG["CHAT_TEMPLATES"]+1] = {',
            f'    ["Id"] = "{uuid.uuid4()}",',
            f'    ["Name"] = "Template {number}",',
            '    ["SystemPrompt"] = "You are a helpful assistant for the department.",',
            '    ["ToolIds"] = { "web_search", "read_web_page" },',
            "}",
        ]
    settings = [
        'CONFIG["SETTINGS"]["DataApp.UpdateInterval"] = "DAILY"',
        'CONFIG["SETTINGS"]["DataApp.ShowIntroduction"] = false',
        'CONFIG["SETTINGS"]["DataConfidence.ConfidenceScheme"] = "TRUST_EUROPE"',
        'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "search_confluence" }',
        'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {',
        '    ["web_search.searxng.baseUrl"] = "https://searx.example.org",',
        "}",
    ]
    lines += settings
    filler = 0
    while len(lines) < target_lines:
        lines += [
            "",
            f"-- Setting {filler}: AI Studio's template explains each option in a few lines",
            "-- of comments like these before showing the commented-out example below.",
            f'-- CONFIG["SETTINGS"]["DataApp.Example{filler}"] = "VALUE"',
        ]
        filler += 1
    (folder / "plugin.lua").write_text("\n".join(lines[:target_lines]) + "\n", encoding="utf-8")


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def _one_request(
    registry: ToolRegistry, ids: Sequence[str], provider: ProviderConfig
) -> None:
    for tool_id in ids:
        registry.offer_decision(tool_id, provider, Component.CHAT)
    await registry.runnable_tools(ids, provider, Component.CHAT)


async def _measure(
    registry: ToolRegistry, ids: Sequence[str], provider: ProviderConfig, repeats: int
) -> tuple[float, float]:
    start = time.perf_counter()
    await _one_request(registry, ids, provider)
    first = (time.perf_counter() - start) * 1000
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        await _one_request(registry, ids, provider)
        times.append((time.perf_counter() - start) * 1000)
    return first, statistics.median(times)


def bench_decisions(tool_counts: Sequence[int], plugin_counts: Sequence[int], repeats: int) -> None:
    provider = ProviderConfig(id="p1", name="Cloud", kind=ProviderKind.OPEN_AI, model="gpt-4o")
    print("1. all offer decisions + runnable tools for one request (after load)")
    print(f"   {'tools':>6} {'plugins':>8} {'first ms':>10} {'median ms':>10}")
    for tool_count in tool_counts:
        tools = generated_tools(tool_count)
        ids = [t.definition.id for t in tools]
        for plugin_count in plugin_counts:
            with tempfile.TemporaryDirectory() as folder:
                root = Path(folder)
                for number in range(plugin_count):
                    small_plugin(root / f"p{number:02d}", number, tool_count)
                configuration = load_configuration([root])
            registry = ToolRegistry(tools, configuration, UserSettings())

            first, median = asyncio.run(_measure(registry, ids, provider, repeats))
            print(f"   {tool_count:>6} {plugin_count:>8} {first:>10.3f} {median:>10.3f}")


def bench_load(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        template_sized_plugin(root / "org" / "base")
        small_plugin(root / "org" / "dept_a", 1, 4)
        small_plugin(root / "org" / "dept_b", 2, 4)
        lines = len((root / "org" / "base" / "plugin.lua").read_text().splitlines())
        load_configuration([root / "org"])
        median = median_ms(lambda: load_configuration([root / "org"]), repeats)
    print(f"2. load + merge of a {lines}-line plugin.lua + 2 department plugins: {median:.2f} ms")


def bench_cold_start(repeats: int) -> None:
    policy = Path(sys.executable).parent / "policy"
    command = str(policy) if policy.exists() else "policy"
    examples = ROOT / "examples" / "organization"
    runs = {
        "policy --help": [command, "--help"],
        "policy explain --all": [command, "explain", "--org", str(examples), "--all"],
    }
    print("3. cold start (median of fresh processes)")
    for label, argv in runs.items():

        def start(argv: list[str] = argv) -> None:
            subprocess.run(argv, capture_output=True, check=False)

        print(f"   {label:<24} {median_ms(start, repeats):8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    quick = parser.parse_args().quick
    bench_decisions((10, 100, 1000), (1, 3, 10), repeats=5 if quick else 50)
    bench_load(repeats=5 if quick else 20)
    bench_cold_start(repeats=3 if quick else 7)


if __name__ == "__main__":
    main()
