"""Traces of delivery attempts, exported via OTLP when a collector is configured, and the
W3C trace context each attempt carries to its endpoint."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from service import __version__
from service.policy.trace_context import TraceContext, child_traceparent
from service.runtime.fork_handlers import without_fork_handlers

_W3C = TraceContextTextMapPropagator()  # traceparent and tracestate, whatever the globals say


class Tracing:
    """The tracer of one process."""

    def __init__(self, resource: Resource, otlp_endpoint: str | None = None) -> None:
        self.exporting = bool(otlp_endpoint)
        with without_fork_handlers():
            self._provider = TracerProvider(resource=resource, shutdown_on_exit=False)
            if otlp_endpoint:
                self._provider.add_span_processor(_otlp_span_processor(otlp_endpoint))
        self.tracer = self._provider.get_tracer("webhooks", __version__)

    @contextlib.contextmanager
    def attempt_span(self, attributes: dict[str, str | int], parent: TraceContext | None = None
                     ) -> Iterator[tuple[Span, dict]]:
        """Trace one attempt; yield its span and the headers (`traceparent`) carrying it.

        With a `parent` (the producer's trace context stored with the event) the attempt is
        its child and the headers continue its trace, `tracestate` included. Without an
        exporter no span is recorded anywhere, so none is built: the endpoint still gets a
        valid `traceparent` (in the producer's trace, or a fresh unsampled one) to
        correlate its own logs.
        """
        if not self.exporting:
            span_id = random.getrandbits(64) or 1
            if parent is None:
                trace_id = random.getrandbits(128) or 1
                yield INVALID_SPAN, {"traceparent": f"00-{trace_id:032x}-{span_id:016x}-00"}
                return
            carrier = {"traceparent": child_traceparent(parent, span_id)}
            if parent.state:
                carrier["tracestate"] = parent.state
            yield INVALID_SPAN, carrier
            return
        context = None
        if parent is not None:
            context = _W3C.extract({"traceparent": parent.parent,
                                    **({"tracestate": parent.state} if parent.state else {})})
        with self.tracer.start_as_current_span(
            "webhook.attempt", context=context, kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            carrier = {}
            _W3C.inject(carrier)
            yield span, carrier

    def flush(self, timeout_millis: int) -> None:
        """Export the spans still waiting for the collector."""
        self._provider.force_flush(timeout_millis=timeout_millis)

    def shutdown(self) -> None:
        """Stop exporting spans."""
        self._provider.shutdown()


def _otlp_span_processor(endpoint: str):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces"))
