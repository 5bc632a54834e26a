"""A decision record as JSON: the one encoding every sink's record takes, serialized straight
from what the recorder gathered (the parts every record repeats once per distinct value), with
care for text no encoder writes (lone surrogates) and for characters that end a line for some
readers.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Literal

from pydantic_core import PydanticSerializationError, to_json

from policy.decision_record import (
    CallDemandsRecord,
    ChatRequirementsRecord,
    ConfigurationRecord,
    OutcomeRecord,
    PluginRecord,
    ProviderRecord,
    RequirementsChange,
    UsageRecord,
)
from policy.secrets import without_user_info

if TYPE_CHECKING:
    from pydantic import BaseModel

    from policy.configuration import PolicyConfiguration
    from policy.vocabulary import (
        ConfidenceLevel,
        DataSecurity,
        OutboundDataRestriction,
        ProviderKind,
    )
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
    written as their JSON escapes: the same JSON value, on one line for every tool."""
    for raw, escaped in _LINE_BREAKING:
        if raw in line:
            line = line.replace(raw, escaped)
    return line


_StopReason = Literal["final_answer", "interrupted", "refused", "error", "tool_call"]


# A record is made on every answer from parts that repeat (the configuration, the provider, the
# chat's requirement levels, what a result demanded, the usage): each part is made and
# serialized once per distinct value and shared.

_last_configuration: tuple[PolicyConfiguration, bytes] | None = None


def _configuration_json(configuration: PolicyConfiguration) -> bytes:
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


def _requirements_key(chat: ChatRecord) -> _RequirementsKey:
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
def _requirements_change_json(before: _RequirementsKey, after: _RequirementsKey) -> bytes:
    change = RequirementsChange(before=_requirements(*before), after=_requirements(*after))
    return change.model_dump_json().encode()


@functools.lru_cache(maxsize=256)
def _provider_json(
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


_NO_DEMANDS = CallDemandsRecord().model_dump_json().encode()


def _injections_json(outcome: ToolCallOutcome | None) -> bytes:
    """What the guard removed from the result, as `InjectionRecord`s: sources, rules, counts."""
    if outcome is None or not outcome.injections:
        return b"[]"
    return _json(
        [
            {
                "source_kind": seen.source_kind,
                "source": seen.source,
                "rules": list(seen.rule_ids),
                "removed": seen.removed,
            }
            for seen in outcome.injections
        ]
    )


def _demands_json(outcome: ToolCallOutcome) -> bytes:
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
def _usage_json(input_tokens: int | None, output_tokens: int | None) -> bytes:
    record = UsageRecord(input_tokens=input_tokens, output_tokens=output_tokens)
    return record.model_dump_json().encode()


@functools.lru_cache(maxsize=1024)
def _repeated_json(value: str | tuple[str, ...] | None) -> bytes:
    """A value records repeat (a component, a tool id, a status, a selection) as JSON."""
    return _json(value)


def _json(value: object) -> bytes:
    """`value` as JSON; a string in it that no UTF-8 encoder writes (a lone surrogate from a
    model's or a client's JSON) is written `well_formed`, so every decision is recorded."""
    try:
        return to_json(value)
    except PydanticSerializationError:
        from runtime.trace_text import well_formed_value

        return to_json(well_formed_value(value))


def _model_json(record: BaseModel) -> bytes:
    """`record.model_dump_json()`, with `_json`'s care for strings no encoder writes."""
    try:
        return record.model_dump_json().encode()
    except PydanticSerializationError:
        from runtime.trace_text import well_formed_value

        return to_json(well_formed_value(record.model_dump(mode="json")))


@functools.lru_cache(maxsize=8)
def _outcome_json(stop_reason: _StopReason) -> bytes:
    return OutcomeRecord(stop_reason=stop_reason).model_dump_json().encode()
