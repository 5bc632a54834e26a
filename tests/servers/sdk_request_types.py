"""Every request body the adapters send is checked against the official SDKs' request types.

The `openai` and `anthropic` packages (dev dependencies only) describe each API's request as
TypedDicts; pydantic validates a body against them, so a field of the wrong shape or a missing
required member fails the test that made the request. Vendor fields the SDK does not know (a
host's reasoning fields, additional API parameters) are ignored, as the APIs ignore them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

_PARAM_TYPES = {
    "chat/completions": ("openai.types.chat.completion_create_params", "CompletionCreateParams"),
    "responses": ("openai.types.responses.response_create_params", "ResponseCreateParams"),
    "messages": ("anthropic.types.message_create_params", "MessageCreateParams"),
}


@functools.cache
def _adapter(path: str) -> Any:
    import importlib

    from pydantic import TypeAdapter

    module_name, prefix = _PARAM_TYPES[path]
    module = importlib.import_module(module_name)
    return TypeAdapter(getattr(module, f"{prefix}Streaming"))


def api_of(url_path: str) -> str | None:
    """Which API a request path asks ("chat/completions", "responses", "messages"), if any."""
    return next((api for api in _PARAM_TYPES if url_path.endswith("/" + api)), None)


def _drained(value: Any) -> Iterator[Any]:
    """Walk a validated value: pydantic checks `Iterable[...]` members only when iterated."""
    if isinstance(value, dict):
        for inner in value.values():
            yield from _drained(inner)
    elif isinstance(value, (list, tuple)) or type(value).__name__ == "ValidatorIterator":
        for inner in value:
            yield inner
            yield from _drained(inner)


def sdk_problem(url_path: str, body: bytes) -> str | None:
    """Why `body` is no valid request of the API at `url_path` by the SDK's types (None: valid)."""
    from pydantic import ValidationError

    api = api_of(url_path)
    if api is None:
        return None
    try:
        parsed = json.loads(body)
    except ValueError as error:
        return f"{api}: the body is no JSON ({error})"
    try:
        for _ in _drained(_adapter(api).validate_python(parsed)):
            pass
    except ValidationError as error:
        return f"{api}: {str(error)[:1500]}"
    return None
