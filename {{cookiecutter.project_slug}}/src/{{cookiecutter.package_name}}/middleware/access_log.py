"""One structured access-log line per request, through structlog, sampled so it stays cheap."""

import random
import time
from typing import Literal

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "<unmatched>"
# A request slower than this is always logged, whatever the sampling says.
SLOW_SECONDS = 1.0

logger = structlog.get_logger("access")


def route_template(scope: Scope) -> str:
    """The path template the router matched (`/items/{item_id}`), never the raw path."""
    route = scope.get("route")
    path: str | None = getattr(route, "path", None)
    return path if path is not None else UNMATCHED


class StatusRecorder:
    """A `send` that notes the response status on its way out (500 until one is sent)."""

    __slots__ = ("_send", "status")

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status = 500

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self._send(message)


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return client[0] if client else None


class AccessLogMiddleware:
    """Log method, route template, status, duration, client (and the bound request id).

    mode "all" logs every error and slow request and a `sample` fraction of the rest; "errors"
    logs only 4xx/5xx and slow requests; "off" adds no middleware at all (see `middleware_stack`).
    """

    def __init__(
        self, app: ASGIApp, *, mode: Literal["all", "errors"] = "all", sample: float = 1.0
    ) -> None:
        self.app = app
        self._sample = sample if mode == "all" else 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        recorder = StatusRecorder(send)
        start = time.perf_counter()
        try:
            await self.app(scope, receive, recorder)
        finally:
            status = recorder.status
            elapsed = time.perf_counter() - start
            if (
                status >= 400
                or elapsed >= SLOW_SECONDS
                or self._sample >= 1.0
                or random.random() < self._sample  # noqa: S311 - sampling, not security
            ):
                logger.info(
                    "request",
                    method=scope["method"],
                    route=route_template(scope),
                    status=status,
                    duration_ms=round(elapsed * 1000, 3),
                    client=_client(scope),
                )
