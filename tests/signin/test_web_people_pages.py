"""`policy serve`'s pages decide for whoever looks at them: signed in (a real oidc-provider on
127.0.0.1), the status, settings and decision pages show that person's policy — their groups'
configurations — and say whom they decided for; without sign-in they show a person in no group's.
The simulate form decides for whomever an administrator names; anyone else signed in
simulates only as themselves.

Everyone's plugin switches read_web_page off; the finance group's plugin (its own list of
switched-off tools) switches it back on for finance's members only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from policy.secrets import generate_secret
from policy.web import ConfigurationPaths
from tests.mcp_tools.test_mcp import HEADER
from tests.servers.config_server import plugin_text
from tests.servers.loopback import running_app
from tests.servers.oidc_provider import oidc_provider, sign_in_lua
from tests.servers.processes import free_port
from tests.signin.test_web_sign_in import _policy_serve
from tests.webui.conftest import web_app

FINANCE_ID = "3c7e1a9b-5d2f-4e8a-9b1c-6d0e2f4a8b73"
PROVIDER = "11111111-1111-4111-8111-111111111111"
EVERYONE = (
    'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "read_web_page" }\n'
    'CONFIG["SETTINGS"]["DataGateway.ConfigurationsByGroup"] = '
    f'{{ ["finance"] = {{ "{FINANCE_ID}" }} }}\n'
)


def _organization(tmp_path: Path, sign_in: str = "") -> Path:
    """One organization folder: everyone's plugin and the finance group's."""
    org = tmp_path / "org"
    (org / "everyone").mkdir(parents=True)
    (org / "everyone" / "plugin.lua").write_text(HEADER + EVERYONE + sign_in, encoding="utf-8")
    (org / "finance").mkdir()
    (org / "finance" / "plugin.lua").write_text(
        plugin_text(
            FINANCE_ID,
            'CONFIG["SETTINGS"]["DataTools.DisabledToolIds"] = { "web_search" }\n',
            name="Finance",
        )
        + "PRIORITY = 200\n",
        encoding="utf-8",
    )
    return org


def _reason(matrix: dict[str, Any], tool: str) -> str:
    (decision,) = [d for d in matrix["decisions"] if d["tool"] == tool]
    return str(decision["reason"])


def test_without_sign_in_the_pages_decide_for_a_person_in_no_group(tmp_path: Path) -> None:
    org = _organization(tmp_path)
    with running_app(web_app(ConfigurationPaths(org=(org,)))) as app:
        matrix = httpx.get(app.url("/api/decisions"), timeout=30).json()
        assert _reason(matrix, "read_web_page") == "TOOL_SWITCHED_OFF", (
            "the finance group's configuration never reaches a page nobody signed in to"
        )
        assert matrix["decided_for"].startswith("decided for a person in no group")
        status = httpx.get(app.url("/api/status"), timeout=30).json()
        assert [p["id"] for p in status["plugins"]] == ["11111111-2222-4333-8444-555555555555"]
        assert 'only for "finance"' in status["decided_for"]
        page = httpx.get(app.url("/decisions"), timeout=30)
        assert 'id="decided-for"' in page.text and "Decided for a person in no group" in page.text

        simulated = httpx.post(
            app.url("/api/simulate"),
            json={"provider": PROVIDER, "tool": "read_web_page", "groups": "finance"},
            timeout=30,
        ).json()
        assert simulated["decisions"][0]["reason"] == "NONE", "the simulate form decides for them"


def test_a_signed_in_person_sees_their_own_policy_on_every_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", secret := generate_secret())
    with oidc_provider(tmp_path / "idp") as idp:
        org = _organization(tmp_path, sign_in_lua(idp.issuer, secret))
        with _policy_serve(org, free_port()) as (url, _):
            bob = {"Authorization": f"Bearer {idp.token('bob')}"}
            alice = {"Authorization": f"Bearer {idp.token('alice')}"}

            bobs = httpx.get(f"{url}/api/decisions", headers=bob, timeout=30).json()
            assert _reason(bobs, "read_web_page") == "NONE", "finance's configuration applies"
            assert bobs["decided_for"] == "decided for bob (groups: finance)"
            alices = httpx.get(f"{url}/api/decisions", headers=alice, timeout=30).json()
            assert _reason(alices, "read_web_page") == "TOOL_SWITCHED_OFF"
            assert alices["decided_for"] == "decided for alice (groups: engineering)"

            one = httpx.get(
                f"{url}/api/decision",
                params={"tool": "read_web_page", "provider": PROVIDER},
                headers=bob,
                timeout=30,
            ).json()
            assert one["reason"] == "NONE" and one["decided_for"].startswith("decided for bob")
            status = httpx.get(f"{url}/api/status", headers=bob, timeout=30).json()
            assert FINANCE_ID in [p["id"] for p in status["plugins"]]
            alices_status = httpx.get(f"{url}/api/status", headers=alice, timeout=30).json()
            assert FINANCE_ID not in [p["id"] for p in alices_status["plugins"]]
            page = httpx.get(f"{url}/", headers=bob, timeout=30)
            assert "Decided for bob (groups: finance)." in page.text


def test_only_administrators_simulate_other_people(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signed in, a person simulates as themselves; another person's policy, a settings file
    of the server's machine and the diff (every group's configurations) are for members of
    DataGateway.AdministratorGroups — nobody while it is unset."""
    monkeypatch.setenv("TOOLPOLICY_CONFIG_ENCRYPTION_SECRET", secret := generate_secret())
    asked = {"provider": PROVIDER, "tool": "read_web_page"}
    as_bob = {**asked, "as_subject": "bob", "groups": "finance"}
    as_alice = {**asked, "as_subject": "alice", "groups": "engineering"}
    with oidc_provider(tmp_path / "idp") as idp:
        org = _organization(tmp_path, sign_in_lua(idp.issuer, secret))
        with _policy_serve(org, free_port()) as (url, _):
            alice = {"Authorization": f"Bearer {idp.token('alice')}"}
            bob = {"Authorization": f"Bearer {idp.token('bob')}"}

            def simulate(person: dict[str, str], form: dict[str, str]) -> httpx.Response:
                return httpx.post(f"{url}/api/simulate", json=form, headers=person, timeout=30)

            refused = simulate(alice, as_bob)
            assert refused.status_code == 403
            assert refused.json()["field"] == "as_subject"
            assert "DataGateway.AdministratorGroups" in refused.json()["error"]
            assert "NONE" not in refused.text, "nothing of Bob's policy is shown"
            assert simulate(bob, as_alice).status_code == 403, "unset: nobody may"

            own = simulate(alice, asked)
            assert own.status_code == 200
            assert own.json()["caller"] == {"subject": "alice", "groups": ["engineering"]}
            assert own.json()["decisions"][0]["reason"] == "TOOL_SWITCHED_OFF"
            assert (
                simulate(alice, {**asked, "groups": "engineering", "as_subject": "alice"}).json()[
                    "caller"
                ]["subject"]
                == "alice"
            ), "naming yourself is the same"
            bobs_file = tmp_path / "bob.yaml"
            bobs_file.write_text("tools:\n  enabled: false\n", encoding="utf-8")
            from_file = simulate(alice, {**asked, "user_settings_file": str(bobs_file)})
            assert from_file.status_code == 403
            assert from_file.json()["field"] == "user_settings_file"
            pasted = simulate(alice, {**asked, "user_settings_yaml": "tools:\n  enabled: false\n"})
            assert pasted.status_code == 200, "settings one pastes are one's own"

            form = httpx.get(f"{url}/simulate", headers=alice, timeout=30)
            assert 'id="only-as"' in form.text and "<code>alice</code>" in form.text
            assert 'name="as_subject"' not in form.text
            assert 'name="user_settings_file"' not in form.text
            page = httpx.post(f"{url}/simulate", data=as_bob, headers=alice, timeout=30)
            assert page.status_code == 403 and 'id="error"' in page.text
            assert 'id="simulated"' not in page.text
            diff = httpx.get(f"{url}/diff", headers=alice, timeout=30)
            assert diff.status_code == 403 and "every group" in diff.text
            api_diff = httpx.post(
                f"{url}/api/diff", json={"plugin_lua": "x"}, headers=alice, timeout=30
            )
            assert api_diff.status_code == 403

            with (org / "everyone" / "plugin.lua").open("a", encoding="utf-8") as plugin:
                plugin.write(
                    'CONFIG["SETTINGS"]["DataGateway.AdministratorGroups"] = { "finance" }\n'
                )
            reloaded = httpx.post(f"{url}/api/reload", headers=bob, timeout=30).json()
            assert not reloaded.get("error"), reloaded
            for_alice = simulate(bob, as_alice)
            assert for_alice.status_code == 200, "finance administers"
            assert for_alice.json()["caller"]["subject"] == "alice"
            assert for_alice.json()["decisions"][0]["reason"] == "TOOL_SWITCHED_OFF"
            assert httpx.get(f"{url}/diff", headers=bob, timeout=30).status_code == 200
            assert 'name="as_subject"' in httpx.get(f"{url}/simulate", headers=bob, timeout=30).text
            assert simulate(alice, as_bob).status_code == 403, "engineering still does not"


def test_a_misspelled_administrator_groups_key_is_an_error(tmp_path: Path) -> None:
    from tests.mcp_tools.test_mcp import policy_cli

    setting = 'CONFIG["SETTINGS"]["DataGateway.AdministratorGroup"] = { "finance" }\n'
    org = _organization(tmp_path, setting)
    checked = policy_cli("check", "--org", org)
    assert checked.returncode == 1
    assert 'did you mean "DataGateway.AdministratorGroups"' in checked.stdout + checked.stderr
