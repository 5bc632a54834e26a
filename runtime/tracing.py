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
from typing import TYPE_CHECKING, Any

from policy import ProviderKind

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
    return _PROVIDER_NAMES.get(kind) or kind.value.lower()


def start_span(
    active: Tracer,
    name: str,
    parent: Context | None,
    attributes: dict[str, Any],
    *,
    client: bool = False,
) -> Span:
    """A started span under `parent`, with every attribute known at its start in one dict (the
    SDK checks them in one pass)."""
    from opentelemetry.trace import SpanKind

    kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
    return active.start_span(name, context=parent, kind=kind, attributes=attributes)


def child_context(span: Span, parent: Context | None) -> Context:
    """The context a child of `span` starts from (or that is current while `span` runs)."""
    from opentelemetry.trace import set_span_in_context

    return set_span_in_context(span, parent)


def attach(context: Context) -> object:
    """Make `context` the current one around one awaited step (not across a `yield`); give the
    token back to `detach`."""
    from opentelemetry.context import attach as attach_context

    return attach_context(context)


def detach(token: object) -> None:
    from opentelemetry.context import detach as detach_context

    detach_context(token)  # type: ignore[arg-type]


def end_span(
    span: Span,
    error: BaseException | None = None,
    error_type: str = "",
    attributes: dict[str, Any] | None = None,
) -> None:
    """End a span. `attributes` learnt by its end are set in one call (a caller builds them only
    when `span.is_recording()`); an error marks it failed with `error.type` (never the
    message)."""
    if error is not None or error_type:
        from opentelemetry.trace import Status, StatusCode

        attributes = dict(attributes or ())
        attributes["error.type"] = error_type or type(error).__name__
        span.set_attributes(attributes)
        span.set_status(Status(StatusCode.ERROR))
    elif attributes:
        span.set_attributes(attributes)
    span.end()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolpolicy")
    except PackageNotFoundError:
        return ""
