"""FastDispatch on apps built the ordinary FastAPI and Starlette ways it must see through: a
websocket route anywhere, a convertor of the user's, a route class or a router class of the
user's (FastAPI's documented way to time or wrap a route), and the framework reshaped under it.
Every request is answered through the dispatch and through FastAPI's standard stack, and the two
answers must be the same (differential.py); where the dispatch cannot prove it, it stays off."""

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response, WebSocket
from fastapi import applications as fastapi_applications
from fastapi.middleware.asyncexitstack import AsyncExitStackMiddleware
from starlette import convertors
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Match, Mount
from starlette.types import Message, Receive, Scope, Send

from {{ cookiecutter.package_name }}.kit import dispatch, resource_router, route_table, routing
from {{ cookiecutter.package_name }}.kit import fastapi_internals as internals
from {{ cookiecutter.package_name }}.kit.dispatch import FastDispatch, dispatch_of
from {{ cookiecutter.package_name }}.kit.routing import FastRoute
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, in_process_client, lifespan
from ..declared import new_body
from .differential import Scenario, Served, assert_same, served_app

Change = Callable[[FastAPI], None]


def get(path: str, **extra: Any) -> Scenario:
    async def scenario(http: httpx.AsyncClient) -> httpx.Response:
        return await http.get(path, **extra)

    return scenario


def _probe_router(path: str = "/probe/{n:int}") -> APIRouter:
    """A resource_router (FastRoutes) with one GET the dispatch serves."""
    router = resource_router()

    @router.get(path)
    async def probe(n: int) -> Response:
        return Response(f"probe {n}")

    return router


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
def serve(settings: Settings, auth_headers: dict[str, str]) -> Callable[[Change], Any]:
    def serve(change: Change) -> AsyncIterator[Served]:
        return served_app(settings, auth_headers, change)

    return serve


@pytest.fixture
def answers(settings: Settings, auth_headers: dict[str, str]) -> Callable[..., Any]:
    async def answers(change: Change, *scenarios: Scenario) -> list[httpx.Response]:
        """The app's answers, changed by `change` before it starts: compared with FastAPI's
        stack's when the dispatch serves the app, FastAPI's own when the dispatch is off."""
        app = create_app(settings)
        change(app)
        async with lifespan(app), in_process_client(app, auth_headers) as http:
            await http.get("/healthz")
            dispatch = dispatch_of(app)
            if dispatch is None:
                return [await scenario(http) for scenario in scenarios]
            served = Served(app, http, dispatch)
            return [await assert_same(served, scenario) for scenario in scenarios]

    return answers


async def _ws_close(websocket: WebSocket) -> None:
    await websocket.close()


def _websocket_top_level(app: FastAPI) -> None:
    app.add_api_websocket_route("/probe/{n:int}", _ws_close)  # ahead of the HTTP route
    app.include_router(_probe_router())


def _websocket_included(app: FastAPI) -> None:
    sockets = APIRouter()
    sockets.add_api_websocket_route("/probe/{n:int}", _ws_close)
    sockets.add_websocket_route("/plain-socket", _ws_close)
    app.include_router(sockets)
    app.include_router(_probe_router())


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_websocket_top_level, id="app-websocket"),
        pytest.param(_websocket_included, id="included-websocket"),
    ],
)
async def test_a_websocket_route_leaves_every_http_request_answered_as_by_fastapi(
    serve: Callable[[Change], AsyncIterator[Served]], change: Change
) -> None:
    # A websocket route has no methods: deriving the table must not fail (every request 500).
    async for served in serve(change):
        answer = await assert_same(served, get("/probe/5"))
        assert (answer.status_code, answer.text) == (200, "probe 5")
        answer = await assert_same(served, get("/healthz"))
        assert answer.status_code == 200, answer.text


class _AnyRest(convertors.StringConvertor):
    """A convertor of the user's on Starlette's string convertor, taking the rest of the path."""

    regex = ".+"


