"""/metrics on a port of its own (METRICS_PORT), apart from the traffic port.

The metrics show the runtime, pool sizes and file descriptors: nothing a client of the API should
see. On their own port they stay out of the Service that carries traffic and out of any Ingress;
only the scraper (the chart's ServiceMonitor) is pointed at them.

The listener is a second uvicorn server in the same process and event loop: one more socket, no
thread, the same collectors. It is started with `startup()` rather than `serve()` so that it
installs no signal handlers (the traffic server owns SIGTERM) and runs no ticker; the asyncio
server it opens accepts connections on its own.
"""

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Protocol

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

# A scraper opens one connection at a time; a few more leave room for a person with curl.
_MAX_CONNECTIONS = 8
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


@asynccontextmanager
async def metrics_listener(
    metrics: Scraped,
    host: str,
    port: int,
    *,
    protocol: type[asyncio.Protocol],
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
        http=protocol,
        limit_concurrency=_MAX_CONNECTIONS,
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
