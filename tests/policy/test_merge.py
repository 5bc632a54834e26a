"""Merging plugins: order, replace vs add up, org vs local, provenance, fail closed, last-known-good."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from policy.configuration import BrokenPlugin, PolicyConfiguration, Severity
from policy.merge import ENABLE_TOOLS, content_sha256, load_configuration, merge_plugins
from policy.plugins import load_plugin
from policy.vocabulary import PluginOrigin

from .test_plugins import line_of, provider, write_plugin

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "organization"
BASE = EXAMPLES / "base" / "plugin.lua"
DEPARTMENT = EXAMPLES / "department" / "plugin.lua"
MIN = "DataTools.MinimumProviderConfidenceByToolId"


def _plugin(
    folder: Path,
    guid: str,
    settings: str = "",
    priority: int | None = None,
    name: str = "",
    extra: str = "",
) -> Path:
    overrides: dict[str, str] = {"ID": f'"{guid}"', "NAME": f'"{name or folder.name}"'}
    if priority is not None:
        overrides["PRIORITY"] = str(priority)
    return write_plugin(folder, settings=settings, extra=extra, **overrides)


def _setting(key: str, value: str) -> str:
    return f'CONFIG["SETTINGS"]["{key}"] = {value}'


G1 = "11111111-aaaa-4aaa-8aaa-111111111111"
G2 = "22222222-aaaa-4aaa-8aaa-222222222222"
G3 = "33333333-aaaa-4aaa-8aaa-333333333333"


def codes(configuration: PolicyConfiguration) -> list[str]:
    return [f.code for f in configuration.findings]


# -- the example organization ---------------------------------------------------------------------


def test_the_example_department_overrides_the_base() -> None:
    configuration = load_configuration(org=[EXAMPLES])
    assert [o.plugin_name for o in configuration.plugins] == [
        "Example Corp - base configuration",
        "Example Corp - Research department",
    ]
    assert not configuration.fails_closed
    assert [f for f in configuration.findings if f.severity is Severity.ERROR] == []

    minimum = configuration.settings[MIN]
    assert minimum.value == {
        "web_search": "MEDIUM",
        "read_web_page": "MEDIUM",
        "search_confluence": "HIGH",
        "semantic_search": "MEDIUM",
    }
    assert minimum.locked
    assert minimum.origin.plugin_name == "Example Corp - Research department"
    assert minimum.origin.location.file == str(DEPARTMENT)
    assert minimum.origin.location.line == line_of(DEPARTMENT, f'["{MIN}"] =')
    (beaten,) = minimum.beaten
    assert beaten.value == {
        "web_search": "LOW",
        "read_web_page": "LOW",
        "semantic_search": "MEDIUM",
    }
    assert beaten.origin.location.file == str(BASE)
    assert beaten.origin.location.line == line_of(BASE, f'["{MIN}"] =')

    assert configuration.settings["DataTools.DisabledToolIds"].value == ()
    scheme = configuration.settings["DataConfidence.ConfidenceScheme"]
    assert scheme.value == "TRUST_EUROPE" and not scheme.locked and scheme.beaten == ()
    mode = configuration.settings["DataChat.PreselectedDataSourcesRetrievalMode"]
    assert mode.value == "SEMANTIC_SEARCH" and not mode.locked
    locked = configuration.settings["DataTools.LockedToolSettings"]
    assert locked.value["search_confluence.baseUrl"] == "https://wiki.research.example.org/"
    assert locked.entry_locations["search_confluence.baseUrl"].line == line_of(
        DEPARTMENT, '["search_confluence.baseUrl"]'
    )
    kinds = sorted(p.kind.value for p in configuration.providers)
    assert kinds == ["OPEN_AI", "SELF_HOSTED"]


def test_the_order_plugins_are_given_in_does_not_matter() -> None:
    forward = load_configuration(org=[BASE, DEPARTMENT])
    backward = load_configuration(org=[DEPARTMENT, BASE])
    assert forward.settings == backward.settings
    assert forward.plugins == backward.plugins


# -- order and priority ---------------------------------------------------------------------------


def test_higher_priority_applies_later_and_ties_go_by_path(tmp_path: Path) -> None:
    high = _plugin(
        tmp_path / "a", G1, _setting("DataConfidence.ConfidenceScheme", '"TRUST_USA"'), 10
    )
    low = _plugin(
        tmp_path / "b", G2, _setting("DataConfidence.ConfidenceScheme", '"TRUST_ASIA"'), -3
    )
    tie = _plugin(
        tmp_path / "c", G3, _setting("DataConfidence.ConfidenceScheme", '"TRUST_ALL"'), 10
    )
    merged = load_configuration(org=[tie, low, high])
    scheme = merged.settings["DataConfidence.ConfidenceScheme"]
    assert scheme.value == "TRUST_ALL"
    assert [b.value for b in scheme.beaten] == ["TRUST_ASIA", "TRUST_USA"]
    assert [o.plugin_name for o in merged.plugins] == ["b", "a", "c"]


def test_unmentioned_settings_keep_the_lower_plugins_values(tmp_path: Path) -> None:
    base = _plugin(tmp_path / "base", G1, _setting(ENABLE_TOOLS, "false"))
    dept = _plugin(tmp_path / "dept", G2, _setting("DataTools.DisabledToolIds", '{ "x" }'), 100)
    merged = load_configuration(org=[base, dept])
    assert merged.settings[ENABLE_TOOLS].value is False
    assert merged.settings[ENABLE_TOOLS].origin.plugin_name == "base"


def test_lists_and_tables_replace_rather_than_merge(tmp_path: Path) -> None:
    base = _plugin(
        tmp_path / "base",
        G1,
        _setting(
            "DataTools.LockedToolSettings", '{ ["web_search.a"] = "1", ["web_search.b"] = "2" }'
        ),
    )
    dept = _plugin(
        tmp_path / "dept",
        G2,
        _setting("DataTools.LockedToolSettings", '{ ["web_search.a"] = "9" }'),
        1,
    )
    merged = load_configuration(org=[base, dept])
    assert merged.settings["DataTools.LockedToolSettings"].value == {"web_search.a": "9"}


def test_add_up_keys_unite_every_plugins_entries(tmp_path: Path) -> None:
    a = _plugin(
        tmp_path / "a", G1, _setting("DataApp.EnabledPreviewFeatures", '{ "PRE_A", "PRE_B" }')
    )
    b = _plugin(
        tmp_path / "b", G2, _setting("DataApp.EnabledPreviewFeatures", '{ "PRE_B", "PRE_C" }'), 5
    )
    merged = load_configuration(org=[a], local=[b])
    features = merged.settings["DataApp.EnabledPreviewFeatures"]
    assert features.value == ("PRE_A", "PRE_B", "PRE_C")
    assert not features.locked
    assert features.entry_locations["PRE_C"].file == str(b)


def test_approvals_add_up_only_from_organization_plugins(tmp_path: Path) -> None:
    key = "DataAssistantPluginAudit.EnterpriseApprovedPlugins"
    hash_a, hash_b = "ab" * 32, "cd" * 32
    a = _plugin(tmp_path / "a", G1, _setting(key, f'{{ "{hash_a}" }}'))
    b = _plugin(
        tmp_path / "b",
        G2,
        _setting(key, f'{{ {{ ["PluginHash"] = "{hash_a.upper()}" }}, "{hash_b}" }}'),
        1,
    )
    c = _plugin(tmp_path / "c", G3, _setting(key, '{ "' + "ef" * 32 + '" }'))
    merged = load_configuration(org=[a, b], local=[c])
    approvals = merged.settings[key]
    assert len(approvals.value) == 2 and approvals.locked
    assert "organization-only-setting" in codes(merged)


# -- organization vs local ------------------------------------------------------------------------


def test_a_local_plugin_never_takes_over_an_organization_key(tmp_path: Path) -> None:
    org = _plugin(tmp_path / "org", G1, _setting(ENABLE_TOOLS, "false"), name="Org")
    local = _plugin(
        tmp_path / "local",
        G2,
        "\n".join(
            [
                _setting(ENABLE_TOOLS, "true"),
                _setting("DataConfidence.ConfidenceScheme", '"TRUST_ALL"'),
            ]
        ),
        priority=1000,
        name="Mine",
    )
    merged = load_configuration(org=[org], local=[local])
    enable = merged.settings[ENABLE_TOOLS]
    assert enable.value is False and enable.origin.plugin_name == "Org"
    assert [(b.value, b.origin.plugin_name) for b in enable.beaten] == [(True, "Mine")]
    assert merged.settings["DataConfidence.ConfidenceScheme"].origin.plugin_name == "Mine"
    (warning,) = [f for f in merged.findings if f.code == "local-override-ignored"]
    assert "local plugin Mine cannot change DataTools.EnableTools" in warning.message
    assert warning.location is not None and warning.location.file == str(local)


def test_an_editable_organization_default_is_still_the_organizations(tmp_path: Path) -> None:
    org = _plugin(
        tmp_path / "org",
        G1,
        "\n".join(
            [_setting(ENABLE_TOOLS, "false"), _setting(ENABLE_TOOLS + ".AllowUserOverride", "true")]
        ),
    )
    local = _plugin(tmp_path / "local", G2, _setting(ENABLE_TOOLS, "true"))
    enable = load_configuration(org=[org], local=[local]).settings[ENABLE_TOOLS]
    assert enable.value is False and not enable.locked


def test_local_plugins_order_among_themselves(tmp_path: Path) -> None:
    a = _plugin(tmp_path / "a", G1, _setting(ENABLE_TOOLS, "false"), 2)
    b = _plugin(tmp_path / "b", G2, _setting(ENABLE_TOOLS, "true"), 1)
    merged = load_configuration(local=[a, b])
    assert merged.settings[ENABLE_TOOLS].value is False
    assert merged.settings[ENABLE_TOOLS].origin.plugin_name == "a"


def test_a_local_plugin_cannot_replace_an_organization_object(tmp_path: Path) -> None:
    org = _plugin(tmp_path / "org", G1, extra=provider(kind="SELF_HOSTED"))
    local = _plugin(tmp_path / "local", G2, extra=provider(kind="OPEN_AI", host="NONE"))
    dept = _plugin(tmp_path / "dept", G3, extra=provider(kind="MISTRAL", host="NONE"), priority=5)
    merged = load_configuration(org=[org], local=[local])
    assert [p.kind.value for p in merged.providers] == ["SELF_HOSTED"]
    assert "local-override-ignored" in codes(merged)
    assert [p.kind.value for p in load_configuration(org=[org, dept]).providers] == ["MISTRAL"]
    both_local = load_configuration(local=[org, local])  # equal priority: ".../org" sorts last
    assert [p.kind.value for p in both_local.providers] == ["SELF_HOSTED"]
    assert "local-override-ignored" not in codes(both_local)


def test_a_duplicate_plugin_id_keeps_the_organization_plugin(tmp_path: Path) -> None:
    org = _plugin(tmp_path / "org", G1, _setting(ENABLE_TOOLS, "false"), name="Org")
    local = _plugin(tmp_path / "local", G1, _setting(ENABLE_TOOLS, "true"), name="Copy")
    merged = load_configuration(org=[org], local=[local])
    assert [o.plugin_name for o in merged.plugins] == ["Org"]
    assert "duplicate-plugin-id" in codes(merged)


def test_absent_is_not_empty(tmp_path: Path) -> None:
    merged = load_configuration(
        org=[_plugin(tmp_path / "a", G1, _setting("DataTools.DisabledToolIds", "{}"))]
    )
    assert merged.settings["DataTools.DisabledToolIds"].value == ()
    assert merged.setting("DataTools.LockedToolSettings") is None


# -- failing closed -------------------------------------------------------------------------------


def test_a_broken_organization_plugin_switches_every_tool_off(tmp_path: Path) -> None:
    good = _plugin(tmp_path / "good", G1, _setting(ENABLE_TOOLS, "true"), extra=provider())
    broken = _plugin(
        tmp_path / "broken", G2, _setting(MIN, '{ ["web_search"] = "SUPER" }'), name="Locks"
    )
    merged = load_configuration(org=[good, broken])
    assert merged.fails_closed
    (entry,) = merged.broken_organization_plugins
    assert entry.plugin_id == G2 and entry.plugin_name == "Locks"
    assert not entry.replaced_by_last_known_good
    assert entry.location is not None and entry.location.line == line_of(broken, MIN)
    enable = merged.settings[ENABLE_TOOLS]
    assert enable.value is False and enable.locked
    assert enable.origin.plugin_name == "Locks"
    assert [b.value for b in enable.beaten] == [True]
    errors = [f for f in merged.findings if f.code == "broken-organization-plugin"]
    assert errors[0].severity is Severity.ERROR
    assert "organization plugin Locks does not load" in errors[0].message
    assert "TOOLS_SWITCHED_OFF" in errors[0].message
    saying_why = [f for f in merged.findings if "SUPER" in f.message]
    assert len(saying_why) == 1, "the load error is reported once"
    assert saying_why[0].severity is Severity.ERROR and saying_why[0].location == entry.location
    assert len(merged.providers) == 1


def test_a_local_plugin_cannot_switch_tools_back_on(tmp_path: Path) -> None:
    broken = _plugin(tmp_path / "broken", G2, extra="error('boom')")
    local = _plugin(tmp_path / "local", G1, _setting(ENABLE_TOOLS, "true"), priority=99)
    merged = load_configuration(org=[broken], local=[local])
    assert merged.fails_closed and merged.settings[ENABLE_TOOLS].value is False


def test_a_broken_local_plugin_only_reports(tmp_path: Path) -> None:
    broken = _plugin(tmp_path / "broken", G2, _setting(MIN, '{ ["web_search"] = "SUPER" }'))
    merged = load_configuration(local=[broken])
    assert not merged.fails_closed and merged.settings == {}
    assert [f.severity for f in merged.findings] == [Severity.ERROR]


@pytest.mark.parametrize("layout", ["missing", "empty"])
def test_an_organization_path_without_plugins_fails_closed(tmp_path: Path, layout: str) -> None:
    root = tmp_path / "org"
    if layout == "empty":
        root.mkdir()
    merged = load_configuration(org=[root])
    assert merged.fails_closed
    assert merged.settings[ENABLE_TOOLS].value is False
    assert str(root) in merged.broken_organization_plugins[0].message


def test_a_missing_local_path_is_an_error_but_not_closed(tmp_path: Path) -> None:
    merged = load_configuration(local=[tmp_path / "nowhere"])
    assert not merged.fails_closed and codes(merged) == ["plugin-not-found"]


def test_other_plugin_types_next_to_the_configuration_are_skipped(tmp_path: Path) -> None:
    config = _plugin(tmp_path / "org" / "config", G1, _setting(ENABLE_TOOLS, "true"))
    write_plugin(tmp_path / "org" / "assistant", TYPE='"ASSISTANT"', ID=f'"{G2}"')
    merged = load_configuration(org=[tmp_path / "org"])
    assert not merged.fails_closed
    assert "not-a-configuration-plugin" in codes(merged)
    assert merged.settings[ENABLE_TOOLS].origin.location.file == str(config)


def test_merge_plugins_takes_broken_plugins_directly(tmp_path: Path) -> None:
    plugin = load_plugin(
        _plugin(tmp_path / "a", G1, _setting(ENABLE_TOOLS, "true")), PluginOrigin.ORGANIZATION
    )
    closed = merge_plugins([plugin], [BrokenPlugin(path="x/plugin.lua", message="boom")])
    assert closed.fails_closed and closed.settings[ENABLE_TOOLS].value is False
    assert closed.settings[ENABLE_TOOLS].origin.plugin_name == "x/plugin.lua"
    replaced = merge_plugins(
        [plugin], [BrokenPlugin("x/plugin.lua", "boom", replaced_by_last_known_good=True)]
    )
    assert not replaced.fails_closed and replaced.settings[ENABLE_TOOLS].value is True


# -- last-known-good copies -----------------------------------------------------------------------


def _break(path: Path) -> None:
    path.write_text(
        path.read_text(encoding="utf-8") + "\nerror('broken deployment')\n", encoding="utf-8"
    )


def test_a_broken_plugin_is_replaced_by_its_last_known_good_copy(tmp_path: Path) -> None:
    state = tmp_path / "state"
    org = shutil.copytree(EXAMPLES / "base", tmp_path / "org" / "base")
    first = load_configuration(org=[org], state_dir=state)
    plugin_id = "90649290-b330-44e2-9276-ffe5166210da"
    pointer = json.loads((state / plugin_id / "current.json").read_text(encoding="utf-8"))
    copy = state / plugin_id / pointer["copy"]
    assert sorted(p.name for p in copy.iterdir()) == ["icon.lua", "plugin.lua"]

    _break(org / "plugin.lua")
    second = load_configuration(org=[org], state_dir=state)
    assert not second.fails_closed
    (entry,) = second.broken_organization_plugins
    assert entry.replaced_by_last_known_good and entry.plugin_id == plugin_id
    assert second.settings[MIN].value == first.settings[MIN].value
    assert second.settings[MIN].origin.location.file == str(copy / "plugin.lua")
    warning = next(f for f in second.findings if f.code == "broken-organization-plugin")
    assert warning.severity is Severity.WARNING and "last-known-good copy" in warning.message
    (saying_why,) = [f for f in second.findings if "broken deployment" in f.message]
    assert saying_why.location == warning.location, "the load error is reported once, in place"

    stateless = load_configuration(org=[org])
    assert stateless.fails_closed


def test_the_revision_follows_the_effective_plugins_and_names_a_standing_in_copy(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    org = shutil.copytree(EXAMPLES / "base", tmp_path / "org" / "base")
    first = load_configuration(org=[org], state_dir=state)
    (plugin,) = first.plugins_in_force
    assert len(first.revision) == 64 and not plugin.last_known_good
    assert (
        plugin.sha256
        == json.loads((state / plugin.id / "current.json").read_text(encoding="utf-8"))["copy"]
    ), "one content digest for the kept copy and the record"
    assert load_configuration(org=[org], state_dir=state).revision == first.revision

    _break(org / "plugin.lua")
    standing_in = load_configuration(org=[org], state_dir=state)
    (copy,) = standing_in.plugins_in_force
    assert copy.last_known_good and copy.sha256 == plugin.sha256
    assert standing_in.revision != first.revision, "a copy standing in is another revision"
    closed = load_configuration(org=[org])
    assert closed.plugins_in_force == () and closed.revision not in {
        first.revision,
        standing_in.revision,
    }

    (org / "plugin.lua").write_text(
        (EXAMPLES / "base" / "plugin.lua").read_text(encoding="utf-8") + "\n-- edited\n",
        encoding="utf-8",
    )
    assert load_configuration(org=[org]).revision not in {first.revision, closed.revision}


def test_a_changed_plugin_refreshes_its_copy(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = _plugin(tmp_path / "org", G1, _setting(ENABLE_TOOLS, "true"))
    load_configuration(org=[path], state_dir=state)
    before = json.loads((state / G1 / "current.json").read_text(encoding="utf-8"))["copy"]
    load_configuration(org=[path], state_dir=state)
    assert json.loads((state / G1 / "current.json").read_text(encoding="utf-8"))["copy"] == before
    path.write_text(path.read_text(encoding="utf-8").replace("= true", "= false"), encoding="utf-8")
    load_configuration(org=[path], state_dir=state)
    after = json.loads((state / G1 / "current.json").read_text(encoding="utf-8"))["copy"]
    assert after != before
    assert sorted(p.name for p in (state / G1).iterdir()) == sorted([after, "current.json"])
    _break(path)
    assert load_configuration(org=[path], state_dir=state).settings[ENABLE_TOOLS].value is False
    assert not load_configuration(org=[path], state_dir=state).fails_closed


def test_the_digest_is_of_the_files_that_ran_even_when_they_changed_since(tmp_path: Path) -> None:
    folder = tmp_path / "org"
    path = _plugin(folder, G1, _setting(ENABLE_TOOLS, "true"), extra='require("helper")')
    (folder / "helper.lua").write_text("return 1\n", encoding="utf-8")
    plugin = load_plugin(path, PluginOrigin.ORGANIZATION)
    ran = {name: (folder / name).read_bytes() for name in ("helper.lua", "plugin.lua")}
    expected = content_sha256(list(ran), list(ran.values()))
    assert merge_plugins([plugin]).plugins_in_force[0].sha256 == expected

    (folder / "helper.lua").write_text("return 2\n", encoding="utf-8")
    path.write_text(path.read_text(encoding="utf-8") + "-- edited\n", encoding="utf-8")
    assert merge_plugins([plugin]).plugins_in_force[0].sha256 == expected, "what ran, not now"
    reloaded = merge_plugins([load_plugin(path, PluginOrigin.ORGANIZATION)])
    assert reloaded.plugins_in_force[0].sha256 != expected


def test_a_vanished_organization_folder_falls_back_to_its_copies(tmp_path: Path) -> None:
    state = tmp_path / "state"
    org = shutil.copytree(EXAMPLES, tmp_path / "org")
    good = load_configuration(org=[org], state_dir=state)
    shutil.rmtree(org)
    again = load_configuration(org=[org], state_dir=state)
    assert not again.fails_closed
    assert again.settings[MIN].value == good.settings[MIN].value
    assert len(again.plugins) == 2


def test_a_plugin_whose_lua_never_runs_is_found_by_the_id_in_its_text(tmp_path: Path) -> None:
    state = tmp_path / "state"
    path = _plugin(tmp_path / "org", G1, _setting(ENABLE_TOOLS, "true"))
    load_configuration(org=[path], state_dir=state)
    path.write_text(path.read_text(encoding="utf-8") + "\nthis is not lua\n", encoding="utf-8")
    merged = load_configuration(org=[path], state_dir=state)
    assert merged.broken_organization_plugins[0].plugin_id == G1
    assert not merged.fails_closed


def test_local_plugins_leave_no_copies(tmp_path: Path) -> None:
    state = tmp_path / "state"
    load_configuration(local=[_plugin(tmp_path / "l", G1)], state_dir=state)
    assert not state.exists() or list(state.iterdir()) == []


def test_an_empty_add_up_contribution_adds_nothing(tmp_path: Path) -> None:
    a = _plugin(tmp_path / "a", G1, _setting("DataApp.EnabledPreviewFeatures", "{}"))
    b = _plugin(tmp_path / "b", G2, _setting("DataApp.EnabledPreviewFeatures", '{ "PRE_X" }'), 1)
    assert load_configuration(org=[a]).settings["DataApp.EnabledPreviewFeatures"].value == ()
    assert load_configuration(org=[a, b]).settings["DataApp.EnabledPreviewFeatures"].value == (
        "PRE_X",
    )
