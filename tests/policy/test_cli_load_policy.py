"""`load_policy` and `Policy`: the package's public face, as an embedding app uses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import policy
from policy import Component, ProviderKind, ToolOfferBlockReason, load_policy

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "organization"


def test_importing_the_package_stays_light() -> None:
    probe = (
        "import sys, policy\n"
        "heavy = ('pydantic', 'lupa', 'httpx', 'policy.decide.registry', 'policy.plugins')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_everything_exported_resolves() -> None:
    for name in policy.__all__:
        assert getattr(policy, name) is not None, name
    with pytest.raises(AttributeError):
        _ = policy.no_such_thing  # type: ignore[attr-defined]


def test_the_example_organization_decides() -> None:
    loaded = load_policy(org=[EXAMPLES])
    assert loaded.errors == ()
    assert {"web_search", "read_web_page", "search_confluence", "semantic_search"} <= set(
        loaded.tool_ids
    )
    self_hosted = next(p for p in loaded.providers if p.kind is ProviderKind.SELF_HOSTED)
    assert loaded.provider(self_hosted.id.upper()) == self_hosted
    assert loaded.provider(self_hosted.name) == self_hosted
    with pytest.raises(policy.UnknownProviderError, match="no configured provider 'nobody'"):
        loaded.provider("nobody")
    with pytest.raises(LookupError, match='did you mean "Example Corp vLLM"'):
        loaded.provider("Example Corp vLMM")
    with pytest.raises(policy.ToolPolicyError):
        loaded.provider("")
    decision = loaded.offer_decision("web_search", self_hosted, Component.CHAT)
    assert isinstance(decision, policy.OfferDecision)
    assert decision.reason is ToolOfferBlockReason.NONE
    assert decision.checks[0].guards is ToolOfferBlockReason.TOOLS_SWITCHED_OFF


def test_a_broken_plugin_is_a_finding_and_fails_closed(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "plugin.lua").write_text('ID = "not a guid"\n', encoding="utf-8")
    loaded = load_policy(org=[EXAMPLES, broken])
    assert loaded.errors
    assert all(e.severity.value == "error" for e in loaded.errors)
    assert loaded.configuration.fails_closed
    provider = loaded.providers[0]
    decision = loaded.offer_decision("web_search", provider)
    assert decision.reason is ToolOfferBlockReason.TOOLS_SWITCHED_OFF


def test_an_app_may_bring_its_own_tools() -> None:
    from policy.builtin import builtin_tools

    only = [t for t in builtin_tools() if t.definition.id == "read_web_page"]
    loaded = load_policy(org=[EXAMPLES], tools=only)
    assert loaded.tool_ids == ("read_web_page",)
