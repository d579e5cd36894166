"""The framework contract: every FastAPI internal the kit uses has the shape it uses
(kit/fastapi_internals.py), every route of every resource runs the fast handler with its planned
readers, and without any one of those internals every route runs FastAPI's plain path, still
guarded by every dependency."""

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Response
from fastapi.routing import APIRoute

from {{ cookiecutter.package_name }}.kit import fastapi_internals as internals
from {{ cookiecutter.package_name }}.kit import param_reader, routing, state
from {{ cookiecutter.package_name }}.kit.routing import FastRoute, HandlerChoice, build_route_handlers
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.serving.resources import ROUTERS
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, started
from ..declared import change, new_body

ROUTE_HANDLER = {internal.qualname: internal for internal in internals.ROUTE_HANDLER}
PARAM_READER = {internal.qualname: internal for internal in internals.PARAM_READER}
BODY_READER = {internal.qualname: internal for internal in internals.BODY_READER}


@pytest.fixture(autouse=True)
def checked_afresh() -> Iterator[None]:
    """The checks are made once per process: each test here makes them again, before and after."""

    def clear() -> None:
        internals.route_handler_problems.cache_clear()
        internals.param_reader_problems.cache_clear()
        internals.dependency_plan_problem.cache_clear()
        internals.body_reader_problems.cache_clear()
        routing._logged.clear()
        param_reader._warned = False

    clear()
    yield
    clear()


def _resource_routes() -> set[tuple[str, str]]:
    return {
        (method, route.path)
        for router in ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods or ()
    }


def _choices(settings: Settings) -> list[HandlerChoice]:
    return build_route_handlers(create_app(settings))


@pytest.mark.parametrize(
    "internal",
    [
        *internals.ROUTE_HANDLER,
        *internals.PARAM_READER,
        *internals.DEPENDENCY_PLAN,
        *internals.BODY_READER,
        internals.ITER_ROUTE_CONTEXTS,
    ],
    ids=lambda internal: internal.qualname,
)
def test_each_fastapi_internal_has_the_shape_the_kit_uses(internal: internals.Internal) -> None:
    assert internal.problem() is None


def test_dependant_has_the_fields_the_kit_reads_and_no_field_it_does_not_know() -> None:
    assert internals.route_handler_problems() == ()
    assert internals.dependency_plan_problem() is None


def test_every_route_of_every_resource_runs_the_fast_handler_and_the_planned_readers(
    settings: Settings,
) -> None:
    choices = _choices(settings)
    assert {(method, choice.path) for choice in choices for method in choice.methods} == (
        _resource_routes()
    )
    assert [choice for choice in choices if not (choice.fast and choice.planned_readers)] == []
    # Their dependencies (DatabaseDep, SettingsDep, the auth guard and its security scheme) are
    # called without solve_dependencies.
    with_dependencies = [choice for choice in choices if choice.path != "/healthz"]
    assert all(choice.planned_dependencies for choice in with_dependencies), with_dependencies


def _deny() -> None:
    raise HTTPException(401, "No entry.", headers={"WWW-Authenticate": "Bearer"})


