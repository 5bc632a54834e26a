"""The site's provider-confidence page (docs/administrators/provider-confidence.md) shows two
tables written from the decision's own data, and each says what the decision does. Which models
call tools (`python -m policy.capabilities`): every family it lists for a kind calls tools, a
model of an excluded kind (audio, o1-mini, ...) does not, a model it does not list does not, and
the capability override still wins. Confidence by scheme (`python -m policy.confidence_page`):
read back from the page, every named scheme gives every provider kind the level the policy
decides with, and the levels are listed in the order they compare."""

from __future__ import annotations

import re
from pathlib import Path

from policy import capabilities, confidence_page
from policy._page_parts import shown_part
from policy.capabilities import can_use_tools, tool_calling_part
from policy.confidence_page import scheme_part
from policy.configuration import ProviderConfig
from policy.vocabulary import ConfidenceLevel, ConfidenceScheme, ProviderKind, provider_confidence

ROOT = Path(__file__).resolve().parents[2]
PAGE = capabilities.PAGE
_PAGES = {"policy.capabilities": capabilities.PAGE, "policy.confidence_page": confidence_page.PAGE}


def _shown(writer: str) -> str:
    page = _PAGES[writer]
    part = shown_part((ROOT / page).read_text(encoding="utf-8"), writer)
    assert part is not None, f"{page} has no part marked for python -m {writer}"
    return part


def _rows() -> dict[ProviderKind, list[str]]:
    """Provider kind → the families its row lists, as the page shows them."""
    rows: dict[ProviderKind, list[str]] = {}
    for line in _shown("policy.capabilities").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 2 or not cells[0].count("`"):
            continue
        kinds = re.findall(r"`([A-Z_]+)`", cells[0])
        for kind in kinds:
            rows[ProviderKind(kind)] = re.findall(r"`([^`]+)`", cells[1])
    return rows


def _calls_tools(kind: ProviderKind, model: str, **overrides: bool) -> bool:
    provider = ProviderConfig("p", "P", kind, model, capability_overrides=overrides)
    return can_use_tools(provider).is_available


def test_the_page_shows_the_tool_calling_table_of_the_code() -> None:
    assert _shown("policy.capabilities") == tool_calling_part(), (
        f"{PAGE} is stale: run python -m policy.capabilities"
    )


def test_every_provider_kind_has_a_row() -> None:
    assert set(_rows()) == set(ProviderKind) - {ProviderKind.NONE}


def test_every_family_the_page_lists_calls_tools_and_no_other_model_does() -> None:
    for kind, families in _rows().items():
        for family in families:
            assert _calls_tools(kind, family), (kind, family)
            assert _calls_tools(kind, f"vendor/{family.upper()}-latest"), (kind, family)
        assert not _calls_tools(kind, "no-such-family-7b"), kind
    assert _rows()[ProviderKind.PERPLEXITY] == []
    assert not _calls_tools(ProviderKind.PERPLEXITY, "sonar-pro")


def test_the_exclusions_the_page_names_hold_for_every_kind() -> None:
    sentence = _shown("policy.capabilities").rsplit("\n\n", 1)[-1]
    prefixes, words = sentence.split(", or contains ")
    assert re.findall(r"`([^`]+)`", prefixes) == ["o1-mini", "o1-preview"]
    assert "audio" in re.findall(r"`([^`]+)`", words)
    assert not _calls_tools(ProviderKind.OPEN_AI, "o1-mini-2024")
    assert not _calls_tools(ProviderKind.OPEN_AI, "gpt-4o-audio-preview")
    assert not _calls_tools(ProviderKind.GOOGLE, "gemini-2-embedding")
    assert not _calls_tools(ProviderKind.SELF_HOSTED, "qwen3-embed")
    assert _calls_tools(ProviderKind.OPEN_AI, "o1")


def test_the_override_wins_over_the_table() -> None:
    assert _calls_tools(ProviderKind.SELF_HOSTED, "my-model", FUNCTION_CALLING=True)
    assert not _calls_tools(ProviderKind.OPEN_AI, "gpt-4o", FunctionCalling=False)
    assert not _calls_tools(ProviderKind.NONE, "gpt-4o", FUNCTION_CALLING=True)


def _levels_read_back() -> dict[ConfidenceScheme, dict[ProviderKind, ConfidenceLevel]]:
    """Scheme → kind → level, as a reader of the page works them out."""
    text = _shown("policy.confidence_page")
    alike = {
        ProviderKind(kind): ConfidenceLevel[level]
        for kind, level in re.findall(r"`([A-Z_]+)` is ([A-Z_]+)", text.split("In every")[-1])
    }
    read: dict[ConfidenceScheme, dict[ProviderKind, ConfidenceLevel]] = {}
    for row in re.findall(r"^\| `([A-Z_]+)`[^|]* \| ([^|]*) \| ([A-Z_]+) \|$", text, re.M):
        scheme, apart, others = row
        levels = {kind: ConfidenceLevel[others] for kind in ProviderKind}
        levels.update(alike)
        for group in apart.split("; "):
            if group != "—":
                *kinds, level = group.replace(",", "").split()
                levels.update({ProviderKind(k.strip("`")): ConfidenceLevel[level] for k in kinds})
        del levels[ProviderKind.NONE]
        read[ConfidenceScheme(scheme)] = levels
    return read


def test_the_page_shows_the_confidence_table_of_the_code() -> None:
    assert _shown("policy.confidence_page") == scheme_part(), (
        f"{PAGE} is stale: run python -m policy.confidence_page"
    )


def test_every_scheme_gives_every_kind_the_level_the_page_says() -> None:
    read = _levels_read_back()
    assert set(read) == set(ConfidenceScheme) - {ConfidenceScheme.CUSTOM}
    for scheme, levels in read.items():
        for kind, level in levels.items():
            assert provider_confidence(kind, scheme) is level, (scheme, kind)
    assert read[ConfidenceScheme.TRUST_EUROPE][ProviderKind.SELF_HOSTED] is ConfidenceLevel.HIGH
    assert read[ConfidenceScheme.TRUST_EUROPE][ProviderKind.OPEN_AI] is ConfidenceLevel.LOW
    assert "`TRUST_ALL` (default)" in _shown("policy.confidence_page")


def test_the_levels_are_listed_in_the_order_they_compare() -> None:
    order = re.search(r"Levels compare by their numbers: (.*)\.", _shown("policy.confidence_page"))
    assert order is not None
    shown = [part.split() for part in order.group(1).split(" < ")]
    assert [(name, int(value)) for name, value in shown] == sorted(
        ((level.name, level.value) for level in ConfidenceLevel), key=lambda pair: pair[1]
    )
