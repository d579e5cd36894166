"""FastDispatch (kit/dispatch.py): the same requests through the dispatch and through FastAPI's
standard stack (the same app, the dispatch switched off) give the same status, headers (but Date)
and body; and the dispatch really serves the routes it claims."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, HTTPException, Response
from fastapi.routing import APIRoute
from starlette.types import Receive, Scope, Send

from {{ cookiecutter.package_name }}.kit import state
from {{ cookiecutter.package_name }}.serving import app as serving_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE
from ..declared import change, first_resource, new_body
from .differential import (
    JSON,
    MISSING,
    Scenario,
    Served,
    assert_same,
    created,
    on_a_new_row,
    one,
    served_app,
)
from .guarded import READER, TOKEN_HEADER, WRITER, guarded_router, serve_guarded

FIRST = next(iter(first_resource().fields.model_fields))


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> APIRouter:
    """The resource's router carries a guard, added the ordinary FastAPI way."""
    router = guarded_router()
    monkeypatch.setattr(serving_app, "ROUTERS", serve_guarded(router))
    return router


@pytest.fixture
async def served(
    guarded: APIRouter, settings: Settings, auth_headers: dict[str, str]
) -> AsyncIterator[Served]:
    async for served in served_app(settings, {**auth_headers, TOKEN_HEADER: WRITER}):
        yield served


# (name, scenario, whether the dispatch serves it, the status both give)
SCENARIOS: list[tuple[str, Scenario, bool, int]] = [
    ("get", on_a_new_row("GET"), True, 200),
    ("get-304", on_a_new_row("GET", headers={"if-none-match": "<etag>"}), True, 304),
    ("get-missing-row", one("GET", f"/{MISSING}"), True, 404),
    ("get-bad-id", one("GET", "/not-a-number"), True, 422),
    ("head", on_a_new_row("HEAD"), True, 200),
    ("page", one("GET", params={"limit": 2}), True, 200),
    ("page-bad-limit", one("GET", params={"limit": -1}), True, 422),
    ("create", one("POST", json=new_body), True, 201),
    # A list is no field's value, whatever the fields ({} is a whole create where none is required).
    ("create-field-errors", one("POST", json={FIRST: []}), True, 422),
    ("create-bad-json", one("POST", content=b"{", headers=JSON), True, 400),
    ("patch", on_a_new_row("PATCH", json=change), True, 200),
    ("patch-stale", on_a_new_row("PATCH", json=change, headers={"if-match": '"0"'}), True, 412),
    ("patch-missing-row", one("PATCH", f"/{MISSING}", json=change), True, 404),
    ("delete", on_a_new_row("DELETE"), True, 204),
    ("delete-stale", on_a_new_row("DELETE", headers={"if-match": '"0"'}), True, 412),
    ("delete-missing-row", one("DELETE", f"/{MISSING}"), True, 404),
    ("no-token", one("GET", f"/{MISSING}", headers={TOKEN_HEADER: ""}), True, 401),
    ("reader-writes", one("POST", json=new_body, headers={TOKEN_HEADER: READER}), True, 403),
    ("method-not-allowed", one("PUT", f"/{MISSING}", json={}), False, 405),
    ("unknown-path", one("GET", "/x/y/z"), False, 404),
    ("trailing-slash", one("GET", "/"), False, 404),
]


@pytest.mark.parametrize(
    ("scenario", "served_by_dispatch", "status"),
    [pytest.param(*case[1:], id=case[0]) for case in SCENARIOS],
)
async def test_the_dispatch_answers_as_fastapi_s_router_does(
    served: Served, scenario: Scenario, served_by_dispatch: bool, status: int
) -> None:
    answer = await assert_same(served, scenario, router=not served_by_dispatch)
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
        answer = await assert_same(served, one("GET", f"/{MISSING}"), router=False)
    finally:
        served.app.dependency_overrides.clear()
    assert answer.status_code == status, answer.text


async def test_a_rate_limited_request_answers_429_the_same_way(
    guarded: APIRouter, settings: Settings, auth_headers: dict[str, str]
) -> None:
    limited = settings.model_copy(update={"rate_limit_rps": 0.001, "rate_limit_burst": 1})
    async for served in served_app(limited, {**auth_headers, TOKEN_HEADER: WRITER}):
        await served.http.get(f"{BASE}/{MISSING}")  # spends the one token
        # The rate limit, outside the dispatch, answers before either way to a route.
        answer = await assert_same(served, one("GET", f"/{MISSING}"), router=False)
        assert answer.status_code == 429


async def test_a_route_added_after_start_up_is_served_by_the_router_that_has_it(
    served: Served,
) -> None:
    @served.app.get(BASE + "/{item_id" + "}/extra")
    async def extra(item_id: int) -> dict[str, int]:
        return {"item_id": item_id}

    # Declared on the app, not through include_router: FastAPI's router serves it.
    answer = await assert_same(served, one("GET", "/5/extra"), router=True)
    assert answer.json() == {"item_id": 5}
    # The resource's own routes are still dispatched after the table is derived again.
    await assert_same(served, one("GET", f"/{MISSING}"), router=False)


async def test_a_route_added_to_the_resource_router_after_start_up_is_dispatched_too(
    guarded: APIRouter, served: Served
) -> None:
    @guarded.get("/{item_id" + "}/extra")
    async def extra(item_id: int) -> Response:
        return Response(str(item_id).encode())

    # The router's count of route changes moved: the table is derived again, with this route.
    answer = await assert_same(served, one("GET", "/5/extra"), router=False)
    assert answer.content == b"5"


async def test_a_route_put_ahead_after_start_up_takes_the_requests_it_matches_first(
    served: Served,
) -> None:
    async def shadow(item_id: int) -> dict[str, int]:
        return {"shadowed": item_id}

    # FastAPI's router tries routes in order: this one now wins GET /items/{item_id}.
    served.app.router.routes.insert(0, APIRoute(BASE + "/{item_id" + "}", shadow, methods=["GET"]))
    answer = await assert_same(served, one("GET", "/5"), router=True)
    assert answer.json() == {"shadowed": 5}
    # Other methods on that path still reach the resource's routes through the dispatch.
    await assert_same(served, one("DELETE", f"/{MISSING}"), router=False)


async def test_a_mount_switches_the_dispatch_off(served: Served) -> None:
    served.app.mount("/static", FastAPI())
    await assert_same(served, one("GET", f"/{MISSING}"), router=True)


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
        answer = await assert_same(served, one("GET", f"/{MISSING}"), router=False)
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

    answer = await assert_same(served, one("GET", "/5/raises"), router=False)
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
    row = await created(served.http)
    assert (await served.http.get(f"{BASE}/{row['id']}")).status_code == 200
    assert (await served.http.delete(f"{BASE}/{MISSING}")).status_code == 404
