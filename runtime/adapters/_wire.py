"""Small pieces every adapter needs: compact JSON, request bodies from pre-serialized parts,
reading untrusted stream payloads, and the additional API parameters an adapter may not give up.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from runtime.messages import UNKNOWN_USAGE, Usage

_log = logging.getLogger("runtime.adapters")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps(value: Any) -> str:
    """Compact JSON with non-ASCII kept literal (what every host reads, and shorter)."""
    return _dumps(value)


def loads_payload(data: str) -> Any:
    """One SSE payload parsed, or None when it is no JSON (malformed lines are skipped)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


class RawJson(str):
    """JSON text placed into a request body as is (serialized once, resent every round)."""

    __slots__ = ()


def request_body(fields: Mapping[str, Any], array_key: str, items_json: Iterable[str]) -> bytes:
    """`fields` plus `array_key` whose elements are already JSON text (kept byte for byte)."""
    plain = {k: v for k, v in fields.items() if not isinstance(v, RawJson)}
    members = [dumps(k) + ":" + v for k, v in fields.items() if isinstance(v, RawJson)]
    members.append(dumps(array_key) + ":[" + ",".join(items_json) + "]")
    head = dumps(plain)
    separator = "," if len(head) > 2 else ""
    return (head[:-1] + separator + ",".join(members) + "}").encode()


def usage_from(payload: Any, input_key: str, output_key: str) -> Usage:
    if not isinstance(payload, dict):
        return UNKNOWN_USAGE
    given_in = payload.get(input_key)
    given_out = payload.get(output_key)
    input_tokens = given_in if _is_count(given_in) else None
    output_tokens = given_out if _is_count(given_out) else None
    if input_tokens is None and output_tokens is None:
        return UNKNOWN_USAGE
    return Usage(input_tokens, output_tokens)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def error_message(payload: Any) -> str:
    """The human part of an error payload a host put into its stream."""
    if isinstance(payload, str):
        return payload
    if isinstance(payload, dict):
        kind = text_of(payload.get("type"))
        for key in ("message", "error", "detail"):
            inner = error_message(payload.get(key))
            if inner:
                return f"{kind}: {inner}" if kind and kind != "error" else inner
        return kind
    return ""


def without_reserved(
    extras: Mapping[str, Any] | None, reserved: frozenset[str], api: str
) -> dict[str, Any]:
    """Additional API parameters minus the fields the adapter owns (they cannot be overridden)."""
    if not extras:
        return {}
    kept = {k: v for k, v in extras.items() if k not in reserved}
    dropped = sorted(k for k in extras if k in reserved)
    if dropped:
        _log.warning(
            "Additional API parameters %s are ignored for %s: the tool-calling adapter sets them.",
            ", ".join(dropped),
            api,
        )
    return kept


def with_instruction(prompt: str, instruction: str | None) -> str:
    """The system prompt with the final-answer instruction of this round appended."""
    if not instruction:
        return prompt
    return f"{prompt}\n\n{instruction}" if prompt else instruction


def text_of(value: Any) -> str:
    """`value` if it is a string, else "" (stream payloads are untrusted)."""
    return value if isinstance(value, str) else ""


def is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def non_blank(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
