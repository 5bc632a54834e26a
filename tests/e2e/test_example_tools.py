"""The example tools (examples/clock_tool.py) under the example organization's policy."""

from __future__ import annotations

from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest

from policy import Component, load_policy
from policy.vocabulary import ConfidenceLevel, ProviderKind
from runtime.arguments import ArgumentError
from runtime.execution import ToolExecutionContext
from tests.e2e._kit import ORGANIZATION

FIXED = datetime(2026, 3, 29, 0, 30, tzinfo=UTC)


def _context(tool: Any, settings: dict[str, str] | None = None) -> ToolExecutionContext:
    return ToolExecutionContext(
        definition=tool.definition,
        call_id="call_1",
        settings=settings or {},
        provider_kind=ProviderKind.SELF_HOSTED,
        provider_confidence=ConfidenceLevel.HIGH,
    )


async def test_current_time_in_the_named_zone_and_the_default_zone(
    example_tools: ModuleType,
) -> None:
    tool = example_tools.CurrentTimeTool(now=lambda: FIXED)
    berlin = await tool.execute({"time_zone": "Europe/Berlin"}, _context(tool))
    assert berlin.json_content == {
        "time_zone": "Europe/Berlin",
        "local_time": "2026-03-29T01:30:00+01:00",
        "weekday": "Sunday",
        "utc_offset": "+0100",
    }
    tokyo_default = await tool.execute({}, _context(tool, {"defaultTimeZone": "Asia/Tokyo"}))
    assert tokyo_default.json_content["local_time"] == "2026-03-29T09:30:00+09:00"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "/etc/localtime", 5])
async def test_current_time_refuses_what_is_no_time_zone(
    example_tools: ModuleType, zone: object
) -> None:
    tool = example_tools.CurrentTimeTool(now=lambda: FIXED)
    with pytest.raises(ArgumentError) as refused:
        await tool.execute({"time_zone": zone}, _context(tool))
    assert "time_zone" in str(refused.value)
    assert "Leave it out" in str(refused.value)


def test_an_organization_default_zone_that_does_not_exist_leaves_the_tool_unconfigured(
    example_tools: ModuleType,
) -> None:
    state = example_tools.CurrentTimeTool().validate_configuration({"defaultTimeZone": "Nowhere"})
    assert not state.is_configured
    assert state.missing_required_fields == ("defaultTimeZone",)
    assert "'Nowhere' is no IANA time zone" in state.message


@pytest.mark.parametrize(
    ("expression", "result"),
    [("(17 + 4) * 3", 63), ("2 ** 10", 1024), ("7 / 2", 3.5), ("-7 // 2", -4), ("10 % 4", 2)],
)
async def test_the_calculator_evaluates_arithmetic(
    example_tools: ModuleType, expression: str, result: float
) -> None:
    tool = example_tools.CalculatorTool()
    answer = await tool.execute({"expression": expression}, _context(tool))
    assert answer.json_content == {"expression": expression, "result": result}


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("__import__('os').system('id')", "names, calls and other operators are not"),
        ("2 ** 1000", "Exponents are limited to ±64"),
        ("1 / 0", "Division by zero"),
        ("10 ** 40", "Results are limited"),
        ("(-8) ** 0.5", "not a real number"),
        ("2 +", "is no arithmetic expression"),
        ("1 < 2", "names, calls and other operators are not"),
        ("x" * 201, "at most 200 characters"),
    ],
)
async def test_the_calculator_refuses_what_is_not_plain_arithmetic(
    example_tools: ModuleType, expression: str, says: str
) -> None:
    tool = example_tools.CalculatorTool()
    with pytest.raises(ArgumentError, match="expression") as refused:
        await tool.execute({"expression": expression}, _context(tool))
    assert says in str(refused.value)


def test_the_organization_can_lock_the_default_zone_for_everyone(
    example_tools: ModuleType, tmp_path: Any
) -> None:
    plugin = tmp_path / "plugin.lua"
    plugin.write_text(
        'ID = "4a4fd1a0-1c1b-4a55-9d51-2d3a63c9bb01"\nNAME = "Clock policy"\n'
        'DESCRIPTION = "Locks the clock."\nVERSION = "1.0.0"\nTYPE = "CONFIGURATION"\n'
        'AUTHORS = { "IT" }\nSUPPORT_CONTACT = "it@example.org"\n'
        'SOURCE_URL = "https://git.example.org/c"\nCATEGORIES = { "CORE" }\n'
        'TARGET_GROUPS = { "EVERYONE" }\nIS_MAINTAINED = true\nDEPRECATION_MESSAGE = ""\n'
        'CONFIG = {}\nCONFIG["SETTINGS"] = {}\n'
        'CONFIG["SETTINGS"]["DataTools.LockedToolSettings"] = '
        '{ ["current_time.defaultTimeZone"] = "Europe/Vienna" }\n'
    )
    policy = load_policy(org=[plugin], tools=list(example_tools.create_tools()))
    assert not policy.errors, policy.errors
    assert policy.registry.settings("current_time").values_for_tool() == {
        "defaultTimeZone": "Europe/Vienna"
    }


def test_the_example_organization_offers_the_example_tools_even_to_a_low_confidence_provider(
    example_tools: ModuleType,
) -> None:
    policy = load_policy(org=[ORGANIZATION], tools=list(example_tools.create_tools()))
    openai = policy.provider("OpenAI GPT-4.1")
    assert policy.registry.provider_confidence(openai) is ConfidenceLevel.LOW
    for tool_id in ("current_time", "calculator"):
        assert policy.offer_decision(tool_id, openai, Component.CHAT).offered
