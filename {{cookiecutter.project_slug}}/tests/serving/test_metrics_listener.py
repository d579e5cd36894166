"""serving/metrics_listener.py: /metrics on METRICS_PORT by a listener of its own, never on
the traffic port; connections that never finish a request cannot keep the scraper out."""

import asyncio

import httpx
import pytest
from devdb import free_port

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.metrics_listener import metrics_listener
from {{ cookiecutter.package_name }}.serving.protocol import guarded_protocol
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE

PROTOCOL = guarded_protocol(Settings(app_env="dev"))


async def test_metrics_are_not_served_on_the_traffic_port_nor_in_the_openapi_schema(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/metrics")
    assert response.status_code == 404
    assert "python_gc" not in response.text
    schema = (await client.get("/openapi.json")).json()
    assert "/metrics" not in schema["paths"]


async def test_metrics_listener_serves_only_metrics_on_its_port_and_closes_it() -> None:
    metrics = Metrics()
    port = free_port()
    async with metrics_listener(metrics, "127.0.0.1", port, protocol=PROTOCOL) as bound:
        assert bound == port
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            scraped = await http.get("/metrics")
            elsewhere = await http.get(BASE)
    assert scraped.status_code == 200
    assert "python_gc_collections_total" in scraped.text
    assert elsewhere.status_code == 404
    async with httpx.AsyncClient() as http:
        with pytest.raises(httpx.ConnectError):
            await http.get(f"http://127.0.0.1:{port}/metrics", timeout=1)


async def test_metrics_port_zero_starts_no_listener() -> None:
    async with metrics_listener(Metrics(), "127.0.0.1", 0, protocol=PROTOCOL) as bound:
        assert bound is None


def test_served_process_answers_metrics_on_metrics_port_only(
    served_url: str, served_metrics_port: int, auth_headers: dict[str, str]
) -> None:
    assert httpx.get(f"{served_url}{BASE}/1", headers=auth_headers, timeout=5).status_code in (
        200,
        404,
    )
    scraped = httpx.get(f"http://127.0.0.1:{served_metrics_port}/metrics", timeout=5)
    assert scraped.status_code == 200
    assert "http_requests_total" in scraped.text
    assert httpx.get(f"{served_url}/metrics", timeout=5).status_code == 404


async def _half_heads(port: int, opened: asyncio.Event) -> None:
    """A connection that sends half a request head and waits; opened again once it is closed."""
    while True:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        opened.set()
        try:
            writer.write(b"GET /metrics HTTP/1.1\r\nHost: test\r\nX-Slow: ")
            await reader.read()  # until the listener closes it
        finally:
            writer.close()


async def test_connections_reopened_with_half_a_head_cannot_keep_the_scraper_out() -> None:
    port = free_port()
    async with metrics_listener(Metrics(), "127.0.0.1", port, protocol=PROTOCOL):
        opened = [asyncio.Event() for _ in range(8)]
        holding = [asyncio.create_task(_half_heads(port, event)) for event in opened]
        try:
            await asyncio.gather(*(event.wait() for event in opened))
            statuses = []
            url = f"http://127.0.0.1:{port}/metrics"
            for _ in range(25):  # a new connection each, as a scraper after a restart
                async with httpx.AsyncClient(timeout=5) as http:
                    statuses.append((await http.get(url)).status_code)
            assert all(not task.done() for task in holding)  # they kept at it all along
        finally:
            for task in holding:
                task.cancel()
            await asyncio.gather(*holding, return_exceptions=True)
    assert statuses == [200] * 25
