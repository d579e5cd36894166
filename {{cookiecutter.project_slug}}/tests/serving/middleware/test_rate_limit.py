"""Per-client rate limits (middleware/rate_limit.py), around a five-line inline app and a clock
the test moves: no sleeps."""

import hashlib

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.rate_limit import (
    RateLimitMiddleware,
    TokenBuckets,
    address_identity,
)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class _App:
    """Answers 200 and counts the requests that reached it."""

    def __init__(self) -> None:
        self.reached = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.reached += 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _limited(
    rate: float = 10, burst: int = 3, capacity: int = 100
) -> tuple[RateLimitMiddleware, _App, _Clock, Metrics]:
    inner, clock, metrics = _App(), _Clock(), Metrics()
    app = RateLimitMiddleware(
        inner,
        rate=rate,
        burst=burst,
        capacity=capacity,
        metrics=metrics,
        credential_header=b"x-api-key",
        clock=clock,
    )
    return app, inner, clock, metrics


def _client(app: RateLimitMiddleware, address: str = "203.0.113.1") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_a_client_past_its_burst_gets_429_while_another_client_is_served() -> None:
    app, inner, _, metrics = _limited(rate=10, burst=3)
    async with _client(app) as first, _client(app, "203.0.113.2") as second:
        served = [(await first.get("/things/1")).status_code for _ in range(3)]
        refused = await first.get("/things/1")
        other = await second.get("/things/1")
    assert served == [200, 200, 200]
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["status"] == 429
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["ratelimit"] == '"per-client";r=0;t=1'
    assert refused.headers["ratelimit-policy"] == '"per-client";q=3;w=1'
    assert other.status_code == 200
    assert inner.reached == 4  # the refused request never reached the app
    assert metrics.registry.get_sample_value("http_rate_limited_total") == 1


async def test_tokens_come_back_at_the_rate_and_never_above_the_burst() -> None:
    app, _, clock, _ = _limited(rate=2, burst=2)
    async with _client(app) as http:
        assert [(await http.get("/x")).status_code for _ in range(3)] == [200, 200, 429]
        clock.now += 0.5  # one token back at 2 a second
        assert [(await http.get("/x")).status_code for _ in range(2)] == [200, 429]
        clock.now += 3600  # an hour idle refills the burst, no more
        assert [(await http.get("/x")).status_code for _ in range(3)] == [200, 200, 429]


async def test_retry_after_and_the_window_follow_a_slow_rate() -> None:
    app, _, _, _ = _limited(rate=0.1, burst=1)
    async with _client(app) as http:
        await http.get("/x")
        refused = await http.get("/x")
    assert refused.headers["retry-after"] == "10"
    assert refused.headers["ratelimit"] == '"per-client";r=0;t=10'
    assert refused.headers["ratelimit-policy"] == '"per-client";q=1;w=10'


async def test_the_probes_are_never_counted_nor_refused() -> None:
    app, inner, _, _ = _limited(rate=1, burst=1)
    async with _client(app) as http:
        probes = [(await http.get(path)).status_code for path in ["/healthz", "/readyz"] * 20]
        assert (await http.get("/x")).status_code == 200  # its one token is still there
    assert set(probes) == {200}
    assert inner.reached == 41


async def test_a_credential_is_the_client_whatever_its_address() -> None:
    app, _, _, _ = _limited(rate=1, burst=1)
    async with _client(app, "203.0.113.1") as here, _client(app, "203.0.113.2") as there:
        assert (await here.get("/x", headers={"X-API-Key": "a"})).status_code == 200
        # The same key from elsewhere: the same client, past its rate.
        assert (await there.get("/x", headers={"X-API-Key": "a"})).status_code == 429
        # Another key from the same address, and no key at all: clients of their own.
        assert (await here.get("/x", headers={"X-API-Key": "b"})).status_code == 200
        assert (await here.get("/x")).status_code == 200


async def test_a_bucket_is_keyed_by_the_credential_s_digest_not_the_credential() -> None:
    app, _, _, _ = _limited()
    async with _client(app) as http:
        await http.get("/x", headers={"X-API-Key": "the-key"})
        await http.get("/x")
    assert list(app.buckets._buckets) == [hashlib.sha256(b"the-key").digest(), "203.0.113.1"]


async def test_memory_is_bounded_whatever_the_number_of_clients() -> None:
    app, _, _, metrics = _limited(rate=1, burst=1, capacity=50)
    async with _client(app, "198.51.100.7") as busy:
        assert (await busy.get("/x")).status_code == 200
        for n in range(1000):  # an attacker rotating addresses, the busy client among them
            async with _client(app, f"10.0.{n // 256}.{n % 256}") as rotating:
                assert (await rotating.get("/x")).status_code == 200
            if n % 40 == 0:
                assert (await busy.get("/x")).status_code == 429  # still past its rate
            assert len(app.buckets) <= 50
    assert len(app.buckets) == 50
    assert metrics.registry.get_sample_value("http_rate_limit_clients") == 50


def test_the_least_recently_seen_bucket_is_the_one_evicted() -> None:
    clock = _Clock()
    buckets = TokenBuckets(rate=1, burst=1, capacity=2, clock=clock)
    buckets.take("old")
    buckets.take("busy")
    buckets.take("old")  # now the most recently seen
    buckets.take("new")  # evicts "busy"
    assert buckets.take("old") > 0  # its empty bucket was kept
    assert buckets.take("busy") == 0  # a fresh, full bucket


@pytest.mark.parametrize(
    ("rate", "burst", "capacity"), [(0, 1, 1), (1, 0, 1), (1, 1, 0)], ids=["rate", "burst", "cap"]
)
def test_a_bucket_set_without_rate_burst_or_room_is_refused(
    rate: float, burst: int, capacity: int
) -> None:
    with pytest.raises(ValueError, match="required"):
        TokenBuckets(rate=rate, burst=burst, capacity=capacity)


async def test_other_scopes_pass_straight_through() -> None:
    app, inner, _, _ = _limited(rate=1, burst=1)
    messages: list[object] = []

    async def receive() -> dict[str, str]:
        return {"type": "lifespan.startup"}

    async def send(message: object) -> None:
        messages.append(message)

    for _ in range(3):
        await app({"type": "lifespan"}, receive, send)
    assert inner.reached == 3


@pytest.mark.parametrize(
    ("address", "prefix", "identity"),
    [
        ("203.0.113.7", 64, "203.0.113.7"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", 64, "2001:db8:1:2::/64"),
        ("2001:db8:1:2::1", 56, "2001:db8:1::/56"),
        ("2001:db8::1", 128, "2001:db8::1/128"),
        ("::ffff:198.51.100.7", 64, "198.51.100.7"),
        ("fe80::1%eth0", 64, "fe80::/64"),
        ("not-an-address:x", 64, "not-an-address:x"),
    ],
)
def test_a_client_address_is_keyed_by_ipv4_address_or_ipv6_network(
    address: str, prefix: int, identity: str
) -> None:
    assert address_identity(address, prefix) == identity
