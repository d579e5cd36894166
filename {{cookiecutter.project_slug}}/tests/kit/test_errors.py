"""errors.py: every error is a problem+json answer naming the problem, and none reveals a stack
trace, SQL or a library."""

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from {{ cookiecutter.package_name }}.db import Database
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, assert_problem, in_process_client, lifespan
from ..declared import new_body

INTERNALS = (
    "Traceback",
    'File "',
    "asyncpg",
    "SELECT",
    "INSERT",
    "UPDATE ",
    "psycopg",
    "uvicorn",
    "line ",
)


def assert_reveals_nothing(response: httpx.Response) -> None:
    for marker in INTERNALS:
        assert marker not in response.text, f"{marker!r} in {response.status_code}: {response.text}"


# The pool of each starved app, for the test to hold its only connection.
_starved_databases: dict[FastAPI, Database] = {}


@pytest.fixture(scope="module")
async def starved_app(database_url: str, auth_settings: dict[str, Any]) -> AsyncIterator[FastAPI]:
    """An app whose only connection the test can hold, so that the next request must time out."""
    settings = Settings(
        database_url=database_url,
        app_env="test",
        pool_min_size=1,
        pool_max_size=1,
        pool_acquire_timeout=0.2,
        **auth_settings,
    )
    application = create_app(settings)
    async with lifespan(application) as state:
        _starved_databases[application] = state.database
        yield application


async def test_unknown_route_is_a_problem_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/no-such-route")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["status"] == 404


async def test_wrong_method_is_a_problem_405(client: httpx.AsyncClient) -> None:
    response = await client.put(BASE)
    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize(
    ("path", "allowed"),
    [(BASE + "/1", {"GET", "PATCH", "DELETE"}), (BASE, {"GET", "POST"}), ("/healthz", {"GET"})],
)
async def test_an_unsupported_method_is_405_with_allow_naming_every_method(
    client: httpx.AsyncClient, path: str, allowed: set[str]
) -> None:
    response = await client.put(path)
    assert_problem(response, 405)
    methods = {method.strip() for method in response.headers["allow"].split(",")}
    # HEAD is listed wherever GET is served: the routes answer it.
    assert methods - {"HEAD"} == allowed


async def test_error_responses_reveal_no_stack_trace_sql_or_library(
    client: httpx.AsyncClient,
) -> None:
    responses = [
        await client.get(f"{BASE}/999999999"),
        await client.get("/nowhere"),
        await client.put(BASE),
        await client.post(BASE, content=b"{", headers={"content-type": "application/json"}),
        await client.post(BASE, json={**new_body(), "unknown": 1}),
        await client.post(BASE, content=b"x", headers={"content-type": "text/plain"}),
        await client.get(f"{BASE}?after=1;SELECT"),
    ]
    assert sorted({response.status_code for response in responses}) == [400, 404, 405, 415, 422]
    for response in responses:
        assert response.headers["content-type"] == "application/problem+json"
        assert_reveals_nothing(response)


async def test_saturated_pool_answers_503_with_retry_after_and_no_internals(
    starved_app: FastAPI, auth_headers: dict[str, str]
) -> None:
    async with (
        in_process_client(starved_app, auth_headers) as http,
        _starved_databases[starved_app].pool.acquire(),
    ):
        response = await http.get(f"{BASE}/1")
    assert response.status_code == 503
    assert response.headers["retry-after"].isdigit()
    assert response.headers["content-type"] == "application/problem+json"
    assert_reveals_nothing(response)
