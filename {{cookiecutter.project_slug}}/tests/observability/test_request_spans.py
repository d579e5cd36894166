"""request_spans.py around a five-line app: a kept request gets its span (current while the app
runs, ended with the answer), a dropped one none, only the context it propagates; W3C
traceparent honoured both ways."""

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import propagate, trace
from opentelemetry.instrumentation.propagators import (
    TraceResponsePropagator,
    get_global_response_propagator,
    set_global_response_propagator,
)
from opentelemetry.propagators.textmap import default_getter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import Message, Receive, Scope, Send
from structlog.contextvars import get_contextvars

from {{ cookiecutter.package_name }}.observability.request_spans import UNRECORDED
from {{ cookiecutter.package_name }}.observability.tracing import Tracing
from {{ cookiecutter.package_name }}.settings import Settings

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def _traceparent(flags: str) -> tuple[bytes, bytes]:
    return b"traceparent", f"00-{TRACE_ID}-{PARENT_ID}-{flags}".encode()


class Seen:
    """What the five-line app saw of the trace while it ran."""

    span: Any = None
    log_context: dict[str, Any]
    unrecorded: bool


def _app(seen: Seen, status: int = 200, error: Exception | None = None) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.span, seen.log_context = trace.get_current_span(), get_contextvars()
        seen.unrecorded = UNRECORDED.get()
        if error is not None:
            raise error
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


def _tracing(sampler: str = "parentbased_traceidratio", ratio: float = 0.0) -> Tracing:
    settings = Settings(
        app_env="dev",
        tracing=True,
        otel_traces_exporter="none",
        otel_traces_sampler=sampler,
        otel_traces_sampler_arg=ratio,
    )
    return Tracing(settings)


async def _request(
    tracing: Tracing, app: Any, *headers: tuple[bytes, bytes], path: str = "/items/1"
) -> tuple[list[Any], list[Message]]:
    """Run one GET through the tracing layer around `app`: the spans it exported, what it sent."""
    exporter = InMemorySpanExporter()
    tracing.provider.add_span_processor(SimpleSpanProcessor(exporter))
    (middleware,) = tracing.middleware(["/healthz"])
    layer = middleware.cls(app, *middleware.args, **middleware.kwargs)
    scope = {
        "type": "http", "http_version": "1.1", "scheme": "http", "method": "GET", "path": path,
        "query_string": b"", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 5000),
        "headers": [(b"host", b"example.com"), *headers],
    }  # fmt: skip
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await layer(scope, receive, send)
    return list(exporter.get_finished_spans()), sent


@pytest.fixture
def response_propagator() -> Iterator[None]:
    before = get_global_response_propagator()  # type: ignore[no-untyped-call]
    set_global_response_propagator(TraceResponsePropagator())  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        set_global_response_propagator(before)  # type: ignore[no-untyped-call]


async def test_a_dropped_root_request_records_nothing_and_runs_under_its_own_trace() -> None:
    seen = Seen()
    spans, sent = await _request(_tracing(ratio=0.0), _app(seen))
    assert spans == []
    assert sent[0]["status"] == 200
    context = seen.span.get_span_context()
    assert not seen.span.is_recording()
    assert context.is_valid  # a trace of its own, to propagate
    assert not context.trace_flags.sampled
    assert seen.unrecorded
    assert "trace_id" not in seen.log_context  # no trace to look up
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left behind


async def test_an_unsampled_traceparent_is_followed_and_records_nothing() -> None:
    seen = Seen()
    spans, _ = await _request(_tracing(ratio=1.0), _app(seen), _traceparent("00"))
    assert spans == []
    context = seen.span.get_span_context()
    assert format(context.trace_id, "032x") == TRACE_ID
    assert format(context.span_id, "016x") != PARENT_ID  # a span id of its own
    assert not context.trace_flags.sampled


