"""The rate limit in the service's stack (RATE_LIMIT_RPS > 0), on a real PostgreSQL: a client past
its rate gets 429 and writes nothing while another client is served; the probes stay open."""

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


@pytest.fixture
async def limited(
    database_url: str, auth_settings: dict[str, Any], auth_headers: dict[str, str]
) -> AsyncIterator[httpx.AsyncClient]:
    """The service at a rate so slow that no token comes back during a test: BURST requests."""
    settings = Settings(
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
    first = {**auth_headers, "X-Forwarded-For": "203.0.113.1"}
    async with started(create_app(settings), first) as client:
        yield client


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
