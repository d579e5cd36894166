"""A guard added the ordinary FastAPI way, `resource_router(PREFIX, ...,
dependencies=[Depends(guard)])`, refuses every route of the resource on the fast handler."""

from typing import Any

import pytest
from fastapi import APIRouter

from {{ cookiecutter.package_name }}.kit.routing import FastRoute, build_route_handlers
from {{ cookiecutter.package_name }}.serving import app as serving_app
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, count_rows, started
from ..declared import change, new_body
from .guarded import READER, TOKEN_HEADER, guarded_router, serve_guarded


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> APIRouter:
    router = guarded_router()
    monkeypatch.setattr(serving_app, "ROUTERS", serve_guarded(router))
    return router


def _requests(item_id: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("GET", f"{BASE}/{item_id}", {}),
        ("GET", BASE, {}),
        ("POST", BASE, {"json": new_body()}),
        ("PATCH", f"{BASE}/{item_id}", {"json": change()}),
        ("DELETE", f"{BASE}/{item_id}", {}),
    ]


async def test_a_guard_given_to_resource_router_refuses_every_route_on_the_fast_handler(
    guarded: APIRouter, settings: Settings, auth_headers: dict[str, str], database_url: str
) -> None:
    app = create_app(settings)
    rows = await count_rows(database_url)
    async with started(app, auth_headers) as http:
        for method, url, extra in _requests(1):
            response = await http.request(method, url, **extra)
            assert response.status_code == 401, (method, url, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
        reader = {**auth_headers, TOKEN_HEADER: READER}
        assert (await http.post(BASE, json=new_body(), headers=reader)).status_code == 403
        # The probes are another router: the guard does not reach them.
        assert (await http.get("/healthz")).status_code == 200
    assert await count_rows(database_url) == rows
    mounted = [choice for choice in build_route_handlers(app) if choice.path.startswith(BASE)]
    assert len(mounted) == 5
    assert all(choice.fast for choice in mounted), mounted
    assert all(isinstance(route, FastRoute) for route in guarded.routes)
