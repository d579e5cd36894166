"""Tracing (TRACING=true, the `tracing` extra): spans per request and per database call, collected
by an in-memory exporter, the same OpenTelemetry's own ASGI middleware and asyncpg instrumentation
make on the same requests; none for a request the sampler drops; W3C traceparent honoured both
ways; the tracing SDK not even loaded while off."""

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from opentelemetry.instrumentation._semconv import _OpenTelemetrySemanticConventionStability
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from {{ cookiecutter.package_name }}.health.routes import PROBE_PATHS
from {{ cookiecutter.package_name }}.observability.tracing import Tracing
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, serve, started
from ..declared import change, new_body

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SAMPLED_PARENT = {"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}


@pytest.fixture(scope="module")
async def traced(
    database_url: str, auth_settings: dict[str, Any], auth_headers: dict[str, str]
) -> AsyncIterator[tuple[httpx.AsyncClient, InMemorySpanExporter]]:
    """An app that samples no new trace (ratio 0) but follows a sampled parent."""
    settings = Settings(
        database_url=database_url,
        app_env="test",
        tracing=True,
        otel_traces_exporter="none",
        otel_traces_sampler_arg=0.0,
        **auth_settings,
    )
    tracing = Tracing(settings)
    app = create_app(settings, tracing=tracing)
    exporter = InMemorySpanExporter()
    tracing.provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with started(app, auth_headers) as client:
        yield client, exporter


def _spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    spans = list(exporter.get_finished_spans())
    exporter.clear()
    return spans


async def test_a_sampled_traceparent_gets_one_request_span_and_one_per_database_call(
    traced: tuple[httpx.AsyncClient, InMemorySpanExporter],
) -> None:
    client, exporter = traced
    _spans(exporter)
    response = await client.post(BASE, json=new_body(), headers=SAMPLED_PARENT)
    assert response.status_code == 201
    spans = _spans(exporter)
    (server,) = [span for span in spans if span.kind is SpanKind.SERVER]
    database = [span for span in spans if span.kind is SpanKind.CLIENT]
    assert len(spans) == 2  # no receive/send spans
    assert len(database) == 1
    request, query = server.context, database[0].context
    assert request is not None
    assert query is not None
    assert format(request.trace_id, "032x") == TRACE_ID
    assert server.parent is not None
    assert format(server.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert database[0].parent is not None
    assert database[0].parent.span_id == request.span_id
    assert dict(server.attributes or {})["http.status_code"] == 201
    assert "INSERT" in str(dict(database[0].attributes or {})["db.statement"])


async def test_an_unsampled_traceparent_is_followed_and_records_nothing(
    traced: tuple[httpx.AsyncClient, InMemorySpanExporter],
) -> None:
    client, exporter = traced
    _spans(exporter)
    unsampled = {"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-00"}
    assert (await client.post(BASE, json=new_body(), headers=unsampled)).status_code == 201
    assert _spans(exporter) == []


def _described(span: ReadableSpan) -> tuple[Any, ...]:
    """What a span says, without its times and ids (nor an exception's stack trace)."""
    events = [
        (
            event.name,
            {k: v for k, v in (event.attributes or {}).items() if k != "exception.stacktrace"},
        )
        for event in span.events
    ]
    return (span.name, span.kind, dict(span.attributes or {}), span.status.status_code,
            span.status.description, events)  # fmt: skip


async def _requests(
    client: httpx.AsyncClient, exporter: InMemorySpanExporter, row: str
) -> tuple[list[Any], int]:
    """A read, a miss, a page, a create, a refused create, an update and a delete of a missing
    row: per request, its server span and, in order, its children, as they describe themselves;
    and how many spans of other traces came meanwhile (statements outside any request)."""
    sent = [
        client.get(f"{BASE}/{row}"),
        client.get(f"{BASE}/987654321"),
        client.get(BASE, params={"limit": 3}),
        client.post(BASE, json=new_body(), headers={"user-agent": "probe-test/1"}),
        # Refused whatever the fields: `{}` is a whole create where no field is required.
        client.post(BASE, json=[]),
        client.patch(f"{BASE}/{row}", json=change()),
        client.delete(f"{BASE}/987654321"),
    ]
    described, others = [], 0
    _spans(exporter)
    for request in sent:
        await request
        spans = _spans(exporter)
        (server,) = [span for span in spans if span.kind is SpanKind.SERVER]
        assert server.context is not None
        children = [
            span
            for span in spans
            if span.parent is not None and span.parent.span_id == server.context.span_id
        ]
        others += len(spans) - 1 - len(children)
        described.append([_described(server), *map(_described, children)])
    return described, others


async def _ours_and_theirs(
    database_url: str, auth_settings: dict[str, Any], auth_headers: dict[str, str]
) -> tuple[list[Any], list[Any], int]:
    """The spans of `_requests` with the service's tracing, and with OpenTelemetry's own
    instrumentation in its place; and how many of the service's came outside any request."""
    settings = Settings(
        database_url=database_url, app_env="test", tracing=True, otel_traces_exporter="none",
        otel_traces_sampler="always_on", **auth_settings,
    )  # fmt: skip
    tracing = Tracing(settings)
    exporter = InMemorySpanExporter()
    tracing.provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with started(create_app(settings, tracing=tracing), auth_headers) as client:
        row = str((await client.post(BASE, json=new_body())).json()["id"])
        ours, outside = await _requests(client, exporter, row)
    # The reference: the service without its tracing, OpenTelemetry's ASGI middleware outermost
    # in its stack (where this service had it) and asyncpg instrumented, on a provider of its own.
    provider, reference = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(reference))
    app: FastAPI = create_app(settings.model_copy(update={"tracing": False}))
    app.add_middleware(
        OpenTelemetryMiddleware,
        tracer_provider=provider,
        exclude_spans=["receive", "send"],
        excluded_urls=",".join(sorted(PROBE_PATHS)),
    )
    instrumentor = AsyncPGInstrumentor()  # type: ignore[no-untyped-call]
    instrumentor.instrument(tracer_provider=provider)
    try:
        async with started(app, auth_headers) as client:
            theirs, _ = await _requests(client, reference, row)
    finally:
        instrumentor.uninstrument()
    return ours, theirs, outside


async def test_kept_spans_are_those_opentelemetrys_instrumentation_made_for_the_same_requests(
    database_url: str, auth_settings: dict[str, Any], auth_headers: dict[str, str]
) -> None:
    ours, theirs, outside = await _ours_and_theirs(database_url, auth_settings, auth_headers)
    assert [len(spans) for spans in ours] == [len(spans) for spans in theirs]
    for mine, reference_spans in zip(ours, theirs, strict=True):
        assert mine == reference_spans
    assert sum(len(spans) - 1 for spans in ours) >= 6  # the database spans were compared too
    # The instrumentation also traced statements outside any request (the lifespan's sweep of
    # expired keys) as traces of their own; a statement here has a span under a kept one only.
    assert outside == 0


@pytest.mark.xfail(
    strict=True,
    reason="the service's spans hold what the instrumentation's do by default only: the variables "
    "it reads for more (OTEL_SEMCONV_STABILITY_OPT_IN=http|database, the stable conventions; "
    "OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST|RESPONSE) are ignored",
)
@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_SEMCONV_STABILITY_OPT_IN", "http"),
        ("OTEL_SEMCONV_STABILITY_OPT_IN", "database"),
        ("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_REQUEST", "user-agent"),
        ("OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_SERVER_RESPONSE", "etag"),
    ],
    ids=["http conventions", "database conventions", "request headers", "response headers"],
)
async def test_kept_spans_hold_what_the_instrumentation_variables_ask_for(
    database_url: str,
    auth_settings: dict[str, Any],
    auth_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
) -> None:
    # OpenTelemetry reads the conventions once a process: its reading is made again for this test.
    monkeypatch.setenv(variable, value)
    monkeypatch.setattr(_OpenTelemetrySemanticConventionStability, "_initialized", False)
    monkeypatch.setattr(
        _OpenTelemetrySemanticConventionStability, "_OTEL_SEMCONV_STABILITY_SIGNAL_MAPPING", {}
    )
    ours, theirs, _ = await _ours_and_theirs(database_url, auth_settings, auth_headers)
    assert ours == theirs


