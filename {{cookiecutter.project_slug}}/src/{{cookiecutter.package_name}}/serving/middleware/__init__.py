"""The middleware stack, in one list, outermost first; each concern is a module of its own.

Every layer is pure ASGI (`__init__(app, ...)`, `async __call__(scope, receive, send)`), never
BaseHTTPMiddleware, which runs the app in a task and copies each response body.
"""

from typing import TYPE_CHECKING

from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from ...health.routes import PROBE_PATHS
{%- if cookiecutter.auth != "none" %}
from ...kit.auth import CREDENTIAL_HEADER, credential
{%- endif %}
from ...kit.dispatch import FastDispatch
from ...observability.metrics import Metrics
from ...settings import Settings
from ..metrics_listener import METRICS_PATH
from .admission import AdmissionMiddleware
from .body_limit import BodySizeLimitMiddleware
from .edge import EdgeMiddleware
from .edge.access_log import AccessLog
from .edge.request_id import TrustedPeers
from .edge.request_metrics import RequestMetrics
from .head import HeadAsGetMiddleware
from .path import EncodedSlashMiddleware
from .profiling import ProfilingMiddleware
from .rate_limit import {% if cookiecutter.auth == "none" %}Credential, {% endif %}RateLimitMiddleware

if TYPE_CHECKING:
    from ...observability.tracing import Tracing

# Response headers a browser script may read: the API's own, beyond the CORS-safelisted ones.
CORS_EXPOSE_HEADERS = [
    "ETag",
    "Location",
    "X-Request-ID",
    "Retry-After",
    "RateLimit",
    "RateLimit-Policy",
]
{%- if cookiecutter.auth == "none" %}
# What tells clients apart for the rate limit, before the address (middleware/rate_limit.py):
# nothing with auth=none (an auth option's bake takes the credential as its auth module reads it).
CREDENTIAL_HEADER: bytes | None = None
credential: Credential | None = None
{%- endif %}


def middleware_stack(
    settings: Settings, metrics: Metrics, tracing: "Tracing | None" = None
) -> list[Middleware]:
    """Outermost first: the request span (TRACING=true) covers everything; the edge (request id,
    security headers, unhandled errors, metrics, access log) sees every answer, a 413, a 500 or a
    refusal included. The edge judges the request id on the TCP peer, so uvicorn's proxy-headers
    middleware (here rather than in the server for that reason) comes after it and replaces the
    peer and scheme with what a trusted proxy says; CORS (when origins are listed) answers
    preflights after that. The rate limit (RATE_LIMIT_RPS > 0) comes next: it reads the client's
    address as the proxy vouched for it, a preflight never spends a client's tokens, and its 429
    still carries the CORS headers a browser needs. An encoded slash in the path (path.py) is
    refused right after the edge, before anything reads the path. The body limit refuses a body
    too large before it is waited for; admission then waits for the body (a request whose body has not come does
    no work and holds no slot) and refuses a request past MAX_IN_FLIGHT before the app does
    any work for it; HEAD-as-GET sits right before routing. The layers before admission are
    header checks of a few microseconds, without I/O."""
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
    # Off (RATE_LIMIT_RPS=0): not in the stack, so it costs nothing.
    rate_limit = (
        [
            Middleware(
                RateLimitMiddleware,
                rate=settings.rate_limit_rps,
                burst=settings.rate_limit_burst,
                capacity=settings.rate_limit_clients,
                metrics=metrics,
                credential_header=CREDENTIAL_HEADER,
                credential=credential,
                ipv6_prefix=settings.rate_limit_ipv6_prefix,
            )
        ]
        if settings.rate_limit_rps
        else []
    )
    # PROFILING=true (never in production, settings.py): outermost, so a profile covers every layer.
    profiling = [Middleware(ProfilingMiddleware)] if settings.profiling else []
    return [
        *profiling,
        *(tracing.middleware([*PROBE_PATHS, METRICS_PATH]) if tracing is not None else []),
        Middleware(
            EdgeMiddleware, metrics=RequestMetrics(metrics), access_log=access_log, trusted=trusted
        ),
        Middleware(EncodedSlashMiddleware),
        *proxy_headers,
        *cors,
        *rate_limit,
        Middleware(
            BodySizeLimitMiddleware,
            max_bytes=settings.max_body_bytes,
            drain_bytes=settings.max_body_drain_bytes,
        ),
        Middleware(AdmissionMiddleware, limit=settings.max_in_flight, metrics=metrics),
        Middleware(HeadAsGetMiddleware),
        # Innermost: a request for a FastRoute reaches it without FastAPI's router (kit/dispatch.py).
        *([Middleware(FastDispatch)] if settings.fast_dispatch else []),
    ]
