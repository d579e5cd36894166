"""Worker processes (`python -m {{ cookiecutter.package_name }} worker`) and the queue's rows, for
the worker's tests."""

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import asyncpg
import httpx

from {{ cookiecutter.package_name }}.kit.events import WEBHOOK, event_payload

SECRET = "test-webhook-secret"
# Short enough for a test to see a killed worker's job taken again; above the longest job.
FAST = {
    "WEBHOOK_TIMEOUT_SECONDS": "1",
    "JOBS_HEARTBEAT_TIMEOUT_SECONDS": "2",
    "JOBS_POLL_SECONDS": "1",
    "WEBHOOK_RETRY_SECONDS": "0.2",
    "METRICS_PORT": "0",
}


def start_worker(
    log: Path, database_url: str, webhook_url: str, *, secret: str | None = SECRET, **env: str
) -> subprocess.Popen[bytes]:
    """A worker process; with `secret` None, WEBHOOK_SECRET is in no variable (a file, then)."""
    variables = {
        **os.environ,
        "DATABASE_URL": database_url,
        "WEBHOOK_URL": webhook_url,
        "APP_ENV": "test",
        **FAST,
        **env,
    }
    if secret is not None:
        variables["WEBHOOK_SECRET"] = secret
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "{{ cookiecutter.package_name }}", "worker"],
            env=variables,
            stdout=output,
            stderr=subprocess.STDOUT,
        )


@contextmanager
def worker(
    log: Path, database_url: str, webhook_url: str, *, secret: str | None = SECRET, **env: str
) -> Iterator[subprocess.Popen[bytes]]:
    process = start_worker(log, database_url, webhook_url, secret=secret, **env)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


async def enqueue_events(connection: asyncpg.Connection, event_ids: list[str]) -> None:
    """Jobs as the writes enqueue them, in one statement (pgqueuer's batch enqueue)."""
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    payloads: list[bytes | None] = [event_payload(id_, "item.created", "{}") for id_ in event_ids]
    await Queries(AsyncpgDriver(connection)).enqueue(
        [WEBHOOK] * len(event_ids), payloads, [0] * len(event_ids)
    )


async def enqueue_due_in(
    connection: asyncpg.Connection, count: int, delay: timedelta, entrypoint: str = WEBHOOK
) -> None:
    """`count` jobs due in `delay`, as a delivery retried with backoff is; an entrypoint this
    service does not run stays queued however long a worker watches."""
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    payloads: list[bytes | None] = [
        event_payload(f"{entrypoint}-{n}", "item.created", "{}") for n in range(count)
    ]
    await Queries(AsyncpgDriver(connection)).enqueue(
        [entrypoint] * count, payloads, [0] * count, [delay] * count
    )


async def jobs_by_status(connection: asyncpg.Connection) -> dict[str, int]:
    rows = await connection.fetch("SELECT status::text, count(*) FROM pgqueuer GROUP BY 1")
    return {row[0]: row[1] for row in rows}


async def clear_queue(connection: asyncpg.Connection) -> None:
    await connection.execute("DELETE FROM pgqueuer")


async def queue_depth(metrics_port: int) -> dict[str, float]:
    """The samples of jobs_in_queue a worker's /metrics serves now, by status."""
    async with httpx.AsyncClient(timeout=5) as http:
        scraped = (await http.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
    samples = re.findall(r'^jobs_in_queue\{status="(\w+)"\} (\S+)$', scraped, re.M)
    return {status: float(jobs) for status, jobs in samples}
