"""Bodies above MAX_BODY_BYTES get a 413 before they are read whole."""

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import problem

_CONTENT_LENGTH = b"content-length"
_TRANSFER_ENCODING = b"transfer-encoding"


class _BodyTooLarge(Exception):
    """Raised into the app to stop it reading a body already answered with 413."""


def _declared_length(scope: Scope) -> tuple[int, bool]:
    """(Content-Length or 0, whether the body is chunked and must be counted as it arrives)."""
    length, chunked = 0, False
    for name, value in scope["headers"]:
        if name == _CONTENT_LENGTH and value.isdigit():
            length = int(value)
        elif name == _TRANSFER_ENCODING:
            chunked = True
    return length, chunked


class BodySizeLimitMiddleware:
    """413 problem+json for a body larger than `max_bytes`.

    A declared Content-Length is judged before any byte is read; a chunked body is counted as it
    arrives and cut off at the first chunk past the limit.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem(
            413,
            f"The request body exceeds {self.max_bytes} bytes.",
            headers={"Connection": "close"},
            max_bytes=self.max_bytes,
        )
        await response(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length, chunked = _declared_length(scope)
        if not chunked:
            # No body, or one of declared length that the server never lets overrun.
            if length > self.max_bytes:
                await self._refuse(scope, receive, send)
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
                    await self._refuse(scope, receive, send)
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
