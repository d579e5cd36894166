"""The worker's collectors, served on its own /metrics (METRICS_PORT of the worker's pod).

Jobs done, failed and retried per entrypoint, the time from enqueue to done (the latency a user
of the event sees, queueing included), and the queue's depth per status, read from the table every
DEPTH_EVERY_SECONDS by the worker (run.py).
"""

import time
from collections.abc import Awaitable, Callable, Iterator

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

# Enqueue to done, in seconds: a delivery on an idle worker takes milliseconds; a backlog or
# retries after failed deliveries take minutes.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)
# The statuses a job waits or is held in; done ones leave the queue table. `queued` counts the
# jobs a worker could take now (pgqueuer's dequeue: execute_after < now()), the work the HPA and
# the backlog alert read; `scheduled` the queued ones not due yet, deliveries waiting out their
# retry backoff: a worker more would run none of them sooner.
DEPTH = """
    SELECT CASE WHEN status = 'queued' AND execute_after >= now() THEN 'scheduled'
                ELSE status::text
           END AS status,
           count(*) AS jobs
      FROM pgqueuer
     WHERE status IN ('queued', 'picked', 'failed')
     GROUP BY 1
"""
STATUSES = ("queued", "scheduled", "picked", "failed")
DEPTH_EVERY_SECONDS = 5.0
# A read older than this says nothing of the queue now (three reads missed): the worker takes no
# job (probes.py), and its depth is no longer exported.
STALE_AFTER_SECONDS = 3 * DEPTH_EVERY_SECONDS


class QueueDepth(Collector):
    """jobs_in_queue, per status, while the last read of the queue table is younger than
    `stale_after` seconds; no sample otherwise (a worker disconnected, or whose reads stopped
    coming back): the HPA and the backlog alert then read the other workers' depth, or none,
    rather than a count frozen when the connection went."""

    def __init__(self, stale_after: float) -> None:
        self._stale_after = stale_after
        self._counts: dict[str, int] = {}
        self._read_at: float | None = None

    def record(self, rows: list[dict[str, object]]) -> None:
        counts = dict.fromkeys(STATUSES, 0)
        for row in rows:
            jobs = row["jobs"]
            counts[str(row["status"])] = jobs if isinstance(jobs, int) else 0
        self._counts = counts
        self._read_at = time.monotonic()

    def forget(self) -> None:
        self._read_at = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "jobs_in_queue", "Jobs in the queue table by status.", labels=["status"]
        )
        read_at = self._read_at
        if read_at is not None and time.monotonic() - read_at < self._stale_after:
            for status, jobs in self._counts.items():
                family.add_metric([status], jobs)
        yield family


class JobMetrics:
    """The worker's collectors, in one registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        labels = ["entrypoint"]
        self.done = Counter("jobs_done", "Jobs run to success.", labels, registry=self.registry)
        self.failed = Counter(
            "jobs_failed", "Jobs that failed for good (held).", labels, registry=self.registry
        )
        self.retried = Counter(
            "jobs_retried", "Job runs that asked for a retry.", labels, registry=self.registry
        )
        self.latency = Histogram(
            "job_latency_seconds",
            "From enqueue to done.",
            labels,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.depth = QueueDepth(STALE_AFTER_SECONDS)
        self.registry.register(self.depth)

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        async def metrics(request: Request) -> Response:
            return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

        return metrics
