"""A tool's keyring secrets are read only when what is shown or decided depends on them.

Whether web_search or search_confluence is configured depends on whether the user's keyring
holds their API key or token, not on what it is: the registry decides that without reading the
keyring whenever every answer the keyring could give leads to the same state, and a decision's
evidence reads a secret only when it is looked at (issue 31 item 4: choosing keyring's backend
is most of what `policy explain --all` cost above `policy check`).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from policy import Component, load_policy
from policy.builtin import builtin_tools
from policy.configuration import ManagedSetting, PolicyConfiguration, UserSettings
from policy.decide.registry import ToolRegistry
from policy.decision import Evidence
from policy.explain import decision_document, kind_provider
from policy.provenance import Origin, SourceLocation
from policy.redaction import MASK
from policy.resolve import values_state
from policy.vocabulary import ProviderKind

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "organization"
SELF_HOSTED = kind_provider(ProviderKind.SELF_HOSTED, "Qwen/Qwen2.5-72B-Instruct")
ORIGIN = Origin("org", "Org", SourceLocation("plugin.lua", 1))

SECRET_VALUES = ("tvly-canary-7f3a", "x", " padded ", "ENC:v1:abc", "é中\u200b", "k" * 600)
BLANK_VALUES = ("", "   ", "\t")

# Other settings the state of each tool turns on, each combination tried with every secret value.
OTHER_SETTINGS: dict[str, tuple[dict[str, str], ...]] = {
    "web_search": (
        {"defaultLanguage": "en-US"},
        {"defaultLanguage": "en-US", "searxng.baseUrl": "https://search.example.org"},
        {"defaultLanguage": "en-US", "backendStrategy": "SPECIFIC"},
        {"defaultLanguage": "en-US", "backendStrategy": "SPECIFIC", "primaryBackend": "TAVILY"},
        {"defaultLanguage": "en-US", "maxTotalContentCharacters": "10"},
        {},
    ),
    "search_confluence": (
        {"baseUrl": "https://wiki.example.org/"},
        {"baseUrl": "https://wiki.example.org/", "deployment": "CLOUD"},
        {
            "baseUrl": "https://wiki.example.org/",
            "deployment": "CLOUD",
            "accountEmail": "name@example.org",
        },
        {"baseUrl": "http://wiki.example.org/", "deployment": "CLOUD"},
        {},
    ),
}


def _with_secrets() -> list[object]:
    return [
        tool
        for tool in builtin_tools()
        if any(f.secret for f in tool.definition.settings_schema.properties.values())
    ]


def test_the_tools_that_say_so_judge_their_secrets_by_whether_they_are_set() -> None:
    """The contract `_secrets_judged_by_presence` states, for every value a keyring could hold:
    a secret that is not blank counts as any other one, a blank one as none."""
    tools = _with_secrets()
    assert {t.definition.id for t in tools} == set(OTHER_SETTINGS)  # type: ignore[attr-defined]
    for tool in tools:
        assert tool._secrets_judged_by_presence is True  # type: ignore[attr-defined]
        definition = tool.definition  # type: ignore[attr-defined]
        secrets = [n for n, f in definition.settings_schema.properties.items() if f.secret]
        for others in OTHER_SETTINGS[definition.id]:
            for name in secrets:
                unset = values_state(definition, others, tool)  # type: ignore[arg-type]
                set_ = values_state(definition, {**others, name: "set"}, tool)  # type: ignore[arg-type]
                for value in SECRET_VALUES:
                    got = values_state(definition, {**others, name: value}, tool)  # type: ignore[arg-type]
                    assert got == set_, (definition.id, name, value, others)
                for value in BLANK_VALUES:
                    got = values_state(definition, {**others, name: value}, tool)  # type: ignore[arg-type]
                    assert got == unset, (definition.id, name, value, others)


class _Keyring:
    """The user's keyring as the registry reads it, counting what it is asked."""

    def __init__(self, held: dict[tuple[str, str], str]) -> None:
        self.held, self.asked = held, []  # type: list[tuple[str, str]]

    def __call__(self, tool_id: str, field: str) -> str | None:
        self.asked.append((tool_id, field))
        return self.held.get((tool_id, field))


def _registry(settings: dict[str, str], keyring: _Keyring) -> ToolRegistry:
    defaults = ManagedSetting(
        "DataTools.DefaultToolSettings", settings, locked=False, origin=ORIGIN
    )
    configuration = PolicyConfiguration(settings={defaults.key: defaults})
    return ToolRegistry(builtin_tools(), configuration, UserSettings(), secret_reader=keyring)


SEARXNG = {"web_search.defaultLanguage": "en-US", "web_search.searxng.baseUrl": "https://s.org"}
TAVILY = {("web_search", "tavily.apiKey"): "tvly-canary-7f3a"}


