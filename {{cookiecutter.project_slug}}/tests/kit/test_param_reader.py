"""The fast handler answers exactly what FastAPI's standard handler answers, shape by shape.

The same routes are served twice, by two apps on one database: one as declared (FastRoute's fast
handler), one with FastRoute built on FastAPI's standard handler. Every request shape below goes
to both, each against a fresh row of its own, and the answers must agree: status, body and the
headers a client acts on.
"""

import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from typing import Any

import fastapi.routing
import httpx
import pytest
from fastapi import FastAPI
from fastapi.dependencies.utils import solve_dependencies
from fastapi.routing import APIRoute

from {{ cookiecutter.package_name }}.kit.routing import FastRoute
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import in_process_client, lifespan

BASE = "/{{ cookiecutter.resource_plural }}"
JSON = {"content-type": "application/json"}
VALID = b'{"name": "shape", "price_cents": 100}'
COMPARED_HEADERS = ("content-type", "etag", "location", "allow", "retry-after")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)")

# (method, path with {id} for a fresh row's id, body, headers)
Shape = tuple[str, str, bytes | None, dict[str, str] | list[tuple[str, str]]]
SHAPES: dict[str, Shape] = {
    "get": ("GET", "/{id}", None, {}),
    "get-zero": ("GET", "/0", None, {}),
    "get-negative": ("GET", "/-1", None, {}),
    "get-leading-zero": ("GET", "/0{id}", None, {}),
    "get-plus-sign": ("GET", "/+{id}", None, {}),
    "get-decimal": ("GET", "/{id}.0", None, {}),
    "get-word": ("GET", "/abc", None, {}),
    "get-above-int64": ("GET", "/9223372036854775808", None, {}),
    "get-missing": ("GET", "/999999999999", None, {}),
    "get-encoded-space": ("GET", "/%20{id}", None, {}),
    "get-trailing-slash": ("GET", "/{id}/", None, {}),
    "head": ("HEAD", "/{id}", None, {}),
    "page": ("GET", "", None, {}),
    "page-limit-1": ("GET", "?limit=1", None, {}),
    "page-limit-0": ("GET", "?limit=0", None, {}),
    "page-limit-501": ("GET", "?limit=501", None, {}),
    "page-limit-word": ("GET", "?limit=abc", None, {}),
    "page-limit-empty": ("GET", "?limit=", None, {}),
    "page-after-negative": ("GET", "?after=-1", None, {}),
    "page-after-word": ("GET", "?after=x", None, {}),
    "page-after-above-int64": ("GET", "?after=99999999999999999999", None, {}),
    "page-both": ("GET", "?limit=2&after=1", None, {}),
    "page-limit-twice": ("GET", "?limit=1&limit=2", None, {}),
    "page-unknown-parameter": ("GET", "?colour=red", None, {}),
    "create": ("POST", "", VALID, JSON),
    "create-json-charset": ("POST", "", VALID, {"content-type": "application/json; charset=utf-8"}),
    "create-json-suffix": ("POST", "", VALID, {"content-type": "application/vnd.api+json"}),
    "create-text-plain": ("POST", "", VALID, {"content-type": "text/plain"}),
    "create-no-content-type": ("POST", "", VALID, {}),
    "create-two-content-types": (
        "POST",
        "",
        VALID,
        [("content-type", "text/plain"), ("content-type", "application/json")],
    ),
    "create-empty-body": ("POST", "", b"", JSON),
    "create-invalid-json": ("POST", "", b'{"name": ', JSON),
    "create-trailing-garbage": ("POST", "", VALID + b"xyz", JSON),
    "create-not-utf8": ("POST", "", b'{"name": "\xff", "price_cents": 1}', JSON),
    "create-nan": ("POST", "", b'{"name": "n", "price_cents": NaN}', JSON),
    "create-array": ("POST", "", b"[]", JSON),
    "create-null": ("POST", "", b"null", JSON),
    "create-missing-name": ("POST", "", b'{"price_cents": 1}', JSON),
    "create-extra-field": ("POST", "", b'{"name": "e", "price_cents": 1, "x": 1}', JSON),
    "create-price-as-string": ("POST", "", b'{"name": "s", "price_cents": "12"}', JSON),
    "create-price-above-int64": (
        "POST",
        "",
        b'{"name": "b", "price_cents": 9223372036854775808}',
        JSON,
    ),
    "create-control-character": ("POST", "", b'{"name": "a\\u0001b", "price_cents": 1}', JSON),
    "create-nested-deeply": ("POST", "", b"[" * 5000 + b"]" * 5000, JSON),
    "patch": ("PATCH", "/{id}", b'{"quantity": 4}', JSON),
    "patch-if-match-current": ("PATCH", "/{id}", b'{"quantity": 4}', {**JSON, "if-match": '"1"'}),
    "patch-if-match-stale": ("PATCH", "/{id}", b'{"quantity": 4}', {**JSON, "if-match": '"7"'}),
    "patch-if-match-malformed": ("PATCH", "/{id}", b'{"quantity": 4}', {**JSON, "if-match": "7"}),
    "patch-empty-object": ("PATCH", "/{id}", b"{}", JSON),
    "patch-null-name": ("PATCH", "/{id}", b'{"name": null}', JSON),
    "patch-text-plain": ("PATCH", "/{id}", b'{"quantity": 4}', {"content-type": "text/plain"}),
    "patch-invalid-json": ("PATCH", "/{id}", b"{", JSON),
    "patch-missing": ("PATCH", "/999999999999", b'{"quantity": 4}', JSON),
    "patch-word-id": ("PATCH", "/abc", b'{"quantity": 4}', JSON),
    "delete": ("DELETE", "/{id}", None, {}),
    "delete-missing": ("DELETE", "/999999999999", None, {}),
    "delete-word-id": ("DELETE", "/abc", None, {}),
    "put": ("PUT", "/{id}", VALID, JSON),
}


