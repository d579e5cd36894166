"""/metrics on a port of its own (METRICS_PORT), apart from the traffic port.

The metrics show the runtime, pool sizes and file descriptors: nothing a client of the API should
see. On their own port they stay out of the Service that carries traffic and out of any Ingress;
only the scraper (the chart's ServiceMonitor) is pointed at them.

The listener is a second uvicorn server in the same process and event loop: one more socket, no
thread, the same collectors. It is started with `startup()` rather than `serve()` so that it
installs no signal handlers (the traffic server owns SIGTERM) and runs no ticker; the asyncio
server it opens accepts connections on its own.

The connections that never finish a request, or never read their answers, cannot keep the scraper
or the kubelet's probes out: a connection past `_MAX_CONNECTIONS` closes one that waits on its
client (silent, half a head sent, a body that never comes, idle between scrapes, or an answer it
does not read) rather than being refused. It is the oldest of the peer holding the most
connections, so one peer opening many closes its own, never the kubelet's connection accepted
before them, whose request is not read yet. A probe's connection sends its request at once and is
answered in milliseconds: with a cap of 8 (and uvicorn's 503 from the 9th connection, closed ones
not yet gone included), a client re-opening 16 connections with half a head got every scrape and
probe refused or cut (tests/serving/test_probes.py), and liveness would restart the pod. No 503 is
answered here: a probe must never be refused.
"""

import asyncio
import itertools
import socket
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from .protocol import GuardedHttpToolsProtocol

# Connections waiting on their clients before the oldest is closed: many, so that a flood of them
# cannot close a probe's connection before its head is read; each holds at most a request head
# (MAX_REQUEST_HEAD_BYTES, 16 KiB by default): 4 MiB then.
_MAX_CONNECTIONS = 256
METRICS_PATH = "/metrics"
_KEEP_ALIVE_SECONDS = 5


class Scraped(Protocol):
    """What is served: the service's Metrics, or the worker's collectors (jobs=postgres)."""

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]: ...


def metrics_app(metrics: Scraped, routes: Sequence[BaseRoute] = ()) -> Starlette:
    """GET /metrics, and `routes` (the probes: serving/probes.py); 404 for any other path."""
    return Starlette(routes=[Route(METRICS_PATH, metrics.endpoint(), methods=["GET"]), *routes])


def _bound_socket(host: str, port: int) -> socket.socket:
    # Bound here, not by uvicorn: a port in use raises OSError instead of uvicorn's sys.exit(1).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _making_room(protocol: type[GuardedHttpToolsProtocol]) -> type[GuardedHttpToolsProtocol]:
    """`protocol`, whose connections past `_MAX_CONNECTIONS` close one waiting on its client, so
    a new one is never refused for connections that send no request or read no answer."""
    accepted = itertools.count()  # not the loop's clock: one turn accepts many at the same time

    class MakingRoom(protocol):  # type: ignore[valid-type,misc]  # a class made at run time
        order = 0
        peer: str | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self.order = next(accepted)
            self.peer = self.client[0] if self.client else None
            if len(self.connections) <= _MAX_CONNECTIONS:
                return
            waiting = [
                connection
                for connection in self.connections
                if isinstance(connection, MakingRoom)
                and connection is not self
                and connection.waits_on_client()
            ]
            if not waiting:
                return
            held = Counter(getattr(connection, "peer", None) for connection in self.connections)
            victim = max(waiting, key=lambda each: (held[each.peer], -each.order))
            # Not close(): it waits until the client has read what it was sent, and one that
            # never reads would keep its socket, its answer and its place for good.
            victim.transport.abort()
            # Out of the count now: its connection_lost runs a turn of the loop later, after the
            # other connections accepted in this one, which would each pick it again.
            self.connections.discard(victim)

    return MakingRoom


@asynccontextmanager
async def metrics_listener(
    metrics: Scraped,
    host: str,
    port: int,
    *,
    protocol: type[GuardedHttpToolsProtocol],
    routes: Sequence[BaseRoute] = (),
) -> AsyncIterator[int | None]:
    """Serve /metrics (and `routes`) on host:port while the block runs; yield the bound port
    (None when port=0).

    `protocol` is the traffic port's (protocol.py `guarded_protocol`): the same head and body
    deadlines and head size limit. Without them a few silent connections held every one of the
    listener's slots, and one endless header line grew the process by hundreds of MB while the
    shared event loop parsed it, slowing the traffic port too."""
    if port == 0:
        yield None
        return
    sock = _bound_socket(host, port)
    config = uvicorn.Config(
        metrics_app(metrics, routes),
        lifespan="off",
        log_config=None,  # the service's logging is configured once, by the service
        access_log=False,
        server_header=False,
        date_header=False,
        proxy_headers=False,
        ws="none",
        http=_making_room(protocol),
        # No limit_concurrency: uvicorn's cap answers 503 to every request, probes included, once
        # enough connections are open, closed ones it has not yet forgotten counted; room is made
        # above instead, and an answer takes milliseconds.
        limit_concurrency=None,
        timeout_keep_alive=_KEEP_ALIVE_SECONDS,
        timeout_graceful_shutdown=_KEEP_ALIVE_SECONDS,
    )
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)  # what serve() would set: "off", a no-op
    await server.startup(sockets=[sock])
    try:
        yield sock.getsockname()[1]
    finally:
        await server.shutdown(sockets=[sock])
        sock.close()