@pytest.mark.parametrize("held", [{}, TAVILY], ids=["keyring empty", "keyring holds a key"])
def test_a_decision_the_keyring_cannot_change_reads_no_secret_until_its_evidence_is_shown(
    held: dict[tuple[str, str], str],
) -> None:
    keyring = _Keyring(held)
    decision = _registry(SEARXNG, keyring).offer_decision("web_search", SELF_HOSTED)
    assert decision.offered
    assert keyring.asked == []
    shown = decision_document(decision)
    assert set(keyring.asked) == {("web_search", "tavily.apiKey"), ("web_search", "staan.apiKey")}

    read_first = _Keyring(held)
    registry = _registry(SEARXNG, read_first)
    registry.settings("web_search")
    assert read_first.asked
    assert decision_document(registry.offer_decision("web_search", SELF_HOSTED)) == shown
    evidence = {e["key"]: e for c in shown["checks"] for e in c["evidence"] if "apiKey" in e["key"]}
    tavily = evidence["web_search.tavily.apiKey"]
    assert (tavily["value"], tavily["source"]) == (
        (MASK, "user keyring") if held else (None, "not set")
    )
    assert "tvly-canary-7f3a" not in repr(shown)


@pytest.mark.parametrize("held", [{}, TAVILY], ids=["keyring empty", "keyring holds a key"])
def test_a_tool_only_the_keyring_can_configure_reads_it_to_decide(
    held: dict[tuple[str, str], str],
) -> None:
    keyring = _Keyring(held)
    registry = _registry({"web_search.defaultLanguage": "en-US"}, keyring)
    decision = registry.offer_decision("web_search", SELF_HOSTED)
    assert ("web_search", "tavily.apiKey") in keyring.asked
    assert decision.offered is bool(held)
    assert registry.configuration_state("web_search").is_configured is bool(held)


@pytest.mark.parametrize("says_so", [True, False], ids=["says it does not", "inherits it"])
def test_a_tool_that_may_judge_what_a_secret_is_has_its_keyring_read_to_decide(
    says_so: bool,
) -> None:
    """A tool that does not say it judges its secrets by presence may judge what they are: its
    state is never assumed without the keyring. Nor is that of a subclass of a built-in tool
    with checks of its own: it inherits the statement, not the checks it was made of (a key
    refused by what it is, which the placeholder a presence check tries would pass)."""
    from policy.builtin.web_search import WebSearchTool

    class Strict(WebSearchTool):
        def setting_problem(self, name: str, value: str) -> str | None:
            if name == "tavily.apiKey" and value.startswith("tvly-test"):
                return "web_search.tavily.apiKey: a test key is not allowed here"
            return super().setting_problem(name, value)

    if says_so:
        Strict._secrets_judged_by_presence = False
    keyring = _Keyring({("web_search", "tavily.apiKey"): "tvly-test-1"})
    defaults = ManagedSetting("DataTools.DefaultToolSettings", SEARXNG, locked=False, origin=ORIGIN)
    registry = ToolRegistry(
        [Strict()],
        PolicyConfiguration(settings={defaults.key: defaults}),
        UserSettings(),
        secret_reader=keyring,
    )
    decision = registry.offer_decision("web_search", SELF_HOSTED)
    assert keyring.asked
    assert not decision.offered and "test key is not allowed" in decision.message


def test_unread_secret_evidence_is_the_evidence_it_stands_for() -> None:
    """Equal, hashed, shown, copied and pickled as the plain `Evidence` once read."""
    keyring = _Keyring(TAVILY)
    decision = _registry(SEARXNG, keyring).offer_decision("web_search", SELF_HOSTED)
    configured = next(c for c in decision.checks if c.name == "NOT_CONFIGURED")
    lazy = next(e for e in configured.evidence if e.key == "web_search.tavily.apiKey")
    assert keyring.asked == []
    plain = Evidence("web_search.tavily.apiKey", MASK, "user keyring")
    assert lazy == plain and plain == lazy and hash(lazy) == hash(plain)
    assert repr(lazy) == repr(plain)
    copied = pickle.loads(pickle.dumps(lazy))
    assert type(copied) is Evidence and copied == plain
    unset = next(e for e in configured.evidence if e.key == "web_search.staan.apiKey")
    assert unset == Evidence("web_search.staan.apiKey", None, "not set")
    assert unset != plain


def test_explain_all_of_the_example_reads_no_secret() -> None:
    keyring = _Keyring(TAVILY)
    policy = load_policy(org=[EXAMPLES], executable_tools=False)
    registry = ToolRegistry(policy.tools, policy.configuration, policy.user, secret_reader=keyring)
    for tool_id in policy.tool_ids:
        for provider in policy.providers:
            registry.offer_decision(tool_id, provider, Component.CHAT)
    assert keyring.asked == []