def _standard_handler(self: FastRoute) -> Any:
    return APIRoute.get_route_handler(self)


@pytest.fixture(scope="module")
async def both(
    settings: Settings, auth_headers: dict[str, str]
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with AsyncExitStack() as stack:
        fast_app = create_app(settings)
        await stack.enter_async_context(lifespan(fast_app))
        # The lifespan builds every route's handler: the standard app's, while they are patched.
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(FastRoute, "get_route_handler", _standard_handler)
            standard_app = create_app(settings)
            await stack.enter_async_context(lifespan(standard_app))
        fast = await stack.enter_async_context(_client_of(fast_app, auth_headers))
        standard = await stack.enter_async_context(_client_of(standard_app, auth_headers))
        for _ in range(25):  # rows enough that the first page is the same for both
            await fast.post(BASE, content=VALID, headers=JSON)
        await _check_each_runs_its_handler(fast, standard)
        yield fast, standard


def _client_of(app: FastAPI, headers: dict[str, str]) -> httpx.AsyncClient:
    return in_process_client(app, headers, base_url="http://t")


async def _check_each_runs_its_handler(
    fast: httpx.AsyncClient, standard: httpx.AsyncClient
) -> None:
    """Each app runs the handler it is meant to, or the comparison proves nothing."""
    standard_calls: list[object] = []

    async def counting(**kwargs: Any) -> Any:
        standard_calls.append(kwargs["request"])
        return await solve_dependencies(**kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastapi.routing, "solve_dependencies", counting)
        await fast.get(f"{BASE}/1")
        assert standard_calls == []
        await standard.get(f"{BASE}/1")
        assert len(standard_calls) == 1


def _is_new(number: int, row_id: int) -> bool:
    # The fresh row, or one the request itself created: ids differ between the two apps.
    return row_id <= number < row_id + 5


def _normalised(value: Any, row_id: int) -> Any:
    """The answer with what differs by construction (new rows' ids, timestamps) masked."""
    if isinstance(value, dict):
        return {
            key: "<id>" if key == "id" and _is_new(item, row_id) else _normalised(item, row_id)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_normalised(item, row_id) for item in value]
    if isinstance(value, str):
        value = _TIMESTAMP.sub("<time>", value)
        return re.sub(r"\b\d+\b", lambda m: "<id>" if _is_new(int(m[0]), row_id) else m[0], value)
    return value


async def _answer(http: httpx.AsyncClient, shape: Shape) -> tuple[Any, ...]:
    method, path, body, headers = shape
    row_id = (await http.post(BASE, content=VALID, headers=JSON)).json()["id"]
    url = BASE + path.replace("{id}", str(row_id))
    response = await http.request(method, url, content=body, headers=headers)
    try:
        content: Any = response.json()
    except ValueError:
        content = response.text
    kept = {name: response.headers.get(name) for name in COMPARED_HEADERS}
    return response.status_code, _normalised(content, row_id), _normalised(kept, row_id)


def test_the_table_covers_at_least_forty_shapes() -> None:
    assert len(SHAPES) >= 40


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
async def test_both_handlers_answer_alike(
    both: tuple[httpx.AsyncClient, httpx.AsyncClient], shape: Shape
) -> None:
    fast, standard = both
    assert await _answer(fast, shape) == await _answer(standard, shape)
