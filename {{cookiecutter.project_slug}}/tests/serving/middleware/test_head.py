"""middleware/head.py around a small inline ASGI app: HEAD reaches the app as GET; and in the
app, a HEAD counted and logged under the route's template."""

from collections.abc import MutableMapping
from typing import Any

import httpx
from starlette.types import Message, Receive, Scope, Send

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.middleware.head import HeadAsGetMiddleware

from ...conftest import BASE, TEMPLATE
from ...declared import new_body


async def _never() -> Message:
    raise AssertionError("not called")


async def _record(seen: list[str], scope: Scope) -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["method"])

    async def send(message: Message) -> None:
        pass

    await HeadAsGetMiddleware(app)(scope, _never, send)


async def test_head_reaches_the_app_as_get_and_leaves_the_servers_scope_alone() -> None:
    seen: list[str] = []
    scope: Scope = {"type": "http", "method": "HEAD", "path": "/"}
    await _record(seen, scope)
    assert seen == ["GET"]
    assert scope["method"] == "HEAD"  # the server reads it to drop the body


async def test_other_methods_and_scopes_pass_unchanged() -> None:
    seen: list[str] = []
    for method in ("GET", "POST", "DELETE"):
        await _record(seen, {"type": "http", "method": method, "path": "/"})
    assert seen == ["GET", "POST", "DELETE"]


async def test_the_route_the_app_matched_for_the_get_is_the_route_of_the_head() -> None:
    matched = object()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = matched  # what the router does

    scope: Scope = {"type": "http", "method": "HEAD", "path": "/"}
    await HeadAsGetMiddleware(app)(scope, _never, _never_sent)
    assert scope["route"] is matched


async def _never_sent(message: Message) -> None:
    raise AssertionError("nothing is sent")


async def test_a_head_request_is_counted_and_logged_under_its_route_template(
    client: httpx.AsyncClient, app_metrics: Metrics, logged: list[MutableMapping[str, Any]]
) -> None:
    created = await client.post(BASE, json=new_body())
    response = await client.head(f"{BASE}/{created.json()['id']}")
    assert response.status_code == 200
    assert response.content == b""
    labels = {"method": "HEAD", "route": TEMPLATE, "status": "200"}
    assert app_metrics.registry.get_sample_value("http_requests_total", labels) is not None
    heads = [event for event in logged if event["event"] == "request" and event["method"] == "HEAD"]
    assert [event["route"] for event in heads] == [TEMPLATE]
