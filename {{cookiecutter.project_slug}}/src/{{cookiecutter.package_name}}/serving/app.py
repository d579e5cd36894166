"""create_app(settings): the FastAPI application and the lifespan that owns the database pool."""

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING

import structlog
from fastapi import FastAPI

from .. import __version__
from ..db import Database, NoResetConnection
{%- if cookiecutter.auth == "jwt" %}
from ..kit.auth import verifying_tokens
{%- endif %}
from ..kit.cursor_keys import load_cursor_keys
from ..kit.errors import install_error_handlers
from ..kit.idempotency import sweep_expired_keys
from ..kit.openapi import operation_id
from ..kit.routing import build_route_handlers
from ..kit.state import STATE_KEY, ServiceState
from ..observability.logging import configure_logging
from ..observability.metrics import Metrics
from ..settings import Settings
from .middleware import middleware_stack
from .resources import ROUTERS

if TYPE_CHECKING:
    from ..observability.tracing import Tracing
    from .probes import Probes

APPLICATION_NAME = "{{ cookiecutter.project_slug }}"
logger = structlog.get_logger(__name__)
# What the lifespan yields: Starlette's lifespan state, copied into every request's scope.
State = dict[str, ServiceState]
# How often each pod removes expired idempotency keys (a few short DELETEs when there are any).
IDEMPOTENCY_SWEEP_SECONDS = 60.0


def _tune_gc() -> None:
    """Once start-up is done: hide its objects from the collector, and collect young ones less often.

    by-id p99 at ~70 % of the knee (wrk paced, server on one core, medians of 4 runs): 9.6 ms as is,
    8.2 ms with freeze() alone, 12.1 ms with thresholds alone, 6.6 ms with both.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def _tracing(settings: Settings) -> "Tracing | None":
    if not settings.tracing:
        return None
    # Only here: with TRACING off, OpenTelemetry (an optional extra) is never imported.
    from ..observability.tracing import Tracing

    return Tracing(settings)


def _connection_class(tracing: "Tracing | None") -> type[NoResetConnection]:
    if tracing is None:
        return NoResetConnection
    # Only here, as OpenTelemetry: a span per statement under a recording span.
    from ..query_spans import traced

    return traced(NoResetConnection, tracing.recorder(traced.__module__))


def create_app(
    settings: Settings | None = None,
    *,
    metrics: Metrics | None = None,
    tracing: "Tracing | None" = None,
    probes: "Probes | None" = None,
) -> FastAPI:
    """The app; `metrics` and `tracing` are made from the settings unless given (the server and
    the tests pass their own to read them). `probes` (the server's, on the metrics port) get the
    database while the lifespan holds it."""
    settings = settings or Settings()
    configure_logging(settings)
    metrics = metrics or Metrics()
    tracing = tracing or _tracing(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[State]:
        database = await Database.connect(
            settings,
            APPLICATION_NAME,
            on_acquire_wait=metrics.acquire_wait.observe,
            connection_class=_connection_class(tracing),
        )
        metrics.watch_pool(database.pool)
        logger.info("pool_opened", min_size=settings.pool_min_size, max_size=settings.pool_max_size)
        build_route_handlers(app)
        # The cursors' key every pod shares, from the database unless CURSOR_SECRET overrides it.
        await load_cursor_keys(database, settings.cursor_secret)
        loop_lag = asyncio.create_task(metrics.watch_loop_lag())
        unwatch_collector = metrics.watch_collector()
        sweeping = asyncio.create_task(sweep_expired_keys(database, IDEMPOTENCY_SWEEP_SECONDS))
        _tune_gc()
        if probes is not None:
            probes.database = database
        try:
{%- if cookiecutter.auth == "jwt" %}
            async with verifying_tokens(settings) as verifier:
                yield {STATE_KEY: ServiceState(database, settings, verifier)}
{%- else %}
            yield {STATE_KEY: ServiceState(database, settings)}
{%- endif %}
        finally:
            if probes is not None:
                probes.database = None
            for task in (sweeping, loop_lag):
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            unwatch_collector()
            await database.close()
            logger.info("pool_closed")
            if tracing is not None:
                tracing.stop()

    app = FastAPI(
        title="{{ cookiecutter.project_name }}",
        description="{{ cookiecutter.description }}",
        version=__version__,
        lifespan=lifespan,
        middleware=middleware_stack(settings, metrics, tracing),
        # FastAPI's built-in OpenTelemetry checks the global providers on every request when on
        # (2 % of a by-id request, py-spy); this service exports Prometheus metrics instead, and
        # TRACING=true traces through observability/tracing.py with a provider of its own.
        telemetry={"tracing": False, "metrics": False, "logs": False},
        # Off in production unless DOCS_IN_PROD: the schema maps every route for whoever asks.
        openapi_url="/openapi.json" if settings.docs_served else None,
        # A slash redirect is built from the Host header: an open redirect. /x/ is a 404 instead.
        redirect_slashes=False,
        # Operation ids are the route functions' names: what the generated clients call them.
        generate_unique_id_function=operation_id,
    )
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    # /metrics is served on METRICS_PORT by serving/metrics_listener.py, never here.
    return app
