"""X-Request-ID: keep a well-formed one from the caller or make one, log with it, echo it back."""

import random
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars, reset_contextvars

HEADER = b"x-request-id"
# Caller-supplied ids reach logs and other services: accept only short, printable, unambiguous ones.
_WELL_FORMED = re.compile(rb"[A-Za-z0-9._:@/+=-]{1,128}")
# 128 random bits from a generator seeded by the OS: an id needs to be unique, not secret, and
# secrets.token_hex costs a getrandom syscall per request (3 % of a by-id request, py-spy).
_random = random.Random()  # noqa: S311 - correlation ids, not security tokens


def _incoming_id(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == HEADER:
            return value.decode("ascii") if _WELL_FORMED.fullmatch(value) else None
    return None


class RequestIdMiddleware:
    """Bind `request_id` to structlog's context for the request and set it on the response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming_id(scope) or f"{_random.getrandbits(128):032x}"
        header = (HEADER, request_id.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        tokens = bind_contextvars(request_id=request_id)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            reset_contextvars(**tokens)
