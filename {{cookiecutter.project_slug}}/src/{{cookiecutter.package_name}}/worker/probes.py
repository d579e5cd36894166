"""The worker's probes, on its metrics port beside /metrics: /healthz while its event loop runs
and its connection is not stuck, /readyz while it takes jobs.

Liveness alone (the loop answers) says nothing of the jobs: a worker that cannot reach the
database loops on `worker_connection_lost` with its loop perfectly alive, and a release that can
never run a job would roll out fully. /readyz answers 200 only while the worker holds a connection
on which it read the queue table lately (it reads it every DEPTH_EVERY_SECONDS, run.py) and has not
been told to stop; with the chart's minReadySeconds a new worker must stay so before the rollout
goes on. A read that never comes back (the table locked, a connection the database no longer
answers) leaves the worker taking no job: the age of the last read says so, its outcome alone
would not.

A connection that is half-open (the database, or a NAT or firewall on the way, dropped it without
a word) errs nothing: the worker believes it is connected, its reads wait forever, and readiness
alone would leave it so for good, since a pod that is not ready is never restarted. So /healthz
fails too once the worker, connected, has completed no read for JOBS_STALL_SECONDS (minutes, far
above a slow moment): the kubelet restarts it, and the new process connects again. The database
away is not that case: the worker knows it is disconnected, reconnects by itself, and a restart
would change nothing.
"""

import asyncio
import time

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..health.routes import LIVENESS_PATH, READINESS_PATH
from ..kit.problems import retry_shortly
from ..kit.responses import JSONBytesResponse

_OK = b'{"status":"ok"}'


class WorkerProbes:
    """run.py calls `connected` once its connection is open, `queue_read` after each read of the
    queue table that succeeds, `read_failed` after one that fails, and `disconnected` when its
    connection is gone; `stop` is the event SIGTERM sets. Ready while the last read succeeded and
    is younger than `stale_after` seconds; alive unless it is connected and has completed no read
    for `stall_after` seconds."""

    def __init__(self, stop: asyncio.Event, stale_after: float, stall_after: float) -> None:
        self._stop = stop
        self._stale_after = stale_after
        self._stall_after = stall_after
        self._read_at: float | None = None
        self._read_failed = False
        self._connected_at: float | None = None

    def connected(self) -> None:
        self._connected_at = time.monotonic()

    def queue_read(self) -> None:
        self._read_at = time.monotonic()
        self._read_failed = False

    def read_failed(self) -> None:
        # Not ready until a read succeeds again; the stall clock runs on from the last success.
        self._read_failed = True

    def disconnected(self) -> None:
        self._read_at = None
        self._read_failed = False
        self._connected_at = None

    @property
    def taking_jobs(self) -> bool:
        read_at = self._read_at
        fresh = read_at is not None and time.monotonic() - read_at < self._stale_after
        return fresh and not self._read_failed

    @property
    def stalled(self) -> bool:
        connected_at = self._connected_at
        if connected_at is None:
            return False
        last = max(connected_at, self._read_at or connected_at)
        return time.monotonic() - last >= self._stall_after

    def routes(self) -> list[Route]:
        return [
            Route(LIVENESS_PATH, self._liveness, methods=["GET"]),
            Route(READINESS_PATH, self._readiness, methods=["GET"]),
        ]

    async def _liveness(self, request: Request) -> Response:
        if self.stalled:
            return retry_shortly(
                "The worker's connection has answered no queue read for"
                f" {self._stall_after:g} s: restart it."
            )
        return JSONBytesResponse(_OK)

    async def _readiness(self, request: Request) -> Response:
        if self._stop.is_set():
            return retry_shortly("The worker is stopping: it takes no new job.")
        if not self.taking_jobs:
            return retry_shortly("The worker is not connected to the queue.")
        return JSONBytesResponse(_OK)
