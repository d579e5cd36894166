"""X-Request-ID: keep the one a trusted proxy sends or make one, log with it, echo it back.

An id from anyone else is not trusted (a client could make its requests look like another's in
the logs, or collide with them): a fresh one is issued, and the client's, when well formed, is
logged beside it as `client_request_id`. Trusted proxies are FORWARDED_ALLOW_IPS, judged on the
peer of the TCP connection, so this layer sits outside the proxy-headers one, which replaces the
peer with the client the proxy names.
"""

import ipaddress
import re
import secrets

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars, reset_contextvars

HEADER = b"x-request-id"
# Caller-supplied ids reach logs and other services: accept only short, printable, unambiguous ones.
_WELL_FORMED = re.compile(rb"[A-Za-z0-9._:@/+=-]{1,128}")
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TrustedPeers:
    """FORWARDED_ALLOW_IPS: comma-separated IPs and CIDRs, `*` for every peer, empty for none."""

    def __init__(self, spec: str) -> None:
        entries = [entry.strip() for entry in spec.split(",") if entry.strip()]
        self.everyone = "*" in entries
        self._networks: list[_Network] = [
            ipaddress.ip_network(entry, strict=False) for entry in entries if entry != "*"
        ]

    def __bool__(self) -> bool:
        return self.everyone or bool(self._networks)

    def __contains__(self, peer: object) -> bool:
        if self.everyone:
            return True
        if not isinstance(peer, str):
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self._networks)


def _incoming_id(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == HEADER:
            return value.decode("ascii") if _WELL_FORMED.fullmatch(value) else None
    return None


def _peer(scope: Scope) -> str | None:
    client = scope.get("client")
    return client[0] if client else None


class RequestIdMiddleware:
    """Bind `request_id` to structlog's context for the request and set it on the response."""

    def __init__(self, app: ASGIApp, *, trusted: TrustedPeers | None = None) -> None:
        self.app = app
        self._trusted = trusted or TrustedPeers("")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = _incoming_id(scope)
        context: dict[str, str] = {}
        if incoming is not None and _peer(scope) in self._trusted:
            request_id = incoming
        else:
            # 16 random bytes from the OS: unique enough, and cheaper than uuid4().hex.
            request_id = secrets.token_hex(16)
            if incoming is not None:
                context["client_request_id"] = incoming
        header = (HEADER, request_id.encode("ascii"))

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        tokens = bind_contextvars(request_id=request_id, **context)
        try:
            await self.app(scope, receive, send_with_id)
        finally:
            reset_contextvars(**tokens)
