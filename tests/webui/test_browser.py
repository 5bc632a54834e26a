"""A running `policy serve` in a real headless Chromium (Debian's chromium + chromium-driver, via selenium):
every page loads, a matrix cell leads to its checks and evidence, the settings filters, the
simulate form and the diff form work, Reload works, and a hostile plugin's text is shown as text
with no script run. Every step after a click waits for the new page before it reads it.
Screenshots land in test-artifacts/webui/."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.servers.loopback import RunningApp
from tests.webui.conftest import HOSTILE, HOSTILE_KEY, SECRET, hostile_organization
from tests.webui.test_contracts import FLOW_BLOCK
from tests.webui.test_serve import BAD_MAX_RESULTS, DISABLE_WEB_SEARCH

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "webui"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


WIDE_PROVIDERS = "".join(
    f"""
CONFIG["LLM_PROVIDERS"][#CONFIG["LLM_PROVIDERS"]+1] = {{
    ["Id"] = "00000000-0000-4000-8000-00000000000{n}",
    ["InstanceName"] = "CloudProductionEndpointWithoutAnySpaceOrHyphenNumber{n}",
    ["UsedLLMProvider"] = "OPEN_AI",
    ["Host"] = "NONE",
    ["Hostname"] = "",
    ["Model"] = {{ ["Id"] = "gpt-4.1-mini-{n}", ["DisplayName"] = "GPT-4.1 mini" }},
    ["AllowUserProvidedAPIKey"] = true,
}}
"""
    for n in range(6)
)
"""Six more providers with long names that have no space: the matrix is wider than the window."""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        message = "needs Debian's chromium and chromium-driver (.ci/run installs them)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """A running `policy serve --port 0` over the hostile organization, as an administrator
    starts it (its own process; the address it prints first is where it answers)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        organization = hostile_organization(tmp_path_factory.mktemp("org"), monkeypatch)
        base = organization / "base" / "plugin.lua"
        base.write_text(base.read_text() + WIDE_PROVIDERS + FLOW_BLOCK)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "policy.cli",
                "serve",
                "--org",
                str(organization),
                "--port",
                "0",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=os.environ.copy(),
        )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line.startswith("policy serve: http://127.0.0.1:"), line
        # what it says later (warnings) is read away, so the pipe never fills
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield RunningApp(port=int(line.split()[2].rstrip("/").rsplit(":", 1)[1]), scheme="http")
    finally:
        process.terminate()
        process.wait(timeout=30)


def _screenshot(browser: WebDriver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def _submit(browser: WebDriver, button: WebElement) -> None:
    """Click a submit button and wait until the page it leads to has replaced this one."""
    page = browser.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(browser, 30).until(lambda _: _replaced(page))
    WebDriverWait(browser, 30).until(
        lambda b: b.execute_script("return document.readyState") == "complete"
    )


def _replaced(element: WebElement) -> bool:
    """The element left the document. Chromium under load may say so as an inspector error
    ("Node with given id does not belong to the document") instead of a stale reference."""
    try:
        element.is_enabled()
    except WebDriverException:  # StaleElementReferenceException is one of them
        return True
    return False


def _heading(browser: WebDriver) -> str:
    return str(browser.find_element(By.TAG_NAME, "h1").text)


def _no_script_ran(browser: WebDriver) -> None:
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert browser.execute_script("return document.scripts.length") == 0


@pytest.mark.parametrize(
    ("path", "heading"),
    [
        ("/", "Status"),
        ("/settings", "Effective settings"),
        ("/decisions", "Tools offered in CHAT"),
        ("/simulate", "Simulate a decision"),
        ("/diff", "Which decisions flip"),
    ],
)
def test_each_page_loads_in_chromium(
    browser: WebDriver, served: RunningApp, path: str, heading: str
) -> None:
    browser.get(served.url(path))
    assert browser.find_element(By.TAG_NAME, "h1").text == heading
    assert SECRET not in browser.page_source
    _no_script_ran(browser)
    _screenshot(browser, heading.lower().replace(" ", "-"))


@pytest.mark.parametrize("width", [1280, 800])
@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/settings?unset=1",
        "/decisions",
        "/decisions?component=APP_SETTINGS",
        "/simulate",
        "/diff",
    ],
)
def test_wide_tables_wrap_within_the_window(
    browser: WebDriver, served: RunningApp, path: str, width: int
) -> None:
    """Long values (plugin paths, setting keys, URLs, many providers) wrap inside their cells:
    the page never scrolls sideways."""
    browser.set_window_size(width, 900)
    try:
        browser.get(served.url(path))
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        if width == 800:
            _screenshot(browser, f"narrow{path.replace('/', '-').replace('?', '-')}")
        assert overflow == 0
    finally:
        browser.set_window_size(1280, 900)