async def test_a_sampled_traceparent_gets_a_server_span_current_for_the_app() -> None:
    seen = Seen()
    spans, _ = await _request(
        _tracing(ratio=0.0), _app(seen), _traceparent("01"), (b"tracestate", b"v=1")
    )
    (span,) = spans
    assert span.kind is SpanKind.SERVER
    assert span.name == "GET /items/1"
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert format(span.parent.span_id, "016x") == PARENT_ID
    assert span.context.trace_state.to_header() == "v=1"
    assert seen.span.get_span_context() == span.context
    assert seen.log_context["trace_id"] == TRACE_ID
    assert not seen.unrecorded
    assert dict(span.attributes)["http.status_code"] == 200
    assert span.status.status_code is StatusCode.UNSET


async def test_a_kept_root_has_the_trace_id_its_decision_was_made_on() -> None:
    # Half the roots kept: a kept span whose trace id the ratio would drop was decided on
    # another id than it carries.
    tracing, bound = _tracing("traceidratio", 0.5), TraceIdRatioBased.get_bound_for_rate(0.5)
    kept = 0
    for _ in range(200):
        spans, _ = await _request(tracing, _app(Seen()))
        for span in spans:
            assert span.context.trace_id & (2**64 - 1) < bound
            kept += 1
    assert 50 < kept < 150


async def test_a_server_error_answer_and_an_exception_are_errors_of_the_span() -> None:
    spans, _ = await _request(_tracing(ratio=1.0), _app(Seen(), status=503))
    assert spans[0].status.status_code is StatusCode.ERROR
    with pytest.raises(RuntimeError):
        await _request(_tracing(ratio=1.0), _app(Seen(), error=RuntimeError("boom")))


async def test_an_exception_is_recorded_on_the_span_it_escapes() -> None:
    tracing = _tracing(ratio=1.0)
    exporter = InMemorySpanExporter()
    tracing.provider.add_span_processor(SimpleSpanProcessor(exporter))
    with pytest.raises(RuntimeError):
        await _request(tracing, _app(Seen(), error=RuntimeError("boom")))
    (span,) = exporter.get_finished_spans()
    assert span.status.description == "RuntimeError: boom"
    assert [event.name for event in span.events] == ["exception"]


async def test_an_untraced_path_gets_no_span_and_no_context() -> None:
    seen = Seen()
    spans, _ = await _request(_tracing(ratio=1.0), _app(seen), path="/healthz")
    assert spans == []
    assert seen.span is trace.INVALID_SPAN


@pytest.mark.usefixtures("response_propagator")
@pytest.mark.parametrize("ratio", [0.0, 1.0])
async def test_the_response_propagator_names_the_requests_trace(ratio: float) -> None:
    seen = Seen()
    _, sent = await _request(_tracing(ratio=ratio), _app(seen), _traceparent("00"))
    headers = dict(sent[0]["headers"])
    assert TRACE_ID.encode() in headers[b"traceresponse"]


class _Counted(TraceContextTextMapPropagator):
    """W3C trace context, counting the extractions; `fields` as given."""

    def __init__(self, fields: set[str]) -> None:
        self.extracted = 0
        self._fields = fields

    def extract(self, carrier: Any, context: Any = None, getter: Any = default_getter) -> Any:
        self.extracted += 1
        return super().extract(carrier, context, getter)

    @property
    def fields(self) -> set[str]:
        return self._fields


@pytest.mark.parametrize(
    ("fields", "extracted"),
    [({"traceparent", "tracestate"}, [0, 1]), ({"traceparent", "x-trace-of-its-own"}, [1, 1])],
    ids=["W3C: only when a header is there", "another: on every request"],
)
async def test_the_propagator_extracts_whenever_its_headers_may_be_there(
    fields: set[str], extracted: list[int]
) -> None:
    counted, before = _Counted(fields), propagate.get_global_textmap()
    propagate.set_global_textmap(counted)
    try:
        tracing, counts = _tracing(ratio=0.0), []
        for headers in ([], [_traceparent("01")]):
            seen = Seen()
            spans, _ = await _request(tracing, _app(seen), *headers)
            counts.append(counted.extracted)
            counted.extracted = 0
        assert len(spans) == 1  # the sampled traceparent was read
    finally:
        propagate.set_global_textmap(before)
    assert counts == extracted
