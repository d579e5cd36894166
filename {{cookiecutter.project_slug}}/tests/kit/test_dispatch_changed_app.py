"""FastDispatch on an app its user changed the FastAPI way: a route declared first to override a
generated one, a dead route declared after one, a router included twice, `max_body_size` at each
level, exception handlers that raise what another handles, the list of routes edited in place.
Every request is answered through the dispatch and through FastAPI's standard stack, and the two
answers must be the same (differential.py); the statuses asserted are FastAPI's."""

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response

from {{ cookiecutter.package_name }}.kit import ProblemError, resource_router
from {{ cookiecutter.package_name }}.serving import app as serving_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, ID_FIELD, TEMPLATE, count_rows
from ..declared import change, new_body
from .differential import Served, assert_same, created, on_a_new_row, one, served_app
from .guarded import READER, TOKEN_HEADER, WRITER, guarded_router, serve_guarded

ADMIN = {"x-test-admin": "yes"}
LIMIT = 64  # bytes
JSON_TYPE = {"content-type": "application/json"}
Change = Callable[[FastAPI], None]


async def admin_only(request: Request) -> None:
    if request.headers.get("x-test-admin") != "yes":
        raise HTTPException(403, "Admins only.")


async def deny() -> None:
    raise HTTPException(403, "This mount refuses everything.")


def _taking_the_row_id(endpoint: Callable[[int], Awaitable[Response]]) -> Callable[..., Any]:
    """`endpoint` as a route function whose one parameter has the generated route's name (the
    first resource's `<name>_id`), so that both routes declare the very same path."""

    async def route(**path: int) -> Response:
        return await endpoint(path[ID_FIELD])

    parameter = inspect.Parameter(ID_FIELD, inspect.Parameter.KEYWORD_ONLY, annotation=int)
    route.__signature__ = inspect.Signature([parameter], return_annotation=Response)  # type: ignore[attr-defined]
    return route


def _overriding() -> APIRouter:
    """The user's own GET and DELETE of one row at the generated routes' path, declared on a
    resource_router (FastRoutes) behind an admin guard: placed first, they override them."""
    router = resource_router(dependencies=[Depends(admin_only)])

    async def read(row_id: int) -> Response:
        return Response(f"override {row_id}".encode())

    async def delete(row_id: int) -> Response:
        return Response(status_code=204)  # deletes nothing

    router.get(TEMPLATE)(_taking_the_row_id(read))
    router.delete(TEMPLATE, status_code=204)(_taking_the_row_id(delete))
    return router


def _echo_create(**options: Any) -> APIRouter:
    """A create of the user's that answers with the body it read (resource_router options)."""
    router = resource_router(**{key: value for key, value in options.items() if key != "route"})

    @router.post(BASE, status_code=201, **options.get("route", {}))
    async def create_echo(request: Request) -> Response:
        return Response(await request.body(), status_code=201)

    return router


@pytest.fixture
def generated() -> APIRouter:
    """The first resource's router, with the token guard of guarded.py (401 without a token,
    403 when a reader writes)."""
    return guarded_router()


@pytest.fixture
def serve(
    monkeypatch: pytest.MonkeyPatch, settings: Settings, auth_headers: dict[str, str]
) -> Callable[..., AsyncIterator[Served]]:
    def serve(routers: list[APIRouter], change: Change | None = None) -> AsyncIterator[Served]:
        """The app of these routers (serving/resources.py's list), changed before start-up."""
        monkeypatch.setattr(serving_app, "ROUTERS", routers)
        return served_app(settings, {**auth_headers, TOKEN_HEADER: WRITER}, change)

    return serve


async def test_a_route_declared_first_overrides_the_generated_one(
    serve: Callable[..., AsyncIterator[Served]], generated: APIRouter, settings: Settings
) -> None:
    async for served in serve([_overriding(), *serve_guarded(generated)]):
        row = (await created(served.http))["id"]
        rows = await count_rows(settings.dsn)
        # The override's guard refuses: the generated delete never runs, the row stays.
        answer = await assert_same(served, one("DELETE", f"/{row}"))
        assert answer.status_code == 403, answer.text
        answer = await assert_same(served, one("GET", f"/{row}"))
        assert answer.status_code == 403, answer.text
        answer = await assert_same(served, one("GET", f"/{row}", headers=ADMIN))
        assert (answer.status_code, answer.content) == (200, f"override {row}".encode())
        answer = await assert_same(served, one("DELETE", f"/{row}", headers=ADMIN))
        assert answer.status_code == 204
        assert await count_rows(settings.dsn) == rows
        # The generated routes the user did not redeclare still answer.
        answer = await assert_same(served, on_a_new_row("PATCH", json=change))
        assert answer.status_code == 200, answer.text


async def test_a_route_declared_after_the_generated_one_is_never_reached(
    serve: Callable[..., AsyncIterator[Served]], generated: APIRouter, settings: Settings
) -> None:
    async for served in serve([*serve_guarded(generated), _echo_create()]):
        rows = await count_rows(settings.dsn)
        answer = await assert_same(served, one("POST", json=new_body, headers={TOKEN_HEADER: ""}))
        assert answer.status_code == 401, answer.text
        answer = await assert_same(
            served, one("POST", json=new_body, headers={TOKEN_HEADER: READER})
        )
        assert answer.status_code == 403, answer.text
        assert await count_rows(settings.dsn) == rows
        answer = await assert_same(served, one("POST", json=new_body))
        assert answer.status_code == 201, answer.text
        assert "id" in answer.json()  # the generated create's row, not the echo


