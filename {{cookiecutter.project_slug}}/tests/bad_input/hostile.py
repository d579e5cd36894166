"""A hostile request and the checks on its answer, shared by the tables of this folder."""

from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from ..conftest import BASE, PROBLEM, count_rows
from ..declared import change, new_body

JSON = {"content-type": "application/json"}


@dataclass(frozen=True)
class Hostile:
    """A request and what the answer must name: a field of `errors`, or words of `detail`."""

    method: str
    path: str  # "{id}" is replaced by the id of an existing row
    status: int
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=lambda: dict(JSON))
    names_field: str | None = None
    detail_says: str | None = None


def json_with(**fields: Any) -> bytes:
    """A valid create body of the first resource, `fields` on top."""
    return orjson.dumps(new_body(**fields))


def json_without(name: str) -> bytes:
    """A valid create body of the first resource without field `name`."""
    return orjson.dumps({key: value for key, value in new_body().items() if key != name})


def json_raw(name: str, value: bytes) -> bytes:
    """A valid create body of the first resource whose field `name` is written as `value`, bytes
    that need not be JSON."""
    mark = "<raw value>"
    return orjson.dumps({**new_body(), name: mark}).replace(orjson.dumps(mark), value)


def json_change() -> bytes:
    """A valid PATCH body of the first resource."""
    return orjson.dumps(change())


def raw(text: str) -> bytes:
    return text.encode()


def post(body: bytes, status: int = 422, **expect: Any) -> Hostile:
    return Hostile("POST", BASE, status, body, **expect)


def patch(body: bytes, status: int = 422, **expect: Any) -> Hostile:
    return Hostile("PATCH", BASE + "/{id}", status, body, **expect)


def get(path: str, status: int = 422, **expect: Any) -> Hostile:
    return Hostile("GET", path, status, None, headers={}, **expect)


def if_match(method: str, tag: str, status: int, header: str = "if-match") -> Hostile:
    body = json_change() if method == "PATCH" else None
    says = "If-Match" if header == "if-match" else "If-None-Match"
    return Hostile(method, BASE + "/{id}", status, body, {**JSON, header: tag}, detail_says=says)


def assert_names_the_problem(response: httpx.Response, case: Hostile) -> None:
    assert response.status_code == case.status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == case.status
    assert body["title"]
    assert body["detail"]
    if case.names_field is not None:
        assert case.names_field in [error["field"].split(".")[0] for error in body["errors"]]
        assert case.names_field in body["detail"]
    if case.detail_says is not None:
        assert case.detail_says in body["detail"]
    if case.status == 405:
        assert {"GET"} <= {method.strip() for method in response.headers["allow"].split(",")}
    assert "location" not in response.headers


async def assert_refused_and_unchanged(
    client: httpx.AsyncClient, database_url: str, existing_id: int, case: Hostile
) -> None:
    """`case` gets a 4xx problem naming it; no row is added and the existing one is untouched."""
    before = await count_rows(database_url)
    path = case.path.replace("{id}", str(existing_id))
    response = await client.request(case.method, path, content=case.body, headers=case.headers)
    assert_names_the_problem(response, case)
    assert response.headers.get("x-request-id", "") != case.headers.get("x-request-id")
    assert await count_rows(database_url) == before
    unchanged = await client.get(f"{BASE}/{existing_id}")
    assert unchanged.json()["version"] == 1
