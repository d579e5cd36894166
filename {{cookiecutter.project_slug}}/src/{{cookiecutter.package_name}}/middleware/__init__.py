"""The middleware stack, in one list, outermost first; each concern is a module of its own.

Every layer is pure ASGI (`__init__(app, ...)`, `async __call__(scope, receive, send)`), never
BaseHTTPMiddleware, which runs the app in a task and copies each response body.
"""

from starlette.middleware import Middleware
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from ..observability.metrics import Metrics
from ..settings import Settings
from .access_log import AccessLog
from .admission import AdmissionMiddleware
from .body_limit import BodySizeLimitMiddleware
from .edge import EdgeMiddleware
from .head import HeadAsGetMiddleware
from .metrics import RequestMetrics
from .request_id import TrustedPeers


def middleware_stack(settings: Settings, metrics: Metrics) -> list[Middleware]:
    """Outermost first: the edge (request id, security headers, unhandled errors, metrics, access
    log) sees every answer, a 413, a 500 or a refusal included; admission then refuses a request
    past MAX_IN_FLIGHT before any other work is done for it; the body limit and HEAD-as-GET sit
    right before routing. The edge judges the request id on the TCP peer, so uvicorn's proxy-headers
    middleware (here rather than in the server for that reason) comes after it and replaces the
    peer and scheme with what a trusted proxy says."""
    trusted = TrustedPeers(settings.forwarded_allow_ips)
    # Costs time on every request: only in the stack when a proxy is named.
    proxy_headers = (
        [Middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)]
        if trusted
        else []
    )
    access_log = (
        AccessLog(mode=settings.access_log, sample=settings.access_log_sample)
        if settings.access_log != "off"
        else None
    )
    return [
        Middleware(
            EdgeMiddleware, metrics=RequestMetrics(metrics), access_log=access_log, trusted=trusted
        ),
        Middleware(AdmissionMiddleware, limit=settings.max_in_flight, metrics=metrics),
        *proxy_headers,
        Middleware(
            BodySizeLimitMiddleware,
            max_bytes=settings.max_body_bytes,
            drain_bytes=settings.max_body_drain_bytes,
        ),
        Middleware(HeadAsGetMiddleware),
    ]
