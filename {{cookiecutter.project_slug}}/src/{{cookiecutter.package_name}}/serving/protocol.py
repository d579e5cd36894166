"""The time and size limits of every connection, on uvicorn's own httptools protocol.

uvicorn closes idle keep-alive connections, but nothing closes a connection that never finishes a
request head or its body, and httptools accepts a head of any size: a few hundred silent sockets,
a few dozen bodies that never come, or one 8 MB header would hold a pod.
`GuardedHttpToolsProtocol` adds those limits on uvicorn's own protocol class, in the parser
callbacks it already has, so a request pays nothing it did not pay before unless its head or its
body arrives in pieces. It also answers what the parser refuses, and an HTTP/1.1 request without
exactly one Host, with problem+json like every other error; a request refused behind others
pipelined on its connection is answered after theirs, as uvicorn queues pipelined requests, so a
client reads every answer in order (not a 400 alone while an earlier POST committed). What it
reads of uvicorn is listed and checked in uvicorn_internals.py.
"""

import asyncio
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ..kit.problems import problem
from ..settings import Settings

logger = structlog.get_logger(__name__)
# After a refusal the server stops sending but reads (and drops) what the client still writes for
# this long before closing: closing on unread bytes sends a reset that would destroy the answer.
REFUSED_LINGER_SECONDS = 2.0
_HOST = b"host"
# A request with either of these has a body to wait for (RFC 9112 §6.3).
_BODY_HEADERS = frozenset({b"content-length", b"transfer-encoding"})


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, with deadlines on every request head and body, and a size
    limit on every head.

    The head deadline runs from the connection's opening, or from the first bytes of a head that
    did not arrive whole; a connection past it is closed. The body deadline runs from the end of
    a head whose body did not arrive with it; past it the request gets 408 and the connection is
    closed, and the app sees the client gone (so its request leaves MAX_IN_FLIGHT). A head larger
    than `max_head_bytes`, or with more than `max_headers` fields, gets 431; an HTTP/1.1 head
    without exactly one Host gets 400; either closes the connection (after a short linger, so that
    a client still sending receives the answer). The limits are class attributes: uvicorn builds
    the protocol itself (see `guarded_protocol`).
    """

    # Set from the settings by `guarded_protocol`, the one place they come from.
    head_timeout: float
    body_timeout: float
    max_head_bytes: int
    max_headers: int

    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _awaiting_head = True  # no request head is complete since the last request ended
    _awaiting_body = False  # a head announced a body that has not fully arrived
    _streamed_head_bytes = 0  # bytes received towards a head that is not complete yet
    _refused = False
    # A refusal decided in a parser callback, answered once the parser returns: (status, detail,
    # extra problem members).
    _refusal: tuple[int, str, dict[str, Any]] | None = None
    # A refusal that waits for the answers of the requests before it on the connection.
    _deferred: tuple[int, str, dict[str, Any]] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def waits_on_client(self) -> bool:
        """Whether the connection waits on its client: for a request (no response under way), or
        to read what it was sent (output the transport has not passed on)."""
        return self._idle() or self.transport.get_write_buffer_size() > 0

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        self._cancel_body_timer()
        super().connection_lost(exc)
        # uvicorn cancels the keep-alive timer only when the connection closed cleanly (exc is
        # None); after a reset the timer would hold the protocol, its last request and response
        # objects until it fires (TIMEOUT_KEEP_ALIVE seconds).
        self._unset_keepalive_if_required()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # answered and closing: the rest is not read
        if self._awaiting_head:
            self._streamed_head_bytes += len(data)
        super().data_received(data)
        if self._refusal is not None:
            self._refuse_in_turn(*self._refusal[:2], **self._refusal[2])
        elif self._awaiting_head and self._streamed_head_bytes > self.max_head_bytes:
            detail, limits = self._head_limits()
            self._refuse_in_turn(431, detail, **limits)
        elif self._refused:
            return
        elif self._awaiting_head and self._head_timer is None and self._idle():
            # Bytes of a head arrived but not all of it: the deadline starts now.
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)
        elif self._awaiting_body and self._body_timer is None and not self.pipeline:
            # A head whose body did not come with it: the body's deadline starts now (or, queued
            # behind requests being answered, when its turn comes: uvicorn reads no more of it
            # until then). A body that arrives with its head never arms it.
            self._arm_body_timer()

    # Parser callbacks. The head is measured once it is parsed, from what uvicorn collected.
    def on_headers_complete(self) -> None:
        if self._refused or self._refusal is not None:
            return  # a request pipelined after a refused one is not served
        if self._head_timer is not None:
            self._cancel_head_timer()
        self._awaiting_head = False
        self._streamed_head_bytes = 0
        headers = self.headers
        # Request target and header fields, each with its ": " and CRLF.
        size = len(self.url) + 4 * len(headers)
        hosts = 0
        has_body = False
        for name, value in headers:
            size += len(name) + len(value)
            if name == _HOST:
                hosts += 1
            elif name in _BODY_HEADERS:
                has_body = True
        if size > self.max_head_bytes or len(headers) > self.max_headers:
            self._refusal = (431, *self._head_limits())
            return
        if hosts != 1 and self.parser.get_http_version() == "1.1":
            # RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without a Host
            # header or with more than one; a proxy and the app could read different hosts.
            self._refusal = (400, "An HTTP/1.1 request needs exactly one Host header.", {})
            return
        self._awaiting_body = has_body
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused and self._refusal is None:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._refused or self._refusal is not None:
            return
        self._awaiting_head = True
        self._awaiting_body = False
        self._cancel_body_timer()
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        """What the parser refuses (malformed request line, framing, header syntax): uvicorn's
        answer is text/plain, the README promises problem+json for every error."""
        detail = "The request is not valid HTTP/1.1; it cannot be read."
        if self._awaiting_head:
            self._refuse_in_turn(400, detail)  # a new request's head: after the earlier answers
        elif self.pipeline:
            # The body of a request queued behind others (its head was valid, so uvicorn queued
            # it): the request is never served; in its turn, its refusal is its answer.
            self._refuse_in_turn(400, detail)
            cycle, _ = self.pipeline[0]
            self.pipeline[0] = (cycle, self._refused_in_turn)
        else:
            self._refuse(400, detail)  # the body of the request being answered

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._deferred is not None and self._idle() and not self.pipeline:
            self._answer_deferred()  # every request before the refused one is answered
        elif self._awaiting_body and self._body_timer is None and not self.pipeline:
            self._arm_body_timer()  # a queued request waiting for its body: its turn came

    async def _refused_in_turn(self, *_asgi: Any) -> None:
        """Stands in for the app (an ASGI callable) on a queued request that is not served,
        started by uvicorn once the requests before it are answered."""
        self.cycle.disconnected = True  # so that uvicorn adds no answer of its own (a 500)
        self._answer_deferred()

    def _answer_deferred(self) -> None:
        if self._deferred is None:
            return
        self._unset_keepalive_if_required()
        status, detail, extra = self._deferred
        self._deferred = None
        self._refuse(status, detail, **extra)

    def _idle(self) -> bool:
        """No request is being answered: a waiting client is not a slow one."""
        return self.cycle is None or self.cycle.response_complete

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _arm_body_timer(self) -> None:
        self._body_timer = self.loop.call_later(self.body_timeout, self._body_timed_out)

    def _cancel_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._awaiting_head and self._idle() and not self.transport.is_closing():
            logger.info("request_head_timeout", client=self.client and self.client[0])
            self.transport.close()

    def _body_timed_out(self) -> None:
        self._body_timer = None
        if not self._awaiting_body or self.transport.is_closing():
            return
        logger.info("request_body_timeout", client=self.client and self.client[0])
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            # The app reads an http.disconnect and its answer, if any, is dropped: uvicorn's own
            # state for a client gone, set now rather than when the socket has closed.
            cycle.disconnected = True
            cycle.message_event.set()
            if cycle.response_started:
                self.transport.close()  # a response under way cannot be replaced by a 408
                return
        self._refuse(
            408,
            f"The request body did not arrive within {self.body_timeout:g} seconds.",
            timeout_seconds=self.body_timeout,
        )

    def _head_limits(self) -> tuple[str, dict[str, Any]]:
        detail = (
            f"The request head exceeds {self.max_head_bytes} bytes or {self.max_headers} fields."
        )
        return detail, {"max_head_bytes": self.max_head_bytes, "max_headers": self.max_headers}

    def _refuse_in_turn(self, status: int, detail: str, **extra: Any) -> None:
        """Refuse the request whose head is being read: at once when no earlier request on the
        connection is still being answered, else after their answers (on_response_complete).
        Nothing more is read or served meanwhile."""
        if self._idle() and not self.pipeline:
            self._refuse(status, detail, **extra)
            return
        self._refused = True
        self._refusal = None
        self._cancel_head_timer()
        self._cancel_body_timer()
        self._deferred = (status, detail, extra)

    def _refuse(self, status: int, detail: str, **extra: Any) -> None:
        """Answer `status` problem+json without the app, and close the connection."""
        self._refused = True
        self._refusal = None
        self._cancel_head_timer()
        self._cancel_body_timer()
        if self.transport.is_closing():
            return
        logger.info("request_refused", status=status, client=self.client and self.client[0])
        response = problem(status, detail, **extra)
        head = [STATUS_LINE[status]]
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
            "body_timeout": settings.timeout_request_body,
            "max_head_bytes": settings.max_request_head_bytes,
            "max_headers": settings.max_request_headers,
        },
    )