async def test_a_router_included_twice_answers_as_its_first_mount(
    serve: Callable[..., AsyncIterator[Served]], generated: APIRouter
) -> None:
    def include_again_behind_a_guard(app: FastAPI) -> None:
        app.include_router(generated, dependencies=[Depends(deny)])

    async for served in serve(serve_guarded(generated), include_again_behind_a_guard):
        for method, status in (("GET", 200), ("PATCH", 200), ("DELETE", 204)):
            body = {"json": change} if method == "PATCH" else {}
            answer = await assert_same(served, on_a_new_row(method, **body))
            assert answer.status_code == status, answer.text
        answer = await assert_same(served, one("POST", json=new_body))
        assert answer.status_code == 201, answer.text


async def test_a_router_included_first_behind_a_guard_refuses_what_its_second_mount_serves(
    serve: Callable[..., AsyncIterator[Served]], generated: APIRouter, settings: Settings
) -> None:
    def include_first_behind_a_guard(app: FastAPI) -> None:
        app.include_router(generated, dependencies=[Depends(deny)])
        app.router.routes.insert(0, app.router.routes.pop())  # that mount first

    async for served in serve(serve_guarded(generated), include_first_behind_a_guard):
        rows = await count_rows(settings.dsn)
        answer = await assert_same(served, one("POST", json=new_body))
        assert answer.status_code == 403, answer.text
        answer = await assert_same(served, one("GET"))
        assert answer.status_code == 403, answer.text
        assert await count_rows(settings.dsn) == rows


def _larger_than_the_limit() -> dict[str, Any]:
    # A create body, padded past the limit whatever the resource's fields (refused unread).
    return {**new_body(), "padding": "x" * LIMIT}


@pytest.mark.parametrize("level", ["route", "router", "include_router", "app"])
async def test_max_body_size_at_each_level_refuses_a_larger_body(
    level: str,
    serve: Callable[..., AsyncIterator[Served]],
    generated: APIRouter,
    settings: Settings,
) -> None:
    routers = serve_guarded(generated)
    limited: Change | None = None
    if level == "route":
        routers = [_echo_create(route={"max_body_size": LIMIT}), *routers]
    elif level == "router":
        routers = [_echo_create(max_body_size=LIMIT), *routers]
    elif level == "include_router":

        def limited(app: FastAPI) -> None:
            # The generated router mounted with a limit ahead of its plain mount.
            app.include_router(generated, max_body_size=LIMIT)
            app.router.routes.insert(0, app.router.routes.pop())

    else:

        def limited(app: FastAPI) -> None:
            app.max_body_size = LIMIT  # what FastAPI(max_body_size=...) sets

    async for served in serve(routers, limited):
        rows = await count_rows(settings.dsn)
        answer = await assert_same(served, one("POST", json=_larger_than_the_limit))
        assert answer.status_code == 413, answer.text
        assert await count_rows(settings.dsn) == rows
        # Under the limit: read. A list, never a whole create (`{}` is one where no field is
        # required, and a second one conflicts where a unique field takes its default).
        answer = await assert_same(served, one("POST", content=b"[]", headers=JSON_TYPE))
        assert answer.status_code in (201, 422), answer.text


class Gone(Exception):
    """Handled by raising HTTPException(404)."""


class Taken(Exception):
    """Handled by raising the kit's ProblemError(409)."""


async def _gone(request: Request, exc: Exception) -> Response:
    raise HTTPException(404, "Gone.")


async def _taken(request: Request, exc: Exception) -> Response:
    raise ProblemError(409, "Taken.")


async def _yielding() -> AsyncIterator[None]:
    yield


@pytest.mark.parametrize(
    ("raised", "status"),
    [pytest.param(Gone, 404, id="gone-404"), pytest.param(Taken, 409, id="taken-409")],
)
@pytest.mark.parametrize("dependency", ["none", "yield"])
async def test_an_exception_handler_raising_a_handled_exception_answers_as_fastapi(
    serve: Callable[..., AsyncIterator[Served]],
    generated: APIRouter,
    raised: type[Exception],
    status: int,
    dependency: str,
) -> None:
    dependencies = [Depends(_yielding)] if dependency == "yield" else []

    @generated.get("/{row_id" + "}/raises", dependencies=dependencies)  # under BASE
    async def raises(row_id: int) -> Response:
        raise raised()

    def handled(app: FastAPI) -> None:
        app.add_exception_handler(Gone, _gone)
        app.add_exception_handler(Taken, _taken)

    async for served in serve(serve_guarded(generated), handled):
        answer = await assert_same(served, one("GET", "/5/raises"))
        assert answer.status_code == status, answer.text
        assert answer.json()["detail"] in ("Gone.", "Taken.")  # the handlers', not a 404 route


async def test_the_routes_edited_in_place_are_routed_as_edited(
    serve: Callable[..., AsyncIterator[Served]], generated: APIRouter
) -> None:
    override = _overriding()
    async for served in serve([*serve_guarded(generated), override]):
        row = (await created(served.http))["id"]
        answer = await assert_same(served, one("GET", f"/{row}"))
        assert answer.status_code == 200, answer.text  # the generated route comes first
        routes = served.app.router.routes
        first, second = (
            index
            for index, route in enumerate(routes)
            if getattr(route, "original_router", None) in (generated, override)
        )
        # Swapped in place: the list keeps its length and FastAPI's counts of changes.
        routes[first], routes[second] = routes[second], routes[first]
        answer = await assert_same(served, one("GET", f"/{row}"))
        assert answer.status_code == 403, answer.text
        answer = await assert_same(served, one("GET", f"/{row}", headers=ADMIN))
        assert answer.content == f"override {row}".encode()
