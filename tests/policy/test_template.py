"""The reference plugin.lua: generated, committed, complete, and loadable as it stands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from policy.builtin import builtin_tools
from policy.config.fields import Section
from policy.config.sections import SECTIONS
from policy.config.settings import TOOLPOLICY_KEYS
from policy.template import REFERENCE_PLUGIN_ID, reference_plugin
from policy.vocabulary import option_values
from tests.servers.cli_runner import run_policy

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "plugin.lua"


def _policy_command() -> list[str]:
    candidate = Path(sys.executable).parent / "policy"
    return [str(candidate)] if candidate.exists() else ["policy"]


def _unwrapped(text: str) -> str:
    """The comment text with its line wrapping undone."""
    return " ".join(line.lstrip("- ").strip() for line in text.splitlines())


def test_the_committed_plugin_equals_the_generated_one() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == reference_plugin(), (
        "plugin.lua is out of date: regenerate it with `policy template > plugin.lua`"
    )


def test_policy_template_prints_the_reference_plugin() -> None:
    done = subprocess.run(
        [*_policy_command(), "template"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == reference_plugin()


def test_every_toolpolicy_settings_key_is_documented_with_an_example() -> None:
    text = reference_plugin()
    for key in TOOLPOLICY_KEYS:
        example = f'CONFIG["SETTINGS"]["{key.name}"] = '
        assert f"-- {example}" in text or f"\n{example}" in text, key.name
        assert f"-- {key.name} — " in text
        for choice in key.choices:
            assert choice in text


def test_every_setting_of_every_builtin_tool_is_documented() -> None:
    text = reference_plugin()
    for tool in builtin_tools():
        definition = tool.definition
        assert f"-- {definition.id} — {tool.display_name}" in text
        level = definition.minimum_provider_confidence.name
        assert (
            f'["DataTools.MinimumProviderConfidenceByToolId"]["{definition.id}"] = "{level}"'
            in text
        )
        required = set(definition.settings_schema.required)
        for name, field in definition.settings_schema.properties.items():
            line = next(
                (
                    entry
                    for entry in text.splitlines()
                    if entry.startswith(f"--   {definition.id}.{name} (")
                ),
                None,
            )
            assert line is not None, f"{definition.id}.{name} is not documented"
            assert ("required" if name in required else "optional") in line
            if field.secret:
                assert "secret" in line
            if field.option_source:
                values = ", ".join(v for v, _ in option_values(field.option_source))
                assert f"Allowed values: {values}." in _unwrapped(text)
            elif field.enum_values:
                assert f"Allowed values: {', '.join(field.enum_values)}." in _unwrapped(text)


def test_secrets_are_shown_as_locked_encrypted_values_only() -> None:
    text = reference_plugin()
    secret_lines = [line for line in text.splitlines() if '.apiKey"] = ' in line]
    assert secret_lines
    assert all("LockedToolSettings" in line and '"ENC:v1:..."' in line for line in secret_lines)


def test_the_reference_plugin_loads_and_changes_only_the_flow_rule(tmp_path: Path) -> None:
    """The template turns the flow rule on (BLOCK) and sets nothing else."""
    from policy.plugins import load_plugin
    from policy.vocabulary import PluginOrigin

    folder = tmp_path / "reference"
    folder.mkdir()
    (folder / "plugin.lua").write_text(reference_plugin(), encoding="utf-8")
    plugin = load_plugin(folder / "plugin.lua", PluginOrigin.ORGANIZATION)
    assert plugin.id == REFERENCE_PLUGIN_ID
    assert {key: setting.value for key, setting in plugin.settings.items()} == {
        "DataTools.FlowRule": "BLOCK"
    }
    assert plugin.providers == ()
    assert [f for f in plugin.findings if f.severity.value == "error"] == []


@pytest.mark.parametrize("line", ["ID = ", 'TYPE = "CONFIGURATION"', "CONFIG = {}"])
def test_the_required_globals_are_set_not_commented(line: str) -> None:
    assert any(entry.startswith(line) for entry in reference_plugin().splitlines())


def test_every_single_line_settings_example_is_valid_when_uncommented(tmp_path: Path) -> None:
    """An administrator uncommenting the examples gets a plugin that loads without errors."""
    from policy.plugins import load_plugin
    from policy.vocabulary import PluginOrigin

    lines = []
    for line in reference_plugin().splitlines():
        stripped = line.lstrip("- ").rstrip()
        if stripped.startswith('CONFIG["SETTINGS"]') and '"ENC:v1:..."' not in stripped:
            lines.append(stripped)
        else:
            lines.append(line)
    folder = tmp_path / "uncommented"
    folder.mkdir()
    (folder / "plugin.lua").write_text("\n".join(lines) + "\n", encoding="utf-8")
    plugin = load_plugin(folder / "plugin.lua", PluginOrigin.ORGANIZATION)
    assert [f for f in plugin.findings if f.severity.value == "error"] == []
    assert "DataTools.DisabledToolIds" in plugin.settings
    locked = plugin.settings["DataTools.DefaultToolSettings"].value
    assert locked["read_web_page.freeAddressChoice"] == "OFF"


def test_policy_check_finds_nothing_to_say_about_the_reference_plugin() -> None:
    done = run_policy(["check", "--org", str(COMMITTED), "--format", "json", "--strict"])
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("section", SECTIONS, ids=[s.name for s in SECTIONS])
def test_every_declared_field_is_in_its_sections_example_with_its_choices_and_default(
    section: Section,
) -> None:
    """The example entries are written from the declarations: a field added to a section is in
    the template without a second edit, with its choices and default."""
    text = reference_plugin()
    start = text.index(f'-- CONFIG["{section.name}"][#CONFIG["{section.name}"]+1] = {{')
    block = text[start : text.index("\n-- }", start)]
    for declared in section:
        if not declared.checked:
            continue
        assert f'["{declared.name}"] = ' in block, declared.name
        for choice in declared.choices:
            assert choice in block, (declared.name, choice)
        if declared.default is not None and not declared.required:
            assert "Default: " in _unwrapped(block), declared.name
