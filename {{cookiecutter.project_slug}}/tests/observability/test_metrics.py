"""observability/metrics.py: Prometheus text with route templates, pool, loop lag and process
metrics (served on METRICS_PORT: tests/serving/test_metrics_listener.py)."""

import gc
import re
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.metrics_listener import metrics_app

from ..conftest import BASE, TEMPLATE, in_process_client


@pytest.fixture(scope="module")
async def scrape(app: FastAPI, app_metrics: Metrics) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the metrics listener's app, over the app's own registry."""
    async with in_process_client(metrics_app(app_metrics), base_url="http://metrics") as http:
        yield http


def _value(text: str, pattern: str) -> float:
    match = re.search("^" + pattern + r" (\S+)$", text, re.MULTILINE)
    assert match is not None, pattern
    return float(match.group(1))


async def test_requests_are_counted_by_route_template_never_by_raw_path(
    client: httpx.AsyncClient, scrape: httpx.AsyncClient
) -> None:
    before = (await scrape.get("/metrics")).text
    labels = r'\{method="GET",route="' + re.escape(TEMPLATE) + r'",status="404"\}'
    series = "http_requests_total" + labels
    start = _value(before, series) if re.search(series, before) else 0.0
    for missing in (123456789, 223456789):
        assert (await client.get(f"{BASE}/{missing}")).status_code == 404
    response = await scrape.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert _value(text, series) == start + 2
    assert "123456789" not in text
    assert _value(text, "http_request_duration_seconds_count" + labels) >= 2


async def test_unmatched_paths_share_one_label(
    client: httpx.AsyncClient, scrape: httpx.AsyncClient
) -> None:
    await client.get("/no/such/path/42")
    text = (await scrape.get("/metrics")).text
    assert 'route="<unmatched>"' in text
    assert "/no/such/path/42" not in text


async def test_pool_loop_lag_and_process_metrics_are_exported(
    client: httpx.AsyncClient, scrape: httpx.AsyncClient
) -> None:
    await client.get(f"{BASE}/1")  # at least one acquire
    text = (await scrape.get("/metrics")).text
    assert _value(text, "db_pool_size") >= 2
    assert _value(text, "db_pool_max_size") == 10
    assert 0 <= _value(text, "db_pool_idle") <= _value(text, "db_pool_size")
    assert _value(text, "db_pool_acquire_wait_seconds_count") >= 1
    assert _value(text, "http_requests_in_flight") == 0  # the scrape is not a request to the app
    assert "event_loop_lag_seconds_bucket" in text
    assert _value(text, "process_resident_memory_bytes") > 0
    assert "python_gc_collections_total" in text
    assert 'gc_pause_seconds_count{generation="2"}' in text


def test_each_collection_is_recorded_as_a_pause_of_its_generation_while_watched() -> None:
    metrics = Metrics()
    labels = {"generation": "2"}
    unwatch = metrics.watch_collector()
    try:
        gc.collect()
    finally:
        unwatch()
    assert metrics.registry.get_sample_value("gc_pause_seconds_count", labels) == 1
    assert (metrics.registry.get_sample_value("gc_pause_seconds_sum", labels) or 0) > 0
    gc.collect()  # no longer watched
    assert metrics.registry.get_sample_value("gc_pause_seconds_count", labels) == 1


async def test_the_served_app_records_collector_pauses(
    client: httpx.AsyncClient, scrape: httpx.AsyncClient
) -> None:
    await client.get(f"{BASE}/1")  # the lifespan has run
    series = re.escape('gc_pause_seconds_count{generation="2"}')
    before = _value((await scrape.get("/metrics")).text, series)
    gc.collect()
    assert _value((await scrape.get("/metrics")).text, series) == before + 1