async def test_the_ratio_sampler_at_zero_records_no_new_trace(
    traced: tuple[httpx.AsyncClient, InMemorySpanExporter],
) -> None:
    client, exporter = traced
    _spans(exporter)
    assert (await client.get(BASE)).status_code == 200
    assert _spans(exporter) == []


async def test_probes_are_not_traced(
    traced: tuple[httpx.AsyncClient, InMemorySpanExporter],
) -> None:
    client, exporter = traced
    _spans(exporter)
    await client.get("/healthz", headers=SAMPLED_PARENT)
    assert _spans(exporter) == []


# Bytes the middleware's header decoding fails on: not UTF-8, and a backslash escape cut short.
NOT_TEXT = b"\xff\\x"


@pytest.mark.parametrize(
    "headers",
    [
        {"traceparent": NOT_TEXT},
        {"baggage": NOT_TEXT},
        {**SAMPLED_PARENT, "user-agent": NOT_TEXT},
    ],
    ids=["a traceparent", "a baggage", "a sampled request's user agent"],
)
async def test_a_header_that_is_not_text_never_fails_the_request(
    traced: tuple[httpx.AsyncClient, InMemorySpanExporter], headers: dict[str, Any]
) -> None:
    # Read before anything else answers: a failure here was uvicorn's plain-text 500 for any
    # request (the propagation headers are read for every one), without a problem or a log line.
    client, exporter = traced
    response = await client.get(BASE, headers=headers)
    assert response.status_code == 200, response.text
    _spans(exporter)


def test_the_access_log_line_carries_the_trace_id(
    database_url: str, tmp_path: Path, auth_env: dict[str, str], auth_headers: dict[str, str]
) -> None:
    log = tmp_path / "server.log"
    env = {
        **auth_env,
        "DATABASE_URL": database_url,
        "TRACING": "true",
        "OTEL_TRACES_EXPORTER": "none",
    }
    with serve(log, **env) as base:
        headers = {**auth_headers, **SAMPLED_PARENT, "x-request-id": "traced-line"}
        assert httpx.get(f"{base}{BASE}", headers=headers).status_code == 200
    (line,) = [json.loads(line) for line in log.read_text().splitlines() if "traced-line" in line]
    assert line["trace_id"] == TRACE_ID


@pytest.mark.parametrize("tracing", [False, True])
def test_the_tracing_sdk_and_instrumentation_are_imported_only_when_tracing_is_on(
    tracing: bool,
) -> None:
    # FastAPI itself imports opentelemetry-api (its native telemetry, off without a global
    # provider); the SDK, the exporter and the instrumentations are this extra's.
    script = (
        "import sys\n"
        "from {{ cookiecutter.package_name }}.serving.app import create_app\n"
        "from {{ cookiecutter.package_name }}.settings import Settings\n"
        f"create_app(Settings(app_env='dev', tracing={tracing}, otel_traces_exporter='none'))\n"
        "loaded = {name.split('.')[1] for name in sys.modules if name.startswith('opentelemetry.')}\n"
        "print(sorted(loaded & {'sdk', 'instrumentation', 'exporter'}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    expected = "['instrumentation', 'sdk']" if tracing else "[]"
    assert result.stdout.strip().splitlines()[-1] == expected
