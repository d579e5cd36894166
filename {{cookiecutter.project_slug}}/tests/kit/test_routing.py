"""FastRoute (routing.py): every dependency honoured, the fast handler really used, scope["route"]
the route FastAPI matched."""

import gc
import weakref
from collections.abc import AsyncIterator
from typing import Any

import fastapi.routing
import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from fastapi.dependencies.utils import solve_dependencies

from {{ cookiecutter.package_name }}.kit import state
from {{ cookiecutter.package_name }}.kit.errors import install_error_handlers
from {{ cookiecutter.package_name }}.kit.routing import FastRoute, build_route_handlers
from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.serving.resources import RESOURCES
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, TEMPLATE, count_rows, lifespan, started
from ..declared import change, first_resource, new_body


def _deny() -> None:
    raise HTTPException(401, "No token.", headers={"WWW-Authenticate": "Bearer"})


def _five_requests(prefix: str, item_id: int) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("GET", f"{prefix}{BASE}/{item_id}", {}),
        ("GET", f"{prefix}{BASE}", {}),
        ("POST", f"{prefix}{BASE}", {"json": new_body()}),
        ("PATCH", f"{prefix}{BASE}/{item_id}", {"json": change()}),
        ("DELETE", f"{prefix}{BASE}/{item_id}", {}),
    ]


@pytest.fixture
async def guarded_client(
    settings: Settings, auth_headers: dict[str, str]
) -> AsyncIterator[httpx.AsyncClient]:
    """The real app, plus the resource router mounted again under /guarded inside a router whose
    dependency refuses everyone: the way an auth guard is added around existing routes."""
    app = create_app(settings)
    guard = APIRouter(dependencies=[Depends(_deny)])
    guard.include_router(first_resource().router)
    app.include_router(guard, prefix="/guarded")
    async with started(app, auth_headers) as http:
        yield http


async def test_a_dependency_around_the_resource_router_refuses_all_five_routes(
    guarded_client: httpx.AsyncClient, database_url: str
) -> None:
    created = await guarded_client.post(BASE, json=new_body())
    item_id = created.json()["id"]
    rows = await count_rows(database_url)
    for method, url, extra in _five_requests("/guarded", item_id):
        response = await guarded_client.request(method, url, **extra)
        assert response.status_code == 401, (method, url)
        assert response.headers["www-authenticate"] == "Bearer"
    assert await count_rows(database_url) == rows
    # The same routes, mounted without the guard, still serve.
    assert (await guarded_client.get(f"{BASE}/{item_id}")).status_code == 200


def _probe_router(**router_options: Any) -> APIRouter:
    """Two routes declared the way routes.py declares them, one of them with its own dependency."""
    router = APIRouter(prefix="/probe", route_class=FastRoute, **router_options)

    @router.get("/open")
    async def open_route() -> Response:
        return Response(b"open")

    @router.get("/closed", dependencies=[Depends(_deny)])
    async def closed_route() -> Response:
        return Response(b"closed")

    return router


def _probe_app(*, app_dependencies: list[Any] | None = None, **router_options: Any) -> FastAPI:
    app = FastAPI(dependencies=app_dependencies)
    app.include_router(_probe_router(**router_options))
    return app


@pytest.mark.parametrize(
    "app",
    [
        pytest.param(_probe_app(dependencies=[Depends(_deny)]), id="router-declaration"),
        pytest.param(_probe_app(app_dependencies=[Depends(_deny)]), id="application"),
    ],
)
async def test_a_router_or_application_dependency_refuses_every_route(app: FastAPI) -> None:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as http:
        assert (await http.get("/probe/open")).status_code == 401
        assert (await http.get("/probe/closed")).status_code == 401


async def test_a_route_dependency_refuses_that_route_and_no_other() -> None:
    app = _probe_app()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as http:
        assert (await http.get("/probe/closed")).status_code == 401
        opened = await http.get("/probe/open")
    assert opened.status_code == 200
    assert opened.content == b"open"


