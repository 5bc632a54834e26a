"""A loopback OpenTelemetry collector: OTLP/HTTP (protobuf) on POST /v1/traces.

It decodes each export with the OTLP protobuf messages and keeps every span as
(name, attributes as a plain dict, trace id, span id, parent span id) for assertions. Runs on
127.0.0.1, port 0, in a thread; `running_otlp_server()` stops it on exit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.servers.loopback import running_app


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    attributes: dict[str, Any]
    trace_id: str
    span_id: str
    parent_span_id: str


@dataclass
class OtlpServer:
    endpoint: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


@contextmanager
def running_otlp_server() -> Iterator[OtlpServer]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    state = OtlpServer()

    async def traces(request: Request) -> Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.body())
        received = [
            ReceivedSpan(
                name=span.name,
                attributes={a.key: _value(a.value) for a in span.attributes},
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex(),
            )
            for resource in export.resource_spans
            for scope in resource.scope_spans
            for span in scope.spans
        ]
        with state.lock:
            state.spans.extend(received)
        return Response(
            ExportTraceServiceResponse().SerializeToString(),
            media_type="application/x-protobuf",
        )

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    with running_app(app) as running:
        state.endpoint = running.url("/v1/traces")
        yield state
