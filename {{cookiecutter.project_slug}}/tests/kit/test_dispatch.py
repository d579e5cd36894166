"""FastDispatch (kit/dispatch.py): the same requests through the dispatch and through FastAPI's
standard stack (the same app, the dispatch switched off) give the same status, headers (but Date)
and body; and the dispatch really serves the routes it claims."""

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI, HTTPException, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from {{ cookiecutter.package_name }}.kit import state
from {{ cookiecutter.package_name }}.kit.dispatch import FastDispatch, dispatch_of
from {{ cookiecutter.package_name }}.serving import app as serving_app
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, in_process_client, lifespan
from ..declared import change, first_resource, new_body
from .guarded import READER, TOKEN_HEADER, WRITER, guarded_router, serve_guarded

Scenario = Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]
FIRST = next(iter(first_resource().fields.model_fields))
MISSING = 987_654_321
JSON = {"content-type": "application/json"}


class _Counting:
    """FastAPI's standard stack below the dispatch, counting the requests that reach it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.requests += 1
        await self.app(scope, receive, send)


class Served:
    def __init__(self, app: FastAPI, http: httpx.AsyncClient, dispatch: FastDispatch) -> None:
        self.app, self.http, self.dispatch = app, http, dispatch
        self.standard = _Counting(dispatch.app)
        dispatch.app = self.standard

    async def through(self, fast: bool, scenario: Scenario) -> tuple[httpx.Response, int]:
        """The answer, and how many requests of the scenario reached FastAPI's router."""
        self.dispatch.enabled = fast
        before = self.standard.requests
        try:
            response = await scenario(self.http)
        finally:
            self.dispatch.enabled = True
        return response, self.standard.requests - before


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> APIRouter:
    """The resource's router carries a guard, added the ordinary FastAPI way."""
    router = guarded_router()
    monkeypatch.setattr(serving_app, "ROUTERS", serve_guarded(router))
    return router


async def _served(settings: Settings, headers: dict[str, str]) -> AsyncIterator[Served]:
    app = create_app(settings)
    async with lifespan(app), in_process_client(app, headers) as http:
        await http.get("/healthz")  # the first request builds the stack and derives the table
        dispatch = dispatch_of(app)
        assert dispatch is not None, "the app's requests take FastAPI's router"
        yield Served(app, http, dispatch)


@pytest.fixture
async def served(
    guarded: APIRouter, settings: Settings, auth_headers: dict[str, str]
) -> AsyncIterator[Served]:
    async for served in _served(settings, {**auth_headers, TOKEN_HEADER: WRITER}):
        yield served


def _comparable(response: httpx.Response) -> dict[str, Any]:
    # Content-Length follows the ids in the body (99 and 100); it is checked against the body.
    length = response.headers.get("content-length")
    assert length is None or int(length) == len(response.content) or not response.content
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name not in ("date", "content-length")
    ]
    try:
        body: Any = response.json()
    except ValueError:
        body = response.content
    return {"status": response.status_code, "headers": headers, "body": body}


def _mask(answer: dict[str, Any], volatile: dict[str, Any]) -> dict[str, Any]:
    """The answer with what changes from one run of a scenario to the next (ids, request ids,
    fresh field values) replaced by a marker; names, order and status stay compared."""
    headers = [
        (name, "<varies>" if name in volatile["headers"] else value)
        for name, value in answer["headers"]
    ]
    body = answer["body"]
    if isinstance(body, dict):
        body = {key: "<varies>" if key in volatile["body"] else v for key, v in body.items()}
    return {"status": answer["status"], "headers": headers, "body": body}


