"""The kubelet's probes, /healthz and /readyz, on the metrics listener's port (METRICS_PORT).

On the traffic port the probes share LIMIT_CONCURRENCY with every client's socket: once idle or
slow connections reach that cap, uvicorn answers 503 before any route runs, liveness fails, the
pod restarts and the reconnect storm moves to the next pod. The metrics listener has sockets of
its own that no client of the API reaches (only the metrics Service exposes the port), on the
same event loop: a loop that stops answering still fails liveness, as it must.

/healthz: 200 once the server has started (its lifespan ran, its port is bound), and through the
drain. /readyz: 200 while this pod can serve: started, not draining, and the database within
reach (db.py `Database.reachable`): its pooled queries answered lately, else SELECT 1 on the
probe's own connection (`ProbeConnection`), never a pooled one: a pool held by one slow table, or
PgBouncer queueing every client, is a moment of the shared database, not a reason for every pod
to leave the Service.
The traffic port still answers both paths (health/routes.py), for balancers that probe it.
"""

import structlog
import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..db import Database
from ..health.routes import LIVENESS_PATH, READINESS_PATH, READINESS_TIMEOUT_SECONDS
from ..kit.problems import retry_shortly
from ..kit.responses import JSONBytesResponse

logger = structlog.get_logger(__name__)
_OK = b'{"status":"ok"}'


class Probes:
    """What the probes read: the server (started, draining) and the lifespan's Database."""

    def __init__(self) -> None:
        # Set by server.py once the server exists (the app, and so the lifespan, come first).
        self.server: uvicorn.Server | None = None
        # Set by the lifespan once the pool is open, unset when it closes (serving/app.py).
        self.database: Database | None = None

    def routes(self) -> list[Route]:
        return [
            Route(LIVENESS_PATH, self._liveness, methods=["GET"]),
            Route(READINESS_PATH, self._readiness, methods=["GET"]),
        ]

    def _started(self) -> bool:
        return self.server is not None and self.server.started and self.database is not None

    async def _liveness(self, request: Request) -> Response:
        if not self._started():
            return retry_shortly("The server is starting.")
        return JSONBytesResponse(_OK)

    async def _readiness(self, request: Request) -> Response:
        database = self.database
        if self.server is None or database is None or not self.server.started:
            return retry_shortly("The server is starting.")
        if self.server.should_exit:
            # SIGTERM came: the pod drains what it has and takes nothing new.
            return retry_shortly("The server is draining.")
        try:
            await database.reachable(READINESS_TIMEOUT_SECONDS)
        except Exception as exc:  # any failure means "not ready"; the reason goes to the log only
            logger.warning("not_ready", error=type(exc).__name__)
            return retry_shortly("The database is not answering.")
        return JSONBytesResponse(_OK)
