"""The middleware stack, in one list, outermost first; each concern is a module of its own.

Every layer is pure ASGI (`__init__(app, ...)`, `async __call__(scope, receive, send)`), never
BaseHTTPMiddleware, which runs the app in a task and copies each response body.
"""

from starlette.middleware import Middleware

from ..observability.metrics import Metrics
from ..settings import Settings
from .access_log import AccessLogMiddleware
from .admission import AdmissionMiddleware
from .body_limit import BodySizeLimitMiddleware
from .metrics import MetricsMiddleware
from .request_id import RequestIdMiddleware
from .security_headers import SecurityHeadersMiddleware
from .unhandled import UnhandledErrorMiddleware


def middleware_stack(settings: Settings, metrics: Metrics) -> list[Middleware]:
    """Outermost first: every response, the 500 of an unhandled error included, gets the security
    headers and the request id; admission refuses over-limit requests before any other work (a
    refusal is counted by its own metric, not logged); the access log line carries the request id;
    the body limit sits right before routing."""
    access_log = (
        [Middleware(AccessLogMiddleware, mode=settings.access_log, sample=settings.access_log_sample)]
        if settings.access_log != "off"
        else []
    )
    return [
        Middleware(SecurityHeadersMiddleware),
        Middleware(RequestIdMiddleware),
        Middleware(AdmissionMiddleware, limit=settings.max_in_flight, metrics=metrics),
        *access_log,
        Middleware(MetricsMiddleware, metrics=metrics),
        Middleware(UnhandledErrorMiddleware),
        Middleware(
            BodySizeLimitMiddleware,
            max_bytes=settings.max_body_bytes,
            drain_bytes=settings.max_body_drain_bytes,
        ),
    ]
