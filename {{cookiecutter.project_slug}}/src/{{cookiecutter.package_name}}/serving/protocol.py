"""The request-head limits of every connection, on uvicorn's own httptools protocol.

uvicorn closes idle keep-alive connections, but nothing closes a connection that never finishes a
request head, and httptools accepts a head of any size: a few hundred silent sockets, or one 8 MB
header, would hold a pod. `GuardedHttpToolsProtocol` adds both limits on uvicorn's own protocol
class, in the parser callbacks it already has, so a request pays nothing it did not pay before
unless its head arrives in pieces. What it reads of uvicorn is listed and checked in
uvicorn_internals.py.
"""

import asyncio

import structlog
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ..kit.problems import problem
from ..settings import Settings

logger = structlog.get_logger(__name__)
# After a 431 the server stops sending but reads (and drops) what the client still writes for
# this long before closing: closing on unread bytes sends a reset that would destroy the 431.
REFUSED_LINGER_SECONDS = 2.0


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with a deadline and a size limit on every request head.

    The deadline runs from the connection's opening, or from the first bytes of a head that did
    not arrive whole; a connection past it is closed. A head larger than `max_head_bytes`, or with
    more than `max_headers` fields, gets 431 and the connection is closed (after a short linger,
    so that a client still sending its head receives the answer). The limits are class
    attributes: uvicorn builds the protocol itself (see `guarded_protocol`).
    """

    # Set from the settings by `guarded_protocol`, the one place they come from.
    head_timeout: float
    max_head_bytes: int
    max_headers: int

    _head_timer: asyncio.TimerHandle | None = None
    _awaiting_head = True  # no request head is complete since the last request ended
    _streamed_head_bytes = 0  # bytes received towards a head that is not complete yet
    _refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)
        # uvicorn cancels the keep-alive timer only when the connection closed cleanly (exc is
        # None); after a reset the timer would hold the protocol, its last request and response
        # objects until it fires (TIMEOUT_KEEP_ALIVE seconds).
        self._unset_keepalive_if_required()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered 431 and closing: the rest is not read
        if self._awaiting_head:
            self._streamed_head_bytes += len(data)
        super().data_received(data)
        if self._refused or (
            self._awaiting_head and self._streamed_head_bytes > self.max_head_bytes
        ):
            self._refuse_head()
        elif self._awaiting_head and self._head_timer is None and self._idle():
            # Bytes of a head arrived but not all of it: the deadline starts now.
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    # Parser callbacks. The head is measured once it is parsed, from what uvicorn collected.
    def on_headers_complete(self) -> None:
        if self._refused:
            return  # a request pipelined after a refused one is not served
        if self._head_timer is not None:
            self._cancel_head_timer()
        self._awaiting_head = False
        self._streamed_head_bytes = 0
        headers = self.headers
        # Request target and header fields, each with its ": " and CRLF.
        size = (
            len(self.url)
            + sum(len(name) + len(value) for name, value in headers)
            + 4 * len(headers)
        )
        if size > self.max_head_bytes or len(headers) > self.max_headers:
            self._refused = True  # answered once the parser returns, see data_received
            return
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused:
            return
        self._awaiting_head = True
        super().on_message_complete()

    def _idle(self) -> bool:
        """No request is being answered: a waiting client is not a slow one."""
        return self.cycle is None or self.cycle.response_complete

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._awaiting_head and self._idle() and not self.transport.is_closing():
            logger.info("request_head_timeout", client=self.client and self.client[0])
            self.transport.close()

    def _refuse_head(self) -> None:
        self._refused = True
        self._cancel_head_timer()
        if self.transport.is_closing():
            return
        logger.info("request_head_too_large", client=self.client and self.client[0])
        response = problem(
            431,
            f"The request head exceeds {self.max_head_bytes} bytes or {self.max_headers} fields.",
            max_head_bytes=self.max_head_bytes,
            max_headers=self.max_headers,
        )
        head = [STATUS_LINE[431]]
        for name, value in [*self.server_state.default_headers, *response.raw_headers]:
            head += [name, b": ", value, b"\r\n"]
        self.transport.write(b"".join([*head, b"connection: close\r\n\r\n", response.body]))
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._head_timer = self.loop.call_later(REFUSED_LINGER_SECONDS, self.transport.close)
        else:
            self.transport.close()


def guarded_protocol(settings: Settings) -> type[GuardedHttpToolsProtocol]:
    """The protocol class with this service's limits (uvicorn instantiates it per connection)."""
    return type(
        "GuardedHttpToolsProtocol",
        (GuardedHttpToolsProtocol,),
        {
            "head_timeout": settings.timeout_request_head,
            "max_head_bytes": settings.max_request_head_bytes,
            "max_headers": settings.max_request_headers,
        },
    )
