"""Liveness never touches the database; readiness asks it one cheap question."""

import structlog
from fastapi import APIRouter, Request, Response

from .errors import RETRY_AFTER_SECONDS, problem
from .responses import JSONBytesResponse
from .routing import FastRoute

logger = structlog.get_logger(__name__)
router = APIRouter(tags=["health"], route_class=FastRoute)

READINESS_TIMEOUT_SECONDS = 1.0
_OK = b'{"status":"ok"}'


@router.get("/healthz", summary="Liveness: the process is serving")
async def healthz() -> JSONBytesResponse:
    return JSONBytesResponse(_OK)


@router.get(
    "/readyz",
    summary="Readiness: the database answers within a second",
    responses={503: {"description": "Database unavailable"}},
)
async def readyz(request: Request) -> Response:
    try:
        await request.app.state.db.ping(READINESS_TIMEOUT_SECONDS)
    except Exception as exc:  # any failure means "not ready"; the reason goes to the log only
        logger.warning("not_ready", error=type(exc).__name__)
        return problem(
            503, "The database is not answering.", headers={"Retry-After": RETRY_AFTER_SECONDS}
        )
    return JSONBytesResponse(_OK)
