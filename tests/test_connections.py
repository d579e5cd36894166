"""Connections against the real server process of a baked service: idle keep-alive ones must not
refuse work, and silent or slow ones must not hold the pod. Each test records what it measured
(see figures.py and docs/reliability.md)."""

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from .baking import load_module
from .figures import Figures, percentile
from .serving import migrated_database, start_service

pytestmark = pytest.mark.slow
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture(scope="module")
def database_url(default_project: Path, postgres_url: str) -> Iterator[str]:
    """A migrated database of this module's own on the shared PostgreSQL."""
    with migrated_database(default_project, postgres_url, "connections_check") as url:
        yield url


async def _exchange(stream: Stream, path: str) -> int:
    """One GET on a kept-alive connection; its status."""
    reader, writer = stream
    writer.write(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    await reader.readexactly(length)
    return int(head[9:12])


async def _light_traffic(url: str, item: int, requests: int) -> tuple[Counter[int], list[float]]:
    """Four clients in turn on an item, /healthz and /readyz; statuses and latencies."""
    statuses: Counter[int] = Counter()
    latencies: list[float] = []
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:

        async def client(number: int) -> None:
            for n in range(requests // 4):
                path = ("/healthz", "/readyz", f"/items/{item}")[(number + n) % 3]
                began = time.monotonic()
                statuses[(await http.get(path)).status_code] += 1
                latencies.append(time.monotonic() - began)

        await asyncio.gather(*(client(number) for number in range(4)))
    return statuses, latencies


def test_300_idle_keep_alive_connections_and_light_traffic_get_no_503(
    default_project: Path, database_url: str, tmp_path: Path, figures: Figures
) -> None:
    # The server's default keep-alive, above a balancer's idle timeout (60 s for ALB and
    # ingress-nginx): idle connections stay open for the whole test, as behind an ingress.
    settings = load_module(default_project, "inventory_service", "settings").Settings
    assert settings.model_fields["timeout_keep_alive"].default > 60
    served = start_service(default_project, database_url, tmp_path / "service.log")

    async def scenario() -> dict[str, object]:
        idle = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(300)]
        first = Counter(
            [await _exchange(stream, "/healthz") for stream in idle]
        )  # now idle, kept alive
        async with httpx.AsyncClient(base_url=served.url) as http:
            item = (await http.post("/items", json={"name": "idle", "price_cents": 1})).json()["id"]
        statuses, latencies = await _light_traffic(served.url, item, 200)
        again = Counter(
            [await _exchange(stream, f"/items/{item}") for stream in idle]
        )  # still served
        for _, writer in idle:
            writer.close()
        assert first == {200: 300}
        assert statuses == {200: 200}, statuses
        assert again == {200: 300}
        return {
            "idle_keep_alive_connections": len(idle),
            "light_traffic_requests": sum(statuses.values()),
            "by_status": {str(status): count for status, count in (statuses + again).items()},
            "light_traffic_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        }

    try:
        figures.record("idle_keep_alive", **asyncio.run(scenario()))
    finally:
        served.process.terminate()
        served.process.wait(timeout=30)


async def _closed_after(stream: Stream, opened: float) -> float:
    """Seconds from `opened` until the server closes the connection."""
    try:
        while await stream[0].read(1024):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - opened


async def _trickle(stream: Stream) -> None:
    """A request head, one byte a second, for as long as the server keeps listening."""
    head = b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: " + b"a" * 100
    writer = stream[1]
    for byte in head:
        if writer.is_closing() or stream[0].at_eof():
            return
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except ConnectionError:
            return
        await asyncio.sleep(1)  # the slow client under test: its pace is the point


def test_silent_and_slow_connections_are_closed_at_the_head_timeout_while_traffic_is_served(
    default_project: Path, database_url: str, tmp_path: Path, figures: Figures
) -> None:
    timeout = 2.0
    served = start_service(
        default_project, database_url, tmp_path / "service.log", TIMEOUT_REQUEST_HEAD=str(timeout)
    )

    async def scenario() -> dict[str, object]:
        async with httpx.AsyncClient(base_url=served.url) as http:
            item = (await http.post("/items", json={"name": "slow", "price_cents": 1})).json()["id"]
        opened = time.monotonic()
        silent = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(200)]
        slow = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(50)]
        trickles = [asyncio.create_task(_trickle(stream)) for stream in slow]
        closing = asyncio.gather(*(_closed_after(stream, opened) for stream in silent + slow))
        statuses, latencies = await _light_traffic(served.url, item, 200)
        closed = await asyncio.wait_for(closing, timeout=timeout + 30)
        await asyncio.gather(*trickles)
        for _, writer in silent + slow:
            writer.close()
        assert statuses == {200: 200}, statuses
        # Every one of them closed by the server, at the deadline and not long after it.
        assert min(closed) >= timeout * 0.9
        assert max(closed) < timeout + 1.5, max(closed)
        return {
            "timeout_request_head_s": timeout,
            "silent_connections": len(silent),
            "one_byte_a_second_connections": len(slow),
            "closed_after_s_min": round(min(closed), 2),
            "closed_after_s_max": round(max(closed), 2),
            "traffic_meanwhile_requests": sum(statuses.values()),
            "traffic_meanwhile_by_status": {
                str(status): count for status, count in statuses.items()
            },
            "traffic_meanwhile_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        }

    try:
        figures.record("slow_connections", **asyncio.run(scenario()))
    finally:
        served.process.terminate()
        served.process.wait(timeout=30)
