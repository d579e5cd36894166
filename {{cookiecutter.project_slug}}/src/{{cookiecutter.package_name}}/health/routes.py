"""Liveness never touches the database; readiness takes the pod's pooled queries answered lately
as the database within reach, else asks it one cheap question on a connection of its own (db.py
`Database.reachable`), never a pooled one that a slow table can hold. The kubelet
probes these on the metrics port (serving/probes.py), out of the traffic port's connection cap;
here they answer balancers and people that ask the traffic port."""

import structlog
from fastapi import Response

from ..kit import DatabaseDep, JSONBytesResponse, resource_router, retry_shortly

logger = structlog.get_logger(__name__)
router = resource_router(tags=["health"])

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
# Never refused by admission control, never traced: a busy pod is not a dead one.
PROBE_PATHS = frozenset({LIVENESS_PATH, READINESS_PATH})
READINESS_TIMEOUT_SECONDS = 1.0
_OK = b'{"status":"ok"}'


@router.get(LIVENESS_PATH, summary="Liveness: the process is serving")
async def healthz() -> JSONBytesResponse:
    return JSONBytesResponse(_OK)


@router.get(
    READINESS_PATH,
    summary="Readiness: the database answered lately, else within a second on the probe's own",
    responses={503: {"description": "Database unavailable"}},
)
async def readyz(database: DatabaseDep) -> Response:
    try:
        await database.reachable(READINESS_TIMEOUT_SECONDS)
    except Exception as exc:  # any failure means "not ready"; the reason goes to the log only
        logger.warning("not_ready", error=type(exc).__name__)
        return retry_shortly("The database is not answering.")
    return JSONBytesResponse(_OK)
