"""Count and time every HTTP request by method, route template and status."""

from bisect import bisect_left

from ....observability.metrics import Metrics


class RequestMetrics:
    """The per-request series of `Metrics`: each answer adds to its series' counts, found by one
    dict lookup (observability/counted.py says why they are plain counts)."""

    def __init__(self, metrics: Metrics) -> None:
        self._latency = metrics.latency
        self._bounds = metrics.latency.bounds
        self._series: dict[tuple[str, str, int], list[float]] = {}

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        counts = self._series.get((method, route, status))
        if counts is None:
            counts = self._latency.series(method, route, str(status))
            self._series[(method, route, status)] = counts
        counts[bisect_left(self._bounds, seconds)] += 1
        counts[-1] += seconds
