"""The middleware stack, in one list, outermost first; each concern is a module of its own.

Every layer is pure ASGI (`__init__(app, ...)`, `async __call__(scope, receive, send)`), never
BaseHTTPMiddleware, which runs the app in a task and copies each response body.
"""

from starlette.middleware import Middleware
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from ..observability.metrics import Metrics
from ..settings import Settings
from .access_log import AccessLogMiddleware
from .body_limit import BodySizeLimitMiddleware
from .metrics import MetricsMiddleware
from .request_id import RequestIdMiddleware, TrustedPeers
from .security_headers import SecurityHeadersMiddleware
from .unhandled import UnhandledErrorMiddleware


def middleware_stack(settings: Settings, metrics: Metrics) -> list[Middleware]:
    """Outermost first: every response, the 500 of an unhandled error included, gets the security
    headers and the request id; the access log line carries the request id; the body limit sits
    right before routing. The request id judges the TCP peer, so it runs before the proxy headers
    (uvicorn's middleware, here rather than in the server for that reason) replace it."""
    trusted = TrustedPeers(settings.forwarded_allow_ips)
    # Costs time on every request: only in the stack when a proxy is named.
    proxy_headers = (
        [Middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)]
        if trusted
        else []
    )
    access_log = (
        [Middleware(AccessLogMiddleware, mode=settings.access_log, sample=settings.access_log_sample)]
        if settings.access_log != "off"
        else []
    )
    return [
        Middleware(RequestIdMiddleware, trusted=trusted),
        *proxy_headers,
        Middleware(SecurityHeadersMiddleware),
        *access_log,
        Middleware(MetricsMiddleware, metrics=metrics),
        Middleware(UnhandledErrorMiddleware),
        Middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes),
    ]
