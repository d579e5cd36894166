"""X-Request-ID: keep the one a trusted proxy sends or make one; the edge middleware
(edge/__init__.py) binds it to every log line of the request and echoes it back.

An id from anyone else is not trusted (a client could make its requests look like another's in
the logs, or collide with them): a fresh one is issued, and the client's, when well formed, is
logged beside it as `client_request_id`. Trusted proxies are FORWARDED_ALLOW_IPS, judged on the
peer of the TCP connection, before the proxy-headers middleware replaces that peer with the
client the proxy names.
"""

import ipaddress
import random
import re

from starlette.types import Scope

HEADER = b"x-request-id"
# Caller-supplied ids reach logs and other services: accept only short, printable, unambiguous ones.
_WELL_FORMED = re.compile(rb"[A-Za-z0-9._:@/+=-]{1,128}")
# 128 random bits from a generator seeded by the OS: an id needs to be unique, not secret, and
# secrets.token_hex costs a getrandom syscall per request (3 % of a by-id request, py-spy).
_random = random.Random()  # noqa: S311 - correlation ids, not security tokens
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
        if not self._networks or not isinstance(peer, str):
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


def client_address(scope: Scope) -> str | None:
    """The client's address: the TCP peer, or once the proxy-headers layer has run, the client a
    trusted proxy names."""
    client = scope.get("client")
    return client[0] if client else None


def request_id(scope: Scope, trusted: TrustedPeers) -> tuple[str, str | None]:
    """(the request's id, the id the client sent when it was not kept).

    A well-formed id is kept when the TCP peer is a trusted proxy; otherwise a new one is made.
    """
    incoming = _incoming_id(scope)
    if incoming is not None and client_address(scope) in trusted:
        return incoming, None
    return f"{_random.getrandbits(128):032x}", incoming
