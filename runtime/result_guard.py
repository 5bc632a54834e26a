"""A tool's result through the prompt-injection guard, for tools that did not filter it.

Each built-in and MCP tool filters what it brings in from outside, but an app's tool that declares
untrusted content and forgets would hand its text to the model raw. The executor closes that gap
with this: every text of the result the model or the user reads — the text, each string of the
JSON and of the structured content (keys and values: each field is judged as a unit, and the JSON
keeps its shape), each source's title — goes to the guard in one batch, under the tool's name as
the source.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from runtime.messages import Source

if TYPE_CHECKING:
    from runtime.execution import ToolExecutionResult
    from runtime.web.guard import GuardSource, PromptInjectionGuard


async def guarded_result(
    guard: PromptInjectionGuard, result: ToolExecutionResult, source: GuardSource
) -> ToolExecutionResult:
    """`result` with every text filtered, marked `injection_filtered`."""
    from runtime.web.guard import GuardText

    texts: list[str] = []
    if result.text_content:
        texts.append(result.text_content)
    texts.extend(json_strings(result.json_content))
    texts.extend(json_strings(result.structured_content))
    texts.extend(s.title for s in result.sources)
    cleaned = iter(await guard.sanitize_many([GuardText(text, source) for text in texts]))
    text_content = next(cleaned) if result.text_content else result.text_content
    json_content = json_with_strings(result.json_content, cleaned)
    structured = json_with_strings(result.structured_content, cleaned)
    sources = tuple(Source(next(cleaned), s.url, s.origin) for s in result.sources)
    return replace(
        result,
        text_content=text_content,
        json_content=json_content,
        structured_content=structured,
        sources=sources,
        injection_filtered=True,
    )


def json_strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value in document order (an object's key before its value)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from json_strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from json_strings(item)


def json_with_strings(value: Any, cleaned: Iterator[str]) -> Any:
    """`value` with its strings taken from `cleaned`, in `json_strings`' order. Two keys a removal
    made equal both stay, the later one numbered, so no field is lost."""
    if isinstance(value, str):
        return next(cleaned)
    if isinstance(value, dict):
        rebuilt: dict[str, Any] = {}
        for item in value.values():
            key = next(cleaned)
            number = 2
            unique = key
            while unique in rebuilt:
                unique = f"{key} ({number})"
                number += 1
            rebuilt[unique] = json_with_strings(item, cleaned)
        return rebuilt
    if isinstance(value, list | tuple):
        return [json_with_strings(item, cleaned) for item in value]
    return value
