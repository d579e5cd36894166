"""The rate limit in the service's stack (RATE_LIMIT_RPS > 0), on a real PostgreSQL: a client past
its rate gets 429 and writes nothing while another client is served; the probes stay open; what a
client is keyed on: its credential however it is spelled, its IPv6 /64, its IPv4 address behind an
IPv4-mapped one, and never an address it wrote itself into X-Forwarded-For."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
{%- if cookiecutter.auth == "jwt" %}
from loadtest.drive.issuer import Issuer
{%- endif %}

{% if cookiecutter.auth == "api_key" %}from {{ cookiecutter.package_name }}.kit.auth import digest
{% endif %}from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ...conftest import BASE, {% if cookiecutter.auth == "jwt" %}READ_SCOPE, WRITE_SCOPE, {% endif %}count_rows, started
from ...declared import new_body

BURST = 3
{%- if cookiecutter.auth == "api_key" %}
OTHER_KEY = "the-other-client-s-key"
{%- endif %}


@pytest.fixture
def other_client(auth_headers: dict[str, str]{% if cookiecutter.auth == "jwt" %}, issuer: Issuer{% endif %}) -> dict[str, str]:
    """The headers of a second client: {% if cookiecutter.auth == "api_key" %}another key{% elif cookiecutter.auth == "jwt" %}another subject's token{% else %}another address, as the trusted proxy says{% endif %}."""
{%- if cookiecutter.auth == "api_key" %}
    return {"X-API-Key": OTHER_KEY}
{%- elif cookiecutter.auth == "jwt" %}
    token = issuer.token(scope=f"{READ_SCOPE} {WRITE_SCOPE}", sub="another-client")
    return {"Authorization": f"Bearer {token}"}
{%- else %}
    return {"X-Forwarded-For": "203.0.113.2"}
{%- endif %}


def _settings(database_url: str, auth_settings: dict[str, Any]) -> Settings:
    """The service at a rate so slow that no token comes back during a test: BURST requests."""
    return Settings(
        database_url=database_url,
        app_env="test",
        rate_limit_rps=0.001,
        rate_limit_burst=BURST,
        # The in-process client's address is the proxy: X-Forwarded-For names the client.
        forwarded_allow_ips="127.0.0.1",
        **{
            **auth_settings,
{%- if cookiecutter.auth == "api_key" %}
            "api_key_hashes": [*auth_settings["api_key_hashes"], digest(OTHER_KEY)],
{%- endif %}
        },
    )


@pytest.fixture
async def limited(
    database_url: str, auth_settings: dict[str, Any], auth_headers: dict[str, str]
) -> AsyncIterator[httpx.AsyncClient]:
    """A client with credentials, behind the trusted proxy, of the slow-rate service."""
    first = {**auth_headers, "X-Forwarded-For": "203.0.113.1"}
    async with started(create_app(_settings(database_url, auth_settings)), first) as client:
        yield client


@pytest.fixture
async def anonymous(
    database_url: str, auth_settings: dict[str, Any]
) -> AsyncIterator[httpx.AsyncClient]:
    """A client without credentials, behind the trusted proxy, of the slow-rate service."""
    async with started(create_app(_settings(database_url, auth_settings))) as client:
        yield client


# What the service answers a request within the rate and without credentials.
ANSWERED = {{ 200 if cookiecutter.auth == "none" else 401 }}


async def _statuses(client: httpx.AsyncClient, *forwarded_for: str) -> list[int]:
    return [
        (await client.get(BASE, headers={"X-Forwarded-For": address})).status_code
        for address in forwarded_for
    ]


async def test_a_client_past_its_rate_gets_429_and_writes_nothing_while_another_is_served(
    limited: httpx.AsyncClient, other_client: dict[str, str], database_url: str
) -> None:
    created = [await limited.post(BASE, json=new_body()) for _ in range(BURST)]
    assert [response.status_code for response in created] == [201] * BURST
    before = await count_rows(database_url)
    refused = await limited.post(BASE, json=new_body())
    assert refused.status_code == 429, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.headers["ratelimit"].startswith('"per-client";r=0;t=')
    assert refused.headers["ratelimit-policy"].startswith(f'"per-client";q={BURST};w=')
    assert await count_rows(database_url) == before
    assert (await limited.get(created[0].headers["location"])).status_code == 429
    served = await limited.get(created[0].headers["location"], headers=other_client)
    assert served.status_code == 200, served.text


async def test_the_probes_answer_a_client_past_its_rate(limited: httpx.AsyncClient) -> None:
    for _ in range(BURST + 1):
        await limited.get(BASE)
    assert (await limited.get(BASE)).status_code == 429
    for path in ("/healthz", "/readyz"):
        assert (await limited.get(path)).status_code == 200


async def test_addresses_of_one_ipv6_64_share_one_bucket_and_another_64_has_its_own(
    anonymous: httpx.AsyncClient,
) -> None:
    # A new source address per request, all in 2001:db8:1:2::/64.
    one_site = [f"2001:db8:1:2:{n:x}::{n:x}" for n in range(1, 2 * BURST + 1)]
    assert await _statuses(anonymous, *one_site) == [ANSWERED] * BURST + [429] * BURST
    assert await _statuses(anonymous, "2001:db8:1:3::1") == [ANSWERED]


async def test_an_ipv4_mapped_ipv6_address_is_its_ipv4_address(
    anonymous: httpx.AsyncClient,
) -> None:
    mapped = ["::ffff:198.51.100.7"] * BURST
    assert await _statuses(anonymous, *mapped, "198.51.100.7") == [ANSWERED] * BURST + [429]


async def test_a_client_cannot_pick_its_bucket_by_writing_x_forwarded_for_itself(
    anonymous: httpx.AsyncClient,
) -> None:
    # The trusted proxy appends the address it saw; what the client wrote before it is not used
    # (uvicorn walks the list from the right, past the trusted proxies only). With
    # FORWARDED_ALLOW_IPS=* the leftmost entry would be used: refused with APP_ENV=prod.
    spoofed = [f"192.0.2.{n}, 203.0.113.9" for n in range(1, 2 * BURST + 1)]
    assert await _statuses(anonymous, *spoofed) == [ANSWERED] * BURST + [429] * BURST
{%- if cookiecutter.auth != "none" %}


async def test_one_credential_spelled_many_ways_is_one_client(
    anonymous: httpx.AsyncClient, auth_headers: dict[str, str]
) -> None:
    # The case: the same credential with its scheme in other cases, or more
    # whitespace, got a bucket per spelling.
    ((name, value),) = auth_headers.items()
{%- if cookiecutter.auth == "jwt" %}
    token = value.removeprefix("Bearer ")
    spellings = [
        f"Bearer {token}",
        f"bEaReR {token}",
        f"BEARER  {token}",
        f"bearer {token}  ",
        f"Bearer{' ' * 30}{token}",
        f" Bearer {token}",
    ]
{%- else %}
    spellings = [value, f" {value}", f"{value} ", f"\t{value}", f"{value}\t\t", f"  {value}  "]
{%- endif %}
    statuses = [
        (
            await anonymous.get(BASE, headers={name: spelling, "X-Forwarded-For": f"203.0.113.{n}"})
        ).status_code
        for n, spelling in enumerate(spellings, start=10)
    ]
    assert statuses == [200] * BURST + [429] * (len(spellings) - BURST)
{%- endif %}
