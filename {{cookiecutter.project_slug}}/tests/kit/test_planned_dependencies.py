"""Planned dependencies (kit/routing.py, PlannedDependency): the dependencies FastRoute calls
itself give what FastAPI's solve_dependencies gives them, request for request: the same answers,
the same calls in the same order with the same arguments, the same caching (per key: the call and
its security scopes); an override of one of them, or a FastAPI without the internals the plan
reads, takes solve_dependencies."""

from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Security
from fastapi.responses import JSONResponse
from fastapi.security import APIKeyHeader, SecurityScopes
from starlette.responses import Response

from {{ cookiecutter.package_name }}.kit import fastapi_internals as internals
from {{ cookiecutter.package_name }}.kit.routing import FastRoute, build_route_handlers

from ..conftest import in_process_client

_log: list[str] = []
_scheme = APIKeyHeader(name="x-key", auto_error=False)


async def shared(request: Request) -> str:
    """Asked for by three dependencies: called once per request (cached)."""
    _log.append("shared")
    return request.url.path


async def uncached(request: Request) -> int:
    _log.append("uncached")
    return len(_log)


async def guard(
    key: Annotated[str | None, Security(_scheme)],
    path: Annotated[str, Depends(shared)],
    required: SecurityScopes,
) -> str:
    """A key guard of the FastAPI kind: a security scheme, a shared dependency, scopes."""
    _log.append(f"guard {' '.join(required.scopes)} {path}")
    if key is None:
        raise HTTPException(401, "No key.", headers={"WWW-Authenticate": "APIKey"})
    if "write" in required.scopes and key != "writer":
        raise HTTPException(403, "This key may only read.")
    return key


async def counted(
    path: Annotated[str, Depends(shared)],
    first: Annotated[int, Depends(uncached, use_cache=False)],
    second: Annotated[int, Depends(uncached, use_cache=False)],
) -> dict[str, Any]:
    _log.append("counted")
    return {"path": path, "first": first, "second": second}


def _app() -> FastAPI:
    router = APIRouter(route_class=FastRoute, dependencies=[Security(guard, scopes=["read"])])

    @router.get("/things/{thing_id}")
    async def get_thing(
        thing_id: int,
        seen: Annotated[dict[str, Any], Depends(counted)],
        key: Annotated[str, Security(guard, scopes=["read"])],
    ) -> Response:
        return JSONResponse({"id": thing_id, "seen": seen, "key": key})

    @router.post("/things")
    async def write_thing(
        key: Annotated[str, Security(guard, scopes=["read", "write"])],
        again: Annotated[int, Depends(uncached, use_cache=False)],
    ) -> Response:
        return JSONResponse({"key": key, "again": again}, status_code=201)

    app = FastAPI()
    app.include_router(router)
    return app


REQUESTS: list[tuple[str, str, dict[str, str]]] = [
    ("GET", "/things/1", {"x-key": "reader"}),
    ("GET", "/things/1", {}),
    ("GET", "/things/not-a-number", {"x-key": "reader"}),
    ("GET", "/things/not-a-number", {}),
    ("POST", "/things", {"x-key": "reader"}),
    ("POST", "/things", {"x-key": "writer"}),
    ("POST", "/things", {}),
]


async def _answers(app: FastAPI) -> list[tuple[int, dict[str, str], Any, list[str]]]:
    """Each request's status, headers, body, and the dependencies' calls it made, in order."""
    answers = []
    async with in_process_client(app) as http:
        for method, url, headers in REQUESTS:
            _log.clear()
            response: httpx.Response = await http.request(method, url, headers=headers)
            answers.append((response.status_code, dict(response.headers), response.json(), [*_log]))
    return answers


async def _planned_answers() -> tuple[list[Any], list[bool]]:
    internals.dependency_plan_problem.cache_clear()
    app = _app()
    choices = [choice.planned_dependencies for choice in build_route_handlers(app)]
    return await _answers(app), choices


async def test_planned_dependencies_answer_and_call_as_solve_dependencies_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planned, planned_choices = await _planned_answers()
    monkeypatch.setattr(internals.GET_CACHE_KEY, "name", "_get_cache_key_gone")
    internals.dependency_plan_problem.cache_clear()
    solved_app = _app()
    solved_choices = [choice.planned_dependencies for choice in build_route_handlers(solved_app)]
    solved = await _answers(solved_app)
    monkeypatch.undo()
    internals.dependency_plan_problem.cache_clear()
    assert planned_choices == [True, True], "both routes' dependencies are planned"
    assert solved_choices == [False, False], "without the internal, FastAPI solves them"
    assert planned == solved
    # What the comparison covers: a cached value shared, uncached ones called twice, two keys of
    # one guard (its scopes differ), the guard's refusal before the path's validation.
    assert [status for status, *_ in planned] == [200, 401, 422, 401, 403, 201, 401]
    assert planned[0][3] == [
        "shared",
        "guard read /things/1",
        "uncached",
        "uncached",
        "counted",
    ]
    assert planned[0][2]["seen"] == {"path": "/things/1", "first": 3, "second": 4}


async def test_an_override_of_a_planned_dependency_is_solved_by_fastapi() -> None:
    app = _app()
    assert all(choice.planned_dependencies for choice in build_route_handlers(app))

    async def elsewhere() -> str:
        _log.append("elsewhere")
        return "/elsewhere"

    app.dependency_overrides[shared] = elsewhere
    answers = await _answers(app)
    assert answers[0][0] == 200
    assert answers[0][2]["seen"]["path"] == "/elsewhere"
    assert "shared" not in answers[0][3]