def test_values_are_shown_in_lua_notation(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/settings?unset=1"))
    keys = {
        row.find_elements(By.TAG_NAME, "td")[0].text: row.find_elements(By.TAG_NAME, "td")[1].text
        for row in browser.find_elements(By.CSS_SELECTOR, "#settings-keys tr")[1:]
    }
    assert keys["DataTools.EnableTools"] == "true"
    shown = browser.find_element(By.TAG_NAME, "main").text
    assert "True" not in shown and "False" not in shown and "None" not in shown
    assert "(not set)" in shown
    browser.get(served.url("/decisions"))
    _submit(browser, browser.find_element(By.CSS_SELECTOR, "#matrix td a"))
    evidence = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#checks li.evidence")]
    assert "DataTools.EnableTools = true (locked by organization)" in "\n".join(evidence)
    assert any(e.startswith('visible_in = {"chat": true') for e in evidence), evidence
    shown = browser.find_element(By.TAG_NAME, "main").text
    assert "True" not in shown and "None" not in shown and "'chat'" not in shown


def test_a_hostile_plugin_value_is_shown_as_text(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/"))
    names = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#providers td")]
    assert HOSTILE in names
    findings = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#findings li")]
    assert any(HOSTILE_KEY in text and "department/plugin.lua:" in text for text in findings)
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    _no_script_ran(browser)
    browser.get(served.url("/simulate"))
    options = [
        o.text for o in browser.find_elements(By.CSS_SELECTOR, "select[name=provider] option")
    ]
    assert any(HOSTILE in text for text in options)
    _no_script_ran(browser)
    browser.get(served.url("/decisions"))
    headers = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#matrix tr th")]
    assert any(text.startswith(HOSTILE) for text in headers), headers
    assert browser.find_elements(By.CSS_SELECTOR, "main img, main script") == []
    _no_script_ran(browser)


def test_status_shows_plugins_with_priority_and_the_revision(
    browser: WebDriver, served: RunningApp
) -> None:
    browser.get(served.url("/"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#plugins tr")[1:]
    priorities = [row.find_element(By.CSS_SELECTOR, "td.priority").text for row in rows]
    assert priorities == ["0", "100"]
    files = [row.find_elements(By.TAG_NAME, "td")[5].text for row in rows]
    assert all(text.endswith("plugin.lua") for text in files), files
    assert "Configuration revision" in browser.find_element(By.ID, "revision").text


def test_a_matrix_cell_leads_to_its_checks_and_evidence(
    browser: WebDriver, served: RunningApp
) -> None:
    browser.get(served.url("/decisions"))
    cell = browser.find_element(By.CSS_SELECTOR, "#matrix td.blocked a")
    reason = cell.text
    _submit(browser, cell)
    assert browser.find_element(By.ID, "verdict").text.startswith(f"Not offered: {reason}")
    checks = browser.find_elements(By.CSS_SELECTOR, "#checks ol.checks > li")
    assert checks and any("failed" in (c.get_attribute("class") or "") for c in checks)
    assert browser.find_elements(By.CSS_SELECTOR, "#checks li.evidence")
    _screenshot(browser, "decision")
    _submit(browser, browser.find_element(By.LINK_TEXT, "Back to the matrix"))
    assert _heading(browser) == "Tools offered in CHAT"


def test_the_matrix_decides_a_what_if_on_what_the_chat_holds(
    browser: WebDriver, served: RunningApp
) -> None:
    """Ticking what the chat holds redraws the matrix as `explain --chat-holds` decides it; a
    FLOW_CONFLICT cell leads to FLOW_RULE's evidence, and back to the same what-if."""
    browser.get(served.url("/decisions"))
    assert browser.find_elements(By.XPATH, "//td/a[text()='FLOW_CONFLICT']") == []
    for effect in ("UNTRUSTED_CONTENT", "PRIVATE_DATA"):
        browser.find_element(By.CSS_SELECTOR, f"input[name=chat_holds][value={effect}]").click()
    _submit(browser, browser.find_element(By.CSS_SELECTOR, "main form button"))
    assert browser.find_element(By.ID, "what-if").text.startswith(
        "Decided as if the chat held UNTRUSTED_CONTENT and PRIVATE_DATA"
    )
    boxes = browser.find_elements(By.CSS_SELECTOR, "input[name=chat_holds]")
    assert all(box.is_selected() for box in boxes), "the choice stays ticked"
    row = browser.find_element(By.XPATH, "//tr[th[starts-with(text(), 'web_search')]]")
    cell = row.find_element(By.XPATH, ".//td/a[text()='FLOW_CONFLICT']")
    _screenshot(browser, "decisions-what-if")
    _submit(browser, cell)
    assert browser.find_element(By.ID, "verdict").text.startswith("Not offered: FLOW_CONFLICT")
    flow = browser.find_element(By.XPATH, "//ol[@class='checks']/li[strong[text()='FLOW_RULE']]")
    assert "failed" in (flow.get_attribute("class") or "")
    evidence = [li.text for li in flow.find_elements(By.CSS_SELECTOR, "li.evidence")]
    assert any("PRIVATE_DATA from what-if" in text for text in evidence), evidence
    assert any("DataTools.FlowRule" in text for text in evidence), evidence
    _screenshot(browser, "decision-what-if")
    _submit(browser, browser.find_element(By.LINK_TEXT, "Back to the matrix"))
    assert browser.find_element(By.ID, "what-if").text.startswith("Decided as if the chat held")


def test_the_component_form_and_reload_button(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/decisions"))
    select = browser.find_element(By.NAME, "component")
    select.find_element(By.CSS_SELECTOR, "option[value='APP_SETTINGS']").click()
    _submit(browser, browser.find_element(By.CSS_SELECTOR, "main form button"))
    assert _heading(browser) == "Tools offered in APP_SETTINGS"
    _submit(browser, browser.find_element(By.ID, "reload"))
    assert _heading(browser) == "Status"
    assert browser.current_url == served.url("/")


def _not_set(browser: WebDriver) -> list[str]:
    cells = browser.find_elements(By.CSS_SELECTOR, "table.settings td span.unset")
    return [cell.text for cell in cells if cell.text.startswith("(not set)")]


def test_the_settings_filters(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/settings"))
    assert browser.find_elements(By.CSS_SELECTOR, "#settings-keys tr")
    assert not _not_set(browser)
    browser.find_element(By.CSS_SELECTOR, "input[name=unset]").click()
    _submit(browser, browser.find_element(By.CSS_SELECTOR, "#filters button"))
    assert _not_set(browser)
    browser.find_element(By.CSS_SELECTOR, "select[name=tool] option[value=web_search]").click()
    _submit(browser, browser.find_element(By.CSS_SELECTOR, "#filters button"))
    assert [h.text for h in browser.find_elements(By.CSS_SELECTOR, "main h2")] == ["web_search"]
    assert "*****" in browser.page_source and SECRET not in browser.page_source
    _screenshot(browser, "settings-filtered")


def test_the_simulate_form_decides_a_what_if(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/simulate"))
    options = browser.find_elements(By.CSS_SELECTOR, "select[name=provider] option")
    next(o for o in options if "(SELF_HOSTED)" in o.text).click()
    browser.find_element(By.CSS_SELECTOR, "select[name=tool] option[value=web_search]").click()
    browser.find_element(By.NAME, "user_settings_yaml").send_keys(BAD_MAX_RESULTS)
    _submit(browser, browser.find_element(By.ID, "simulate-run"))
    row = browser.find_element(By.CSS_SELECTOR, "#simulated tr.blocked")
    assert row.find_element(By.TAG_NAME, "th").text == "web_search"
    summary = row.find_element(By.CSS_SELECTOR, "summary.verdict")
    assert summary.text.startswith("NOT_CONFIGURED")
    summary.click()
    checks = row.find_element(By.CSS_SELECTOR, "ol.checks")
    WebDriverWait(browser, 30).until(lambda _: checks.is_displayed())
    assert any("maxResults" in li.text for li in checks.find_elements(By.TAG_NAME, "li"))
    _no_script_ran(browser)
    _screenshot(browser, "simulate")

    browser.find_element(By.CSS_SELECTOR, "input[name=chat_holds][value=PRIVATE_DATA]").click()
    browser.find_element(By.NAME, "user_settings_yaml").clear()
    browser.find_element(By.CSS_SELECTOR, "select[name=tool] option[value='']").click()
    _submit(browser, browser.find_element(By.ID, "simulate-run"))
    assert browser.find_element(By.ID, "what-if").text == (
        "Decided as if the chat held PRIVATE_DATA."
    )
    web_search = browser.find_element(By.XPATH, "//table[@id='simulated']//tr[th='web_search']")
    assert web_search.find_element(By.CSS_SELECTOR, "summary.verdict").text.startswith(
        "FLOW_CONFLICT"
    ), "web_search sends out and brings untrusted content: with private data held, a conflict"
    assert browser.find_element(
        By.CSS_SELECTOR, "input[name=chat_holds][value=PRIVATE_DATA]"
    ).is_selected()
    _screenshot(browser, "simulate-what-if")

    browser.find_element(By.CSS_SELECTOR, "select[name=provider] option[value='']").click()
    browser.find_element(By.NAME, "user_settings_yaml").clear()
    browser.find_element(By.NAME, "user_settings_yaml").send_keys("tools: [\n")
    _submit(browser, browser.find_element(By.ID, "simulate-run"))
    assert (
        "choose a configured provider or a provider kind"
        in browser.find_element(By.ID, "error").text
    )


def test_the_simulate_placeholder_submitted_as_is_decides(
    browser: WebDriver, served: RunningApp
) -> None:
    browser.get(served.url("/simulate"))
    pasted = browser.find_element(By.NAME, "user_settings_yaml")
    example = pasted.get_attribute("placeholder") or ""
    assert "web_search" in example
    pasted.send_keys(example)
    browser.find_element(
        By.CSS_SELECTOR, "select[name=provider_kind] option[value=OPEN_AI]"
    ).click()
    _submit(browser, browser.find_element(By.ID, "simulate-run"))
    assert browser.find_elements(By.ID, "error") == []
    assert browser.find_elements(By.ID, "notes") == []
    assert browser.find_element(By.ID, "user-settings").text == "User settings: pasted."
    assert browser.find_elements(By.CSS_SELECTOR, "#simulated tr")


def test_the_diff_form_shows_what_flips(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/diff"))
    browser.find_element(By.NAME, "plugin_lua").send_keys(DISABLE_WEB_SEARCH)
    browser.find_element(By.CSS_SELECTOR, "input[name=component][value=CHAT]").click()
    _submit(browser, browser.find_element(By.ID, "diff-run"))
    assert browser.find_element(By.ID, "result").text.endswith("change")
    rows = browser.find_elements(By.CSS_SELECTOR, "#changes tr")[1:]
    assert rows and {r.find_elements(By.TAG_NAME, "td")[0].text for r in rows} == {"web_search"}
    assert all("TOOL_SWITCHED_OFF" in r.find_elements(By.TAG_NAME, "td")[4].text for r in rows)
    _no_script_ran(browser)
    _screenshot(browser, "diff")
