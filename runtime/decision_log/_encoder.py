"""A decision record as JSON: the one encoding every sink's record takes, serialized straight
from what the recorder gathered (the parts every record repeats once per distinct value), with
care for text no encoder writes (lone surrogates) and for characters that end a line for some
readers.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from policy import DecisionRecord
from policy._runtime_seam import (
    CallDemandsRecord,
    CallRecord,
    ChatRequirementsRecord,
    ConfigurationRecord,
    InjectionRecord,
    OutcomeRecord,
    PluginRecord,
    ProviderRecord,
    RequirementsChange,
    UsageRecord,
    without_user_info,
)

if TYPE_CHECKING:
    from policy import ConfidenceLevel, DataSecurity, PolicyConfiguration, ProviderKind
    from policy._runtime_seam import OutboundDataRestriction
    from runtime.chat import ChatRecord
    from runtime.executor import ToolCallOutcome


# JSON leaves these raw inside strings; Python's splitlines, JavaScript before ES2019 and many
# log shippers end a line at them. In UTF-8 each byte sequence is only ever that character.
_LINE_BREAKING = (
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
    (b"\xc2\x85", b"\\u0085"),
)


def line_safe(line: bytes) -> bytes:
    """A JSON line with the characters that end a line for some readers (U+2028, U+2029, NEL)
    written as their JSON escapes: the same JSON value, on one line for every tool. A line
    without their lead bytes (most records) is only looked through for those two bytes."""
    if b"\xe2" not in line and b"\xc2" not in line:
        return line
    for raw, escaped in _LINE_BREAKING:
        if raw in line:
            line = line.replace(raw, escaped)
    return line


StopReason = Literal[
    "final_answer", "interrupted", "refused", "error", "tool_call", "approval_required"
]


# A record is made on every answer from parts that repeat (the configuration, the provider, the
# chat's requirement levels, what a result demanded, the usage): each part is made and
# serialized once per distinct value and shared.

_last_configuration: tuple[PolicyConfiguration, bytes] | None = None


def configuration_json(configuration: PolicyConfiguration) -> bytes:
    """`configuration_record` as JSON, kept for the configuration in force."""
    global _last_configuration
    held = _last_configuration
    if held is None or held[0] is not configuration:
        held = (configuration, configuration_record(configuration).model_dump_json().encode())
        _last_configuration = held
    return held[1]


def configuration_record(configuration: PolicyConfiguration) -> ConfigurationRecord:
    """The revision and plugins of a configuration, as records name them."""
    return ConfigurationRecord(
        revision=configuration.revision,
        plugins=[
            PluginRecord(
                id=p.id,
                name=p.name,
                origin=p.origin.value,
                priority=p.priority,
                sha256=p.sha256,
                last_known_good=p.last_known_good,
            )
            for p in configuration.plugins_in_force
        ],
    )


_RequirementsKey = tuple["ConfidenceLevel", "DataSecurity", "OutboundDataRestriction", str]


def requirements_key(chat: ChatRecord) -> _RequirementsKey:
    return (
        chat.required_provider_confidence,
        chat.required_data_security,
        chat.outbound_restriction,
        chat.outbound_mailbox_id,
    )


@functools.lru_cache(maxsize=256)
def _requirements(
    confidence: ConfidenceLevel,
    security: DataSecurity,
    restriction: OutboundDataRestriction,
    mailbox_id: str,
) -> ChatRequirementsRecord:
    return ChatRequirementsRecord(
        provider_confidence=confidence.name,
        data_security=security.value,
        outbound_restriction=restriction.name,
        outbound_mailbox_id=mailbox_id,
    )


@functools.lru_cache(maxsize=256)
def requirements_change_json(before: _RequirementsKey, after: _RequirementsKey) -> bytes:
    change = RequirementsChange(before=_requirements(*before), after=_requirements(*after))
    return change.model_dump_json().encode()


@functools.lru_cache(maxsize=256)
def provider_json(
    provider_id: str,
    kind: ProviderKind,
    host: str,
    model: str,
    confidence: ConfidenceLevel,
    hostname: str,
) -> bytes:
    address = ""
    if hostname.strip():
        from runtime.web.addresses import redact_url_for_log

        address = redact_url_for_log(hostname)
    record = ProviderRecord(
        id=provider_id,
        kind=kind.value,
        host=without_user_info(host),
        model=model,
        confidence=confidence.name,
        hostname=address,
    )
    return record.model_dump_json().encode()


NO_DEMANDS = CallDemandsRecord().model_dump_json().encode()


class ModelObject:
    """The JSON object of one record model, written from parts that are JSON already: the keys
    and their order are the model's fields, as `model_dump_json` writes them. So this encoding
    cannot drift from the model: a field the model gains and the caller does not give (or a
    part it gives that the model has not) fails the record's writing (`QueuedSink.failure`
    then refuses tool calls, and every decision-log test fails) instead of leaving the log
    short of a field."""

    __slots__ = ("_fields", "_keys", "_model", "_names")

    def __init__(self, model: type[BaseModel]) -> None:
        self._model = model
        self._names = tuple(model.model_fields)
        self._fields = frozenset(self._names)
        keys = [(b"," + to_json(name) + b":") for name in self._names]
        keys[0] = b"{" + keys[0][1:]
        self._keys = (*(piece for key in keys for piece in (key, b"")), b"}")
        """Each field's key and a slot for its part, then the closing brace."""

    def write(self, **parts: bytes) -> bytes:
        """The object with each field's part (its JSON) in the model's order."""
        if len(parts) == len(self._names):
            pieces = list(self._keys)
            try:
                pieces[1::2] = [parts[name] for name in self._names]
            except KeyError:
                pass
            else:
                return b"".join(pieces)
        unknown = sorted(parts.keys() - self._fields)
        missing = sorted(self._fields - parts.keys())
        raise ValueError(
            f"{self._model.__name__} JSON: fields not given {missing}, not in the model {unknown}."
        )