def _volatile(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    one, two = dict(first["headers"]), dict(second["headers"])
    body_keys: set[str] = set()
    if isinstance(first["body"], dict) and isinstance(second["body"], dict):
        body_keys = {key for key in first["body"] if first["body"][key] != second["body"].get(key)}
    return {"headers": {name for name in one if one[name] != two.get(name)}, "body": body_keys}


async def _assert_same(served: Served, scenario: Scenario, *, router: bool) -> httpx.Response:
    """Run the scenario on the dispatch once and on FastAPI's stack twice (what differs between
    those two varies by itself); the dispatch's answer equals FastAPI's but for that."""
    fast, fast_standard = await served.through(True, scenario)
    standard, _ = await served.through(False, scenario)
    again, _ = await served.through(False, scenario)
    volatile = _volatile(_comparable(standard), _comparable(again))
    assert _mask(_comparable(fast), volatile) == _mask(_comparable(standard), volatile)
    # Whether the request went on to FastAPI's router (with the dispatch on): it did not when
    # the dispatch served it, or when an outer layer answered (429).
    assert fast_standard == int(router), fast_standard
    return fast


async def _created(http: httpx.AsyncClient) -> dict[str, Any]:
    response = await http.post(BASE, json=new_body())
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def _one(method: str, path: str = "", **extra: Any) -> Scenario:
    async def scenario(http: httpx.AsyncClient) -> httpx.Response:
        body = extra.get("json")
        arguments = {**extra, "json": body()} if callable(body) else extra
        return await http.request(method, f"{BASE}{path}", **arguments)

    return scenario


def _on_a_new_row(method: str, **extra: Any) -> Scenario:
    async def scenario(http: httpx.AsyncClient) -> httpx.Response:
        row = await _created(http)
        headers = extra.get("headers", {})
        if headers.get("if-none-match") == "<etag>":
            current = await http.get(f"{BASE}/{row['id']}")
            headers = {**headers, "if-none-match": current.headers["etag"]}
        body = extra["json"]() if "json" in extra else None
        return await http.request(method, f"{BASE}/{row['id']}", json=body, headers=headers)

    return scenario


# (name, scenario, whether the dispatch serves it, the status both give)
SCENARIOS: list[tuple[str, Scenario, bool, int]] = [
    ("get", _on_a_new_row("GET"), True, 200),
    ("get-304", _on_a_new_row("GET", headers={"if-none-match": "<etag>"}), True, 304),
    ("get-missing-row", _one("GET", f"/{MISSING}"), True, 404),
    ("get-bad-id", _one("GET", "/not-a-number"), True, 422),
    ("head", _on_a_new_row("HEAD"), True, 200),
    ("page", _one("GET", params={"limit": 2}), True, 200),
    ("page-bad-limit", _one("GET", params={"limit": -1}), True, 422),
    ("create", _one("POST", json=new_body), True, 201),
    # A list is no field's value, whatever the fields ({} is a whole create where none is required).
    ("create-field-errors", _one("POST", json={FIRST: []}), True, 422),
    ("create-bad-json", _one("POST", content=b"{", headers=JSON), True, 400),
    ("patch", _on_a_new_row("PATCH", json=change), True, 200),
    ("patch-stale", _on_a_new_row("PATCH", json=change, headers={"if-match": '"0"'}), True, 412),
    ("patch-missing-row", _one("PATCH", f"/{MISSING}", json=change), True, 404),
    ("delete", _on_a_new_row("DELETE"), True, 204),
    ("delete-stale", _on_a_new_row("DELETE", headers={"if-match": '"0"'}), True, 412),
    ("delete-missing-row", _one("DELETE", f"/{MISSING}"), True, 404),
    ("no-token", _one("GET", f"/{MISSING}", headers={TOKEN_HEADER: ""}), True, 401),
    ("reader-writes", _one("POST", json=new_body, headers={TOKEN_HEADER: READER}), True, 403),
    ("method-not-allowed", _one("PUT", f"/{MISSING}", json={}), False, 405),
    ("unknown-path", _one("GET", "/x/y/z"), False, 404),
    ("trailing-slash", _one("GET", "/"), False, 404),
]


@pytest.mark.parametrize(
    ("scenario", "served_by_dispatch", "status"),
    [pytest.param(*case[1:], id=case[0]) for case in SCENARIOS],
)
async def test_the_dispatch_answers_as_fastapi_s_router_does(
    served: Served, scenario: Scenario, served_by_dispatch: bool, status: int
) -> None:
    answer = await _assert_same(served, scenario, router=not served_by_dispatch)
    assert answer.status_code == status, answer.text


async def _raises(exception: BaseException) -> None:
    raise exception


@pytest.mark.parametrize(
    ("exception", "status"),
    [
        pytest.param(TimeoutError(), 503, id="database-unavailable-503"),
        pytest.param(RuntimeError("a bug"), 500, id="handler-raises-500"),
    ],
)
async def test_an_override_set_after_start_up_and_its_error_answer_the_same_way(
    served: Served, exception: BaseException, status: int
) -> None:
    async def failing() -> None:
        await _raises(exception)

    served.app.dependency_overrides[state.database] = failing
    try:
        answer = await _assert_same(served, _one("GET", f"/{MISSING}"), router=False)
    finally:
        served.app.dependency_overrides.clear()
    assert answer.status_code == status, answer.text


async def test_a_rate_limited_request_answers_429_the_same_way(
    guarded: APIRouter, settings: Settings, auth_headers: dict[str, str]
) -> None:
    limited = settings.model_copy(update={"rate_limit_rps": 0.001, "rate_limit_burst": 1})
    async for served in _served(limited, {**auth_headers, TOKEN_HEADER: WRITER}):
        await served.http.get(f"{BASE}/{MISSING}")  # spends the one token
        # The rate limit, outside the dispatch, answers before either way to a route.
        answer = await _assert_same(served, _one("GET", f"/{MISSING}"), router=False)
        assert answer.status_code == 429


async def test_a_route_added_after_start_up_is_served_by_the_router_that_has_it(
    served: Served,
) -> None:
    @served.app.get(BASE + "/{item_id" + "}/extra")
    async def extra(item_id: int) -> dict[str, int]:
        return {"item_id": item_id}

    # Declared on the app, not through include_router: FastAPI's router serves it.
    answer = await _assert_same(served, _one("GET", "/5/extra"), router=True)
    assert answer.json() == {"item_id": 5}
    # The resource's own routes are still dispatched after the table is derived again.
    await _assert_same(served, _one("GET", f"/{MISSING}"), router=False)


async def test_a_route_added_to_the_resource_router_after_start_up_is_dispatched_too(
    guarded: APIRouter, served: Served
) -> None:
    @guarded.get("/{item_id" + "}/extra")
    async def extra(item_id: int) -> Response:
        return Response(str(item_id).encode())

    # The router's count of route changes moved: the table is derived again, with this route.
    answer = await _assert_same(served, _one("GET", "/5/extra"), router=False)
    assert answer.content == b"5"


async def test_a_route_put_ahead_after_start_up_takes_the_requests_it_matches_first(
    served: Served,
) -> None:
    async def shadow(item_id: int) -> dict[str, int]:
        return {"shadowed": item_id}

    # FastAPI's router tries routes in order: this one now wins GET /items/{item_id}.
    served.app.router.routes.insert(0, APIRoute(BASE + "/{item_id" + "}", shadow, methods=["GET"]))
    answer = await _assert_same(served, _one("GET", "/5"), router=True)
    assert answer.json() == {"shadowed": 5}
    # Other methods on that path still reach the resource's routes through the dispatch.
    await _assert_same(served, _one("DELETE", f"/{MISSING}"), router=False)


async def test_a_mount_switches_the_dispatch_off(served: Served) -> None:
    served.app.mount("/static", FastAPI())
    await _assert_same(served, _one("GET", f"/{MISSING}"), router=True)


async def test_an_exception_handler_added_after_start_up_is_ignored_by_both(
    served: Served,
) -> None:
    async def teapot(request: Any, exc: Exception) -> Any:
        from fastapi.responses import JSONResponse

        return JSONResponse({"teapot": True}, status_code=418)

    served.app.add_exception_handler(LookupError, teapot)

    async def failing() -> None:
        await _raises(LookupError("no"))

    served.app.dependency_overrides[state.database] = failing
    try:
        answer = await _assert_same(served, _one("GET", f"/{MISSING}"), router=False)
    finally:
        served.app.dependency_overrides.clear()
    # Starlette built its handler tables when the app started: both answer the edge's 500.
    assert answer.status_code == 500


@pytest.mark.parametrize(
    ("exception", "status"),
    [
        pytest.param(RuntimeError("a bug"), 500, id="handler-raises-500"),
        pytest.param(HTTPException(409, "taken"), 409, id="handler-raises-http-409"),
        pytest.param(LookupError("no"), 500, id="handler-raises-lookup-500"),
    ],
)
async def test_an_exception_a_dispatched_handler_raises_answers_as_through_fastapi(
    guarded: APIRouter, served: Served, exception: Exception, status: int
) -> None:
    @guarded.get("/{item_id" + "}/raises")
    async def raises(item_id: int) -> Response:
        await _raises(exception)
        return Response()

    answer = await _assert_same(served, _one("GET", "/5/raises"), router=False)
    assert answer.status_code == status, answer.text


async def test_a_route_with_planned_dependencies_is_called_without_fastapis_request_wrapper(
    served: Served,
) -> None:
    dispatch = served.dispatch
    table = dispatch._current_table(served.app)
    assert table is not None
    candidates = [c for listed in table.by_segments.values() for c in listed if c.app is not None]
    assert candidates
    assert all(candidate.direct is not None for candidate in candidates)

    async def wrapper_reached(scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("FastAPI's request wrapper was entered")

    for candidate in candidates:
        candidate.app = wrapper_reached
    row = await _created(served.http)
    assert (await served.http.get(f"{BASE}/{row['id']}")).status_code == 200
    assert (await served.http.delete(f"{BASE}/{MISSING}")).status_code == 404
