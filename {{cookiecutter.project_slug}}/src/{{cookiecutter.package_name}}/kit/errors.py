"""The exception handlers: every error the service can return, as problem+json (problems.py)."""

from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import Any

import asyncpg
import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from .media_types import is_json
from .openapi import document_problems
from .problems import ProblemError, problem, retry_shortly
from .responses import ProblemResponse

logger = structlog.get_logger(__name__)


def _field_name(location: tuple[int | str, ...], error_type: str) -> str:
    # ("body", "price_cents") -> "price_cents"; ("query", "limit") -> "limit".
    if error_type == "json_invalid":
        # FastAPI puts the character offset of a JSON error where a field would be: ("body", 28).
        return "body"
    if location[:1] == ("header",):
        return str(location[1])  # ("header", "if-match", 0): the header, whichever of its lines
    parts = [str(part) for part in location[1:]] or [str(part) for part in location]
    return ".".join(parts)


def _location(location: tuple[int | str, ...], error_type: str) -> list[str]:
    return ["body"] if error_type == "json_invalid" else [str(part) for part in location]


def _body_of_unsupported_type(request: Request, errors: list[dict[str, Any]]) -> bool:
    # FastAPI parses a body as JSON only when Content-Type says JSON; any other type reaches the
    # model as raw bytes and fails as "not an object". That is a 415, not a field error.
    return not is_json(request.headers.get("content-type")) and any(
        error["location"] == ["body"] and error["type"] == "model_attributes_type"
        for error in errors
    )


async def _validation_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [
        {
            "field": _field_name(tuple(error["loc"]), error["type"]),
            "location": _location(tuple(error["loc"]), error["type"]),
            "message": error["msg"],
            "type": error["type"],
        }
        for error in exc.errors()
    ]
    if any(error["type"] == "json_invalid" for error in errors):
        return problem(400, "The request body is not valid JSON.", errors=errors)
    if _body_of_unsupported_type(request, errors):
        return problem(415, "The request body must be JSON: send Content-Type: application/json.")
    fields = ", ".join(dict.fromkeys(error["field"] for error in errors))
    if all(error["location"][0] == "header" for error in errors):
        # A malformed header (If-Match) is a bad request, not an entity the server cannot process.
        headers = ", ".join(dict.fromkeys(error["field"].title() for error in errors))
        return problem(400, f"Malformed header: {headers}.", errors=errors)
    return problem(422, f"Invalid request: {fields}.", errors=errors)


async def _http_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, StarletteHTTPException)
    # FastAPI raises a bare "error parsing the body" from the decoder's error; name the problem.
    if isinstance(exc.__cause__, UnicodeDecodeError):
        return problem(400, "The request body is not valid UTF-8.")
    if isinstance(exc.__cause__, RecursionError):
        return problem(400, "The request body is not valid JSON: nested too deeply.")
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).description
    headers = dict(exc.headers) if exc.headers else None
    if exc.status_code == 405:
        # Starlette's Allow names only the first route on the path (GET), not PATCH and DELETE.
        headers = {**(headers or {}), "Allow": ", ".join(_allowed_methods(request))}
    return problem(exc.status_code, detail, headers=headers)


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed_methods(request: Request) -> list[str]:
    # Ask every route whether it takes the path with each method: FastAPI's included routers are
    # not plain Routes with a `methods` set, but every route answers `matches` (Match.FULL).
    routes = request.app.router.routes
    return [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes
        )
    ]


async def _problem_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, ProblemError)
    return problem(exc.status, exc.detail, headers=exc.headers)


def _retry_shortly(
    event: str, detail: str
) -> Callable[[Request, Exception], Awaitable[ProblemResponse]]:
    """A handler answering 503 with Retry-After: the request is safe to retry, the client did
    nothing wrong."""

    async def handler(request: Request, exc: Exception) -> ProblemResponse:
        logger.warning(event, error=type(exc).__name__)
        return retry_shortly(detail)

    return handler


# Pool acquire timeout, lost connection, server restarting or out of resources.
_database_unavailable = _retry_shortly(
    "database_unavailable", "The database is unavailable or saturated; retry shortly."
)
# PostgreSQL cancelled the statement at STATEMENT_TIMEOUT_MS; the connection stays usable.
_statement_timeout = _retry_shortly(
    "statement_timeout", "The database did not answer within the statement timeout; retry shortly."
)


async def _out_of_range(request: Request, exc: Exception) -> ProblemResponse:
    # Defence in depth: validation mirrors the column types, so this means a value slipped past it.
    logger.warning("data_error", error=type(exc).__name__)
    return problem(422, "A value is outside what the database can store.")


def _unique_field(exc: Exception) -> str | None:
    # A unique field's constraint is named <table>_<field>_key (PostgreSQL's own default name,
    # written out by the migrations), so the violation names the field.
    constraint = getattr(exc, "constraint_name", None) or ""
    table = getattr(exc, "table_name", None) or ""
    prefix, suffix = f"{table}_", "_key"
    if not (table and constraint.startswith(prefix) and constraint.endswith(suffix)):
        return None
    return constraint.removeprefix(prefix).removesuffix(suffix) or None


async def _conflict(request: Request, exc: Exception) -> ProblemResponse:
    # The one place a constraint violation becomes a client-facing answer.
    field = _unique_field(exc) if isinstance(exc, asyncpg.UniqueViolationError) else None
    if field is not None:
        return problem(
            409,
            f"{field}: another row already has this value.",
            errors=[{"field": field, "location": ["body", field], "message": "already taken"}],
        )
    return problem(409, "The request conflicts with the current state of the resource.")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(ProblemError, _problem_error)
    app.add_exception_handler(asyncpg.IntegrityConstraintViolationError, _conflict)
    app.add_exception_handler(asyncpg.DataError, _out_of_range)
    app.add_exception_handler(asyncpg.QueryCanceledError, _statement_timeout)
    for unavailable in (
        TimeoutError,  # pool.acquire(timeout=...) and connect timeouts
        OSError,  # connection refused while the pool reconnects
        asyncpg.PostgresConnectionError,  # class 08: connection lost mid-query
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,  # a connection the server dropped, caught mid-operation
        asyncpg.OperatorInterventionError,  # class 57: shutdown, restart, cannot connect now
        asyncpg.InsufficientResourcesError,  # class 53: too many connections, out of memory
    ):
        app.add_exception_handler(unavailable, _database_unavailable)
    # Any other exception: the edge layer of the middleware stack answers it (a 500 problem).
    document_problems(app)
