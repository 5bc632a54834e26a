"""What the built-in tools' declarations share: whole-number settings, address settings, the
parameter-schema shape, and the error a run with refused settings raises. Each tool's own room
(`policy.builtin.<tool>`) declares its settings with these."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from policy._dataclass import dataclass
from policy.definitions import SettingField
from policy.errors import ToolPolicyError
from policy.hosts import HOST_RULE, read_web_address
from policy.secrets import without_user_info
from policy.tools import DefinedTool, ToolConfigurationState


@dataclass(frozen=True, slots=True)
class IntegerSetting:
    """A whole-number setting: its default and the largest value that makes sense."""

    name: str
    default: int
    maximum: int


def function_parameters(
    properties: Mapping[str, Mapping[str, Any]], required: Sequence[str]
) -> dict[str, Any]:
    """The parameter schema as the tool offers it to the model."""
    return {
        "type": "object",
        "properties": {name: dict(schema) for name, schema in properties.items()},
        "required": list(required),
        "additionalProperties": False,
    }


def number_field(setting: IntegerSetting, title: str, description: str) -> SettingField:
    return SettingField(
        title=title,
        description=f"{description} Default {setting.default}, at most {setting.maximum}.",
        default=str(setting.default),
    )


OS_SIGN_IN = "osSignIn"
"""The setting read_web_page and search_confluence share: the operating-system sign-in."""
_ON, _OFF = "ON", "OFF"


def os_sign_in_field(target: str) -> SettingField:
    """`osSignIn`: ON (the default, as in the specification) or OFF."""
    return SettingField(
        title="Operating-system sign-in",
        description=f"ON: {target} gets the user's own sign-in when it asks for Negotiate "
        "(Kerberos, else NTLM): their Kerberos ticket, never a password from a setting. OFF: "
        "never.",
        enum=(_ON, _OFF),
        default=_ON,
    )


def is_os_sign_in_on(values: Mapping[str, str]) -> bool:
    """Only `OFF` turns it off; blank is the default, ON (other values the registry refuses)."""
    return values.get(OS_SIGN_IN, "").strip() != _OFF


def not_configured(message: str) -> ToolConfigurationState:
    return ToolConfigurationState(False, (), message)


class _FieldChecked(Protocol):
    def setting_problem(self, name: str, value: str) -> str | None: ...


def fields_problem(
    tool: _FieldChecked, settings: Mapping[str, str]
) -> ToolConfigurationState | None:
    """The first field whose value its `setting_problem` refuses, as a NOT_CONFIGURED state."""
    for name, value in settings.items():
        problem = tool.setting_problem(name, value)
        if problem:
            return not_configured(problem)
    return None


def _integer_value(setting: IntegerSetting, text: str) -> int | None:
    """A non-blank integer setting's value, or None when it is not a whole number in range."""
    readable = (
        text.isascii() and text.isdigit() and len(text.lstrip("0")) <= len(str(setting.maximum))
    )
    if not readable or not 1 <= int(text) <= setting.maximum:
        return None
    return int(text)


def integer_problem(tool_id: str, setting: IntegerSetting, text: str) -> str | None:
    """Why a whole-number setting's value is refused (None: blank or valid)."""
    text = text.strip()
    if not text or _integer_value(setting, text) is not None:
        return None
    key = f"{tool_id}.{setting.name}" if tool_id else setting.name
    return (
        f"{key}: '{text}' is not valid; expected a whole number "
        f"from 1 to {setting.maximum} (default {setting.default})"
    )


def read_integer_setting(settings: Mapping[str, str], setting: IntegerSetting) -> int:
    """The value to use: blank → the default. A value `integer_problem` refuses raises ValueError
    (the registry never offers a tool with such a value, so a run never gets here with one)."""
    text = settings.get(setting.name, "").strip()
    if not text:
        return setting.default
    value = _integer_value(setting, text)
    if value is None:
        raise ValueError(f"the setting {integer_problem('', setting, text)}")
    return value


def url_problem(key: str, text: str, *, https_only: bool, allow_query: bool = True) -> str | None:
    address = read_web_address(text)
    wanted = "an absolute HTTPS address" if https_only else "an absolute HTTP or HTTPS address"
    if address is None or (https_only and address.scheme != "https"):
        return f"{key}: '{without_user_info(text)}' is not valid; expected {wanted}"
    if address.host is None:
        return (
            f"{key}: '{without_user_info(text)}' is not valid: its host is not {HOST_RULE}; "
            f"expected {wanted}"
        )
    if address.has_user_info:
        return f"{key}: the address must not contain a user name or password"
    if not allow_query and (address.has_query or address.has_fragment):
        return f"{key}: the address must not contain a query or fragment"
    return None


class ToolSettingsError(ToolPolicyError, ValueError):
    """A tool was asked to run with settings its own checks refuse.

    The registry never offers a tool in that state (NOT_CONFIGURED), so this is only met by a
    tool run outside the policy; the message is the one `policy check` and `explain` give.
    """

    code = "tool-settings"


def checked_values(tool: DefinedTool, values: Mapping[str, str]) -> Mapping[str, str]:
    """`values` once the tool's settings rules (`values_state`, the registry's) accept them."""
    from policy.resolve import values_state

    state = values_state(tool.definition, values, tool)
    if not state.is_configured:
        raise ToolSettingsError(f"{tool.definition.id} is not configured: {state.message}")
    return values


_E = TypeVar("_E", bound=StrEnum)


def choice(kind: type[_E], text: str) -> _E | None:
    """An offered value (checked before) as its member; blank is None."""
    return kind(text) if text.strip() else None
