"""OpenTelemetry spans for what `respond` does, through `opentelemetry-api` only.

One span per `respond` (`invoke_agent toolpolicy`), a child span per round (`chat {model}`) and
per tool call (`execute_tool {tool}`), with the GenAI semantic conventions' attributes plus
`toolpolicy.*` ones: the decision id and configuration revision, the tools offered and those left
out with their reasons. While a tool runs its span is the current one, so W3C trace context
reaches what the tool calls: MCP requests carry it in `_meta` (the MCP SDK injects it), and an
app's HTTP tool instrumented with OpenTelemetry sends `traceparent`. The built-in web tools do
not send it to arbitrary sites (a trace id is nobody else's business).

No secret, argument, message or result text goes into an attribute. When no tracer provider is
configured (the API's default proxy, or the no-op provider), `tracer()` is None and nothing is
built: tracing then costs one dictionary lookup per response. Install the SDK and an exporter
with `pip install 'toolpolicy[otel]'`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from policy.vocabulary import ProviderKind

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["TRACER_NAME", "tracer"]

TRACER_NAME = "toolpolicy"
_PROVIDER_ENV = "OTEL_PYTHON_TRACER_PROVIDER"

# gen_ai.provider.name: the semantic conventions' well-known values, else the kind in lower case.
_PROVIDER_NAMES = {
    ProviderKind.OPEN_AI: "openai",
    ProviderKind.ANTHROPIC: "anthropic",
    ProviderKind.MISTRAL: "mistral_ai",
    ProviderKind.GROQ: "groq",
    ProviderKind.DEEP_SEEK: "deepseek",
    ProviderKind.X: "x_ai",
    ProviderKind.PERPLEXITY: "perplexity",
    ProviderKind.GOOGLE: "gcp.gemini",
}

_cached: tuple[object, Tracer] | None = None


def tracer(provider: TracerProvider | None = None) -> Tracer | None:
    """The toolpolicy tracer of `provider` (default: the global one), or None when that is the
    API's proxy with nothing configured behind it, or the no-op provider."""
    global _cached
    if provider is None:
        if "opentelemetry.trace" not in sys.modules and _PROVIDER_ENV not in os.environ:
            return None
        from opentelemetry import trace

        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
    elif _is_noop(provider):
        return None
    if _cached is None or _cached[0] is not provider:
        _cached = (provider, provider.get_tracer(TRACER_NAME, _version()))
    return _cached[1]


def _is_noop(provider: TracerProvider) -> bool:
    from opentelemetry import trace

    return isinstance(provider, trace.NoOpTracerProvider)


def provider_name(kind: ProviderKind) -> str:
    """`gen_ai.provider.name` for a provider kind."""
    return _PROVIDER_NAMES.get(kind, kind.value.lower())


def start_span(
    active: Tracer,
    name: str,
    parent: Context | None,
    attributes: dict[str, Any],
    *,
    client: bool = False,
) -> tuple[Span, Context]:
    """A started span under `parent` and the context a child starts from."""
    from opentelemetry import trace

    kind = trace.SpanKind.CLIENT if client else trace.SpanKind.INTERNAL
    span = active.start_span(name, context=parent, kind=kind, attributes=attributes)
    return span, trace.set_span_in_context(span, parent)


@contextmanager
def current(context: Context | None) -> Iterator[None]:
    """Make `context` the current one around one awaited step (not across a `yield`)."""
    if context is None:
        yield
        return
    from opentelemetry import context as otel_context

    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def end_span(span: Span, error: BaseException | None = None, error_type: str = "") -> None:
    """End a span; an error marks it failed with `error.type` (never the message)."""
    if error is not None or error_type:
        from opentelemetry.trace import Status, StatusCode

        span.set_attribute("error.type", error_type or type(error).__name__)
        span.set_status(Status(StatusCode.ERROR))
    span.end()


def left_out_attribute(left_out: Sequence[tuple[str, str]]) -> list[str]:
    """`tool_id: REASON` per left-out tool (reasons are policy words, never values)."""
    return [f"{tool_id}: {reason}" for tool_id, reason in left_out]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolpolicy")
    except PackageNotFoundError:
        return ""
