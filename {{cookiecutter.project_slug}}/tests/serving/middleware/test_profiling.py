"""middleware/profiling.py around a small inline ASGI app: `?profile=1` answers the request's
pyinstrument profile; and the layer is in the stack only when PROFILING is on, never in production."""

import time
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware import middleware_stack
from {{ cookiecutter.package_name }}.serving.middleware.profiling import ProfilingMiddleware
from {{ cookiecutter.package_name }}.settings import Settings


def _a_deliberately_costly_function() -> None:
    deadline = time.perf_counter() + 0.05
    while time.perf_counter() < deadline:
        pass


async def _app(scope: Scope, receive: Receive, send: Send) -> None:
    _a_deliberately_costly_function()
    body = scope["query_string"]
    await send({"type": "http.response.start", "status": 201, "headers": []})
    await send({"type": "http.response.body", "body": body})


def _client() -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=ProfilingMiddleware(_app))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


async def test_a_request_with_profile_1_gets_the_html_profile_naming_its_functions() -> None:
    async with _client() as client:
        response = await client.get("/things?sort=name&profile=1")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "_a_deliberately_costly_function" in response.text
    assert response.headers["x-profiled-status"] == "201"


async def test_the_app_sees_the_request_without_the_profile_parameter() -> None:
    seen: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["query_string"])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    transport = httpx.ASGITransport(app=ProfilingMiddleware(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        await client.get("/things?sort=name&profile=1")
    assert seen == [b"sort=name"]


async def test_a_request_without_profile_1_gets_its_own_answer() -> None:
    async with _client() as client:
        response = await client.get("/things?profile=0")
    assert response.status_code == 201
    assert response.content == b"profile=0"


def _layers(settings: Settings) -> list[type]:
    return [layer.cls for layer in middleware_stack(settings, Metrics())]  # type: ignore[misc]


def test_the_profiling_layer_is_in_the_stack_only_when_profiling_is_on(
    auth_settings: dict[str, Any],
) -> None:
    url = "postgresql://localhost/db"
    on = Settings(database_url=url, app_env="dev", profiling=True, **auth_settings)
    assert ProfilingMiddleware in _layers(on)
    assert ProfilingMiddleware not in _layers(Settings(database_url=url, app_env="dev"))
    production = Settings(database_url=url, app_env="prod", **auth_settings)
    assert ProfilingMiddleware not in _layers(production)


def test_profiling_is_refused_in_production(auth_settings: dict[str, Any]) -> None:
    url = "postgresql://localhost/db"
    with pytest.raises(ValidationError, match="PROFILING=true is refused when APP_ENV=prod"):
        Settings(database_url=url, app_env="prod", profiling=True, **auth_settings)
