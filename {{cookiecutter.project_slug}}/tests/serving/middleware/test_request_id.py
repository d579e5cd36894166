"""middleware/edge/request_id.py: an X-Request-ID is kept only from a trusted proxy and only when
well formed; around a five-line inline app in the edge middleware, then end to end."""

from pathlib import Path

import httpx
import pytest
import structlog
from starlette.types import Message, Receive, Scope, Send
from structlog.contextvars import get_contextvars

from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.serving.app import create_app
from {{ cookiecutter.package_name }}.serving.middleware import edge as edge_module
from {{ cookiecutter.package_name }}.serving.middleware.edge import EdgeMiddleware
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_id import TrustedPeers
from {{ cookiecutter.package_name }}.serving.middleware.edge.request_metrics import RequestMetrics
from {{ cookiecutter.package_name }}.settings import Settings


async def _echo_request_id(
    trusted: str, peer: str, incoming: bytes
) -> tuple[str, dict[str, object]]:
    """Run the edge middleware around a five-line app; return the id sent back and the log context."""
    seen: dict[str, object] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.update(get_contextvars())
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "client": (peer, 4321),
        "headers": [(b"x-request-id", incoming)],
    }
    edge = EdgeMiddleware(
        app, metrics=RequestMetrics(Metrics()), access_log=None, trusted=TrustedPeers(trusted)
    )
    await edge(scope, receive, send)
    headers = dict(sent[0]["headers"])
    return headers[b"x-request-id"].decode(), seen


@pytest.mark.parametrize(
    ("trusted", "peer"),
    [("10.0.0.1", "10.0.0.1"), ("10.0.0.0/8, ::1", "10.9.8.7"), ("*", "192.0.2.1")],
)
async def test_a_request_id_from_a_trusted_proxy_is_kept(trusted: str, peer: str) -> None:
    request_id, context = await _echo_request_id(trusted, peer, b"trace-42.abc")
    assert request_id == "trace-42.abc"
    assert context["request_id"] == "trace-42.abc"
    assert "client_request_id" not in context


@pytest.mark.parametrize(
    ("trusted", "peer"), [("", "127.0.0.1"), ("10.0.0.0/8", "192.0.2.1"), ("10.0.0.1", "not-an-ip")]
)
async def test_a_request_id_from_anyone_else_is_replaced_and_logged_apart(
    trusted: str, peer: str
) -> None:
    request_id, context = await _echo_request_id(trusted, peer, b"trace-42.abc")
    assert request_id != "trace-42.abc"
    assert len(request_id) == 32
    assert context == {"request_id": request_id, "client_request_id": "trace-42.abc"}


async def test_a_request_id_is_made_and_echoed(client: httpx.AsyncClient) -> None:
    first = (await client.get("/healthz")).headers["x-request-id"]
    second = (await client.get("/healthz")).headers["x-request-id"]
    assert len(first) == 32
    assert first != second


async def test_the_service_by_default_trusts_no_request_id(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz", headers={"x-request-id": "trace-42.abc"})
    assert response.headers["x-request-id"] != "trace-42.abc"


async def test_behind_a_trusted_proxy_the_request_id_is_kept_and_the_client_is_the_forwarded_one(
    settings: Settings, tmp_path: Path
) -> None:
    application = create_app(settings.model_copy(update={"forwarded_allow_ips": "127.0.0.1"}))
    transport = httpx.ASGITransport(app=application, client=("127.0.0.1", 5555))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.get(
            "/healthz",
            headers={
                "x-request-id": "trace-42.abc",
                "x-forwarded-for": "203.0.113.9",
                "x-forwarded-proto": "https",
            },
        )
    assert response.headers["x-request-id"] == "trace-42.abc"
    assert "strict-transport-security" in response.headers  # the proxy's scheme was applied


@pytest.mark.parametrize("bad", ["x" * 129, "has space", "semi;colon", "ünïcode"])
async def test_a_malformed_incoming_request_id_is_replaced(
    client: httpx.AsyncClient, bad: str
) -> None:
    response = await client.get("/healthz", headers=[(b"x-request-id", bad.encode())])
    assert response.headers["x-request-id"] != bad
    assert len(response.headers["x-request-id"]) == 32


async def test_malformed_request_id_is_replaced_not_echoed(client: httpx.AsyncClient) -> None:
    hostile = "id with spaces and <angle> brackets " + "x" * 300
    response = await client.get("/healthz", headers={"x-request-id": hostile})
    assert response.status_code == 200
    assert response.headers.get("x-request-id") != hostile


async def test_after_the_first_request_the_id_is_bound_without_structlogs_keyword_loops(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bound: list[dict[str, object]] = []
    original = structlog.contextvars.bind_contextvars

    def counting(**values: object) -> object:
        bound.append(values)
        return original(**values)

    monkeypatch.setattr(edge_module, "bind_contextvars", counting)
    seen: list[dict[str, object]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(get_contextvars())
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def send(message: Message) -> None:
        return None

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    edge = EdgeMiddleware(app, metrics=RequestMetrics(Metrics()), access_log=None)
    for _ in range(3):
        scope: Scope = {"type": "http", "method": "GET", "path": "/", "headers": [], "client": None}
        await edge(scope, receive, send)
        assert get_contextvars() == {}  # reset after every request
    assert len(bound) == 1  # the first request finds structlog's variable; the rest set it
    ids = [context["request_id"] for context in seen]
    assert len(set(ids)) == 3
    assert all(context == {"request_id": rid} for context, rid in zip(seen, ids, strict=True))
