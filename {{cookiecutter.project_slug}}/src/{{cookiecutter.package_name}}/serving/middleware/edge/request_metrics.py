"""Count and time every HTTP request by method, route template and status."""

from typing import Any

from ....observability.metrics import Metrics


class RequestMetrics:
    """The per-request series of `Metrics`, with the labelled children cached.

    `labels()` takes a lock and builds a key on every call; a dict lookup is all a request pays.
    """

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        children = self._children.get(key)
        if children is None:
            labels = (method, route, str(status))
            children = (
                self._metrics.requests.labels(*labels),
                self._metrics.latency.labels(*labels),
            )
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)
