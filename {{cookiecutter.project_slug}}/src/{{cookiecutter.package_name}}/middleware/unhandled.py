"""An exception no handler claimed becomes a 500 problem+json inside the middleware stack.

Starlette answers such an exception in its outermost layer (ServerErrorMiddleware), outside every
middleware of ours: the answer would lack the security headers and `X-Request-ID`, the access log
and metrics would not see it, and the exception would be re-raised to the server, which prints a
plain-text traceback. Caught here instead, it is logged once, as JSON, with the request id bound.
"""

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import problem

logger = structlog.get_logger(__name__)


class UnhandledErrorMiddleware:
    """Answer 500 problem+json for an unhandled exception, log it with its traceback, swallow it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            logger.exception("unhandled_error", response_started=started)
            if not started:
                await problem(500, "An unexpected error occurred.")(scope, receive, send)
            # Once the response has started, the server closes the connection when the app returns
            # without finishing it; the client sees a truncated response, as it must.
