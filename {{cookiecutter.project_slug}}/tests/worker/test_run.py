"""The worker as it runs in production: real processes, a real PostgreSQL, a real HTTP receiver.

Each test has the queue to itself (the queue table is emptied first) and its own receiver.
"""

import asyncio
import itertools
import os
import random
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from .receiver import Receiver, receiving
from .workers import SECRET, enqueue_events, jobs_by_status, start_worker, worker

# 1,000 by default so the test runs in well under a minute; JOBS_TEST_COUNT=10000 runs more.
MANY = int(os.environ.get("JOBS_TEST_COUNT", "1000"))


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving(SECRET.encode()) as running:
        yield running


def _event_ids(count: int) -> list[str]:
    return [str(uuid.uuid4()) for _ in range(count)]


async def _arrived(
    receiver: Receiver, count: int, within: float, *, distinct: bool = False
) -> bool:
    return await asyncio.to_thread(receiver.wait_for, count, within, distinct=distinct)


async def _warm(receiver: Receiver, queue: asyncpg.Connection) -> None:
    """A first job delivered: the worker is connected and listening."""
    await enqueue_events(queue, _event_ids(1))
    assert await _arrived(receiver, 1, 30), "the worker delivered nothing"


async def test_a_committed_job_is_delivered_within_100ms_by_listen(
    queue: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    with worker(tmp_path / "worker.log", database_url, receiver.url, JOBS_POLL_SECONDS="60"):
        await _warm(receiver, queue)
        async with queue.transaction():
            await enqueue_events(queue, _event_ids(1))
        committed = time.time()
        assert await _arrived(receiver, 2, 5), (tmp_path / "worker.log").read_text()[-2000:]
    assert receiver.deliveries[-1].at - committed < 0.1
    assert all(delivery.signed for delivery in receiver.deliveries)


async def test_a_webhook_secret_read_from_its_file_in_secrets_dir_signs_the_deliveries(
    queue: asyncpg.Connection, database_url: str, tmp_path: Path
) -> None:
    """The chart's secrets.asFiles: WEBHOOK_SECRET is the file /run/secrets/WEBHOOK_SECRET (a
    Secret's key, no trailing newline), in no environment variable."""
    folder = tmp_path / "secrets"
    folder.mkdir()
    (folder / "WEBHOOK_SECRET").write_text("a-key-from-a-file")
    log = tmp_path / "worker.log"
    with (
        receiving(b"a-key-from-a-file") as receiver,
        worker(log, database_url, receiver.url, secret=None, SECRETS_DIR=str(folder)),
    ):
        await enqueue_events(queue, _event_ids(1))
        assert await _arrived(receiver, 1, 30), log.read_text()[-2000:]
    assert [delivery.signed for delivery in receiver.deliveries] == [True]


async def test_without_listen_a_job_is_delivered_within_the_poll_interval(
    queue: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    env = {"JOBS_LISTEN": "false", "JOBS_POLL_SECONDS": "0.5"}
    with worker(tmp_path / "worker.log", database_url, receiver.url, **env):
        await _warm(receiver, queue)
        await enqueue_events(queue, _event_ids(1))
        committed = time.time()
        assert await _arrived(receiver, 2, 5)
    assert receiver.deliveries[-1].at - committed < 0.5 + 0.25


async def test_a_job_whose_worker_is_killed_mid_job_runs_again_and_is_seen_once(
    queue: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    receiver.hold_seconds = 0.5  # the job is in flight while the worker is killed
    await enqueue_events(queue, _event_ids(1))
    log = tmp_path / "worker.log"
    with worker(log, database_url, receiver.url) as first:
        assert await _arrived(receiver, 1, 30)
        first.kill()  # SIGKILL: no completion recorded, the job stays picked
    assert (await jobs_by_status(queue)).get("picked") == 1
    receiver.hold_seconds = 0
    with worker(log, database_url, receiver.url):
        # Taken again once its heartbeat is older than JOBS_HEARTBEAT_TIMEOUT_SECONDS (2).
        assert await _arrived(receiver, 2, 30), log.read_text()[-2000:]
        for _ in range(300):
            if not await jobs_by_status(queue):
                break
            await asyncio.sleep(0.05)
    assert await jobs_by_status(queue) == {}, "a job is left picked or queued"
    assert len(receiver.deliveries) == 2
    assert len(receiver.event_ids()) == 1


async def test_sigterm_lets_the_job_in_flight_finish_takes_no_new_one_and_exits_0(
    queue: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    receiver.hold_seconds = 0.5  # in flight at SIGTERM; under WEBHOOK_TIMEOUT_SECONDS (1)
    await enqueue_events(queue, _event_ids(1))
    log = tmp_path / "worker.log"
    process = start_worker(log, database_url, receiver.url, JOBS_BATCH_SIZE="1")
    try:
        assert await _arrived(receiver, 1, 30)
        process.send_signal(signal.SIGTERM)
        await enqueue_events(queue, _event_ids(1))  # must not be taken after SIGTERM
        assert await asyncio.to_thread(process.wait, 30) == 0, log.read_text()[-2000:]
    finally:
        if process.poll() is None:
            process.kill()
    assert len(receiver.deliveries) == 1
    assert await jobs_by_status(queue) == {"queued": 1}, "the job in flight was not recorded done"


async def test_a_failing_delivery_is_retried_with_growing_pauses_then_held_as_failed(
    queue: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    receiver.status = 503
    await enqueue_events(queue, _event_ids(1))
    env = {"WEBHOOK_MAX_ATTEMPTS": "4", "WEBHOOK_RETRY_SECONDS": "0.2", "JOBS_POLL_SECONDS": "0.1"}
    with worker(tmp_path / "worker.log", database_url, receiver.url, **env):
        assert await _arrived(receiver, 4, 30)
        for _ in range(200):
            if (await jobs_by_status(queue)).get("failed"):
                break
            await asyncio.sleep(0.05)
        assert not await _arrived(receiver, 5, 1.0), "delivered past WEBHOOK_MAX_ATTEMPTS"
    assert await jobs_by_status(queue) == {"failed": 1}
    times = [delivery.at for delivery in receiver.deliveries]
    pauses = [later - earlier for earlier, later in itertools.pairwise(times)]
    # 0.2, 0.4, 0.8 s: each pause at least its backoff, and longer than the one before.
    assert [round(pause, 1) >= 0.2 * 2**n for n, pause in enumerate(pauses)] == [True] * 3
    assert pauses == sorted(pauses)


async def test_a_backlog_is_run_at_most_jobs_max_in_flight_at_a_time(
    queue: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    """Without the cap pgqueuer picks a whole backlog at once: the deliveries past the HTTP
    client's pool wait there past their timeout, and are retried."""
    receiver.hold_seconds = 0.05
    count = 200
    await enqueue_events(queue, _event_ids(count))
    env = {"JOBS_BATCH_SIZE": "2", "JOBS_MAX_IN_FLIGHT": "4"}
    most_picked = 0
    with worker(tmp_path / "worker.log", database_url, receiver.url, **env):
        for _ in range(3000):
            most_picked = max(most_picked, (await jobs_by_status(queue)).get("picked", 0))
            if len(receiver.event_ids()) == count:
                break
            await asyncio.sleep(0.01)
    assert len(receiver.event_ids()) == count
    assert most_picked <= 4
    assert 2 <= receiver.most_in_flight <= 4


async def test_many_jobs_with_the_worker_killed_at_random_are_each_seen_once(
    queue: asyncpg.Connection, receiver: Receiver, database_url: str, tmp_path: Path
) -> None:
    ids = _event_ids(MANY)
    await enqueue_events(queue, ids)
    log = tmp_path / "worker.log"
    generator = random.Random(MANY)
    # A receiver in this process answers slower than a real one: room for it below the timeout.
    env = {
        "JOBS_BATCH_SIZE": "20",
        "WEBHOOK_TIMEOUT_SECONDS": "5",
        "JOBS_HEARTBEAT_TIMEOUT_SECONDS": "6",
    }
    for _ in range(3):
        with worker(log, database_url, receiver.url, **env) as process:
            delivered = len(receiver.deliveries)
            await _arrived(receiver, delivered + generator.randrange(1, MANY // 4), 60)
            process.kill()
    with worker(log, database_url, receiver.url, **env):
        assert await _arrived(receiver, MANY, 60, distinct=True), log.read_text()[-2000:]
        for _ in range(300):
            if not await jobs_by_status(queue):
                break
            await asyncio.sleep(0.05)
    assert receiver.event_ids() == set(ids)
    assert await jobs_by_status(queue) == {}