@pytest.fixture
def standard_handler_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call of FastAPI's standard request handler's dependency solving, by path."""
    calls: list[str] = []

    async def counting(*, request: Request, **kwargs: Any) -> Any:
        calls.append(request.url.path)
        return await solve_dependencies(request=request, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    return calls


async def test_every_route_runs_the_fast_handler(
    settings: Settings, standard_handler_calls: list[str], auth_headers: dict[str, str]
) -> None:
    # A fresh app: its routes' handlers are built after the standard one started counting.
    async with started(create_app(settings), auth_headers) as http:
        item_id = (await http.post(BASE, json=new_body())).json()["id"]
        statuses = [
            (await http.request(method, url, **extra)).status_code
            for method, url, extra in _five_requests("", item_id)
        ]
        statuses.append((await http.get("/healthz")).status_code)
        statuses.append((await http.get("/readyz")).status_code)
    assert statuses == [200, 200, 201, 200, 204, 200, 200]
    assert standard_handler_calls == []


async def test_an_unsupported_declaration_runs_the_standard_handler(
    standard_handler_calls: list[str],
) -> None:
    router = APIRouter(route_class=FastRoute)

    @router.get("/sync")
    def sync_route() -> Response:  # a plain def: the fast handler does not run these
        return Response(b"ok")

    app = FastAPI()
    app.include_router(router)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as http:
        assert (await http.get("/sync")).content == b"ok"
    assert standard_handler_calls == ["/sync"]


async def test_every_handler_is_chosen_at_start_up_before_any_request(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    build = FastRoute.get_route_handler

    def recording(route: FastRoute) -> Any:
        built.append(route.path)
        return build(route)

    monkeypatch.setattr(FastRoute, "get_route_handler", recording)
    app = create_app(settings)
    async with lifespan(app):
        pass  # no request at all
    # Two collection routes and three one-row routes a resource.
    declared = [
        route.path
        for resource in RESOURCES
        for route in resource.router.routes
        if isinstance(route, fastapi.routing.APIRoute)
    ]
    assert len(declared) == 5 * len(RESOURCES)
    assert sorted(built) == sorted([*declared, "/healthz", "/readyz"])


async def _nothing() -> None:
    return None


async def test_scope_route_is_the_route_fastapi_matched() -> None:
    seen: list[Any] = []

    async def record(request: Request) -> None:
        seen.append(request.scope["route"])

    app = FastAPI()
    install_error_handlers(app)  # a route's own dependencies (auth) may refuse: a 4xx, not a raise
    # No lifespan either: the routes' state dependencies give nothing, the requests are refused.
    app.dependency_overrides.update({state.database: _nothing, state.settings: _nothing})
    router = APIRouter(route_class=FastRoute, dependencies=[Depends(record)])
    router.include_router(first_resource().router)
    app.include_router(router)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        # No database behind this app: the dependency runs before the handler needs one.
        for method in ("GET", "PATCH", "DELETE"):
            await http.request(method, f"{BASE}/abc")
    assert [(route.path, route.methods) for route in seen] == [
        (TEMPLATE, {method}) for method in ("GET", "PATCH", "DELETE")
    ]


async def test_a_missing_row_costs_one_pool_acquire(
    app: FastAPI, app_metrics: Metrics, client: httpx.AsyncClient
) -> None:
    registry = app_metrics.registry
    before = registry.get_sample_value("db_pool_acquire_wait_seconds_count")
    assert before is not None
    assert (await client.get(f"{BASE}/987654321")).status_code == 404
    assert registry.get_sample_value("db_pool_acquire_wait_seconds_count") == before + 1


async def test_an_app_no_longer_used_is_not_kept_alive_by_its_routes_choices(
    settings: Settings,
) -> None:
    app = create_app(settings)
    assert build_route_handlers(app), "its routes' handlers were built"
    collected = weakref.ref(app)
    del app
    gc.collect()
    assert collected() is None, gc.get_referrers(collected())
