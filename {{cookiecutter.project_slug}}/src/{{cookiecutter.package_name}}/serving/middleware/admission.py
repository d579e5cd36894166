"""Admission by requests in flight: a request over the limit gets 503 at once, never a queue.

uvicorn's own limit (`--limit-concurrency`) counts open connections, idle keep-alive ones
included, so a pod behind an ingress that keeps many connections open would refuse traffic while
idle. This limiter counts only requests being served. The probes are never refused: a pod at
its limit is busy, not dead, and must stay in rotation.

A request with a body takes its slot once the body has arrived, not before: a slot is work the pod
does, and a client that sends a head and then nothing does none. Taken at the head, 64 clients
that never send their bodies held every slot, and every other request got 503. The wait for
the body is bounded by TIMEOUT_REQUEST_BODY (serving/protocol.py answers 408) and its size by
MAX_BODY_BYTES (body_limit.py, the layer before this one).
"""

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ...health.routes import PROBE_PATHS
from ...kit.problems import retry_shortly
from ...observability.metrics import Metrics

_CONTENT_LENGTH = b"content-length"
_TRANSFER_ENCODING = b"transfer-encoding"


def _has_body(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if (name == _CONTENT_LENGTH and value != b"0") or name == _TRANSFER_ENCODING:
            return True
    return False


async def _body_arrived(receive: Receive) -> Receive:
    """Read the whole body now; the app then reads it again from what was kept."""
    kept: list[Message] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientDisconnect  # gone before its body came: nothing to serve (edge: 499)
        kept.append(message)
        if not message.get("more_body", False):
            break
    kept.reverse()

    async def replay() -> Message:
        return kept.pop() if kept else await receive()

    return replay


class AdmissionMiddleware:
    """At most `limit` requests (probes excluded) inside the app; the next gets 503 problem+json
    with Retry-After before any other work is done for it. A request with a body is judged once
    its body has arrived."""

    def __init__(self, app: ASGIApp, *, limit: int, metrics: Metrics) -> None:
        self.app = app
        self.limit = limit
        self.in_flight = 0
        self._refused = metrics.admission_refused
        # The one count of requests being served (probes excluded), read at scrape time.
        metrics.in_flight.set_function(lambda: self.in_flight)
        metrics.admission_limit.set(limit)
        # Rendered once, at start-up: a refusal costs a few microseconds, when time is shortest.
        refusal = retry_shortly(
            f"The service is serving its limit of {limit} requests at once; retry shortly."
        )
        self._headers, self._body = refusal.raw_headers, bytes(refusal.body)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PROBE_PATHS:
            await self.app(scope, receive, send)
            return
        if _has_body(scope):
            receive = await _body_arrived(receive)
        if self.in_flight >= self.limit:
            self._refused.inc()
            # A fresh header list each time: outer layers may append to it.
            await send(
                {"type": "http.response.start", "status": 503, "headers": list(self._headers)}
            )
            await send({"type": "http.response.body", "body": self._body})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1
