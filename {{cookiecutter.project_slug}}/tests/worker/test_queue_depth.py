"""worker/metrics.py: the queue depth the worker exports, which the worker HPA scales on
(jobs_in_queue{status="queued"}, docs/jobs.md): work the workers could take now, and nothing
while the worker does not read the queue."""

from datetime import timedelta
from pathlib import Path

import asyncpg
from devdb import free_port

from ..silent_proxy import silent_proxy
from .test_probes import _status_until
from .workers import enqueue_due_in, queue_depth, worker


async def test_jobs_not_due_yet_are_counted_as_scheduled_not_as_queued_work(
    queue: asyncpg.Connection, database_url: str, tmp_path: Path
) -> None:
    await enqueue_due_in(queue, 20, timedelta(hours=1))
    # Due now, of an entrypoint this worker does not run: they stay queued while it watches.
    await enqueue_due_in(queue, 5, timedelta(0), entrypoint="run_elsewhere")
    port = free_port()
    with worker(tmp_path / "worker.log", database_url, "", METRICS_PORT=str(port)):
        # Ready once the queue table has been read: the depth is sampled then.
        assert await _status_until(f"http://127.0.0.1:{port}/readyz", 200, 30) == 200
        depth = await queue_depth(port)
    assert depth == {"queued": 5, "scheduled": 20, "picked": 0, "failed": 0}


async def test_a_worker_that_lost_its_connection_exports_no_depth_rather_than_its_last(
    queue: asyncpg.Connection, database_url: str, tmp_path: Path
) -> None:
    """The HPA takes the max over the workers and the backlog alert reads it: a count frozen when
    the connection went would scale (or alert) on a queue nobody reads any more."""
    await enqueue_due_in(queue, 3, timedelta(hours=1))
    port = free_port()
    ready = f"http://127.0.0.1:{port}/readyz"
    log = tmp_path / "worker.log"
    async with silent_proxy(database_url) as (proxy, through_proxy):
        with worker(log, through_proxy, "", METRICS_PORT=str(port)):
            assert await _status_until(ready, 200, 30) == 200, log.read_text()[-2000:]
            connected = await queue_depth(port)
            await proxy.cut()  # the database gone; reconnecting is refused from now on
            assert await _status_until(ready, 503, 30) == 503
            disconnected = await queue_depth(port)
            alive = await _status_until(f"http://127.0.0.1:{port}/healthz", 200, 5)
    assert connected == {"queued": 0, "scheduled": 3, "picked": 0, "failed": 0}
    assert disconnected == {}
    # Disconnected is no reason to restart: the worker reconnects by itself.
    assert alive == 200
