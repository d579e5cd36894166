"""The worker's collectors, served on its own /metrics (METRICS_PORT of the worker's pod).

Jobs done, failed and retried per entrypoint, the time from enqueue to done (the latency a user
of the event sees, queueing included), and the queue's depth per status, read from the table on
every scrape interval by the worker (`sample_depth`).
"""

from collections.abc import Awaitable, Callable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from starlette.requests import Request
from starlette.responses import Response

# Enqueue to done, in seconds: a delivery on an idle worker takes milliseconds; a backlog or
# retries after failed deliveries take minutes.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800)
# The statuses a job waits or is held in; done ones leave the queue table.
DEPTH = """
    SELECT status::text AS status, count(*) AS jobs
      FROM pgqueuer
     WHERE status IN ('queued', 'picked', 'failed')
     GROUP BY status
"""
STATUSES = ("queued", "picked", "failed")


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
        self.depth = Gauge(
            "jobs_in_queue",
            "Jobs in the queue table by status.",
            ["status"],
            registry=self.registry,
        )

    def record_depth(self, rows: list[dict[str, object]]) -> None:
        counts = {str(row["status"]): row["jobs"] for row in rows}
        for status in STATUSES:
            jobs = counts.get(status, 0)
            self.depth.labels(status).set(jobs if isinstance(jobs, int) else 0)

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        async def metrics(request: Request) -> Response:
            return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)

        return metrics
