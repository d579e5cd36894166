"""OpenTelemetry tracing (TRACING=true; the `tracing` extra): one span per sampled request, one per
database call under it, W3C traceparent honoured, and the trace id on the request's log lines.

Imported only when TRACING=true, so a service without it loads none of OpenTelemetry's SDK. The
request span is the service's own ASGI layer (request_spans.py) and the database spans its own
connection class (query_spans.py), on OpenTelemetry's API and SDK: a request the sampler drops
pays for the decision and the context it propagates, not for spans (+660 thousand instructions a
request at 10 % with OpenTelemetry's ASGI middleware and asyncpg instrumentation, `make
bench-instructions`; the template's performance page gives this design's). The probes and
/metrics are not traced (the paths come from the middleware stack): the probes and the scraper
would fill the traces. The exporter takes its address and headers from the standard variables
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, ...), the propagators from
OTEL_PROPAGATORS.
"""

from collections.abc import Iterable

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanLimits, SynchronousMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Tracer
from starlette.middleware import Middleware

from .. import __version__
from ..settings import Settings
from .recorded_spans import SpanRecorder, cutting
from .request_spans import DrawnIds, RequestSpans
from .sampling import ServiceSampler


class Tracing:
    """The tracer provider of one app; `stop()` belongs in its lifespan."""

    def __init__(self, settings: Settings) -> None:
        self.sampler = ServiceSampler(settings)
        self._ids = DrawnIds()
        # The provider's span processors, which recorded spans are handed to as well.
        self._processors = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
        # OTEL_*_LIMIT, read once: the provider's spans and the recorded ones are cut alike.
        self._limits = SpanLimits()
        self.provider = TracerProvider(
            resource=Resource.create({SERVICE_NAME: settings.otel_service_name}),
            sampler=self.sampler,
            id_generator=self._ids,
            active_span_processor=self._processors,
            span_limits=self._limits,
        )
        if settings.otel_traces_exporter == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter,
            )

            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))

    def tracer(self, scope: str) -> Tracer:
        """A tracer of this provider, named after the module whose spans it makes."""
        return self.provider.get_tracer(scope, __version__)

    def recorder(self, scope: str) -> SpanRecorder:
        """Where spans recorded whole at their end go, named after the module that makes them."""
        return SpanRecorder(
            self._processors, self.provider.resource, InstrumentationScope(scope, __version__),
            self._ids, cutting(self._limits),
        )  # fmt: skip

    def middleware(self, untraced: Iterable[str]) -> list[Middleware]:
        """Outermost: the request span covers the whole stack; `untraced` paths get no span."""
        return [
            Middleware(
                RequestSpans,
                tracer=self.tracer(RequestSpans.__module__),
                sampler=self.sampler,
                ids=self._ids,
                untraced=untraced,
            )
        ]

    def stop(self) -> None:
        self.provider.shutdown()  # flushes the spans still queued for export
