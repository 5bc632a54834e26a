"""`check`, `settings set`, `settings show` and `explain` tell the same truth, once, with hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.policy.test_cli import PROVIDERS, run, run_json, write_plugin

OPEN_AI = "11111111-1111-4111-8111-111111111111"
RANGE = "web_search.maxResults: '500' is not valid; expected a whole number from 1 to 20"


@pytest.fixture
def out_of_range(tmp_path: Path) -> Path:
    folder = tmp_path / "org"
    write_plugin(
        folder,
        PROVIDERS
        + 'CONFIG["SETTINGS"] = {}\n'
        + 'CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = '
        + '{ ["web_search.maxResults"] = "500" }\n',
    )
    return folder


def _no_repeated_lines(text: str) -> None:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == len(set(lines)), text


def test_check_reports_an_out_of_range_default_as_an_error(out_of_range: Path) -> None:
    done = run("check", "--org", out_of_range)
    assert done.returncode == 1
    assert "plugin.lua:" in done.stdout + done.stderr
    assert RANGE in done.stdout + done.stderr


def test_settings_show_flags_the_invalid_effective_value(out_of_range: Path) -> None:
    done = run("settings", "show", "web_search", "--org", out_of_range)
    assert "500 (INVALID)" in done.stdout
    assert f"invalid: {RANGE}" in done.stdout
    assert "web_search is not configured until it is fixed" in done.stdout
    ok = run("settings", "show", "read_web_page", "--org", out_of_range)
    assert "INVALID" not in ok.stdout and "invalid:" not in ok.stdout


def test_settings_set_refuses_what_the_validator_refuses(
    out_of_range: Path, tmp_path: Path
) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("", encoding="utf-8")
    done = run(
        "settings",
        "set",
        "web_search",
        "maxResults",
        "99",
        "--org",
        out_of_range,
        "--user-settings",
        user,
    )
    assert done.returncode == 2
    assert "web_search.maxResults: '99' is not valid; expected a whole number from 1 to 20" in (
        done.stderr
    )
    assert user.read_text(encoding="utf-8") == ""
    choice = run(
        "settings",
        "set",
        "web_search",
        "backendStrategy",
        "ROUND_ROBIN",
        "--org",
        out_of_range,
        "--user-settings",
        user,
    )
    assert choice.returncode == 2
    assert "'ROUND_ROBIN' is not one of the offered values (FAILOVER, PARALLEL, SPECIFIC)" in (
        choice.stderr
    )
    saved = run(
        "settings",
        "set",
        "web_search",
        "maxResults",
        "9",
        "--org",
        out_of_range,
        "--user-settings",
        user,
    )
    assert saved.returncode == 0, saved.stderr
    assert "maxResults" in user.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (("settings", "set", "web_search", "maxResult", "9"), 'did you mean "maxResults"?'),
        (("settings", "set", "web_serch", "maxResults", "9"), 'did you mean "web_search"?'),
        (("explain", "web_serch", "--provider", OPEN_AI), 'did you mean "web_search"?'),
        (("explain", "web_search", "--provider-kind", "OPENAI"), 'did you mean "OPEN_AI"?'),
        (("explain", "web_search", "--provider", OPEN_AI, "--component", "chat_"), '"CHAT"'),
        (("settings", "show", "read_webpage"), 'did you mean "read_web_page"?'),
    ],
)
def test_a_mistyped_name_gets_a_did_you_mean(
    out_of_range: Path, tmp_path: Path, args: tuple[str, ...], hint: str
) -> None:
    user = tmp_path / "user.yaml"
    user.write_text("", encoding="utf-8")
    done = run(*args, "--org", out_of_range, "--user-settings", user)
    assert done.returncode == 2
    assert hint in done.stderr
    _no_repeated_lines(done.stderr)


def test_explain_on_a_broken_organization_plugin_exits_1_and_says_it_once(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "broken"
    write_plugin(folder, "CONFIG = {\n")
    done = run("explain", "web_search", "--org", folder, "--provider-kind", "OPEN_AI")
    assert done.returncode == 1
    assert "TOOLS_SWITCHED_OFF" in done.stdout
    assert done.stderr.count("unexpected symbol") == 1, done.stderr
    _no_repeated_lines(done.stderr)


def test_a_mistyped_tool_setting_key_in_a_plugin_gets_a_hint(tmp_path: Path) -> None:
    folder = tmp_path / "org"
    write_plugin(
        folder,
        'CONFIG = {}\nCONFIG["SETTINGS"] = {}\n'
        'CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = { ["web_serch.maxResults"] = "5",'
        ' ["web_search.maxResult"] = "5" }\n',
    )
    done = run("check", "--org", folder)
    text = done.stdout + done.stderr
    assert "unknown tool 'web_serch'; did you mean \"web_search\"?" in text
    assert 'has no setting "maxResult"; did you mean "maxResults"?' in text


BUDGET = (
    "web_search.maxTotalContentCharacters (1000) must be at least 20 × "
    "minContentCharactersPerResult (2000)"
)


@pytest.fixture
def small_budget(tmp_path: Path) -> Path:
    folder = tmp_path / "budget"
    write_plugin(
        folder,
        PROVIDERS
        + 'CONFIG["SETTINGS"] = {}\n'
        + 'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = {\n'
        + '    ["web_search.searxng.baseUrl"] = "https://searx.example.org",\n'
        + '    ["web_search.maxTotalContentCharacters"] = "1000",\n'
        + "}\n",
    )
    return folder


def test_check_reports_a_value_that_breaks_a_rule_across_fields(small_budget: Path) -> None:
    done = run("check", "--org", small_budget)
    assert done.returncode == 1
    assert f"plugin.lua:{_line_of(small_budget, 'maxTotalContentCharacters')}: error" in done.stdout
    assert BUDGET in done.stdout
    assert "web_search is not configured until it is fixed" in done.stdout
    shown = run("settings", "show", "web_search", "--org", small_budget)
    assert f"invalid: {BUDGET}" in shown.stdout


def test_settings_set_refuses_a_value_that_would_leave_the_tool_not_configured(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "org"
    write_plugin(
        folder,
        PROVIDERS
        + 'CONFIG["SETTINGS"] = {}\n'
        + 'CONFIG["SETTINGS"]["DataTools.DefaultToolSettings"] = '
        + '{ ["web_search.searxng.baseUrl"] = "https://searx.example.org" }\n',
    )
    user = tmp_path / "user.yaml"
    user.write_text("", encoding="utf-8")
    common = ("--org", folder, "--user-settings", user)
    done = run("settings", "set", "web_search", "maxTotalContentCharacters", "1000", *common)
    assert done.returncode == 2
    assert BUDGET in done.stderr
    blank = run("settings", "set", "web_search", "searxng.baseUrl", "", *common)
    assert blank.returncode == 2
    assert "no search backend is configured" in blank.stderr
    assert user.read_text(encoding="utf-8") == ""
    fine = run("settings", "set", "web_search", "maxTotalContentCharacters", "50000", *common)
    assert fine.returncode == 0, fine.stderr


def _line_of(folder: Path, text: str) -> int:
    lines = (folder / "plugin.lua").read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if text in line)


def test_every_name_in_the_user_settings_file_gets_a_did_you_mean(tmp_path: Path) -> None:
    organization = Path(__file__).resolve().parents[2] / "examples" / "organization"
    names = tmp_path / "names.yaml"
    names.write_text(
        "tools:\n"
        "  settings:\n"
        "    web_search:\n"
        '      maxResult: "5"\n'
        "    web_serch:\n"
        '      maxResults: "5"\n'
        "  default_tool_ids_by_component:\n"
        "    CHAT: [read_webpage]\n",
        encoding="utf-8",
    )
    done = run("check", "--org", organization, "--user-settings", names)
    assert done.returncode == 0, done.stdout
    assert (
        f"{names}:4: warning [unknown-user-tool-setting]: tools.settings.web_search.maxResult: "
        'web_search has no setting "maxResult"; did you mean "maxResults"?'
    ) in done.stdout
    assert (
        f"{names}:6: warning [unknown-user-tool]: tools.settings.web_serch: unknown tool "
        "'web_serch'; did you mean \"web_search\"?"
    ) in done.stdout
    assert "unknown tool 'read_webpage'; did you mean \"read_web_page\"?" in done.stdout
    _no_repeated_lines(done.stdout)
    for text, hint in (
        ("tools:\n  enabeld: true\n", 'did you mean "enabled"?'),
        ("confidence:\n  schme: TRUST_ALL\n", 'did you mean "scheme"?'),
        ("tools:\n  minimum_provider_confidence:\n    web_search: HIHG\n", 'did you mean "HIGH"?'),
        ("tools:\n  default_tool_ids_by_component:\n    CHTA: [web_search]\n", '"CHAT"?'),
    ):
        broken = tmp_path / "broken.yaml"
        broken.write_text(text, encoding="utf-8")
        failed = run("check", "--org", organization, "--user-settings", broken)
        assert failed.returncode == 1
        assert hint in failed.stdout, failed.stdout


def test_strict_turns_warnings_into_errors_and_says_so() -> None:
    organization = Path(__file__).resolve().parents[2] / "examples" / "organization"
    plain = run("check", "--org", organization)
    assert plain.returncode == 0
    assert plain.stdout.splitlines()[-1] == "ok: 0 error(s), 1 warning(s)"
    strict = run("check", "--org", organization, "--strict")
    assert strict.returncode == 1
    assert strict.stdout.splitlines()[-1] == (
        "failed: 0 error(s), 1 warning(s) (--strict: warnings count as errors)"
    )
    code, document = run_json("check", "--org", organization, "--strict")
    assert (code, document["ok"], len(document["warnings"])) == (1, False, 1)
