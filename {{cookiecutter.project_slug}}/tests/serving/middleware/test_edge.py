"""The edge middleware (middleware/edge/__init__.py): around small inline ASGI apps, then around
the app."""

from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from {{ cookiecutter.package_name }}.db import Database
from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.edge import EdgeMiddleware
from {{ cookiecutter.package_name }}.serving.middleware.edge.access_log import AccessLog
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_id import TrustedPeers
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_metrics import RequestMetrics

from ...conftest import BASE, in_process_client


async def _hello(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


async def _fails(scope: Scope, receive: Receive, send: Send) -> None:
    raise RuntimeError("boom")


async def _fails_midway(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    raise RuntimeError("boom after the headers")


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


def _edge(app: Any, metrics: Metrics) -> httpx.AsyncClient:
    # The test client's peer (127.0.0.1) stands for a trusted proxy: its X-Request-ID is kept.
    edge = EdgeMiddleware(
        app,
        metrics=RequestMetrics(metrics),
        access_log=AccessLog(),
        trusted=TrustedPeers("127.0.0.1"),
    )
    return in_process_client(edge)


async def test_every_answer_gets_the_security_headers_and_a_request_id(metrics: Metrics) -> None:
    async with _edge(_hello, metrics) as http:
        response = await http.get("/", headers={"x-request-id": "given-1"})
    assert response.text == "hello"
    assert response.headers["x-request-id"] == "given-1"
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_an_unhandled_error_is_a_500_problem_logged_once(
    metrics: Metrics, logged: list[MutableMapping[str, Any]]
) -> None:
    async with _edge(_fails, metrics) as http:
        response = await http.get("/", headers={"x-request-id": "fails-1"})
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["x-request-id"] == "fails-1"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "boom" not in response.text
    errors = [event for event in logged if event["event"] == "unhandled_error"]
    assert len(errors) == 1
    assert errors[0]["request_id"] == "fails-1"
    assert errors[0]["exc_info"] is True  # rendered as the `exception` field of the JSON line
    access = [event for event in logged if event["event"] == "request"]
    assert [(event["status"], event["request_id"]) for event in access] == [(500, "fails-1")]


async def test_an_error_after_the_headers_is_logged_and_not_answered_twice(
    metrics: Metrics, logged: list[MutableMapping[str, Any]]
) -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    edge = EdgeMiddleware(_fails_midway, metrics=RequestMetrics(metrics), access_log=AccessLog())
    scope: Scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "client": None}
    await edge(scope, _never, send)
    # The 200 already went out; only the server ending the connection can tell the client.
    assert [message["type"] for message in sent] == ["http.response.start"]
    assert [event["event"] for event in logged].count("unhandled_error") == 1


async def test_requests_are_counted_with_their_status(metrics: Metrics) -> None:
    async with _edge(_fails, metrics) as http:
        await http.get("/")
    value = metrics.registry.get_sample_value(
        "http_requests_total", {"method": "GET", "route": "<unmatched>", "status": "500"}
    )
    assert value == 1


async def test_lifespan_and_other_scopes_pass_straight_through(metrics: Metrics) -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["type"])

    edge = EdgeMiddleware(app, metrics=RequestMetrics(metrics), access_log=None)
    await edge({"type": "lifespan"}, _never, _never)
    assert seen == ["lifespan"]


async def _never(*args: Any) -> Any:
    raise AssertionError("not called")


async def test_an_unhandled_error_in_a_route_gets_the_same_answer(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the database broke")

    # Inside the route: the handler asks the database for a connection, which raises.
    monkeypatch.setattr(Database, "connection", broken)
    response = await client.get(f"{BASE}/1", headers={"x-request-id": "route-fails-1"})
    assert response.status_code == 500
    assert response.headers["content-type"] == "application/problem+json"
    assert len(response.headers["x-request-id"]) == 32  # a client's id is not trusted by default
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    assert response.json()["detail"] == "An unexpected error occurred."


async def _reads_its_body(scope: Scope, receive: Receive, send: Send) -> None:
    await Request(scope, receive).body()  # raises ClientDisconnect: the client is gone
    await _hello(scope, receive, send)


async def test_a_client_gone_before_its_answer_is_a_499_at_info_level_not_an_error(
    metrics: Metrics, logged: list[MutableMapping[str, Any]]
) -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def gone() -> Message:
        return {"type": "http.disconnect"}

    edge = EdgeMiddleware(_reads_its_body, metrics=RequestMetrics(metrics), access_log=AccessLog())
    scope: Scope = {"type": "http", "method": "POST", "path": "/", "headers": [], "client": None}
    await edge(scope, gone, send)
    assert sent == []  # nobody to answer
    assert [event["event"] for event in logged].count("unhandled_error") == 0
    (disconnected,) = [event for event in logged if event["event"] == "client_disconnected"]
    assert disconnected["log_level"] == "info"
    access = [event for event in logged if event["event"] == "request"]
    assert [event["status"] for event in access] == [499]
    labels = {"method": "POST", "route": "<unmatched>"}
    assert metrics.registry.get_sample_value("http_requests_total", {**labels, "status": "499"})
    assert not metrics.registry.get_sample_value("http_requests_total", {**labels, "status": "500"})
