"""Prometheus metrics: per-route-template RED metrics, pool, event-loop lag, collector pauses and
the process.

Each app owns a registry of its own, so that two apps in one process (tests) never collide.
"""

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from starlette.requests import Request
from starlette.responses import Response

from .counted import CountedHistogram

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_WAIT_BUCKETS = (0.0001, 0.001, 0.005, 0.025, 0.1, 0.5, 2.0)
_LAG_INTERVAL_SECONDS = 0.5


class Metrics:
    """The service's collectors, in one registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        # Fed by every request: kept as plain counts, exposed at scrape time (counted.py).
        self.latency = CountedHistogram(
            "http_request_duration_seconds",
            "Time from the request reaching the app to the end of the response.",
            ("method", "route", "status"),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
            counter=("http_requests", "Requests answered."),
        )
        self.in_flight = Gauge(
            "http_requests_in_flight",
            "Requests admitted and being served, probes excluded (what MAX_IN_FLIGHT bounds).",
            registry=self.registry,
        )
        self.admission_limit = Gauge(
            "http_admission_limit",
            "MAX_IN_FLIGHT: requests served at once.",
            registry=self.registry,
        )
        self.admission_refused = Counter(
            "http_admission_refused",
            "Requests answered 503 at once because MAX_IN_FLIGHT requests were in flight.",
            registry=self.registry,
        )
        # One count for every client (serving/middleware/rate_limit.py): never a label per client.
        self.rate_limited = Counter(
            "http_rate_limited",
            "Requests answered 429 because their client was past RATE_LIMIT_RPS.",
            registry=self.registry,
        )
        self.rate_limit_clients = Gauge(
            "http_rate_limit_clients",
            "Clients with a rate-limit bucket in this process (at most RATE_LIMIT_CLIENTS).",
            registry=self.registry,
        )
        self.pool_size = Gauge("db_pool_size", "Open pool connections.", registry=self.registry)
        self.pool_idle = Gauge("db_pool_idle", "Idle pool connections.", registry=self.registry)
        self.pool_max = Gauge("db_pool_max_size", "Pool ceiling.", registry=self.registry)
        self.acquire_wait = CountedHistogram(
            "db_pool_acquire_wait_seconds",
            "Time a request waited for a pool connection.",
            buckets=_WAIT_BUCKETS,
            registry=self.registry,
        )
        self.loop_lag = Histogram(
            "event_loop_lag_seconds",
            f"How late a {_LAG_INTERVAL_SECONDS}s timer fires: time the loop was busy elsewhere.",
            buckets=_WAIT_BUCKETS,
            registry=self.registry,
        )
        # The tail's own suspects, beside the loop's lag: a collection stops every request.
        self.gc_pause = Histogram(
            "gc_pause_seconds",
            "Time each cyclic garbage collection stopped the process, by generation.",
            ("generation",),
            buckets=_WAIT_BUCKETS,
            registry=self.registry,
        )
        for generation in range(3):
            self.gc_pause.labels(str(generation))  # every series present from the first scrape
        self._gc_started = 0.0

    def watch_pool(self, pool: Any) -> None:
        # Read at scrape time: no per-request cost.
        self.pool_size.set_function(pool.get_size)
        self.pool_idle.set_function(pool.get_idle_size)
        self.pool_max.set_function(pool.get_max_size)

    async def watch_loop_lag(self) -> None:
        """Run until cancelled: sleep, then record how much later than asked the loop woke us."""
        while True:
            start = time.perf_counter()
            await asyncio.sleep(_LAG_INTERVAL_SECONDS)
            self.loop_lag.observe(max(0.0, time.perf_counter() - start - _LAG_INTERVAL_SECONDS))

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        # Two perf_counter calls a collection, none a request.
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            pause = time.perf_counter() - self._gc_started
            self.gc_pause.labels(str(info["generation"])).observe(pause)

    def watch_collector(self) -> Callable[[], None]:
        """Record every collection's pause (gc.callbacks) until the function returned is called."""
        gc.callbacks.append(self._on_collection)
        return lambda: gc.callbacks.remove(self._on_collection)

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        # async: a plain function would be sent to the thread pool by Starlette.
        async def metrics(request: Request) -> Response:
            return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

        return metrics
