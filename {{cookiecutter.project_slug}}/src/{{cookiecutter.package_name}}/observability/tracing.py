"""OpenTelemetry tracing (TRACING=true; the `tracing` extra): one span per request, one per
database call, W3C traceparent honoured, and the trace id on the request's log lines.

Imported only when TRACING=true, so a service without it loads none of OpenTelemetry. The ASGI
middleware runs without its receive/send child spans: two more spans per request (three per
body) that time the socket, not the service. The probes and /metrics are not traced (the paths
come from the middleware stack): the probes and the scraper would fill the traces. The exporter takes its address and headers from the
standard variables (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, ...).
"""

from collections.abc import Iterable

from opentelemetry import trace
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Receive, Scope, Send
from structlog.contextvars import bind_contextvars, reset_contextvars

from ..settings import Settings


def _sampler(settings: Settings) -> Sampler:
    ratio = TraceIdRatioBased(settings.otel_traces_sampler_arg)
    root = {"always_on": ALWAYS_ON, "always_off": ALWAYS_OFF}.get(
        settings.otel_traces_sampler.removeprefix("parentbased_"), ratio
    )
    return ParentBased(root) if settings.otel_traces_sampler.startswith("parentbased_") else root


class TraceIdLogMiddleware:
    """Bind the current trace id to the log context, so the access log line carries it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        context = trace.get_current_span().get_span_context()
        if scope["type"] != "http" or not context.is_valid:
            await self.app(scope, receive, send)
            return
        tokens = bind_contextvars(trace_id=format(context.trace_id, "032x"))
        try:
            await self.app(scope, receive, send)
        finally:
            reset_contextvars(**tokens)


class Tracing:
    """The tracer provider of one app; `start()` and `stop()` belong in its lifespan."""

    def __init__(self, settings: Settings) -> None:
        self.provider = TracerProvider(
            resource=Resource.create({SERVICE_NAME: settings.otel_service_name}),
            sampler=_sampler(settings),
        )
        if settings.otel_traces_exporter == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter,
            )

            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))

    def middleware(self, untraced: Iterable[str]) -> list[Middleware]:
        """Outermost: the request span covers the whole stack; `untraced` paths get no span."""
        return [
            Middleware(
                OpenTelemetryMiddleware,
                tracer_provider=self.provider,
                exclude_spans=["receive", "send"],
                excluded_urls=",".join(sorted(untraced)),
            ),
            Middleware(TraceIdLogMiddleware),
        ]

    def start(self) -> None:
        # asyncpg is patched process-wide; stop() undoes it.
        AsyncPGInstrumentor().instrument(tracer_provider=self.provider)  # type: ignore[no-untyped-call]

    def stop(self) -> None:
        AsyncPGInstrumentor().uninstrument()  # type: ignore[no-untyped-call]
        self.provider.shutdown()  # flushes the spans still queued for export
