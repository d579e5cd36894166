"""problem+json (RFC 9457) for every error the service can return, and nothing else."""

from http import HTTPStatus
from typing import Any

import asyncpg
import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from .responses import ProblemResponse

logger = structlog.get_logger(__name__)

# Seconds a client should wait before retrying when the database is unavailable or saturated.
RETRY_AFTER_SECONDS = "1"


def problem(
    status: int,
    detail: str,
    *,
    headers: dict[str, str] | None = None,
    **extensions: Any,
) -> ProblemResponse:
    body = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        **extensions,
    }
    return ProblemResponse(body, status_code=status, headers=headers)


class ProblemError(Exception):
    """Raised by routes for a client error that is not a plain validation failure."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers


def _field_name(location: tuple[int | str, ...]) -> str:
    # ("body", "price_cents") -> "price_cents"; ("query", "limit") -> "limit".
    parts = [str(part) for part in location[1:]] or [str(part) for part in location]
    return ".".join(parts)


async def _validation_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {
            "field": _field_name(tuple(error["loc"])),
            "location": [str(part) for part in error["loc"]],
            "message": error["msg"],
            "type": error["type"],
        }
        for error in exc.errors()
    ]
    if any(error["type"] == "json_invalid" for error in errors):
        return problem(400, "The request body is not valid JSON.", errors=errors)
    fields = ", ".join(dict.fromkeys(error["field"] for error in errors))
    return problem(422, f"Invalid request: {fields}.", errors=errors)


async def _http_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).description
    return problem(exc.status_code, detail, headers=dict(exc.headers) if exc.headers else None)


async def _problem_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, ProblemError)
    return problem(exc.status, exc.detail, headers=exc.headers)


async def _database_unavailable(request: Request, exc: Exception) -> ProblemResponse:
    # Pool acquire timeout, lost connection, server restarting or statement timeout: the request
    # is safe to retry and the client did nothing wrong.
    logger.warning("database_unavailable", error=type(exc).__name__)
    return problem(
        503,
        "The database is unavailable or saturated; retry shortly.",
        headers={"Retry-After": RETRY_AFTER_SECONDS},
    )


async def _conflict(request: Request, exc: Exception) -> ProblemResponse:
    # The one place a constraint violation becomes a client-facing answer.
    return problem(409, "The request conflicts with the current state of the resource.")


async def _unexpected(request: Request, exc: Exception) -> ProblemResponse:
    logger.exception("unhandled_error")
    return problem(500, "An unexpected error occurred.")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(ProblemError, _problem_error)
    app.add_exception_handler(asyncpg.IntegrityConstraintViolationError, _conflict)
    for unavailable in (
        TimeoutError,  # pool.acquire(timeout=...) and connect timeouts
        OSError,  # connection refused while the pool reconnects
        asyncpg.PostgresConnectionError,
        asyncpg.InterfaceError,
        asyncpg.QueryCanceledError,  # statement_timeout
        asyncpg.CannotConnectNowError,
        asyncpg.AdminShutdownError,
    ):
        app.add_exception_handler(unavailable, _database_unavailable)
    app.add_exception_handler(Exception, _unexpected)
