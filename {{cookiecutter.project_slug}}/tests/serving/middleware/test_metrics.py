"""middleware/edge/request_metrics.py: every request counted and timed by method, route template
and status, and counted in flight while it runs; around five-line inline apps in the edge
middleware."""

import httpx

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.edge import EdgeMiddleware
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_metrics import RequestMetrics

from ...conftest import in_process_client
from .conftest import ROUTE, answering


def _client(app: EdgeMiddleware) -> httpx.AsyncClient:
    return in_process_client(app)


async def test_requests_are_counted_and_timed_by_method_route_template_and_status() -> None:
    metrics = Metrics()
    counted = RequestMetrics(metrics)  # one per app: its cache of labelled series is shared
    created = EdgeMiddleware(answering(201), metrics=counted, access_log=None)
    async with _client(created) as http:
        for thing in (1, 2, 3):
            await http.post(f"/things/{thing}")
    missing = EdgeMiddleware(answering(404), metrics=counted, access_log=None)
    async with _client(missing) as http:
        await http.post("/things/4")
    sample = metrics.registry.get_sample_value
    for status, count in (("201", 3), ("404", 1)):
        labels = {"method": "POST", "route": ROUTE, "status": status}
        assert sample("http_requests_total", labels) == count
        assert sample("http_request_duration_seconds_count", labels) == count
    raw_path = {"method": "POST", "route": "/things/1", "status": "201"}
    assert sample("http_requests_total", raw_path) is None
