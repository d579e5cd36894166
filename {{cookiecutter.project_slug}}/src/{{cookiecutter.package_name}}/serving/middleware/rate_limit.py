"""Per-client rate limits: a token bucket per client, 429 past it, probes never counted.

A client is its credential when it sends one (the SHA-256 of the credential as authentication
reads it, the auth module's `credential`: the API key, or the bearer token without its scheme, so
that `bEaReR` or extra spaces do not make one token many clients), else its address
(middleware/edge/request_id.py `client_address`: the TCP peer, or the client a proxy of
FORWARDED_ALLOW_IPS names). An IPv6 client is its network of RATE_LIMIT_IPV6_PREFIX bits (a /64
by default, the usual allocation to one site: its 2^64 addresses are one client), an
IPv4-mapped IPv6 address its IPv4 address. This layer
runs before authentication and verifies nothing, on purpose: checking a token here would cost a
second JWT verification. That is safe because a bucket is only ever *given* by a credential, never
shared through one: a forged or unverified credential gets a bucket of its own, so it cannot drain
another client's, and its requests are then refused by auth anyway (401, no work done). Keying by
a token's unverified `sub` instead would let anyone drain a victim's bucket with a forged token.

Memory is bounded whatever the number of clients: at most `capacity` buckets, the least recently
seen dropped first. A client rotating addresses or credentials therefore only evicts the buckets
idle the longest; one idle for `burst / rate` seconds is full again, so dropping it changes
nothing, and one dropped sooner comes back full, which favours that client and no other.

A bucket lives in one process: the limit is per pod (README settings table, docs/deploying.md).
The metrics count refusals in one counter, never per client (a label per client would grow the
registry without bound).
"""

import hashlib
import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from ...health.routes import PROBE_PATHS
from ...kit.problems import problem
from ...observability.metrics import Metrics
from .edge.request_id import client_address

# The policy's name in the RateLimit and RateLimit-Policy fields (IETF httpapi draft
# "RateLimit header fields for HTTP", -11: an sf-string item with q/w and r/t parameters).
POLICY = "per-client"
Identity = bytes | str
# What a credential header's value is to authentication: the credential alone (normalised), or
# None when the value holds none.
Credential = Callable[[bytes], bytes | None]


def address_identity(address: str, ipv6_prefix: int) -> str:
    """The bucket of a client address: IPv4 as it is, IPv6 by its network of `ipv6_prefix` bits,
    IPv4-mapped IPv6 (::ffff:a.b.c.d) as its IPv4 address."""
    if ":" not in address:
        return address  # IPv4, or a Unix socket's name: no parsing on the common path
    try:
        ip = ipaddress.IPv6Address(address.split("%", 1)[0])
    except ValueError:
        return address
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Network((ip, ipv6_prefix), strict=False))


class TokenBuckets:
    """A token bucket per identity: `burst` tokens at most, `rate` tokens a second back; at most
    `capacity` buckets, the least recently seen evicted first."""

    def __init__(
        self,
        *,
        rate: float,
        burst: int,
        capacity: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate <= 0 or burst < 1 or capacity < 1:
            raise ValueError("rate > 0, burst >= 1 and capacity >= 1 are required")
        self.rate, self.burst, self.capacity = rate, burst, capacity
        self._clock = clock
        # identity -> [tokens, when they were counted]; OrderedDict's move_to_end and popitem are
        # C code, a bucket touched per request costs a dict lookup and a relink.
        self._buckets: OrderedDict[Identity, list[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, identity: Identity) -> float:
        """Take a token: 0.0 when there was one, else the seconds until there is one."""
        now = self._clock()
        bucket = self._buckets.get(identity)
        if bucket is None:
            if len(self._buckets) >= self.capacity:
                self._buckets.popitem(last=False)
            self._buckets[identity] = [self.burst - 1.0, now]
            return 0.0
        self._buckets.move_to_end(identity)
        tokens = min(self.burst, bucket[0] + (now - bucket[1]) * self.rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return 0.0
        bucket[0] = tokens
        return (1.0 - tokens) / self.rate


class RateLimitMiddleware:
    """A client past its rate gets 429 problem+json with Retry-After, RateLimit and
    RateLimit-Policy, before any other work is done for it; the probes are never counted."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        rate: float,
        burst: int,
        capacity: int,
        metrics: Metrics,
        credential_header: bytes | None = None,
        credential: Credential | None = None,
        ipv6_prefix: int = 64,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.buckets = TokenBuckets(rate=rate, burst=burst, capacity=capacity, clock=clock)
        self._credential_header = credential_header
        self._credential = credential or _stripped
        self._ipv6_prefix = ipv6_prefix
        self._refused = metrics.rate_limited
        metrics.rate_limit_clients.set_function(lambda: len(self.buckets))
        # The draft's quota policy for a token bucket: `burst` requests in the time that refills
        # them, which is `rate` a second on average.
        window = max(1, round(burst / rate))
        self._policy = f'"{POLICY}";q={burst};w={window}'.encode()
        # Rendered once: a refusal costs a few microseconds, when a client is flooding.
        refusal = problem(
            429,
            f"This client is past its rate of {rate:g} requests a second (bursts of {burst}); "
            "retry after the seconds Retry-After gives.",
        )
        self._headers, self._body = refusal.raw_headers, bytes(refusal.body)

    def _identity(self, scope: Scope) -> Identity | None:
        if self._credential_header is not None:
            for name, value in scope["headers"]:
                if name == self._credential_header:  # the first: two lines are auth's 400 anyway
                    credential = self._credential(value)
                    if credential:  # a value holding none is keyed by address, as no header
                        return hashlib.sha256(credential).digest()
                    break
        address = client_address(scope)
        return None if address is None else address_identity(address, self._ipv6_prefix)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PROBE_PATHS:
            await self.app(scope, receive, send)
            return
        identity = self._identity(scope)
        # No credential and no address (a Unix socket without a proxy): nothing tells clients apart.
        wait = 0.0 if identity is None else self.buckets.take(identity)
        if not wait:
            await self.app(scope, receive, send)
            return
        self._refused.inc()
        seconds = str(max(1, math.ceil(wait))).encode()
        headers = [
            *self._headers,
            (b"retry-after", seconds),
            (b"ratelimit", b'"' + POLICY.encode() + b'";r=0;t=' + seconds),
            (b"ratelimit-policy", self._policy),
        ]
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": self._body})


def _stripped(value: bytes) -> bytes | None:
    # RFC 9110 §5.5: whitespace around a field value is not part of it.
    return value.strip(b" \t") or None
