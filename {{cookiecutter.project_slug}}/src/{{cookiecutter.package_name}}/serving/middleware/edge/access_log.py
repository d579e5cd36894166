"""One structured access-log line per request, through structlog's configured processors, sampled
so it stays cheap."""

import random
from typing import Literal

from starlette.types import Scope

from ....observability.direct_logger import DirectLogger
from .request_id import client_address

UNMATCHED = "<unmatched>"
# A request slower than this is always logged, whatever the sampling says.
SLOW_SECONDS = 1.0


def route_template(scope: Scope) -> str:
    """The path template the router matched (`/items/{item_id}`), never the raw path."""
    route = scope.get("route")
    path: str | None = getattr(route, "path", None)
    return path if path is not None else UNMATCHED


class AccessLog:
    """Log method, route template, status, duration, client (and the bound request id).

    mode "all" logs every error and slow request and a `sample` fraction of the rest; "errors"
    logs only 4xx/5xx and slow requests (ACCESS_LOG=off leaves it out of the edge middleware).
    """

    def __init__(self, mode: Literal["all", "errors"] = "all", sample: float = 1.0) -> None:
        self._sample = sample if mode == "all" else 0.0
        # structlog's configured chain, called directly (observability/direct_logger.py).
        self._logger = DirectLogger("access")

    def record(self, scope: Scope, route: str, status: int, seconds: float) -> None:
        if (
            status >= 400
            or seconds >= SLOW_SECONDS
            or self._sample >= 1.0
            or random.random() < self._sample  # noqa: S311 - sampling, not security
        ):
            self._logger.info(
                "request",
                method=scope["method"],
                route=route,
                status=status,
                duration_ms=round(seconds * 1000, 3),
                client=client_address(scope),
            )
