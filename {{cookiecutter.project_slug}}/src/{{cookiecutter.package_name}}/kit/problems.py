"""problem+json answers (RFC 9457): the one way the service builds an error response."""

from http import HTTPStatus
from typing import Any

from .responses import ProblemResponse

# Seconds a client should wait before retrying a 503: the database or the server is saturated.
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


def retry_shortly(detail: str, headers: dict[str, str] | None = None) -> ProblemResponse:
    """503 with Retry-After: the request is safe to retry, the client did nothing wrong."""
    return problem(503, detail, headers={"Retry-After": RETRY_AFTER_SECONDS, **(headers or {})})


class ProblemError(Exception):
    """Raised by routes for a client error that is not a plain validation failure."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers
