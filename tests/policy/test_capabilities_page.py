"""The site's table of which models call tools (docs/administrators/provider-confidence.md) is
written from `policy.capabilities`' own data, and says what `can_use_tools` decides: every family
it lists for a kind calls tools, a model of an excluded kind (audio, o1-mini, ...) does not, a
model it does not list does not, and the capability override still wins."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from policy._page_parts import shown_part
from policy.capabilities import PAGE, can_use_tools, tool_calling_part
from policy.configuration import ProviderConfig
from policy.vocabulary import ProviderKind

ROOT = Path(__file__).resolve().parents[2]
_WRITER = "policy.capabilities"


def _shown() -> str:
    part = shown_part((ROOT / PAGE).read_text(encoding="utf-8"), _WRITER)
    assert part is not None, f"{PAGE} has no part marked for python -m {_WRITER}"
    return part


def _rows() -> dict[ProviderKind, list[str]]:
    """Provider kind → the families its row lists, as the page shows them."""
    rows: dict[ProviderKind, list[str]] = {}
    for line in _shown().splitlines():
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


def test_the_page_shows_the_table_of_the_code() -> None:
    assert _shown() == tool_calling_part(), f"{PAGE} is stale: run python -m {_WRITER}"


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
    sentence = _shown().rsplit("\n\n", 1)[-1]
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


def test_the_writer_rewrites_a_stale_table_and_nothing_else(tmp_path: Path) -> None:
    page = tmp_path / "provider-confidence.md"
    current = (ROOT / PAGE).read_text(encoding="utf-8")
    page.write_text(current.replace("`gpt-4.1`", "`gpt-4.2`"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", _WRITER, str(page)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert page.read_text(encoding="utf-8") == current
