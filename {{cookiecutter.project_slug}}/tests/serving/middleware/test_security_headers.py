"""middleware/edge/security_headers.py: the headers a JSON API sends, around a five-line inline
app, then on the service's own answers."""

import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.edge import EdgeMiddleware
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_metrics import RequestMetrics

from ...conftest import BASE, in_process_client


async def _headers(path: str, scheme: str = "http") -> httpx.Headers:
    """The headers of an answer to `path` from a five-line app inside the edge middleware."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    edge = EdgeMiddleware(app, metrics=RequestMetrics(Metrics()), access_log=None)
    async with in_process_client(edge, base_url=f"{scheme}://t") as http:
        return (await http.get(path)).headers


# The OWASP REST Security Cheat Sheet's set for an API answer (Content-Type is the answer's own).
OWASP_REST = {
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
}


async def test_an_api_answer_keeps_its_own_headers_and_gets_owasps_rest_set_and_no_more() -> None:
    headers = await _headers("/things/1")
    assert headers["content-type"] == "application/json"
    added = {name: value for name, value in headers.items() if name != "x-request-id"}
    assert added == {"content-type": "application/json", **OWASP_REST}
    assert "strict-transport-security" not in headers  # plain HTTP: browsers would ignore it


async def test_a_docs_page_also_gets_the_headers_only_a_page_needs() -> None:
    headers = await _headers("/docs")
    assert headers["referrer-policy"] == "no-referrer"  # its CDN loads are not told its URL
    assert headers["cross-origin-resource-policy"] == "same-origin"


@pytest.mark.parametrize("path", ["/docs", "/docs/oauth2-redirect", "/redoc"])
async def test_a_docs_page_gets_every_header_but_the_content_security_policy(path: str) -> None:
    headers = await _headers(path)
    assert "content-security-policy" not in headers  # it loads Swagger UI and ReDoc from a CDN
    assert headers["x-frame-options"] == "DENY"
    assert headers["cache-control"] == "no-store"


async def test_only_an_https_request_gets_strict_transport_security() -> None:
    headers = await _headers("/things/1", scheme="https")
    assert headers["strict-transport-security"] == "max-age=63072000; includeSubDomains"


@pytest.mark.parametrize(
    "path", ["/healthz", f"{BASE}/999999999", f"{BASE}?limit=0", "/openapi.json"]
)
async def test_api_responses_carry_the_security_headers(
    client: httpx.AsyncClient, path: str
) -> None:
    headers = (await client.get(path)).headers
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    assert headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
    assert "referrer-policy" not in headers  # JSON makes no requests of its own
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
    async with in_process_client(app, base_url="https://test") as http:
        headers = (await http.get("/healthz")).headers
    assert headers["strict-transport-security"].startswith("max-age=")
