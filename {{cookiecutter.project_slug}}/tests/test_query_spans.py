"""query_spans.py: a statement run under a recording span gets the span OpenTelemetry's asyncpg
instrumentation makes for it (run on the same statements as the reference), and one run under
a dropped request, or under no recording span, gets none."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
import structlog
from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from structlog.testing import capture_logs

from {{ cookiecutter.package_name }} import asyncpg_internals
from {{ cookiecutter.package_name }}.db import NoResetConnection
from {{ cookiecutter.package_name }}.observability.request_spans import UNRECORDED
from {{ cookiecutter.package_name }}.observability.tracing import Tracing
from {{ cookiecutter.package_name }}.query_spans import span_attributes, traced
from {{ cookiecutter.package_name }}.settings import Settings

Statements = Callable[[asyncpg.Connection], Awaitable[None]]


async def _statements(connection: asyncpg.Connection) -> None:
    """Each method the instrumentation wraps, a transaction, a leading comment, a failure."""
    await connection.fetchrow("SELECT $1::int AS one, $2::text AS two", 1, "two")
    await connection.fetchval("SELECT 42")
    await connection.fetch("SELECT generate_series(1, $1)", 3)
    await connection.execute("CREATE TEMPORARY TABLE IF NOT EXISTS spans_t (n int)")
    await connection.execute("INSERT INTO spans_t VALUES ($1)", 5)
    await connection.executemany("INSERT INTO spans_t VALUES ($1)", [(1,), (2,)])
    async with connection.transaction():
        await connection.execute("DELETE FROM spans_t")
    await connection.fetchval("/* tagged */ SELECT 1")
    with pytest.raises(asyncpg.DivisionByZeroError):
        await connection.fetchval("SELECT 1 / $1", 0)


def _described(span: ReadableSpan) -> tuple[Any, ...]:
    """What a span says, without its times and ids (and the exception's stack trace, which names
    the frames of the code that recorded it)."""
    events = [
        (
            event.name,
            {k: v for k, v in (event.attributes or {}).items() if k != "exception.stacktrace"},
        )
        for event in span.events
    ]
    stacktraces = [
        bool((event.attributes or {}).get("exception.stacktrace")) for event in span.events
    ]
    return (
        span.name,
        span.kind,
        dict(span.attributes or {}),
        span.status.status_code,
        span.status.description,
        events,
        stacktraces,
    )


async def _spans_of(
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    url: str,
    connection_class: type[asyncpg.Connection],
    statements: Statements,
    *,
    own_trace_only: bool = False,
) -> list[tuple[Any, ...]]:
    """The spans `statements` make under a request's span; with `own_trace_only`, the spans of
    other traces (an instrumentation that traces every connection of the process) left out."""
    connection = await asyncpg.connect(url, connection_class=connection_class)
    try:
        with provider.get_tracer(__name__).start_as_current_span("request") as request:
            await statements(connection)
    finally:
        await connection.close()
    spans = exporter.get_finished_spans()
    context = request.get_span_context()
    children = [span for span in spans if span.name != "request"]
    if own_trace_only:
        children = [s for s in children if s.context and s.context.trace_id == context.trace_id]
    for span in children:
        assert span.parent is not None
        assert span.parent.span_id == context.span_id  # a child of the current span
        assert span.context is not None
        assert span.context.trace_id == context.trace_id
        assert span.context.trace_flags.sampled
    return [_described(span) for span in children]


@pytest.fixture
def tracing() -> Tracing:
    settings = Settings(
        app_env="dev", tracing=True, otel_traces_exporter="none", otel_traces_sampler="always_on"
    )
    return Tracing(settings)


@pytest.fixture
def exported(tracing: Tracing) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    tracing.provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


async def _reference(url: str, statements: Statements) -> list[tuple[Any, ...]]:
    """The spans OpenTelemetry's asyncpg instrumentation makes for `statements`.

    Its `instrument()` wraps asyncpg's methods, so every connection of the process makes spans
    meanwhile: the session app's idempotency sweep, run by the same event loop, makes a trace of
    its own whenever its minute comes round during the statements. Those are left out."""
    instrumentor = AsyncPGInstrumentor()  # type: ignore[no-untyped-call]
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    try:
        return await _spans_of(
            provider, exporter, url, NoResetConnection, statements, own_trace_only=True
        )
    finally:
        instrumentor.uninstrument()


async def test_a_statements_span_is_the_one_opentelemetrys_instrumentation_makes(
    database_url: str, tracing: Tracing, exported: InMemorySpanExporter
) -> None:
    # Ours first: the traced class reads asyncpg's methods when made, before any patching.
    connection_class = traced(NoResetConnection, tracing.recorder(__name__))
    ours = await _spans_of(tracing.provider, exported, database_url, connection_class, _statements)
    theirs = await _reference(database_url, _statements)
    assert len(ours) == 11  # one a statement, BEGIN and COMMIT included
    assert ours == theirs
    assert ours[-1][3].name == "ERROR"  # the failure was put to the test


async def test_the_reference_leaves_out_the_statements_other_tasks_run_meanwhile(
    database_url: str,
) -> None:
    # As the session app's sweep does, at its own times: here all through the reference's run.
    alone = await _reference(database_url, _statements)
    other = await asyncpg.connect(database_url)
    stop = asyncio.Event()

    async def busy() -> int:
        runs = 0
        while not stop.is_set():
            await other.fetchval("SELECT 1")
            runs += 1
        return runs

    running = asyncio.create_task(busy())
    try:
        meanwhile = await _reference(database_url, _statements)
    finally:
        stop.set()
        runs = await running
        await other.close()
    assert runs > 0
    assert meanwhile == alone


@pytest.mark.parametrize(
    "limits",
    [
        {"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "12"},
        {"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "20", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "3"},
        {"OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": "1"},
        {"OTEL_SPAN_EVENT_COUNT_LIMIT": "0"},
    ],
    ids=["value length", "span attributes", "event attributes", "events"],
)
async def test_a_statements_span_keeps_the_span_limits_the_sdk_applies(
    database_url: str, monkeypatch: pytest.MonkeyPatch, limits: dict[str, str]
) -> None:
    # OTEL_*_LIMIT cut what the SDK's spans hold (a statement's text, most often): the same here.
    for name, value in limits.items():
        monkeypatch.setenv(name, value)
    settings = Settings(
        app_env="dev", tracing=True, otel_traces_exporter="none", otel_traces_sampler="always_on"
    )
    tracing, exporter = Tracing(settings), InMemorySpanExporter()
    tracing.provider.add_span_processor(SimpleSpanProcessor(exporter))
    connection_class = traced(NoResetConnection, tracing.recorder(__name__))
    ours = await _spans_of(tracing.provider, exporter, database_url, connection_class, _statements)
    assert ours == await _reference(database_url, _statements)


async def _cut_off(connection: asyncpg.Connection) -> None:
    """A statement cancelled by a deadline (asyncio.timeout), as a request's deadline cuts one."""
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await connection.fetchval("SELECT pg_sleep(5)")


