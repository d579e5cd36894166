"""The worker's probes, on its metrics port beside /metrics: /healthz while its event loop runs,
/readyz while it takes jobs.

Liveness alone (the loop answers) says nothing of the jobs: a worker that cannot reach the
database loops on `worker_connection_lost` with its loop perfectly alive, and a release that can
never run a job would roll out fully. /readyz answers 200 only while the worker holds a connection
on which it last read the queue table (every DEPTH_EVERY_SECONDS, run.py) and has not been told to
stop; with the chart's minReadySeconds a new worker must stay so before the rollout goes on.
"""

import asyncio

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..health.routes import LIVENESS_PATH, READINESS_PATH
from ..kit.problems import retry_shortly
from ..kit.responses import JSONBytesResponse

_OK = b'{"status":"ok"}'


class WorkerProbes:
    """`taking_jobs` is set by run.py while connected with the queue read; `stop` is the event
    SIGTERM sets."""

    def __init__(self, stop: asyncio.Event) -> None:
        self._stop = stop
        self.taking_jobs = False

    def routes(self) -> list[Route]:
        return [
            Route(LIVENESS_PATH, self._liveness, methods=["GET"]),
            Route(READINESS_PATH, self._readiness, methods=["GET"]),
        ]

    async def _liveness(self, request: Request) -> Response:
        return JSONBytesResponse(_OK)

    async def _readiness(self, request: Request) -> Response:
        if self._stop.is_set():
            return retry_shortly("The worker is stopping: it takes no new job.")
        if not self.taking_jobs:
            return retry_shortly("The worker is not connected to the queue.")
        return JSONBytesResponse(_OK)
