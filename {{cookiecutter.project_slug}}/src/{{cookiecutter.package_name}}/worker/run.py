"""The worker's loop: one connection, pgqueuer's queue and scheduler on it, until SIGTERM.

SIGTERM (or SIGINT) stops taking jobs; the jobs in flight finish (within the pod's grace period,
which the chart sets above the longest job), then the process exits 0. A worker killed outright
leaves its jobs `picked`: their heartbeat stops, and after JOBS_HEARTBEAT_TIMEOUT_SECONDS another
worker takes them again. A lost connection (PostgreSQL restarted) ends the run; the worker
connects again, with a growing pause, and the backlog drains.

Every job runs on this process's event loop: a job's blocking work goes through
`asyncio.to_thread`, or the loop stops, the heartbeats with it, and the job is run a second time by
another worker (docs/jobs.md).
"""

import asyncio
import signal
import time
from datetime import timedelta

import asyncpg
import httpx
import structlog
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver
from pgqueuer.errors import RetryRequested
from pgqueuer.models import Job, Schedule
from pgqueuer.ports.driver import NotifyCallback

from ..kit.events import WEBHOOK
from ..observability.logging import configure_logging
from ..serving.metrics_listener import metrics_listener
from ..serving.protocol import guarded_protocol
from ..settings import Settings
from .metrics import DEPTH, DEPTH_EVERY_SECONDS, STALE_AFTER_SECONDS, JobMetrics
from .probes import WorkerProbes
from .webhook import deliver

logger = structlog.get_logger(__name__)
# The job log's upkeep: rows older than JOBS_LOG_RETENTION_HOURS go, on JOBS_PRUNE_CRON's ticks.
PRUNE = "prune_job_log"
PRUNE_LOG = "DELETE FROM pgqueuer_log WHERE created < now() - make_interval(secs => $1)"
RECONNECT_MAX_SECONDS = 10.0


class PollingDriver(AsyncpgDriver):
    """JOBS_LISTEN=false: no LISTEN, so the worker finds jobs by polling alone."""

    async def add_listener(self, channel: str, callback: NotifyCallback) -> None:
        return None


def queue(
    connection: "asyncpg.Connection[asyncpg.Record]",
    settings: Settings,
    client: httpx.AsyncClient,
    metrics: JobMetrics,
) -> PgQueuer:
    """pgqueuer on `connection`, with this service's entrypoints and schedules."""
    driver = (AsyncpgDriver if settings.jobs_listen else PollingDriver)(connection)
    pgq = PgQueuer(driver)

    @pgq.entrypoint(WEBHOOK, on_failure="hold")
    async def webhook(job: Job) -> None:
        try:
            await deliver(job, client=client, settings=settings)
        except RetryRequested:
            metrics.retried.labels(WEBHOOK).inc()
            raise
        except Exception:
            metrics.failed.labels(WEBHOOK).inc()
            raise
        metrics.done.labels(WEBHOOK).inc()
        metrics.latency.labels(WEBHOOK).observe(time.time() - job.created.timestamp())
        logger.info("event_delivered", job_id=job.id, attempts=job.attempts + 1)

    # One worker runs each tick: pgqueuer takes the schedule's row FOR UPDATE SKIP LOCKED.
    @pgq.schedule(PRUNE, settings.jobs_prune_cron)
    async def prune_job_log(schedule: Schedule) -> None:
        seconds = settings.jobs_log_retention_hours * 3600
        status = await pgq.connection.execute(PRUNE_LOG, seconds)  # the driver's lock
        logger.info("job_log_pruned", rows=int(status.rpartition(" ")[2]))

    return pgq


async def _sample_depth(pgq: PgQueuer, metrics: JobMetrics, probes: WorkerProbes) -> None:
    """The queue's depth for /metrics, read on the worker's own connection: each read that
    succeeds is also what makes the worker ready (connected, its queue table there) and keeps it
    alive (probes.py)."""
    while True:
        try:
            rows = await pgq.connection.fetch(DEPTH)
        except Exception as error:  # the run itself notices a lost connection and reconnects
            probes.read_failed()
            metrics.depth.forget()
            logger.warning("queue_depth_unread", error=str(error))
        else:
            metrics.depth.record(rows)
            probes.queue_read()
        await asyncio.sleep(DEPTH_EVERY_SECONDS)


async def _run_once(
    settings: Settings,
    client: httpx.AsyncClient,
    metrics: JobMetrics,
    stop: asyncio.Event,
    probes: WorkerProbes,
) -> None:
    connection = await asyncpg.connect(
        settings.dsn, server_settings={"application_name": "worker", "timezone": "UTC"}
    )
    probes.connected()
    try:
        pgq = queue(connection, settings, client, metrics)
        relay = asyncio.create_task(stop.wait())
        relay.add_done_callback(lambda _: pgq.shutdown.set())
        depth = asyncio.create_task(_sample_depth(pgq, metrics, probes))
        try:
            await pgq.run(
                dequeue_timeout=timedelta(seconds=settings.jobs_poll_seconds),
                batch_size=settings.jobs_batch_size,
                # Without a cap pgqueuer picks the whole backlog at once: every job then waits in
                # the HTTP client's pool past its timeout, and each pooled request costs a scan
                # of all the waiting ones.
                max_concurrent_tasks=settings.jobs_max_in_flight,
                heartbeat_timeout=timedelta(seconds=settings.jobs_heartbeat_timeout_seconds),
            )
        finally:
            relay.cancel()
            depth.cancel()
    finally:
        probes.disconnected()
        metrics.depth.forget()  # a count of a queue it no longer reads: no sample, not a stale one
        connection.terminate()


async def work(settings: Settings, stop: asyncio.Event, metrics: JobMetrics) -> None:
    """Run jobs until `stop` is set; connect again whenever the connection is lost. Beside
    /metrics, the probes say whether the worker is taking jobs (probes.py)."""
    probes = WorkerProbes(stop, STALE_AFTER_SECONDS, settings.jobs_stall_seconds)
    pause = 0.5
    async with (
        httpx.AsyncClient() as client,
        metrics_listener(
            metrics,
            settings.host,
            settings.metrics_port,
            protocol=guarded_protocol(settings),
            routes=probes.routes(),
        ),
    ):
        while not stop.is_set():
            try:
                await _run_once(settings, client, metrics, stop, probes)
                pause = 0.5
            except Exception as error:  # the database away for a while must not end the worker
                logger.warning("worker_connection_lost", error=str(error), retry_in=pause)
                try:
                    await asyncio.wait_for(stop.wait(), pause)
                except TimeoutError:
                    pause = min(pause * 2, RECONNECT_MAX_SECONDS)


def run(settings: Settings) -> int:
    """`python -m <package> worker`: run jobs until SIGTERM or SIGINT; 0 once drained."""
    configure_logging(settings)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        logger.info("worker_started")
        await work(settings, stop, JobMetrics())
        logger.info("worker_stopped")

    with asyncio.Runner() as runner:
        runner.run(main())
    return 0
