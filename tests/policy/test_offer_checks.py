"""The offer checks as one ordered list: each check a module with its name, reason and place;
a new module is a new check at its place; explain names each check once; a tool's optional
members are declared, and a near miss of one is reported instead of silently ignored."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from policy.configuration import PolicyConfiguration, ProviderConfig, UserSettings
from policy.decide import checks
from policy.decide.order import CHECKS, _discovered
from policy.decide.registry import ToolRegistry
from policy.definitions import ToolDefinition, ToolFunction, ToolVisibility
from policy.explain import decision_document, decision_text
from policy.tools import DefinedTool
from policy.vocabulary import (
    Component,
    DataSourceRetrievalMode,
    ProviderKind,
    ToolOfferBlockReason,
)

R = ToolOfferBlockReason
PROVIDER = ProviderConfig(
    "local", "Local", ProviderKind.SELF_HOSTED, "m", capability_overrides={"FUNCTION_CALLING": True}
)


def _definition(tool_id: str, *, chat: bool = True) -> ToolDefinition:
    return ToolDefinition(
        id=tool_id,
        implementation_key=tool_id,
        visible_in=ToolVisibility(chat=chat, assistants=True),
        function=ToolFunction(name=tool_id, description_for_llm="A tool."),
    )


def _registry(*tools: object) -> ToolRegistry:
    return ToolRegistry(list(tools), PolicyConfiguration(), UserSettings())  # type: ignore[arg-type]


def test_the_checks_run_in_ai_studios_order_each_with_a_name_of_its_own() -> None:
    assert [(c.name, c.reason) for c in CHECKS] == [
        ("TOOLS_SWITCHED_OFF", R.TOOLS_SWITCHED_OFF),
        ("MODEL_CANNOT_USE_TOOLS", R.MODEL_CANNOT_USE_TOOLS),
        ("NOT_MEANT_HERE", R.NOT_AVAILABLE_HERE),
        ("TOOL_SWITCHED_OFF", R.TOOL_SWITCHED_OFF),
        ("NOT_AVAILABLE_HERE", R.NOT_AVAILABLE_HERE),
        ("DEFINITION_NOT_APPROVED", R.DEFINITION_NOT_APPROVED),
        ("NOT_CONFIGURED", R.NOT_CONFIGURED),
        ("PROVIDER_CONFIDENCE_TOO_LOW", R.PROVIDER_CONFIDENCE_TOO_LOW),
        ("FLOW_RULE", R.FLOW_CONFLICT),
        ("OUTBOUND_DATA_RESTRICTED", R.OUTBOUND_DATA_RESTRICTED),
    ]


def test_explain_names_the_visibility_and_the_availability_check_apart() -> None:
    """Both guard NOT_AVAILABLE_HERE (the decision's reason stays AI Studio's), but explain
    printed that reason for both; each now shows its own name."""
    decision = _registry(DefinedTool(_definition("notes", chat=False))).offer_decision(
        "notes", PROVIDER, Component.CHAT
    )
    assert decision.reason is R.NOT_AVAILABLE_HERE
    text = decision_text(decision)
    assert "3. [FAIL] NOT_MEANT_HERE: It is not meant for CHAT." in text
    assert "5. [pass] NOT_AVAILABLE_HERE: Its implementation is available." in text
    document = decision_document(decision)
    assert [c["check"] for c in document["checks"]].count("NOT_AVAILABLE_HERE") == 2
    assert [c["name"] for c in document["checks"]].count("NOT_AVAILABLE_HERE") == 1


def test_an_unknown_tool_is_not_meant_here_and_every_later_check_is_not_evaluated() -> None:
    decision = _registry().offer_decision("ghost", PROVIDER, Component.CHAT)
    assert (decision.reason, decision.message) == (
        R.NOT_AVAILABLE_HERE,
        "This installation does not know a tool 'ghost'.",
    )
    assert [c.name for c in decision.checks] == [c.name for c in CHECKS]
    assert [c.detail for c in decision.checks[3:]] == ["Not evaluated: the tool is unknown."] * 7


@pytest.fixture
def extra_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder searched for check modules next to policy/decide/checks/, as if a module had
    been added there; the modules imported from it are forgotten afterwards."""
    monkeypatch.setattr(checks, "__path__", [*checks.__path__, str(tmp_path)])
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith(checks.__name__ + "."):
            del sys.modules[name]


_EXTRA_CHECK = """
from policy.decide.check import OfferCheck, Question, Scope
from policy.decision import Check
from policy.vocabulary import ToolOfferBlockReason


class ExtraCheck(OfferCheck):
    name = "EXTRA_CHECK"
    reason = ToolOfferBlockReason.OUTBOUND_DATA_RESTRICTED
    place = {place}
    scope = Scope.QUESTION

    def verdict(self, question: Question) -> Check:
        return self.passed("Nothing to check.")


CHECK = ExtraCheck()
"""