async def test_a_convertor_spanning_segments_routes_as_fastapi(
    answers: Callable[..., Awaitable[list[httpx.Response]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # register_url_convertor("rest", _AnyRest()), undone after the test.
    monkeypatch.setitem(convertors.CONVERTOR_TYPES, "adversarial_rest", _AnyRest())

    def files(app: FastAPI) -> None:
        router = resource_router()

        @router.get("/files/{rest:adversarial_rest}")
        async def any_file(rest: str) -> Response:
            return Response(f"any {rest}")

        @router.get("/files/a/b")  # never reached: the route above takes /files/a/b first
        async def one_file() -> Response:
            return Response("a/b")

        app.include_router(router)

    (answer,) = await answers(files, get("/files/a/b"))
    assert answer.text == "any a/b"


class _Timed(FastRoute):
    """FastAPI's documented custom route class (a handler wrapped to add a header), on FastRoute."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        handler = super().get_route_handler()

        async def timed(request: Request) -> Response:
            response: Response = await handler(request)
            response.headers["x-timed"] = "yes"
            return response

        return timed


class _Versioned(FastRoute):
    """A route class that matches only requests naming its version."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child = super().matches(scope)
        if (b"x-version", b"2") not in scope.get("headers", []):
            return Match.NONE, {}
        return match, child


async def test_a_route_class_wrapping_the_handler_runs_its_wrapper(
    serve: Callable[[Change], AsyncIterator[Served]],
) -> None:
    def timed(app: FastAPI) -> None:
        router = APIRouter(route_class=_Timed)

        @router.get("/timed")
        async def timed_route() -> Response:
            return Response("timed")

        app.include_router(router)

    async for served in serve(timed):
        answer = await assert_same(served, get("/timed"))
        assert answer.headers.get("x-timed") == "yes"


async def test_a_route_class_matching_its_own_way_is_matched_as_fastapi_matches_it(
    answers: Callable[..., Awaitable[list[httpx.Response]]],
) -> None:
    def versions(app: FastAPI) -> None:
        second = APIRouter(route_class=_Versioned)
        first = resource_router()

        @second.get("/version")
        async def version_two() -> Response:
            return Response("2")

        @first.get("/version")
        async def version_one() -> Response:
            return Response("1")

        app.include_router(second)
        app.include_router(first)

    one, two = await answers(versions, get("/version"), get("/version", headers={"x-version": "2"}))
    assert (one.text, two.text) == ("1", "2")


class _Blocking(APIRouter):
    """A router class that refuses some requests before its routes see them."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (b"x-block", b"yes") in scope.get("headers", []):
            await PlainTextResponse("blocked", status_code=451)(scope, receive, send)
            return
        await super().handle(scope, receive, send)


async def test_a_router_class_handling_its_requests_handles_them_the_same_way(
    answers: Callable[..., Awaitable[list[httpx.Response]]],
) -> None:
    def blocking(app: FastAPI) -> None:
        router = _Blocking(route_class=FastRoute)

        @router.get("/blockable")
        async def blockable() -> Response:
            return Response("served")

        app.include_router(router)

    blocked, served = await answers(
        blocking, get("/blockable", headers={"x-block": "yes"}), get("/blockable")
    )
    assert (blocked.status_code, served.text) == (451, "served")


async def test_a_router_put_in_place_of_the_apps_is_not_routed_beside_the_one_fastapi_calls(
    answers: Callable[..., Awaitable[list[httpx.Response]]],
) -> None:
    def replaced(app: FastAPI) -> None:
        app.include_router(_probe_router())

        async def replace_after_start_up(request: Request) -> Response:
            # Starlette built the stack around the first router: that one still routes.
            replacement = APIRouter()
            other = resource_router()

            @other.get("/probe/{n:int}")
            async def probe(n: int) -> Response:
                return Response(f"replacement {n}")

            replacement.include_router(other)
            request.app.router = replacement
            return Response("replaced")

        app.add_api_route("/replace", replace_after_start_up)

    replaced_answer, answer = await answers(replaced, get("/replace"), get("/probe/5"))
    assert (replaced_answer.text, answer.text) == ("replaced", "probe 5")


async def test_an_app_the_dispatch_cannot_serve_is_served_again_once_changed_back(
    serve: Callable[[Change], AsyncIterator[Served]],
) -> None:
    async for served in serve(lambda app: app.include_router(_probe_router())):
        await assert_same(served, get("/probe/5"), router=False)
        routes = served.app.router.routes
        routes.append(Mount("/static", app=PlainTextResponse("static")))
        await assert_same(served, get("/probe/5"), router=True)  # off: a mount
        await assert_same(served, get("/probe/6"), router=True)  # still off, unchanged
        routes.pop()
        await assert_same(served, get("/probe/5"), router=False)


def _needs(header: str) -> Any:
    """A guard refusing a request without `header: yes` (a dependency at one level)."""

    async def guard(request: Request) -> None:
        if request.headers.get(header) != "yes":
            raise HTTPException(403, f"{header} is missing.")

    return Depends(guard)


LEVELS = ("x-route", "x-router", "x-include", "x-outer", "x-outer-include", "x-app")


async def test_nested_routers_apply_the_guards_of_every_level_on_every_mount(
    serve: Callable[[Change], AsyncIterator[Served]],
) -> None:
    def nested(app: FastAPI) -> None:
        inner = resource_router(dependencies=[_needs("x-router")])

        @inner.get("/thing/{n:int}", dependencies=[_needs("x-route")])
        async def thing(n: int) -> Response:
            return Response(f"thing {n}")

        outer = APIRouter(prefix="/outer", dependencies=[_needs("x-outer")])
        outer.include_router(inner, prefix="/inner", dependencies=[_needs("x-include")])
        app.include_router(
            outer, prefix="/app", dependencies=[_needs("x-outer-include"), _needs("x-app")]
        )
        app.include_router(inner, prefix="/bare")  # the same router, without the outer levels

    every = dict.fromkeys(LEVELS, "yes")
    async for served in serve(nested):
        for missing in (None, *LEVELS):
            headers = {name: value for name, value in every.items() if name != missing}
            nested_answer = await assert_same(
                served, get("/app/outer/inner/thing/5", headers=headers), router=False
            )
            assert nested_answer.status_code == (200 if missing is None else 403)
            bare = await assert_same(served, get("/bare/thing/5", headers=headers))
            assert bare.status_code == (200 if missing in (None, *LEVELS[2:]) else 403)


async def _two_chunks() -> AsyncIterator[bytes]:
    yield b"a"
    yield b"b"


def post(path: str, content: Any) -> Scenario:
    async def scenario(http: httpx.AsyncClient) -> httpx.Response:
        body = content() if callable(content) else content  # a generator is read once
        return await http.post(path, content=body)

    return scenario


@pytest.mark.parametrize("level", ["route", "router", "include_router"])
async def test_a_body_limit_of_zero_refuses_any_body_sent_with_or_without_its_length(
    serve: Callable[[Change], AsyncIterator[Served]], level: str
) -> None:
    def limited(app: FastAPI) -> None:
        def zero_at(where: str) -> int | None:
            return 0 if level == where else None

        router = resource_router(max_body_size=zero_at("router"))

        @router.post("/echo", max_body_size=zero_at("route"))
        async def echo(request: Request) -> Response:
            return Response(await request.body())

        app.include_router(router, max_body_size=zero_at("include_router"))

    async for served in serve(limited):
        assert (await assert_same(served, post("/echo", b""))).status_code == 200
        assert (await assert_same(served, post("/echo", b"x"))).status_code == 413
        assert (await assert_same(served, post("/echo", _two_chunks))).status_code == 413


async def test_two_apps_of_one_router_each_run_their_own_mount_with_their_own_overrides(
    settings: Settings, auth_headers: dict[str, str]
) -> None:
    shared = resource_router()

    async def caller() -> str:
        return "real"

    async def stand_in() -> str:
        return "stand-in"

    @shared.get("/caller")
    async def read_caller(name: Annotated[str, Depends(caller)]) -> Response:
        return Response(name)

    plain, overridden = create_app(settings), create_app(settings)
    for app in (plain, overridden):
        app.include_router(shared)
    overridden.dependency_overrides[caller] = stand_in
    async with (
        lifespan(plain),
        lifespan(overridden),
        in_process_client(plain, auth_headers) as plain_http,
        in_process_client(overridden, auth_headers) as overridden_http,
    ):
        # The app without overrides first: its mount must not answer for the other app.
        assert (await plain_http.get("/caller")).text == "real"
        assert (await overridden_http.get("/caller")).text == "stand-in"
        assert dispatch_of(plain) is not None
        assert dispatch_of(overridden) is not None


async def _value_error(request: Request, exc: Exception) -> Response:
    return PlainTextResponse("value handler", status_code=400)


async def test_a_path_parameter_its_convertor_fails_on_reaches_the_apps_handler(
    serve: Callable[[Change], AsyncIterator[Served]],
) -> None:
    # int() refuses more than 4,300 digits: FastAPI's router raises inside ExceptionMiddleware,
    # whose handler for ValueError answers.
    def handled(app: FastAPI) -> None:
        app.include_router(_probe_router())
        app.add_exception_handler(ValueError, _value_error)

    async for served in serve(handled):
        answer = await assert_same(served, get("/probe/" + "9" * 5_000))
        assert (answer.status_code, answer.text) == (400, "value handler")
        answer = await assert_same(served, get("/probe/5"), router=False)
        assert answer.text == "probe 5"


async def test_a_path_parameter_an_earlier_route_of_another_method_fails_on_answers_as_fastapi(
    serve: Callable[[Change], AsyncIterator[Served]],
) -> None:
    # FastAPI's router converts a matching path's parameters before it looks at the method: the
    # POST route's int() raises before the GET route is tried.
    def two_methods(app: FastAPI) -> None:
        router = resource_router()

        @router.post("/probe/{n:int}")
        async def create_probe(n: int) -> Response:
            return Response(f"created {n}")

        @router.get("/probe/{n}")
        async def read_probe(n: str) -> Response:
            return Response(f"probe {len(n)} digits")

        app.include_router(router)
        app.add_exception_handler(ValueError, _value_error)

    async for served in serve(two_methods):
        answer = await assert_same(served, get("/probe/" + "9" * 5_000))
        assert (answer.status_code, answer.text) == (400, "value handler")
        answer = await assert_same(served, get("/probe/" + "9" * 4_000), router=False)
        assert answer.text == "probe 4000 digits"


# --- The framework reshaped: the dispatch stays off, and every request is still answered. ---


async def _answered_by_fastapi(settings: Settings, headers: dict[str, str]) -> FastAPI:
    app = create_app(settings)
    async with lifespan(app), in_process_client(app, headers) as http:
        assert (await http.get("/healthz")).status_code == 200
        assert (await http.post(BASE, json=new_body())).status_code == 201
        assert (await http.get(BASE)).status_code == 200
    return app


async def test_an_error_deriving_the_table_leaves_every_request_to_fastapi(
    settings: Settings, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def reshaped(route: Any, included: Any) -> Any:
        raise AttributeError("a route of a shape the dispatch does not know")

    monkeypatch.setattr(route_table, "_candidate", reshaped)
    app = await _answered_by_fastapi(settings, auth_headers)
    assert dispatch_of(app) is None


async def test_a_fastapi_with_body_limits_elsewhere_keeps_the_dispatch_off(
    settings: Settings, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A release that renames both the wrapper and the context's field: a route's limit can no
    # longer be read, and FastAPI still takes max_body_size (include_router's parameter).
    monkeypatch.setattr(internals, "BODY_LIMIT_WRAPPER", "renamed_wrap_app_with_body_limit")
    monkeypatch.setattr(internals, "CONTEXT_BODY_LIMIT", "renamed_max_body_size")
    app = await _answered_by_fastapi(settings, auth_headers)
    assert dispatch_of(app) is None


class _Stamping(AsyncExitStackMiddleware):
    """A layer a FastAPI release might add between ExceptionMiddleware and the router."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message["headers"], (b"x-inner-layer", b"yes")]
            await send(message)

        await super().__call__(scope, receive, stamped)


async def test_a_layer_between_exception_middleware_and_the_router_is_never_skipped(
    settings: Settings, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fastapi_applications, "AsyncExitStackMiddleware", _Stamping)
    app = create_app(settings)
    async with lifespan(app), in_process_client(app, auth_headers) as http:
        answer = await http.get(BASE)
        assert answer.status_code == 200, answer.text
        assert answer.headers.get("x-inner-layer") == "yes"
    assert dispatch_of(app) is None


def test_the_dispatch_is_off_when_exception_middleware_leads_anywhere_but_fastapis_stack() -> None:
    async def plain(scope: Scope, receive: Receive, send: Send) -> None:
        return None

    assert FastDispatch(ExceptionMiddleware(plain)).enabled is False
