"""Bodies above MAX_BODY_BYTES get a 413 before they are read whole.

FastAPI now has a limit of its own (`FastAPI(max_body_size=...)`, on Starlette's
RequestBodyLimitMiddleware). It is not used here because it lacks two tested behaviours of this
one: it answers text/plain, not problem+json naming the limit (tests/bad_input/test_bodies.py),
and it answers without draining the refused body, so a client still writing gets a connection
reset instead of its 413 (tests/serving/middleware/test_body_limit.py).
"""

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...kit.problems import problem

_CONTENT_LENGTH = b"content-length"
_TRANSFER_ENCODING = b"transfer-encoding"
# Longest time spent reading a refused body: a client sending slower than this is cut off.
DRAIN_SECONDS = 5.0


class _BodyTooLarge(Exception):
    """Raised into the app to stop it reading a body already answered with 413."""


_EXPECT = b"expect"


def _declared_length(scope: Scope) -> tuple[int, bool, bool]:
    """(Content-Length or 0, whether the body is chunked and must be counted as it arrives,
    whether the client waits for 100 Continue before sending it)."""
    length, chunked, expects = 0, False, False
    for name, value in scope["headers"]:
        if name == _CONTENT_LENGTH and value.isdigit():
            length = int(value)
        elif name == _TRANSFER_ENCODING:
            chunked = True
        elif name == _EXPECT and value.lower() == b"100-continue":
            expects = True
    return length, chunked, expects


class BodySizeLimitMiddleware:
    """413 problem+json for a body larger than `max_bytes`.

    A declared Content-Length is judged before any byte is read; a chunked body is counted as it
    arrives and cut off at the first chunk past the limit. Before answering, up to `drain_bytes` of
    the refused body are read and discarded: a client writes its whole body before it reads the
    answer, and a server that closes with unread bytes in its socket sends a reset, which destroys
    the 413 on its way. A body drained whole leaves the connection open for the next request.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int, drain_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.drain_bytes = drain_bytes

    async def _drain(self, receive: Receive, pending: int) -> bool:
        """Read and discard the rest of the body; True when all of it was read in time."""
        try:
            async with asyncio.timeout(DRAIN_SECONDS):
                while pending <= self.drain_bytes:
                    message = await receive()
                    if message["type"] != "http.request":
                        return False
                    pending += len(message.get("body", b""))
                    if not message.get("more_body", False):
                        return True
        except TimeoutError:
            pass
        return False

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, *, drained: bool) -> None:
        response = problem(
            413,
            f"The request body exceeds {self.max_bytes} bytes.",
            headers=None if drained else {"Connection": "close"},
            max_bytes=self.max_bytes,
        )
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length, chunked, expects = _declared_length(scope)
        if not chunked:
            # No body, or one of declared length that the server never lets overrun.
            if length > self.max_bytes:
                # A body longer than the drain allowance is not read at all: closing is certain.
                # Nor is one the client holds back until 100 Continue, which reading would send
                # (uvicorn writes it on the first receive): refused at once, the body never sent.
                drained = (
                    not expects and length <= self.drain_bytes and await self._drain(receive, 0)
                )
                await self._refuse(scope, receive, send, drained=drained)
                return
            await self.app(scope, receive, send)
            return
        await self._counting(scope, receive, send)

    async def _counting(self, scope: Scope, receive: Receive, send: Send) -> None:
        received = 0
        started = refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes and not started:
                    # Answer now: whatever the framework makes of the exception is dropped below.
                    refused = True
                    drained = not message.get("more_body", False) or await self._drain(
                        receive, received
                    )
                    await self._refuse(scope, receive, send, drained=drained)
                    raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except Exception:
            if not refused:
                raise
