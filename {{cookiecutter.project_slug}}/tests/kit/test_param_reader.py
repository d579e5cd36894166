"""The fast handler answers exactly what FastAPI's standard handler answers, shape by shape.

The same routes are served twice, by two apps on one database: one as declared (FastRoute's fast
handler), one with FastRoute built on FastAPI's standard handler. Every request shape below goes
to both, each against a fresh row of its own, and the answers must agree: status, body and the
headers a client acts on.
"""

import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import fastapi.routing
import httpx
import orjson
import pytest
from fastapi import FastAPI
from fastapi.dependencies.utils import solve_dependencies
from fastapi.routing import APIRoute

from {{ cookiecutter.package_name }}.kit.routing import FastRoute
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, first_field, in_process_client, lifespan
from ..declared import change, first_resource, new_body

JSON = {"content-type": "application/json"}
COMPARED_HEADERS = ("content-type", "etag", "location", "allow", "retry-after")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)")

# The fields the body shapes aim at, whatever the first resource declares: a number where there
# is one (the shapes of a number are left out where there is none: a string field would take
# "12", and a unique one only once), a one-line or text string where there is one, a required
# field where there is one (a create without it is left out where there is none: the field left
# out takes its default, and a unique default only once).
_ANY = next(iter(first_resource().fields.model_fields))
_NUMBER = first_field("int", "bigint", "money")
_TEXT = first_field("str", "text") or _ANY
_REQUIRED = first_field(required=True)
_RAW = "<raw value>"

# The values a request sent, so that the fresh values each app's requests send are masked alike.
Sent = list[dict[str, Any]]
# A body is built for each request: every body carries fresh values (unique fields stay unique).
Body = Callable[[Sent], bytes]


def _fresh(make: Callable[[], dict[str, Any]], raw: tuple[str, bytes] | None = None) -> Body:
    """A body of fresh values from `make`, with one field written as raw bytes if `raw` names one
    (JSON or not)."""

    def build(sent: Sent) -> bytes:
        body = make()
        sent.append(body)
        if raw is None:
            return orjson.dumps(body)
        return orjson.dumps({**body, raw[0]: _RAW}).replace(orjson.dumps(_RAW), raw[1])

    return build


def _with(field: str, raw: bytes) -> Body:
    return _fresh(new_body, (field, raw))


def _without(field: str) -> Body:
    return _fresh(lambda: {name: value for name, value in new_body().items() if name != field})


_valid = _fresh(new_body)
_change = _fresh(change)
_extra = _fresh(lambda: {**new_body(), "x": 1})


def _fixed(content: bytes) -> Body:
    return lambda sent: content


def _suffixed(body: Body, suffix: bytes) -> Body:
    return lambda sent: body(sent) + suffix


# (method, path with {id} for a fresh row's id, body, headers)
Shape = tuple[str, str, Body | None, dict[str, str] | list[tuple[str, str]]]
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
    "page-unknown-parameter-twice": ("GET", "?colour=red&colour=blue&limit=1", None, {}),
    "page-unknown-sort": ("GET", "?sort=colour", None, {}),
    "page-garbage-cursor": ("GET", "?cursor=x", None, {}),
    "create": ("POST", "", _valid, JSON),
    "create-json-charset": (
        "POST",
        "",
        _valid,
        {"content-type": "application/json; charset=utf-8"},
    ),
    "create-json-suffix": ("POST", "", _valid, {"content-type": "application/vnd.api+json"}),
    "create-text-plain": ("POST", "", _valid, {"content-type": "text/plain"}),
    "create-no-content-type": ("POST", "", _valid, {}),
    "create-two-content-types": (
        "POST",
        "",
        _valid,
        [("content-type", "text/plain"), ("content-type", "application/json")],
    ),
    "create-empty-body": ("POST", "", _fixed(b""), JSON),
    "create-invalid-json": ("POST", "", _fixed(b'{"field": '), JSON),
    "create-trailing-garbage": ("POST", "", _suffixed(_valid, b"xyz"), JSON),
    "create-not-utf8": ("POST", "", _with(_TEXT, b'"\xff"'), JSON),
    "create-array": ("POST", "", _fixed(b"[]"), JSON),
    "create-null": ("POST", "", _fixed(b"null"), JSON),
    "create-extra-field": ("POST", "", _extra, JSON),
    "create-control-character": ("POST", "", _with(_TEXT, b'"a\\u0001b"'), JSON),
    "create-nested-deeply": ("POST", "", _fixed(b"[" * 5000 + b"]" * 5000), JSON),
    "patch": ("PATCH", "/{id}", _change, JSON),
    "patch-if-match-current": ("PATCH", "/{id}", _change, {**JSON, "if-match": '"1"'}),
    "patch-if-match-stale": ("PATCH", "/{id}", _change, {**JSON, "if-match": '"7"'}),
    "patch-if-match-malformed": ("PATCH", "/{id}", _change, {**JSON, "if-match": "7"}),
    "patch-empty-object": ("PATCH", "/{id}", _fixed(b"{}"), JSON),
    "patch-null-field": ("PATCH", "/{id}", _fixed(orjson.dumps({_REQUIRED or _ANY: None})), JSON),
    "patch-text-plain": ("PATCH", "/{id}", _change, {"content-type": "text/plain"}),
    "patch-invalid-json": ("PATCH", "/{id}", _fixed(b"{"), JSON),
    "patch-missing": ("PATCH", "/999999999999", _change, JSON),
    "patch-word-id": ("PATCH", "/abc", _change, JSON),
    "delete": ("DELETE", "/{id}", None, {}),
    "delete-missing": ("DELETE", "/999999999999", None, {}),
    "delete-word-id": ("DELETE", "/abc", None, {}),
    "put": ("PUT", "/{id}", _valid, JSON),
}
if _REQUIRED is not None:
    SHAPES["create-missing-required-field"] = ("POST", "", _without(_REQUIRED), JSON)
