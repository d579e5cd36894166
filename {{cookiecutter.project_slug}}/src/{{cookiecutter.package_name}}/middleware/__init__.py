"""The middleware stack, in one list, outermost first; each concern is a module of its own.

Every layer is pure ASGI (`__init__(app, ...)`, `async __call__(scope, receive, send)`), never
BaseHTTPMiddleware, which runs the app in a task and copies each response body.
"""

from starlette.middleware import Middleware

from ..observability.metrics import Metrics
from ..settings import Settings
from .access_log import AccessLog
from .body_limit import BodySizeLimitMiddleware
from .edge import EdgeMiddleware
from .head import HeadAsGetMiddleware
from .metrics import RequestMetrics


def middleware_stack(settings: Settings, metrics: Metrics) -> list[Middleware]:
    """Outermost first: the edge (request id, security headers, unhandled errors, metrics, access
    log) sees every answer, a 413 or a 500 included; the body limit and HEAD-as-GET sit right
    before routing."""
    access_log = (
        AccessLog(mode=settings.access_log, sample=settings.access_log_sample)
        if settings.access_log != "off"
        else None
    )
    return [
        Middleware(EdgeMiddleware, metrics=RequestMetrics(metrics), access_log=access_log),
        Middleware(BodySizeLimitMiddleware, max_bytes=settings.max_body_bytes),
        Middleware(HeadAsGetMiddleware),
    ]
