"""worker/probes.py: the worker's readiness says whether it takes jobs, not only that its loop
runs, and its liveness fails on a connection fallen silent; against real worker processes and a
real PostgreSQL, and the probes' clock alone for a read that fails on a connection still open."""

import asyncio
import time
from pathlib import Path

import asyncpg
import httpx
import pytest
from devdb import free_port

from {{ cookiecutter.package_name }}.worker.metrics import DEPTH_EVERY_SECONDS, STALE_AFTER_SECONDS
from {{ cookiecutter.package_name }}.worker.probes import WorkerProbes

from ..silent_proxy import silent_proxy
from .workers import queue_depth, worker

# Nothing listens there: the worker loops on worker_connection_lost.
UNREACHABLE = "postgresql://app:pw@127.0.0.1:{port}/app"


async def _status_until(url: str, wanted: int, seconds: float) -> int:
    """GET `url` until it answers `wanted` or `seconds` pass (polled: a worker connecting offers
    no event to wait on); the last status."""
    deadline = time.monotonic() + seconds
    status = 0
    async with httpx.AsyncClient(timeout=2) as http:
        while time.monotonic() < deadline:
            try:
                status = (await http.get(url)).status_code
            except httpx.TransportError:
                status = 0  # the listener is not up yet
            if status == wanted:
                return status
            await asyncio.sleep(0.1)
    return status


async def test_a_worker_that_cannot_reach_the_database_is_alive_but_not_ready(
    tmp_path: Path,
) -> None:
    port = free_port()
    log = tmp_path / "worker.log"
    database = UNREACHABLE.format(port=free_port())
    with worker(log, database, "", METRICS_PORT=str(port)):
        base = f"http://127.0.0.1:{port}"
        assert await _status_until(f"{base}/healthz", 200, 30) == 200
        # Several reconnect rounds (0.5 s, 1 s, 2 s pauses): never ready, still alive.
        statuses = set()
        async with httpx.AsyncClient(base_url=base, timeout=2) as http:
            for _ in range(20):
                statuses.add((await http.get("/readyz")).status_code)
                await asyncio.sleep(0.1)
            alive = await http.get("/healthz")
    assert statuses == {503}
    assert alive.status_code == 200
    assert "worker_connection_lost" in log.read_text()


async def test_a_worker_connected_to_its_queue_is_ready(database_url: str, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "worker.log"
    with worker(log, database_url, "", METRICS_PORT=str(port)):
        ready = await _status_until(f"http://127.0.0.1:{port}/readyz", 200, 30)
    assert ready == 200, log.read_text()[-2000:]


async def test_a_worker_whose_queue_reads_stop_coming_back_is_no_longer_ready(
    database_url: str, tmp_path: Path
) -> None:
    """The queue table locked from outside (a migration waiting on it, or a connection the
    database no longer answers): no job is taken, and readiness must stop saying so."""
    port = free_port()
    log = tmp_path / "worker.log"
    ready_url = f"http://127.0.0.1:{port}/readyz"
    with worker(log, database_url, "", METRICS_PORT=str(port)):
        assert await _status_until(ready_url, 200, 30) == 200, log.read_text()[-2000:]
        locker = await asyncpg.connect(database_url)
        try:
            async with locker.transaction():
                await locker.execute("LOCK TABLE pgqueuer IN ACCESS EXCLUSIVE MODE")
                status = await _status_until(ready_url, 503, 4 * DEPTH_EVERY_SECONDS)
        finally:
            await locker.close()
        # The lock gone, the next read makes it ready again.
        again = await _status_until(ready_url, 200, 4 * DEPTH_EVERY_SECONDS)
    assert status == 503
    assert again == 200


async def test_a_worker_whose_connection_fell_silent_fails_liveness_and_exports_no_depth(
    database_url: str, tmp_path: Path
) -> None:
    """A half-open connection: no error ever comes, the worker believes it is connected and
    waits forever. Not ready is not enough (a pod that is not ready is never restarted): past
    JOBS_STALL_SECONDS without a completed queue read its liveness fails, and the kubelet
    restarts it. Its depth, frozen since, is no longer exported."""
    port = free_port()
    log = tmp_path / "worker.log"
    base = f"http://127.0.0.1:{port}"
    stall = 10.0
    async with silent_proxy(database_url) as (proxy, through_proxy):
        env = {"METRICS_PORT": str(port), "JOBS_STALL_SECONDS": f"{stall:g}"}
        with worker(log, through_proxy, "", **env):
            assert await _status_until(f"{base}/readyz", 200, 30) == 200, log.read_text()[-2000:]
            connected = await queue_depth(port)
            proxy.fall_silent()
            fell_silent = time.monotonic()
            async with httpx.AsyncClient(base_url=base, timeout=2) as http:
                alive_at_first = (await http.get("/healthz")).status_code
            dead = await _status_until(f"{base}/healthz", 503, stall + 2 * DEPTH_EVERY_SECONDS)
            dead_after = time.monotonic() - fell_silent
            not_ready = await _status_until(f"{base}/readyz", 503, STALE_AFTER_SECONDS)
            frozen = await queue_depth(port)
    assert connected.keys() == {"queued", "scheduled", "picked", "failed"}
    assert alive_at_first == 200  # a slow moment is not a reason to restart
    assert dead == 503, log.read_text()[-2000:]
    assert dead_after >= stall - DEPTH_EVERY_SECONDS
    assert not_ready == 503
    assert frozen == {}


def test_a_failed_read_takes_the_worker_out_at_once_and_restarts_it_only_past_the_stall(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A read that errs on a connection still open (the run did not end) is no reason to restart
    at once, nor to stop the stall clock: past JOBS_STALL_SECONDS since the last read completed,
    liveness fails as for a read that never came back."""
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])  # the clock probes.py reads
    worker_probes = WorkerProbes(asyncio.Event(), stale_after=15, stall_after=300)
    worker_probes.connected()
    now[0] += 5
    worker_probes.queue_read()
    assert (worker_probes.taking_jobs, worker_probes.stalled) == (True, False)
    now[0] += 100
    worker_probes.read_failed()
    assert (worker_probes.taking_jobs, worker_probes.stalled) == (False, False)
    now[0] += 199
    assert worker_probes.stalled is False
    now[0] += 1
    assert worker_probes.stalled is True
    worker_probes.disconnected()  # the run ended: reconnecting, which a restart would not speed
    assert (worker_probes.taking_jobs, worker_probes.stalled) == (False, False)
