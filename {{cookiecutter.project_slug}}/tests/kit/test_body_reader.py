"""FastRoute's body read (kit/routing.py): the JSON decoded by pydantic's parser where it accepts
the document, the one body parameter validated without request_body_to_args. Every body gives
the answer it gets from json.loads and request_body_to_args, FastAPI's own reading: the hostile
bodies of tests/bad_input, valid ones and the documents on which the two parsers differ."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from fastapi.dependencies import utils as dependency_utils
from pydantic_core import from_json

from {{ cookiecutter.package_name }}.kit import fastapi_internals as internals
from {{ cookiecutter.package_name }}.kit import routing
from {{ cookiecutter.package_name }}.kit.routing import build_route_handlers
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..bad_input.hostile import JSON, json_change, json_raw, json_with
from ..bad_input.test_bodies import ANY, HOSTILE, NUMBER
from ..conftest import BASE, started

# Documents on which pydantic's parser and json.loads may part: each one's answer must still be
# FastAPI's (pydantic's parser refuses, json.loads decides; or both read the same value).
EDGES: dict[str, tuple[str, bytes]] = {
    "duplicate-key": ("POST", json_with()[:-1] + b',"' + ANY.encode() + b'":"second"}'),
    "bom": ("POST", b"\xef\xbb\xbf" + json_with()),
    "utf-16": ("POST", json.dumps(json.loads(json_with())).encode("utf-16")),
    "escaped-slash": ("POST", json_raw(ANY, b'"a\\/b"')),
    "escaped-astral": ("POST", json_raw(ANY, b'"\\ud83d\\ude00"')),
    "whitespace-around": ("POST", b" \t\r\n" + json_with() + b"\n "),
    "patch-duplicate-key": ("PATCH", json_change()[:-1] + b"," + json_change()[1:]),
    "patch-nested-300": ("PATCH", b'{"x":' + b"[" * 300 + b"]" * 300 + b"}"),
}
if NUMBER is not None:
    for name, number in {
        "big-integer": b"99999999999999999999999",
        "integral-float": b"4466.0",
        "exponent": b"1e2",
        "overflowing-exponent": b"1e400",
        "nan": b"NaN",
        "minus-zero": b"-0.0",
        "beyond-int64": b"9223372036854775808",
    }.items():
        EDGES[name] = ("POST", json_raw(NUMBER, number))
CASES = {
    **{name: (case.method, case.path, case.body, case.headers) for name, case in HOSTILE.items()},
    **{name: (method, BASE + ("/{id}" if method == "PATCH" else ""), body, JSON)
       for name, (method, body) in EDGES.items()},
    "valid-create": ("POST", BASE, json_with(), JSON),
    "valid-patch": ("PATCH", BASE + "/{id}", json_change(), JSON),
}  # fmt: skip


@pytest.mark.parametrize("body", [body for _, body in EDGES.values()], ids=list(EDGES))
def test_pydantics_parser_reads_what_json_loads_reads_or_refuses(body: bytes) -> None:
    try:
        ours = from_json(body, cache_strings="keys")
    except ValueError:
        return  # json.loads decides, as before
    assert repr(ours) == repr(json.loads(body))


@asynccontextmanager
async def _client(
    settings: Settings, headers: dict[str, str], *, planned: bool
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with started(app, headers) as http:
        body_routes = [choice for choice in build_route_handlers(app) if choice.methods in
                       (("POST",), ("PATCH",))]  # fmt: skip
        assert body_routes
        assert all(choice.planned_body == planned for choice in body_routes), body_routes
        yield http


def _comparable(response: httpx.Response, sent: bytes | None) -> tuple[int, Any]:
    """Status and body; of a row, the fields the request sent (the rest comes from the row the
    case created first, different in each run)."""
    try:
        body = response.json()
    except ValueError:
        return response.status_code, response.content
    if response.is_success and isinstance(body, dict):
        keys = set(json.loads(sent or b"{}"))
        body = {key: value for key, value in body.items() if key in keys}
    return response.status_code, body


async def _answers(http: httpx.AsyncClient) -> dict[str, tuple[int, Any]]:
    """Every case's answer; the rows they made are deleted afterwards, so that the other
    reading can send the same bodies again (a unique field's value is free again)."""
    answers: dict[str, tuple[int, Any]] = {}
    made: list[int] = []
    for name, (method, path, body, headers) in CASES.items():
        if "{id}" in path:
            target = await http.post(BASE, content=json_with(), headers=JSON)
            assert target.status_code == 201, target.text
            made.append(target.json()["id"])
            path = path.replace("{id}", str(made[-1]))
        response = await http.request(method, path, content=body, headers=headers)
        if response.status_code == 201:
            made.append(response.json()["id"])
        answers[name] = _comparable(response, body)
    for row in made:
        assert (await http.delete(f"{BASE}/{row}")).status_code == 204
    return answers


async def test_every_body_gets_the_answer_fastapis_own_reading_gives(
    settings: Settings, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _client(settings, auth_headers, planned=True) as http:
        ours = await _answers(http)
    # FastAPI's reading: json.loads, then request_body_to_args.
    monkeypatch.setattr(internals, "body_reader_problems", lambda: ("switched off",))
    monkeypatch.setattr(routing, "from_json", _refuses)
    async with _client(settings, auth_headers, planned=False) as http:
        theirs = await _answers(http)
    assert ours == theirs
    assert ours["valid-create"][0] == 201
    assert ours["valid-patch"][0] == 200


def _refuses(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("switched off")


async def test_a_planned_body_is_decoded_by_pydantic_and_validated_without_request_body_to_args(
    settings: Settings, auth_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Any] = []
    original = dependency_utils.request_body_to_args

    async def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs.get("received_body"))
        return await original(*args, **kwargs)

    decoded: list[bytes] = []

    def loads(raw: bytes) -> Any:
        decoded.append(raw)
        return json.loads(raw)

    monkeypatch.setattr(dependency_utils, "request_body_to_args", counting)
    monkeypatch.setattr(routing, "json", SimpleNamespace(loads=loads, JSONDecodeError=ValueError))
    async with _client(settings, auth_headers, planned=True) as http:
        created = await http.post(BASE, content=json_with(), headers=JSON)
        assert created.status_code == 201, created.text
        assert calls == []
        assert decoded == []  # json.loads only decides what pydantic's parser refuses
        refused = await http.post(BASE, content=b"\xef\xbb\xbf" + json_with(), headers=JSON)
        assert len(decoded) == 1, refused.text
    monkeypatch.setattr(internals, "body_reader_problems", lambda: ("switched off",))
    async with _client(settings, auth_headers, planned=False) as http:
        created = await http.post(BASE, content=json_with(), headers=JSON)
        assert created.status_code == 201, created.text
        assert len(calls) == 1