DECISION_RECORD = ModelObject(DecisionRecord)
CALL_RECORD = ModelObject(CallRecord)
_INJECTION_RECORD = ModelObject(InjectionRecord)


def record_line(record: DecisionRecord) -> bytes:
    """A whole record as one JSON Lines line (`model_json`, `line_safe`, a newline)."""
    return line_safe(model_json(record)) + b"\n"


def injections_json(outcome: ToolCallOutcome | None) -> bytes:
    """What the guard removed from the result, as `InjectionRecord`s: sources, rules, counts."""
    if outcome is None or not outcome.injections:
        return b"[]"
    return (
        b"["
        + b",".join(
            _INJECTION_RECORD.write(
                source_kind=json_value(seen.source_kind),
                source=json_value(seen.source),
                rules=json_value(list(seen.rule_ids)),
                removed=json_value(seen.removed),
            )
            for seen in outcome.injections
        )
        + b"]"
    )


def demands_json(outcome: ToolCallOutcome) -> bytes:
    return _demands_record_json(
        outcome.required_provider_confidence,
        outcome.required_data_security,
        outcome.required_outbound_data_restriction,
        outcome.outbound_data_source_id,
    )


@functools.lru_cache(maxsize=256)
def _demands_record_json(
    confidence: ConfidenceLevel,
    security: DataSecurity,
    restriction: OutboundDataRestriction | None,
    source_id: str,
) -> bytes:
    record = CallDemandsRecord(
        provider_confidence=confidence.name,
        data_security=security.value,
        outbound_restriction=restriction.name if restriction is not None else None,
        outbound_data_source_id=source_id,
    )
    return record.model_dump_json().encode()


@functools.lru_cache(maxsize=1024)
def usage_json(input_tokens: int | None, output_tokens: int | None) -> bytes:
    record = UsageRecord(input_tokens=input_tokens, output_tokens=output_tokens)
    return record.model_dump_json().encode()


@functools.lru_cache(maxsize=1024)
def repeated_json(value: str | tuple[str, ...] | None) -> bytes:
    """A value records repeat (a component, a tool id, a status, a selection) as JSON."""
    return json_value(value)


def json_value(value: object) -> bytes:
    """`value` as JSON; a string in it that no UTF-8 encoder writes (a lone surrogate from a
    model's or a client's JSON) is written `well_formed`, so every decision is recorded."""
    try:
        return to_json(value)
    except PydanticSerializationError:
        from runtime.trace_text import well_formed_value

        return to_json(well_formed_value(value))


def model_json(record: BaseModel) -> bytes:
    """`record.model_dump_json()`, with `json_value`'s care for strings no encoder writes."""
    try:
        return record.model_dump_json().encode()
    except PydanticSerializationError:
        from runtime.trace_text import well_formed_value

        return to_json(well_formed_value(record.model_dump(mode="json")))


@functools.lru_cache(maxsize=8)
def outcome_json(stop_reason: StopReason) -> bytes:
    return OutcomeRecord(stop_reason=stop_reason).model_dump_json().encode()
