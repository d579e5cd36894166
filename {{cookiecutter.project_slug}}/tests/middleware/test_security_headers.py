"""middleware/security_headers.py: the headers a JSON API sends, around a five-line inline app,
then on the service's own answers."""

import httpx
import pytest
from fastapi import FastAPI

from ..conftest import BASE


@pytest.mark.parametrize(
    "path", ["/healthz", f"{BASE}/999999999", f"{BASE}?limit=0", "/openapi.json"]
)
async def test_api_responses_carry_the_security_headers(
    client: httpx.AsyncClient, path: str
) -> None:
    headers = (await client.get(path)).headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
    assert "strict-transport-security" not in headers  # plain HTTP: browsers would ignore it


@pytest.mark.parametrize(
    "path", ["/healthz", f"{BASE}/999999999", f"{BASE}?limit=20", f"{BASE}?limit=0", "/docs"]
)
async def test_every_response_says_cache_control_no_store(
    client: httpx.AsyncClient, path: str
) -> None:
    assert (await client.get(path)).headers["cache-control"] == "no-store"


async def test_docs_page_may_load_its_scripts_but_is_not_sniffed_or_framed(
    client: httpx.AsyncClient,
) -> None:
    headers = (await client.get("/docs")).headers
    assert "content-security-policy" not in headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"


async def test_https_requests_get_strict_transport_security(app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as http:
        headers = (await http.get("/healthz")).headers
    assert headers["strict-transport-security"].startswith("max-age=")
