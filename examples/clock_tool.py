"""Two small tools of our own, as an app would write them: the current time and a calculator.

Each implements the policy's tool protocol (by extending `DefinedTool`, which is exactly its
definition) plus `execute`. Neither sends anything out of the chat, so an organization can offer
them to any provider; both refuse bad arguments with a message the model can correct itself from.

Register them next to the built-in tools:

    from policy import load_policy
    from runtime import builtin_executable_tools
    from clock_tool import create_tools

    policy = load_policy(org=["examples/organization"],
                         tools=[*builtin_executable_tools(), *create_tools()])
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from policy import (
    CONFIGURED,
    DefinedTool,
    SettingField,
    SettingsSchema,
    ToolConfigurationState,
    ToolDefinition,
    ToolFunction,
    ToolOutboundData,
)
from runtime import (
    ArgumentError,
    ArgumentReader,
    ParameterSchemaBuilder,
    ToolExecutionContext,
    ToolExecutionResult,
)
from runtime.arguments import echo

CURRENT_TIME = "current_time"
CALCULATOR = "calculator"
ARG_TIME_ZONE = "time_zone"
ARG_EXPRESSION = "expression"
SETTING_DEFAULT_TIME_ZONE = "defaultTimeZone"

MAX_EXPRESSION_CHARACTERS = 200
MAX_EXPONENT = 64
MAX_MAGNITUDE = 10**30


def _time_zone(name: str) -> ZoneInfo | None:
    """The IANA zone of that exact name, or None (no file paths, no guessing)."""
    if not name or name.startswith(("/", ".")) or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


class CurrentTimeTool(DefinedTool):
    """The current date and time in a time zone; the organization may set the default zone."""

    def __init__(self, now: Callable[[], datetime] | None = None) -> None:
        parameters = (
            ParameterSchemaBuilder()
            .optional_string(
                ARG_TIME_ZONE,
                "IANA time zone such as Europe/Berlin or America/New_York. "
                "Leave it out for the user's default time zone.",
            )
            .build()
        )
        super().__init__(
            ToolDefinition(
                id=CURRENT_TIME,
                implementation_key=CURRENT_TIME,
                effects=(),  # brings nothing into the chat, sends nothing, changes nothing
                function=ToolFunction(
                    name=CURRENT_TIME,
                    description_for_llm="Get the current date and time in a time zone.",
                    parameters=parameters,
                ),
                settings_schema=SettingsSchema(
                    properties={
                        SETTING_DEFAULT_TIME_ZONE: SettingField(
                            title="Default time zone",
                            description="IANA time zone used when the model names none.",
                            default="UTC",
                        )
                    }
                ),
                system_prompt_instructions=(
                    "Use current_time whenever the answer depends on today's date or the time "
                    "of day; never guess them."
                ),
            ),
            display_name="Current time",
            outbound_data=ToolOutboundData.NONE,
        )
        self._now = now or (lambda: datetime.now(UTC))

    def validate_configuration(self, settings: Mapping[str, str]) -> ToolConfigurationState:
        name = settings.get(SETTING_DEFAULT_TIME_ZONE, "UTC").strip()
        if _time_zone(name) is None:
            return ToolConfigurationState(
                False,
                (SETTING_DEFAULT_TIME_ZONE,),
                f"{SETTING_DEFAULT_TIME_ZONE} '{name}' is no IANA time zone; "
                "write one such as Europe/Berlin or UTC.",
            )
        return CONFIGURED

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        reader = ArgumentReader(arguments)
        fallback = context.settings.get(SETTING_DEFAULT_TIME_ZONE, "UTC").strip() or "UTC"
        name = reader.optional_line(ARG_TIME_ZONE, 64, "to use the user's default time zone")
        zone = _time_zone(name or fallback)
        if zone is None:
            raise ArgumentError(
                ARG_TIME_ZONE,
                f"Argument '{ARG_TIME_ZONE}' must be an IANA time zone such as Europe/Berlin, "
                f"Asia/Tokyo or UTC, but was {echo(name)}. Leave it out to use the user's default "
                "time zone.",
            )
        moment = self._now().astimezone(zone)
        return ToolExecutionResult(
            json_content={
                "time_zone": str(zone.key),
                "local_time": moment.isoformat(timespec="seconds"),
                "weekday": moment.strftime("%A"),
                "utc_offset": moment.strftime("%z"),
            }
        )


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class CalculationError(ValueError):
    """An expression the calculator will not evaluate; the message says what is allowed."""


def evaluate(expression: str) -> int | float:
    """Arithmetic on numbers only: + - * / // % ** and parentheses; nothing is ever executed."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise CalculationError(
            f"'{expression}' is no arithmetic expression; write numbers with + - * / // % ** "
            "and parentheses, e.g. (17 + 4) * 3."
        ) from None
    return _value(tree.body)


def _value(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _checked(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_value(node.operand)))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise CalculationError(f"Exponents are limited to ±{MAX_EXPONENT}, but was {right}.")
        try:
            return _checked(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise CalculationError("Division by zero is undefined.") from None
        except OverflowError:
            raise CalculationError("The result is too large.") from None
    raise CalculationError(
        "Only numbers, + - * / // % ** and parentheses are allowed; names, calls and other "
        "operators are not."
    )


def _checked(value: Any) -> int | float:
    if isinstance(value, complex):
        raise CalculationError("The result is not a real number.")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculationError("Results are limited to ±1e30; this one is larger.")
    return value  # type: ignore[no-any-return]


class CalculatorTool(DefinedTool):
    """Exact arithmetic, so the model does not have to do sums in its head."""

    def __init__(self) -> None:
        parameters = (
            ParameterSchemaBuilder()
            .required_string(
                ARG_EXPRESSION, "Arithmetic with + - * / // % ** and parentheses, e.g. (17+4)*3."
            )
            .build()
        )
        super().__init__(
            ToolDefinition(
                id=CALCULATOR,
                implementation_key=CALCULATOR,
                effects=(),  # brings nothing into the chat, sends nothing, changes nothing
                function=ToolFunction(
                    name=CALCULATOR,
                    description_for_llm="Evaluate an arithmetic expression exactly.",
                    parameters=parameters,
                ),
            ),
            display_name="Calculator",
            outbound_data=ToolOutboundData.NONE,
        )

    async def execute(
        self, arguments: Mapping[str, Any], context: ToolExecutionContext
    ) -> ToolExecutionResult:
        expression = ArgumentReader(arguments).read_line(ARG_EXPRESSION, MAX_EXPRESSION_CHARACTERS)
        try:
            result = evaluate(expression)
        except CalculationError as error:
            raise ArgumentError(ARG_EXPRESSION, f"Argument '{ARG_EXPRESSION}': {error}") from None
        return ToolExecutionResult(json_content={"expression": expression, "result": result})


def create_tools() -> tuple[CurrentTimeTool, CalculatorTool]:
    """The example tools, ready to pass to `load_policy(tools=...)`."""
    return CurrentTimeTool(), CalculatorTool()
