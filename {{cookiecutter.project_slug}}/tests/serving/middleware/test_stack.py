"""middleware/__init__.py: the stack; CORS a layer of it only when CORS_ALLOW_ORIGINS lists origins; then listed origins only."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.serving.middleware import middleware_stack
from {{ cookiecutter.package_name }}.settings import Settings

from ...conftest import BASE, started

ALLOWED = "https://shop.example"
PREFLIGHT = {
    "Access-Control-Request-Method": "PATCH",
    "Access-Control-Request-Headers": "content-type, if-match",
}


@pytest.fixture(scope="module")
async def cors_client(
    database_url: str, auth_settings: dict[str, Any], auth_headers: dict[str, str]
) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        database_url=database_url,
        app_env="test",
        cors_allow_origins=f"{ALLOWED}, https://admin.example",
        cors_max_age=120,
        **auth_settings,
    )
    async with started(create_app(settings), auth_headers) as client:
        yield client


async def test_a_preflight_from_an_allowed_origin_is_answered_with_its_permissions(
    cors_client: httpx.AsyncClient,
) -> None:
    response = await cors_client.options(f"{BASE}/1", headers={"Origin": ALLOWED, **PREFLIGHT})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert "PATCH" in response.headers["access-control-allow-methods"]
    assert "if-match" in response.headers["access-control-allow-headers"].lower()
    assert response.headers["access-control-max-age"] == "120"


async def test_a_preflight_from_another_origin_is_refused(cors_client: httpx.AsyncClient) -> None:
    response = await cors_client.options(
        f"{BASE}/1", headers={"Origin": "https://evil.example", **PREFLIGHT}
    )
    assert response.status_code == 400
    assert "access-control-allow-origin" not in response.headers


async def test_a_request_from_an_allowed_origin_may_read_the_answer_and_its_etag(
    cors_client: httpx.AsyncClient,
) -> None:
    response = await cors_client.get(BASE, headers={"Origin": ALLOWED})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == ALLOWED
    assert "ETag" in response.headers["access-control-expose-headers"]


async def test_a_request_from_another_origin_gets_no_cors_headers(
    cors_client: httpx.AsyncClient,
) -> None:
    response = await cors_client.get(BASE, headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers


def test_without_origins_there_is_no_cors_layer(settings: Settings) -> None:
    layers = middleware_stack(settings, Metrics())
    assert "CORSMiddleware" not in [getattr(layer.cls, "__name__", "") for layer in layers]
