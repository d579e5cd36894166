"""The differential test's machinery (tests/kit/test_dispatch*.py): an app served in-process
with its FastDispatch switchable, and scenarios run through the dispatch and through FastAPI's
standard stack (the same app, the dispatch switched off), compared answer by answer."""

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from {{ cookiecutter.package_name }}.kit.dispatch import FastDispatch, dispatch_of
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, in_process_client, lifespan
from ..declared import new_body

Scenario = Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]
MISSING = 987_654_321
JSON = {"content-type": "application/json"}


class Counting:
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
        self.standard = Counting(dispatch.app)
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


async def served_app(
    settings: Settings,
    headers: dict[str, str],
    change: Callable[[FastAPI], None] | None = None,
) -> AsyncIterator[Served]:
    """The app, changed by `change` before it starts, started and served in-process."""
    app = create_app(settings)
    if change is not None:
        change(app)
    async with lifespan(app), in_process_client(app, headers) as http:
        await http.get("/healthz")  # the first request builds the stack and derives the table
        dispatch = dispatch_of(app)
        assert dispatch is not None, "the app's requests take FastAPI's router"
        yield Served(app, http, dispatch)


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


async def assert_same(
    served: Served, scenario: Scenario, *, router: bool | None = None
) -> httpx.Response:
    """Run the scenario on the dispatch once and on FastAPI's stack twice (what differs between
    those two varies by itself); the dispatch's answer equals FastAPI's but for that."""
    fast, fast_standard = await served.through(True, scenario)
    standard, _ = await served.through(False, scenario)
    again, _ = await served.through(False, scenario)
    volatile = _volatile(_comparable(standard), _comparable(again))
    assert _mask(_comparable(fast), volatile) == _mask(_comparable(standard), volatile)
    # Whether the request went on to FastAPI's router (with the dispatch on): it did not when
    # the dispatch served it, or when an outer layer answered (429). None: not asked.
    if router is not None:
        assert fast_standard == int(router), fast_standard
    return fast


async def created(http: httpx.AsyncClient) -> dict[str, Any]:
    response = await http.post(BASE, json=new_body())
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def one(method: str, path: str = "", **extra: Any) -> Scenario:
    async def scenario(http: httpx.AsyncClient) -> httpx.Response:
        body = extra.get("json")
        arguments = {**extra, "json": body()} if callable(body) else extra
        return await http.request(method, f"{BASE}{path}", **arguments)

    return scenario


def on_a_new_row(method: str, **extra: Any) -> Scenario:
    async def scenario(http: httpx.AsyncClient) -> httpx.Response:
        row = await created(http)
        headers = extra.get("headers", {})
        if headers.get("if-none-match") == "<etag>":
            current = await http.get(f"{BASE}/{row['id']}")
            headers = {**headers, "if-none-match": current.headers["etag"]}
        body = extra["json"]() if "json" in extra else None
        return await http.request(method, f"{BASE}/{row['id']}", json=body, headers=headers)

    return scenario
