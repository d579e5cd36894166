"""The HTTP server: one uvicorn worker on uvloop + httptools, and the limits of its connections."""

import asyncio
import contextlib

import structlog
import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http import httptools_impl

from ..kit.problems import retry_shortly
from ..observability.metrics import Metrics
from ..settings import Settings
from . import uvicorn_internals
from .app import create_app
from .metrics_listener import metrics_listener
from .middleware.edge.request_id import HEADER as REQUEST_ID_HEADER
from .middleware.edge.security_headers import EVERY_HEADER
from .probes import Probes
from .protocol import guarded_protocol

logger = structlog.get_logger(__name__)


async def _service_unavailable(scope: Scope, receive: Receive, send: Send) -> None:
    response = retry_shortly(
        "The server is at its connection limit; retry shortly.", headers={"Connection": "close"}
    )
    await response(scope, receive, send)


def use_problem_json_for_overload() -> None:
    """Make uvicorn's --limit-concurrency answer problem+json instead of text/plain.

    uvicorn answers excess connections itself, before the app runs, with the module-level
    `service_unavailable` app of its protocol module; swapping that app keeps the answer as cheap
    and adds no middleware. The server always runs the httptools protocol (protocol.py).
    """
    problem = uvicorn_internals.overload_problem()
    if problem is not None:
        logger.warning("overload_answer_is_uvicorns", reason=problem)
        return
    httptools_impl.service_unavailable = _service_unavailable  # type: ignore[attr-defined,assignment]


# The response header names the service writes, and the values of theirs that never change: uvicorn
# checks these once at start-up instead of with two regular expressions per header per response
# (~8 k instructions a header; the answer to a by-id carries 12).
KNOWN_HEADER_NAMES = (
    *(name for name, _ in EVERY_HEADER),
    REQUEST_ID_HEADER,
    *(b"content-type", b"content-length", b"etag", b"location", b"allow", b"vary", b"date"),
    *(b"retry-after", b"ratelimit", b"ratelimit-policy", b"www-authenticate", b"connection"),
)
KNOWN_HEADER_VALUES = (
    *(value for _, value in EVERY_HEADER),
    *(b"application/json", b"application/problem+json", b"close", b"keep-alive"),
)


def check_known_headers_once() -> None:
    """uvicorn's `send` checks each response header against two regular expressions; the ones
    the service writes are checked once, here, against the same two (uvicorn_internals.py)."""
    problem = uvicorn_internals.check_headers_once(KNOWN_HEADER_NAMES, KNOWN_HEADER_VALUES)
    if problem is not None:
        logger.warning("response_headers_checked_per_response", reason=problem)


def framework_problem() -> str | None:
    """One line naming what this server needs of uvicorn and does not find, or None."""
    problems = [*uvicorn_internals.protocol_problems(), *uvicorn_internals.listener_problems()]
    if not problems:
        return None
    return (
        f"uvicorn {uvicorn.__version__} lacks what the server needs, so it does not start "
        f"(no server without its request-head limits): {'; '.join(problems)}"
    )


def http_config(settings: Settings, app: ASGIApp) -> uvicorn.Config:
    """The traffic listener (the /metrics one is metrics_listener.py)."""
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http=guarded_protocol(settings),
        # No WebSocket route exists: an Upgrade request is served as plain HTTP (RFC 9110 §7.8
        # lets a server ignore Upgrade), so its answer is the route's, or a problem+json error,
        # instead of the empty 403 of a refused WebSocket handshake.
        ws="none",
        # A cap on sockets, idle keep-alive ones included: uvicorn answers 503 above it. The work
        # itself is bounded by MAX_IN_FLIGHT (middleware/admission.py), which counts requests.
        limit_concurrency=settings.limit_concurrency,
        backlog=settings.backlog,
        timeout_keep_alive=int(settings.timeout_keep_alive),
        timeout_graceful_shutdown=int(settings.timeout_graceful_shutdown),
        # X-Forwarded-* from FORWARDED_ALLOW_IPS are applied in the middleware stack (middleware/).
        proxy_headers=False,
        # Our access log (middleware/edge/access_log.py) replaces uvicorn's; no version leak.
        access_log=False,
        # uvicorn's own records go to the root logger, which configure_logging renders as JSON
        # lines through the same redaction; uvicorn's default config would print them as text.
        log_config=None,
        server_header=False,
        log_level=settings.log_level,
    )


async def _serve(
    server: uvicorn.Server, metrics: Metrics, probes: Probes, settings: Settings
) -> None:
    """The traffic server, with the /metrics listener on METRICS_PORT beside it; the kubelet's
    probes are served there too, out of the traffic port's connection cap (probes.py)."""
    async with metrics_listener(
        metrics,
        settings.host,
        settings.metrics_port,
        protocol=guarded_protocol(settings),
        routes=probes.routes(),
    ):
        await server.serve()


def run(settings: Settings) -> bool:
    """Serve until SIGTERM; False when the server never started (the lifespan failed). One worker
    per core: more workers on one core only add context switches."""
    use_problem_json_for_overload()
    check_known_headers_once()
    metrics = Metrics()
    probes = Probes()
    app: FastAPI = create_app(settings, metrics=metrics, probes=probes)
    config = http_config(settings, app)
    server = probes.server = uvicorn.Server(config)
    with (
        contextlib.suppress(KeyboardInterrupt),
        asyncio.Runner(loop_factory=config.get_loop_factory()) as runner,
    ):
        runner.run(_serve(server, metrics, probes, settings))
    return server.started
