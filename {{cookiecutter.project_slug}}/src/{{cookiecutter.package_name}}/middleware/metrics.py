"""Count and time every HTTP request by method, route template and status."""

import time
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from ..observability.metrics import Metrics
from .access_log import StatusRecorder, route_template


class MetricsMiddleware:
    """Count and time every HTTP request by method, route template and status."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app = app
        self._metrics = metrics
        self._in_flight = 0
        metrics.in_flight.set_function(lambda: self._in_flight)
        # labels() takes a lock and builds a key; the labelled children are cached here instead.
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def _observe(self, key: tuple[str, str, int], seconds: float) -> None:
        children = self._children.get(key)
        if children is None:
            labels = (key[0], key[1], str(key[2]))
            children = (self._metrics.requests.labels(*labels), self._metrics.latency.labels(*labels))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        recorder = StatusRecorder(send)
        self._in_flight += 1
        start = time.perf_counter()
        try:
            await self.app(scope, receive, recorder)
        finally:
            self._in_flight -= 1
            key = (scope["method"], route_template(scope), recorder.status)
            self._observe(key, time.perf_counter() - start)