@asynccontextmanager
async def _guarded(settings: Settings, headers: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    """The real app, its resources also mounted under /guarded behind include_router's
    dependencies: the way docs/adding-a-resource.md adds a guard."""
    app = create_app(settings)
    for router in ROUTERS:
        app.include_router(router, prefix="/guarded", dependencies=[Depends(_deny)])
    async with started(app, headers) as client:
        yield client


async def _assert_guarded_and_serving(client: httpx.AsyncClient) -> None:
    created = await client.post(BASE, json=new_body())
    assert created.status_code == 201, created.text
    item = created.json()["id"]
    for method, path in [
        ("GET", f"{BASE}/{item}"),
        ("GET", BASE),
        ("POST", BASE),
        ("PATCH", f"{BASE}/{item}"),
        ("DELETE", f"{BASE}/{item}"),
        ("GET", "/readyz"),
    ]:
        response = await client.request(method, f"/guarded{path}", json=change())
        assert response.status_code == 401, (method, path, response.text)
    assert (await client.get(f"{BASE}/{item}")).status_code == 200
    assert (await client.get(f"{BASE}/abc")).status_code == 422


@pytest.mark.parametrize("name", list(ROUTE_HANDLER))
async def test_without_a_handler_internal_every_route_runs_fastapis_handler_still_guarded(
    name: str, monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    internal = ROUTE_HANDLER[name]
    monkeypatch.setattr(internal, "name", f"{internal.name}_gone")
    choices = _choices(settings)
    assert choices, "the routes are still mounted"
    assert all(not choice.fast and name in (choice.reason or "") for choice in choices)
    async with _guarded(settings, auth_headers) as client:
        await _assert_guarded_and_serving(client)


async def test_a_mount_built_without_fastapis_inclusion_context_runs_fastapis_handler(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    # A FastAPI that keeps the name but no longer sets it while building a mount's handler: the
    # declared route's dependant lacks include_router's dependencies, so it must not run fast.
    never_set = ModuleType("fastapi.routing")
    never_set._effective_route_context_var = ContextVar("never_set", default=None)  # type: ignore[attr-defined]
    monkeypatch.setattr(internals.EFFECTIVE_ROUTE_CONTEXT, "module", never_set)
    assert _choices(settings) == []  # no mount's handler was built by FastRoute
    async with _guarded(settings, auth_headers) as client:
        await _assert_guarded_and_serving(client)


@pytest.mark.parametrize(
    "name", [name for name, called in ROUTE_HANDLER.items() if called.parameters]
)
async def test_a_handler_internal_that_takes_other_arguments_is_not_used(
    name: str, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    internal = ROUTE_HANDLER[name]
    monkeypatch.setattr(internal, "parameters", (*internal.parameters, "a_new_argument"))
    assert all(not choice.fast for choice in _choices(settings))


@pytest.mark.parametrize("name", list(PARAM_READER))
async def test_without_a_reader_internal_parameters_are_read_by_fastapis_reader(
    name: str, monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    internal = PARAM_READER[name]
    monkeypatch.setattr(internal, "name", f"{internal.name}_gone")
    choices = _choices(settings)
    assert all(choice.fast for choice in choices)
    # The probes and POST read no path, query or header parameter; every other route reads some.
    resource = [
        choice for choice in choices if BASE in choice.path and "POST" not in choice.methods
    ]
    assert resource
    assert not any(choice.planned_readers for choice in resource)
    async with _guarded(settings, auth_headers) as client:
        await _assert_guarded_and_serving(client)


def _body_routes(choices: list[HandlerChoice]) -> list[HandlerChoice]:
    return [choice for choice in choices if {"POST", "PATCH"} & set(choice.methods)]


def test_every_body_of_every_resource_is_read_by_the_planned_reader(settings: Settings) -> None:
    body_routes = _body_routes(_choices(settings))
    assert body_routes
    assert all(choice.planned_body for choice in body_routes), body_routes


@pytest.mark.parametrize("name", list(BODY_READER))
async def test_without_a_body_reader_internal_bodies_are_read_by_request_body_to_args(
    name: str, monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    internal = BODY_READER[name]
    monkeypatch.setattr(internal, "name", f"{internal.name}_gone")
    choices = _choices(settings)
    assert all(choice.fast for choice in choices)
    assert not any(choice.planned_body for choice in _body_routes(choices))
    async with _guarded(settings, auth_headers) as client:
        await _assert_guarded_and_serving(client)


async def test_a_dependant_with_a_field_the_kit_does_not_know_solves_every_dependency(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    monkeypatch.setattr(
        internals, "KNOWN_DEPENDANT_FIELDS", internals.KNOWN_DEPENDANT_FIELDS - {"use_cache"}
    )
    assert not any(choice.planned_dependencies for choice in _choices(settings))
    async with _guarded(settings, auth_headers) as client:
        await _assert_guarded_and_serving(client)


async def test_without_fastapis_exit_stack_in_the_scope_a_request_runs_fastapis_handler(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> None:
    monkeypatch.setattr(internals, "INNER_EXIT_STACK_KEY", "no_such_scope_key")
    async with _guarded(settings, auth_headers) as client:
        await _assert_guarded_and_serving(client)


class _OneRecord:
    """A database stand-in whose every connection finds one record."""

    def __init__(self) -> None:
        self.leases = 0

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        self.leases += 1
        yield self

    async def fetchrow(self, *_: Any) -> dict[str, Any]:
        return {"version": 7, "body": '{"id": 1, "from": "the stand-in"}'}


async def test_dependency_overrides_replace_the_database_a_route_sees(
    settings: Settings, auth_headers: dict[str, str]
) -> None:
    app = create_app(settings)
    stand_in = _OneRecord()

    async def replaced() -> _OneRecord:
        return stand_in

    app.dependency_overrides[state.database] = replaced
    async with started(app, auth_headers) as client:
        response = await client.get(f"{BASE}/1")
    assert response.status_code == 200, response.text
    assert response.json() == {"id": 1, "from": "the stand-in"}
    assert response.headers["etag"] == '"7"'
    assert stand_in.leases == 1


async def test_dependencies_at_route_router_include_and_app_level_all_run(
    settings: Settings,
) -> None:
    ran: list[str] = []

    def recorder(level: str) -> Any:
        async def record() -> None:
            ran.append(level)

        return Depends(record)

    router = APIRouter(route_class=FastRoute, dependencies=[recorder("router")])

    @router.get("/levels", dependencies=[recorder("route")])
    async def levels() -> Response:
        return Response(b"ok")

    app = FastAPI(dependencies=[recorder("app")])
    app.include_router(router, dependencies=[recorder("include_router")])
    assert [choice.fast for choice in build_route_handlers(app)] == [True]
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t"
    ) as http:
        assert (await http.get("/levels")).content == b"ok"
    assert sorted(ran) == ["app", "include_router", "route", "router"]
