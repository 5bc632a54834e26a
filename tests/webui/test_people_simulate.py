"""`policy serve`'s simulate form decides for a person too: their subject and groups pick the
configurations (`DataGateway.ConfigurationsByGroup`), and the page and its JSON twin show which
applied and why, escaped, over real HTTP on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from policy.web import ConfigurationPaths
from tests.policy.test_people import ENGINEERING_ID, FINANCE_ID, organization
from tests.servers.loopback import RunningApp, running_app
from tests.webui.conftest import web_app

PROVIDER = "00000000-0000-0000-0000-0000000000aa"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[RunningApp]:
    with running_app(web_app(ConfigurationPaths(org=(organization(tmp_path),)))) as app:
        yield app


def test_simulate_as_a_person_shows_their_configurations_and_decides_with_them(
    served: RunningApp,
) -> None:
    asked = {"provider": PROVIDER, "tool": "read_web_page"}
    everyone = httpx.post(served.url("/api/simulate"), json=asked).json()
    assert "caller" not in everyone
    assert everyone["decided_for"].startswith("decided for a person in no group"), (
        "without a person: everyone's configurations only"
    )
    engineer = httpx.post(
        served.url("/api/simulate"),
        json={**asked, "as_subject": "alice@example.org", "groups": "engineering, staff"},
    ).json()
    assert engineer["caller"] == {
        "subject": "alice@example.org",
        "groups": ["engineering", "staff"],
    }
    applied = {c["id"]: c for c in engineer["configurations"]}
    assert (
        applied[ENGINEERING_ID]["applies"]
        and 'group "engineering"' in (applied[ENGINEERING_ID]["why"])
    )
    assert not applied[FINANCE_ID]["applies"]
    assert engineer["groups_without_configurations"] == ["staff"]
    assert engineer["decisions"][0]["reason"] == "TOOL_SWITCHED_OFF"

    page = httpx.post(
        served.url("/simulate"),
        data={**asked, "as_subject": "<b>bob</b>", "groups": "finance"},
    )
    assert page.status_code == 200
    assert 'id="configurations"' in page.text and "only for &#34;engineering&#34;" in page.text
    assert "&lt;b&gt;bob&lt;/b&gt;" in page.text and "<b>bob</b>" not in page.text
    assert 'value="finance"' in page.text, "the form keeps what was asked"
