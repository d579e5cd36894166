"""serving/metrics_listener.py: /metrics on METRICS_PORT by a listener of its own, never on
the traffic port; connections that never finish a request, or never read their answers, cannot
keep the scraper or the kubelet's probes out, and one peer's connections cannot close another's."""

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import uvicorn
from devdb import free_port
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
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


class _LargePage:
    """A /metrics page larger than the socket buffers hold, counting the scrapes it answers: what
    the real page is when a connection pipelines a few hundred scrapes and never reads."""

    def __init__(self) -> None:
        self.answered = 0
        self.changed = asyncio.Event()
        self.page = b"#" * (8 << 20)

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        async def scrape(request: Request) -> Response:
            self.answered += 1
            self.changed.set()
            return Response(self.page)

        return scrape

    async def answered_at_least(self, count: int) -> None:
        while self.answered < count:
            self.changed.clear()
            await self.changed.wait()


async def _probe(request: Request) -> Response:
    return Response(b"ok")


@pytest.mark.parametrize("scrapes", [1, 2], ids=["answer-unread", "answers-pipelined-unread"])
async def test_connections_that_never_read_their_answers_cannot_keep_the_probes_out(
    scrapes: int,
) -> None:
    page = _LargePage()
    port = free_port()
    routes = [Route("/healthz", _probe)]
    loop = asyncio.get_running_loop()
    async with metrics_listener(page, "127.0.0.1", port, protocol=PROTOCOL, routes=routes):
        holding: list[socket.socket] = []
        try:
            for number in range(8):
                # One answer left unread in the listener's buffer; or the second of two
                # pipelined scrapes waiting for the client to read the first.
                client = socket.socket()
                holding.append(client)
                client.setblocking(False)
                await loop.sock_connect(client, ("127.0.0.1", port))
                await loop.sock_sendall(
                    client, b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n" * scrapes
                )
                await page.answered_at_least(scrapes * (number + 1))
            await asyncio.sleep(0)  # the last answer written (or waiting to be)
            statuses = []
            for _ in range(10):  # a new connection each, as the kubelet probes
                async with httpx.AsyncClient(timeout=5) as http:
                    probed = await http.get(f"http://127.0.0.1:{port}/healthz")
                statuses.append(probed.status_code)
        finally:
            for client in holding:
                client.close()
    assert statuses == [200] * 10


class _Peer(_Transport):
    """A stand-in transport from one peer address. Output the client has not read (`unread`)
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


async def test_a_probe_read_before_the_connection_it_closed_is_gone_is_answered(
    settings: Settings,
) -> None:
    cls = _making_room(guarded_protocol(settings))
    config = uvicorn.Config(
        _probe_app,
        http=cls,
        lifespan="off",
        log_config=None,
        limit_concurrency=_MAX_CONNECTIONS + 1,  # as metrics_listener configures it
    )
    config.load()
    state = ServerState()
    loop = asyncio.get_running_loop()

    def accept() -> tuple[Any, _Peer]:
        transport = _Peer("10.0.0.1")
        protocol = cls(config=config, server_state=state, app_state={}, _loop=loop)
        protocol.connection_made(transport)
        return protocol, transport

    silent = [accept()[1] for _ in range(8)]
    probe, answered = accept()
    # The loop reads the probe's request before it runs the closed connection's connection_lost
    # (uvloop reads sockets first, then runs the callbacks scheduled in the turn before).
    probe.data_received(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
    for _ in range(100):
        await asyncio.sleep(0)
        if answered.written:
            break
    assert silent[0].closed
    assert answered.written.startswith(b"HTTP/1.1 200 "), answered.written[:40]


async def _probe_app(scope: Any, receive: Any, send: Any) -> None:
    await Response(b"ok")(scope, receive, send)


async def test_a_burst_of_connections_from_one_peer_closes_its_own_not_a_probe_waiting_to_be_read(
    settings: Settings,
) -> None:
    cls = _making_room(guarded_protocol(settings))
    config = uvicorn.Config(_probe, http=cls, lifespan="off", log_config=None)
    config.load()
    state = ServerState()
    loop = asyncio.get_running_loop()

    def accept(address: str) -> _Peer:
        transport = _Peer(address)
        cls(config=config, server_state=state, app_state={}, _loop=loop).connection_made(transport)
        return transport

    # The kubelet's connection is accepted; its request is not read yet when ten more from
    # another peer are accepted in the same turn of the loop (no connection_lost has run).
    probe = accept("10.0.0.1")
    flood = [accept("10.0.0.66") for _ in range(10)]
    assert not probe.closed
    assert [transport.closed for transport in flood] == [True] * 3 + [False] * 7


async def test_a_connection_closed_to_make_room_lets_go_of_the_answer_its_client_never_read(
    settings: Settings,
) -> None:
    cls = _making_room(guarded_protocol(settings))
    config = uvicorn.Config(_probe_app, http=cls, lifespan="off", log_config=None)
    config.load()
    state = ServerState()
    loop = asyncio.get_running_loop()
    unread = []
    for _ in range(8):  # each answered, its client reading none of it
        transport = _Peer("10.0.0.66", unread=4 << 20)
        cls(config=config, server_state=state, app_state={}, _loop=loop).connection_made(transport)
        unread.append(transport)
    newcomer = _Peer("10.0.0.1")
    cls(config=config, server_state=state, app_state={}, _loop=loop).connection_made(newcomer)
    assert [transport.released for transport in unread] == [True] + [False] * 7
