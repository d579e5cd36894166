"""The dispatch's part of the framework contract (kit/fastapi_internals.py): every FastAPI and
Starlette internal it reads has the shape it reads, every route of every resource is served by
it, and without any one of them every request takes FastAPI's router, still guarded."""

from collections.abc import AsyncIterator, Iterator

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from {{ cookiecutter.package_name }}.kit import dispatch, routing
from {{ cookiecutter.package_name }}.kit import fastapi_internals as internals
from {{ cookiecutter.package_name }}.kit.dispatch import FastDispatch, dispatch_of
from {{ cookiecutter.package_name }}.kit.route_table import RouteTable
from {{ cookiecutter.package_name }}.serving import app as serving_app
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.serving.resources import ROUTERS
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, in_process_client, lifespan
from ..declared import new_body
from .guarded import TOKEN_HEADER, WRITER, guarded_router, serve_guarded


@pytest.fixture(autouse=True)
def checked_afresh() -> Iterator[None]:
    def clear() -> None:
        internals.dispatch_problems.cache_clear()
        dispatch._logged.clear()
        routing._logged.clear()

    clear()
    yield
    clear()


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving_app, "ROUTERS", serve_guarded(guarded_router()))


async def _started(settings: Settings, headers: dict[str, str]) -> AsyncIterator[FastAPI]:
    app = create_app(settings)
    async with lifespan(app), in_process_client(app, headers) as http:
        assert (await http.get("/healthz")).status_code == 200
        # The guard still refuses and the routes still serve, whichever way a request takes.
        assert (await http.get(BASE, headers={TOKEN_HEADER: ""})).status_code == 401
        assert (await http.post(BASE, json=new_body())).status_code == 201
        assert (await http.get(BASE)).status_code == 200
        yield app


@pytest.mark.parametrize("internal", internals.DISPATCH, ids=lambda i: i.qualname)
def test_each_internal_the_dispatch_reads_has_its_shape(internal: internals.Internal) -> None:
    assert internal.problem() is None
    assert internals.dispatch_problems() == ()


async def test_every_route_of_every_resource_is_served_by_the_dispatch(
    settings: Settings, auth_headers: dict[str, str]
) -> None:
    app = create_app(settings)
    async with lifespan(app), in_process_client(app, auth_headers) as http:
        await http.get("/healthz")
        table = RouteTable.derive(app)
    served = {
        (method, candidate.route.path)
        for candidates in table.by_segments.values()
        for candidate in candidates
        if candidate.app is not None
        for method in candidate.methods or ()
    }
    declared = {
        (method, route.path)
        for router in ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods or ()
    }
    assert served == declared


@pytest.mark.parametrize("internal", internals.DISPATCH, ids=lambda i: i.qualname)
async def test_without_an_internal_every_request_takes_fastapis_router_still_guarded(
    guarded: None,
    internal: internals.Internal,
    monkeypatch: pytest.MonkeyPatch,
    settings: Settings,
    auth_headers: dict[str, str],
) -> None:
    monkeypatch.setattr(internal, "name", "no_such_name")
    async for app in _started(settings, {**auth_headers, TOKEN_HEADER: WRITER}):
        assert dispatch_of(app) is None


async def test_without_starlettes_exception_middleware_next_the_dispatch_stays_off(
    guarded: None, monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    monkeypatch.setattr(internals, "EXCEPTION_TABLES", ("_no_such_table", "_status_handlers"))
    async for app in _started(settings, {**auth_headers, TOKEN_HEADER: WRITER}):
        assert dispatch_of(app) is None


def test_the_dispatch_is_off_when_the_next_layer_is_anything_else() -> None:
    async def plain(scope: object, receive: object, send: object) -> None:
        return None

    assert FastDispatch(plain).enabled is False


async def test_fast_dispatch_false_leaves_the_dispatch_out_of_the_stack(
    settings: Settings,
) -> None:
    app = create_app(settings.model_copy(update={"fast_dispatch": False}))
    async with lifespan(app), in_process_client(app) as http:
        assert (await http.get("/healthz")).status_code == 200
    assert dispatch_of(app) is None
    layers: list[object] = [middleware.cls for middleware in app.user_middleware]
    assert FastDispatch not in layers


async def test_without_a_body_limit_on_the_route_contexts_the_dispatch_stays_off(
    guarded: None, monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    # A FastAPI with body limits whose contexts no longer say a route's: none may be called
    # without FastAPI's own wrapper, which applies it.
    monkeypatch.setattr(internals, "CONTEXT_BODY_LIMIT", "no_such_field")
    async for app in _started(settings, {**auth_headers, TOKEN_HEADER: WRITER}):
        assert dispatch_of(app) is None


async def test_a_mount_whose_context_holds_nothing_is_left_to_fastapis_router(
    guarded: None, monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    # A context that takes no attribute: FastRoute cannot leave the dispatch its mount's handler.
    monkeypatch.setattr(internals, "hold_mount", lambda context, mount: False)
    async for app in _started(settings, {**auth_headers, TOKEN_HEADER: WRITER}):
        table = RouteTable.derive(app)
        candidates = [c for listed in table.by_segments.values() for c in listed]
        assert candidates
        assert all(candidate.app is None for candidate in candidates)
