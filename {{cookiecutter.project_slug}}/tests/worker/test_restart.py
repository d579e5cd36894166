"""PostgreSQL restarted under a running worker: the worker connects again and the backlog drains.

A PostgreSQL of this test's own (devdb's), so that the other tests' server never goes down.
"""

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from devdb import ThrowawayPostgres

from .receiver import Receiver, receiving
from .workers import SECRET, enqueue_events, jobs_by_status, worker

PROJECT_ROOT = Path(__file__).resolve().parents[2]
BACKLOG = 200


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[ThrowawayPostgres]:
    # Its data outside pytest's temporary root, as the suite's own server's (tests/conftest.py).
    # tmp_path first: pytest sets its root to 0700 on first use, which would lock the server's
    # user out of its own binaries and libraries when they live in a virtualenv under that root;
    # the start below opens the way to them again.
    folder = Path(tempfile.mkdtemp(prefix="test-postgres-restart-"))
    try:
        with ThrowawayPostgres(folder / "data") as server:
            subprocess.run(
                [sys.executable, "-m", "alembic", "upgrade", "heads"],
                cwd=PROJECT_ROOT,
                env={**os.environ, "DATABASE_URL": server.url},
                check=True,
                capture_output=True,
            )
            yield server
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving(SECRET.encode()) as running:
        yield running


async def _enqueue(url: str, count: int) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in range(count)]
    connection = await asyncpg.connect(url)
    try:
        await enqueue_events(connection, ids)
    finally:
        await connection.close()
    return ids


async def _left(url: str) -> dict[str, int]:
    connection = await asyncpg.connect(url)
    try:
        return await jobs_by_status(connection)
    finally:
        await connection.close()


async def test_after_a_postgresql_restart_the_worker_reconnects_and_the_backlog_drains(
    restartable: ThrowawayPostgres, receiver: Receiver, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    url = restartable.url
    with worker(log, url, receiver.url) as process:
        before = await _enqueue(url, 1)
        assert await asyncio.to_thread(receiver.wait_for, 1, 30), log.read_text()[-2000:]
        await asyncio.to_thread(restartable.stop)  # every connection closed, the worker's too
        await asyncio.sleep(1.0)  # the worker finds its connection gone while the server is down
        await asyncio.to_thread(restartable.start)
        backlog = await _enqueue(url, BACKLOG)
        drained = await asyncio.to_thread(receiver.wait_for, BACKLOG + 1, 60, distinct=True)
        assert drained, log.read_text()[-3000:]
        assert process.poll() is None, "the worker exited instead of connecting again"
        for _ in range(200):
            if not await _left(url):
                break
            await asyncio.sleep(0.05)
    assert receiver.event_ids() == set(before + backlog)
    assert await _left(url) == {}, "a job is left picked or queued"
