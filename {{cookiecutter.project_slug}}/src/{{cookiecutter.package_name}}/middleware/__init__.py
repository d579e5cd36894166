"""The middleware stack, in one list, outermost first; each concern is a module of its own.

Every layer is pure ASGI (`__init__(app, ...)`, `async __call__(scope, receive, send)`), never
BaseHTTPMiddleware, which runs the app in a task and copies each response body.
"""

from typing import TYPE_CHECKING

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware

from ..observability.metrics import Metrics
from ..settings import Settings
from .access_log import AccessLogMiddleware
from .body_limit import BodySizeLimitMiddleware
from .metrics import MetricsMiddleware
from .request_id import RequestIdMiddleware
from .security_headers import SecurityHeadersMiddleware
from .unhandled import UnhandledErrorMiddleware

if TYPE_CHECKING:
    from ..observability.tracing import Tracing

# Response headers a browser script may read: the API's own, beyond the CORS-safelisted ones.
CORS_EXPOSE_HEADERS = ["ETag", "Location", "X-Request-ID", "Retry-After"]


def middleware_stack(
    settings: Settings, metrics: Metrics, tracing: "Tracing | None" = None
) -> list[Middleware]:
    """Outermost first: every response, the 500 of an unhandled error included, gets the security
    headers and the request id; the access log line carries the request id; the body limit sits
    right before routing."""
    access_log = (
        [Middleware(AccessLogMiddleware, mode=settings.access_log, sample=settings.access_log_sample)]
        if settings.access_log != "off"
        else []
    )
    # No CORS layer unless origins are listed: same-origin and server-to-server calls pay nothing.
    cors = (
        [
            Middleware(
                CORSMiddleware,
                allow_origins=settings.cors_allow_origins,
                allow_methods=settings.cors_allow_methods,
                allow_headers=settings.cors_allow_headers,
                expose_headers=CORS_EXPOSE_HEADERS,
                max_age=settings.cors_max_age,
            )
        ]
        if settings.cors_allow_origins
        else []
    )
    return [
        *(tracing.middleware() if tracing is not None else []),
        Middleware(SecurityHeadersMiddleware),
        Middleware(RequestIdMiddleware),
        *cors,
        *access_log,
        Middleware(MetricsMiddleware, metrics=metrics),
        Middleware(UnhandledErrorMiddleware),
        Middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes),
    ]
