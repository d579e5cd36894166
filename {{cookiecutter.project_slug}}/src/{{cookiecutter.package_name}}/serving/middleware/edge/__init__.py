"""What every HTTP request gets, in one pure ASGI layer: a request id bound to its log lines and
echoed back, the security headers, a problem+json 500 for an exception no handler claimed, the
metrics and one access-log line.

One layer instead of five: one `send` wrapper and one try/finally per request instead of five
of each (measured by the template's `make bench`). Each concern stays
in a module of its own in this package; this one only puts them in order.

A client that goes away before its answer (a dropped upload: Starlette's ClientDisconnect) is not
an error of the service: it is logged at info level and counted as 499, nginx's status for it, so
that nobody can raise the 5xx rate and wake the on-call by dropping uploads. Nothing is sent:
there is nobody to read it.

An unhandled exception is answered here, not by Starlette's outermost ServerErrorMiddleware:
there it would get neither the headers nor the request id, the access log and metrics would miss
it, and the server would print the re-raised exception as a plain-text traceback.
"""

import time
from contextvars import ContextVar
from typing import Any

import structlog
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars, reset_contextvars

from ....kit.problems import problem
from .access_log import AccessLog, route_template
from .request_id import HEADER, TrustedPeers, request_id
from .request_metrics import RequestMetrics
from .security_headers import security_headers

logger = structlog.get_logger(__name__)
# Recorded for a request whose client left before its answer began (nginx's "client closed").
CLIENT_CLOSED = 499


class EdgeMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        metrics: RequestMetrics,
        access_log: AccessLog | None,
        trusted: TrustedPeers | None = None,
    ) -> None:
        self.app = app
        self._trusted = trusted or TrustedPeers("")
        self._metrics = metrics
        self._access_log = access_log
        # structlog's own context variable of `request_id`, found on the first request from the
        # token bind_contextvars returns: set and reset directly, two calls instead of
        # structlog's keyword loops (a bound client id still takes bind_contextvars).
        self._request_id_var: ContextVar[Any] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid, client_rid = request_id(scope, self._trusted)
        status = 0  # no response started yet

        async def edge_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                # Read at response time: a trusted proxy's scheme (HSTS) is applied by then.
                message["headers"] = [
                    *message.get("headers", ()),
                    *security_headers(scope),
                    (HEADER, rid.encode("ascii")),
                ]
            await send(message)

        variable, token, tokens = self._request_id_var, None, None
        if variable is not None and client_rid is None:
            token = variable.set(rid)
        elif client_rid is None:
            tokens = bind_contextvars(request_id=rid)
            self._request_id_var = tokens["request_id"].var
        else:
            tokens = bind_contextvars(request_id=rid, client_request_id=client_rid)
        start = time.perf_counter()
        try:
            await self.app(scope, receive, edge_send)
        except ClientDisconnect:
            logger.info("client_disconnected", response_started=bool(status))
            status = status or CLIENT_CLOSED
        except Exception:
            logger.exception("unhandled_error", response_started=bool(status))
            if not status:
                await problem(500, "An unexpected error occurred.")(scope, receive, edge_send)
            # Once the response has started, the server closes the connection when the app
            # returns without finishing it: the client sees a truncated response, as it must.
        finally:
            seconds = time.perf_counter() - start
            route = route_template(scope)
            self._metrics.observe(scope["method"], route, status or 500, seconds)
            if self._access_log is not None:
                self._access_log.record(scope, route, status or 500, seconds)
            if tokens is not None:
                reset_contextvars(**tokens)
            elif variable is not None and token is not None:
                variable.reset(token)