async def test_a_statement_cut_off_by_a_deadline_gets_the_span_the_instrumentation_makes(
    database_url: str, tracing: Tracing, exported: InMemorySpanExporter
) -> None:
    # The statement that made a request late is the one its trace must show.
    connection_class = traced(NoResetConnection, tracing.recorder(__name__))
    ours = await _spans_of(tracing.provider, exported, database_url, connection_class, _cut_off)
    theirs = await _reference(database_url, _cut_off)
    assert len(theirs) == 1
    assert ours == theirs


async def test_a_statement_under_no_recording_span_or_in_a_dropped_request_gets_none(
    database_url: str, tracing: Tracing, exported: InMemorySpanExporter
) -> None:
    connection_class = traced(NoResetConnection, tracing.recorder(__name__))
    connection = await asyncpg.connect(database_url, connection_class=connection_class)
    try:
        assert await connection.fetchval("SELECT 1") == 1
        token = UNRECORDED.set(True)
        try:
            with tracing.tracer(__name__).start_as_current_span("kept, yet inside a dropped one"):
                assert await connection.fetchval("SELECT 2") == 2
        finally:
            UNRECORDED.reset(token)
    finally:
        await connection.close()
    assert [span.name for span in exported.get_finished_spans()] == [
        "kept, yet inside a dropped one"
    ]


def test_a_connection_without_asyncpgs_pieces_gets_spans_without_its_target_said_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An asyncpg that keeps its address and parameters elsewhere: the statement's span still goes.
    class Reshaped:
        pass

    monkeypatch.setattr(asyncpg_internals, "_logged", set())  # said once a process: this once
    # A logger not used yet: the module's may be bound to the configuration already (structlog
    # caches a logger on first use), which capture_logs would not see.
    fresh = structlog.get_logger(asyncpg_internals.__name__)
    monkeypatch.setattr(asyncpg_internals, "logger", fresh)

    with capture_logs() as logs:
        for _ in range(2):
            assert span_attributes(Reshaped(), "SELECT 1") == {
                "db.system": "postgresql",
                "db.statement": "SELECT 1",
            }
    assert [log["event"] for log in logs] == ["database_spans_without_target"]
