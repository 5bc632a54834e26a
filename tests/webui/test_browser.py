"""`policy serve` in a real headless Chromium (Debian's chromium + chromium-driver, via selenium):
every page loads, a matrix cell leads to its checks and evidence, Reload works, and a hostile
plugin's text is shown as text with no script run. Screenshots land in test-artifacts/webui/."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from policy import load_policy
from policy.web import build_app
from tests.servers.loopback import RunningApp, running_app
from tests.webui.conftest import HOSTILE, SECRET, hostile_organization

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
    with pytest.MonkeyPatch.context() as monkeypatch:
        organization = hostile_organization(tmp_path_factory.mktemp("org"), monkeypatch)
        with running_app(build_app(lambda: load_policy([organization]))) as app:
            yield app


def _screenshot(browser: WebDriver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def _no_script_ran(browser: WebDriver) -> None:
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert browser.execute_script("return document.scripts.length") == 0


@pytest.mark.parametrize(
    ("path", "heading"),
    [("/", "Status"), ("/settings", "Effective settings"), ("/decisions", "Tools offered in CHAT")],
)
def test_each_page_loads_in_chromium(
    browser: WebDriver, served: RunningApp, path: str, heading: str
) -> None:
    browser.get(served.url(path))
    assert browser.find_element(By.TAG_NAME, "h1").text == heading
    assert SECRET not in browser.page_source
    _no_script_ran(browser)
    _screenshot(browser, heading.lower().replace(" ", "-"))


def test_a_hostile_plugin_value_is_shown_as_text(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/"))
    names = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#providers td")]
    assert HOSTILE in names
    assert browser.find_elements(By.CSS_SELECTOR, "main img") == []
    _no_script_ran(browser)


def test_a_matrix_cell_leads_to_its_checks_and_evidence(
    browser: WebDriver, served: RunningApp
) -> None:
    browser.get(served.url("/decisions"))
    cell = browser.find_element(By.CSS_SELECTOR, "#matrix td.blocked a")
    reason = cell.text
    cell.click()
    assert browser.find_element(By.ID, "verdict").text.startswith(f"Not offered: {reason}")
    checks = browser.find_elements(By.CSS_SELECTOR, "#checks > li")
    assert checks and any("failed" in c.get_attribute("class") for c in checks)
    assert browser.find_elements(By.CSS_SELECTOR, "#checks li.evidence")
    _screenshot(browser, "decision")
    browser.find_element(By.LINK_TEXT, "Back to the matrix").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "Tools offered in CHAT"


def test_the_component_form_and_reload_button(browser: WebDriver, served: RunningApp) -> None:
    browser.get(served.url("/decisions"))
    select = browser.find_element(By.NAME, "component")
    select.find_element(By.CSS_SELECTOR, "option[value='APP_SETTINGS']").click()
    browser.find_element(By.CSS_SELECTOR, "main form button").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "Tools offered in APP_SETTINGS"
    browser.find_element(By.ID, "reload").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == "Status"
    assert browser.current_url == served.url("/")