if _NUMBER is not None:
    SHAPES |= {
        "create-nan": ("POST", "", _with(_NUMBER, b"NaN"), JSON),
        "create-number-as-string": ("POST", "", _with(_NUMBER, b'"12"'), JSON),
        "create-number-above-int64": ("POST", "", _with(_NUMBER, b"9223372036854775808"), JSON),
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
            await fast.post(BASE, json=new_body())
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


def _same(sent: Any, answered: Any) -> bool:
    return type(sent) is type(answered) and sent == answered


def _masked(key: str, item: Any, row_id: int, sent: Sent) -> Any:
    if key == "id" and _is_new(item, row_id):
        return "<id>"
    # Of the same type too: a field named like a key of the page around the rows (next_after)
    # may hold True, which equals the page's 1.
    if any(key in body and _same(body[key], item) for body in sent):
        return f"<sent {key}>"
    return _normalised(item, row_id, sent)


def _sent_for(row: dict[str, Any], row_id: int, sent: Sent) -> Sent:
    """The bodies a row's values may come from: all sent for the fresh row (created, then
    changed by the request), the request's own for a row it created, none for an older row. A
    value a row took from elsewhere (a declared default) is compared as it is, even where a
    body that is not the row's sent it."""
    if row["id"] == row_id:
        return sent
    return sent[1:] if _is_new(row["id"], row_id) else []


def _normalised(value: Any, row_id: int, sent: Sent) -> Any:
    """The answer with what differs by construction (new rows' ids, the fresh values sent,
    timestamps) masked."""
    if isinstance(value, dict):
        if isinstance(value.get("id"), int):
            sent = _sent_for(value, row_id, sent)
        return {key: _masked(key, item, row_id, sent) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalised(item, row_id, sent) for item in value]
    if isinstance(value, str):
        value = _TIMESTAMP.sub("<time>", value)
        return re.sub(r"\b\d+\b", lambda m: "<id>" if _is_new(int(m[0]), row_id) else m[0], value)
    return value


async def _answer(http: httpx.AsyncClient, shape: Shape) -> tuple[Any, ...]:
    method, path, body, headers = shape
    fresh = new_body()
    sent = [fresh]  # then the bodies the request sends
    row_id = (await http.post(BASE, json=fresh)).json()["id"]
    url = BASE + path.replace("{id}", str(row_id))
    content = None if body is None else body(sent)
    response = await http.request(method, url, content=content, headers=headers)
    try:
        answer: Any = response.json()
    except ValueError:
        answer = response.text
    kept = {name: response.headers.get(name) for name in COMPARED_HEADERS}
    return response.status_code, _normalised(answer, row_id, sent), _normalised(kept, row_id, [])


def test_a_new_rows_default_is_compared_as_it_is_whatever_another_body_sent() -> None:
    """A create that omitted `field` (its default, "d") answers alike in both apps, though one
    app's fresh row was sent "d" there and the other's was not: the new row's values are masked
    by its own body alone."""
    row_id = 10
    new_row = {"id": row_id + 1, "field": "d", "other": 7}
    request = {"other": 7}
    one = _normalised(new_row, row_id, [{"field": "d", "other": 1}, request])
    other = _normalised(new_row, row_id, [{"field": "e", "other": 2}, request])
    assert one == other == {"id": "<id>", "field": "d", "other": "<sent other>"}


def test_the_table_covers_at_least_forty_shapes() -> None:
    assert len(SHAPES) >= 40


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
async def test_both_handlers_answer_alike(
    both: tuple[httpx.AsyncClient, httpx.AsyncClient], shape: Shape
) -> None:
    fast, standard = both
    assert await _answer(fast, shape) == await _answer(standard, shape)
