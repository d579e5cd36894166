"""serving/metrics_listener.py: /metrics on METRICS_PORT by a listener of its own, never on
the traffic port; connections that never finish a request, or never read their answers, cannot
keep the scraper or the kubelet's probes out, and one peer's connections cannot close another's.
The room it makes is driven with stand-in transports: what a turn of the loop accepts, exactly."""

import asyncio
from typing import Any

import httpx
import pytest
import uvicorn
from devdb import free_port
from starlette.responses import Response
from uvicorn.server import ServerState

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.metrics_listener import (
    _MAX_CONNECTIONS,
    _making_room,
    metrics_listener,
)
from {{ cookiecutter.package_name }}.serving.protocol import guarded_protocol
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE
from .test_uvicorn_contract import _Transport

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


class _Peer(_Transport):
    """A stand-in transport from one peer address. Output its client has not read (`unread`)
    keeps a closed transport open, as a real one is until it has sent it; abort drops it."""

    def __init__(self, address: str, unread: int = 0) -> None:
        super().__init__()
        self.address = address
        self.unread = unread
        self.released = False  # the socket is gone: nothing is held for the client any more

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "peername":
            return (self.address, 40000)
        return super().get_extra_info(name, default)

    def get_write_buffer_size(self) -> int:
        return self.unread

    def close(self) -> None:
        super().close()
        self.released = self.unread == 0

    def abort(self) -> None:
        super().close()
        self.unread = 0
        self.released = True


class _Listener:
    """The listener's protocol as metrics_listener configures it, accepting stand-in transports
    within one turn of the loop (no connection_lost runs between them)."""

    def __init__(self, settings: Settings, app: Any) -> None:
        self.cls = _making_room(guarded_protocol(settings))
        self.config = uvicorn.Config(app, http=self.cls, lifespan="off", log_config=None)
        self.config.load()
        self.state = ServerState()

    def accept(self, transport: _Peer) -> Any:
        loop = asyncio.get_running_loop()
        protocol = self.cls(config=self.config, server_state=self.state, app_state={}, _loop=loop)
        protocol.connection_made(transport)
        return protocol


async def _answered(scope: Any, receive: Any, send: Any) -> None:
    await Response(b"ok")(scope, receive, send)


async def test_a_burst_of_connections_from_one_peer_closes_its_own_not_a_probe_waiting_to_be_read(
    settings: Settings,
) -> None:
    listener = _Listener(settings, _answered)
    # The kubelet's connection is accepted; its request is not read yet when more than the
    # listener keeps arrive from another peer in the same turn of the loop.
    probe = _Peer("10.0.0.1")
    listener.accept(probe)
    flood = [_Peer("10.0.0.66") for _ in range(_MAX_CONNECTIONS + 2)]
    for transport in flood:
        listener.accept(transport)
    assert not probe.closed
    # Room for each past the cap, each time from another connection (none closed twice).
    assert [transport.closed for transport in flood] == [True] * 3 + [False] * (len(flood) - 3)


async def test_a_connection_closed_to_make_room_lets_go_of_the_answer_its_client_never_read(
    settings: Settings,
) -> None:
    listener = _Listener(settings, _answered)
    unread = [_Peer("10.0.0.66", unread=4 << 20) for _ in range(_MAX_CONNECTIONS)]
    for transport in unread:  # each answered, its client reading none of it
        listener.accept(transport)
    listener.accept(_Peer("10.0.0.1"))
    assert [transport.released for transport in unread] == [True] + [False] * (len(unread) - 1)


async def test_connections_whose_clients_do_not_read_their_answers_are_kept_within_the_cap(
    settings: Settings,
) -> None:
    # Each has asked for a scrape and left the answer unread (pipelined scrapes wait behind it
    # for ever): the request is still being answered, yet the listener waits on its client.
    never = asyncio.Event()

    async def answering(scope: Any, receive: Any, send: Any) -> None:
        await never.wait()

    listener = _Listener(settings, answering)
    stuck = [_Peer("10.0.0.66", unread=1 << 20) for _ in range(_MAX_CONNECTIONS)]
    for transport in stuck:
        listener.accept(transport).data_received(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
    await asyncio.sleep(0)  # their requests are being answered
    listener.accept(_Peer("10.0.0.1"))
    released = [transport.released for transport in stuck]
    never.set()
    await asyncio.sleep(0)
    assert released == [True] + [False] * (len(stuck) - 1)