def test_a_check_is_one_module_and_takes_its_place(extra_checks: Path) -> None:
    (extra_checks / "zz_extra_check.py").write_text(textwrap.dedent(_EXTRA_CHECK.format(place=86)))
    names = [c.name for c in _discovered()]
    assert names[names.index("FLOW_RULE") + 1] == "EXTRA_CHECK"
    assert names[-1] == "OUTBOUND_DATA_RESTRICTED"


def test_two_checks_in_one_place_are_refused_naming_both(extra_checks: Path) -> None:
    (extra_checks / "zz_extra_check.py").write_text(textwrap.dedent(_EXTRA_CHECK.format(place=80)))
    with pytest.raises(ValueError, match=r"two offer checks have the place 80: .*provider_confi"):
        _discovered()


def test_a_check_module_without_its_check_is_refused(extra_checks: Path) -> None:
    (extra_checks / "zz_empty.py").write_text("RULE = 1\n")
    with pytest.raises(TypeError, match=r"zz_empty has no CHECK \(an OfferCheck instance\)"):
        _discovered()


class _WithTypo(DefinedTool):
    companion_tools_ids = ("calendar",)


def test_a_misspelled_optional_member_is_reported_not_ignored() -> None:
    registry = _registry(_WithTypo(_definition("planner")), DefinedTool(_definition("calendar")))
    (finding,) = [f for f in registry.findings if f.code == "misspelled-tool-member"]
    assert "'companion_tools_ids'" in finding.message
    assert "did you mean 'companion_tool_ids'?" in finding.message
    assert registry.normalize_selection(["planner"]) == ("planner",)


class _WithExecutionTypos(DefinedTool):
    sensitive_trace_argument_name = frozenset({"token"})
    returns_untrusted_external_contents = True


def test_a_misspelled_execution_member_is_reported_and_the_default_kept() -> None:
    """What the executor asks (masked argument names, untrusted results) is a member of the
    `Tool` protocol too: a near miss of it is named, never silently read as the default."""
    tool = _WithExecutionTypos(_definition("mailer"))
    registry = _registry(tool)
    found = sorted(f.message for f in registry.findings if f.code == "misspelled-tool-member")
    assert len(found) == 2
    assert "did you mean 'returns_untrusted_external_content'?" in found[0]
    assert "did you mean 'sensitive_trace_argument_names'?" in found[1]
    assert tool.sensitive_trace_argument_names == frozenset()
    assert tool.returns_untrusted_external_content is False


class _Structural:
    """A tool written to the protocol's required members only, without DefinedTool."""

    definition = _definition("bare")
    display_name = "Bare"

    def is_available(self) -> bool:
        return True

    def validate_configuration(self, settings: Mapping[str, str]) -> object:
        raise AssertionError("never asked")


def test_a_tool_lacking_protocol_members_is_skipped_naming_them() -> None:
    registry = _registry(_Structural())
    (finding,) = [f for f in registry.findings if f.code == "incomplete-tool"]
    assert finding.message.startswith("Skipping tool implementation _Structural: it lacks")
    assert (
        "companion_tool_ids" in finding.message and "extend policy.DefinedTool" in finding.message
    )
    assert not registry.is_known("bare")


class _Searcher(DefinedTool):
    searches_chat_data_sources = True


def test_the_retrieval_mode_asks_whichever_tool_searches_the_data_sources() -> None:
    registry = _registry(_Searcher(_definition("find_passages", chat=False)))
    found = registry.retrieval_mode(DataSourceRetrievalMode.SEMANTIC_SEARCH, PROVIDER)
    assert found.decision is not None and found.decision.tool_id == "find_passages"
    assert (found.mode, found.fallback_reason) == (
        DataSourceRetrievalMode.EVERY_MESSAGE,
        R.NOT_AVAILABLE_HERE,
    )
    searched = registry.retrieval_mode(
        DataSourceRetrievalMode.SEMANTIC_SEARCH, PROVIDER, Component.WRITER
    )
    assert searched.mode is DataSourceRetrievalMode.SEMANTIC_SEARCH
    none = _registry().retrieval_mode(DataSourceRetrievalMode.SEMANTIC_SEARCH, PROVIDER)
    assert (none.mode, none.fallback_reason, none.decision) == (
        DataSourceRetrievalMode.EVERY_MESSAGE,
        R.NOT_AVAILABLE_HERE,
        None,
    )


def test_the_check_modules_are_the_ones_pkgutil_finds(extra_checks: Path) -> None:
    """The folders are scanned as `pkgutil.iter_modules` scans them: a module by any suffix, a
    package by its `__init__`, nothing else (caches, data files, folders without `__init__`)."""
    import pkgutil

    from policy.decide.order import _module_names

    (extra_checks / "extra_module.py").write_text("", encoding="utf-8")
    (extra_checks / "extra_package").mkdir()
    (extra_checks / "extra_package" / "__init__.py").write_text("", encoding="utf-8")
    (extra_checks / "not_a_package").mkdir()
    (extra_checks / "notes.txt").write_text("", encoding="utf-8")
    (extra_checks / "__pycache__").mkdir()
    expected = sorted({m.name for m in pkgutil.iter_modules(checks.__path__)})
    assert {"extra_module", "extra_package"} <= set(expected)
    assert _module_names() == expected
