"""Request id, access log, body limit and overload answer: the pure ASGI middleware at work."""

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from devdb import free_port
from starlette.types import Message, Receive, Scope, Send
from structlog.contextvars import get_contextvars

from {{ cookiecutter.package_name }}.app import create_app
from {{ cookiecutter.package_name }}.middleware.edge import EdgeMiddleware
from {{ cookiecutter.package_name }}.middleware.metrics import RequestMetrics
from {{ cookiecutter.package_name }}.middleware.request_id import TrustedPeers
from {{ cookiecutter.package_name }}.observability.metrics import Metrics
from {{ cookiecutter.package_name }}.settings import Settings

from .conftest import answers_soon

BASE = "/{{ cookiecutter.resource_plural }}"
TEMPLATE = "/{{ cookiecutter.resource_plural }}/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}"


@contextmanager
def serve(database_url: str, log: Path, auth_env: dict[str, str], **env: str) -> Iterator[str]:
    """`python -m {{ cookiecutter.package_name }}` on a free port, its stdout (the log) in `log`."""
    port = free_port()
    variables = {
        **os.environ,
        **auth_env,
        "DATABASE_URL": database_url,
        "PORT": str(port),
        "METRICS_PORT": str(free_port()),
        **env,
    }
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "{{ cookiecutter.package_name }}"],
            env=variables,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        if not answers_soon(process, f"{base}/healthz"):
            raise RuntimeError(log.read_text()[-2000:])
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_a_request_id_is_made_and_echoed(client: httpx.AsyncClient) -> None:
    first = (await client.get("/healthz")).headers["x-request-id"]
    second = (await client.get("/healthz")).headers["x-request-id"]
    assert len(first) == 32
    assert first != second


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


async def test_an_oversize_declared_body_is_a_413_problem(client: httpx.AsyncClient) -> None:
    response = await client.post(
        BASE, content=b"x" * 70_000, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["max_bytes"] == 65536


async def test_an_oversize_chunked_body_is_cut_off_with_a_413(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"x" * 1000

    response = await client.post(
        BASE, content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"


async def test_a_small_chunked_body_passes(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"name": "chunked", '
        yield b'"price_cents": 3}'

    response = await client.post(
        BASE, content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 201, response.text


def test_every_request_writes_one_json_access_line_with_the_route_template(
    database_url: str, tmp_path: Path, auth_env: dict[str, str], auth_headers: dict[str, str]
) -> None:
    log = tmp_path / "server.log"
    with serve(database_url, log, auth_env) as base:
        response = httpx.get(
            f"{base}{BASE}/987654321", headers={"x-request-id": "line-check-1", **auth_headers}
        )
        assert response.status_code == 404
    lines = [json.loads(line) for line in log.read_text().splitlines() if "line-check-1" in line]
    assert len(lines) == 1
    line = lines[0]
    assert line["event"] == "request"
    assert line["route"] == TEMPLATE
    assert line["method"] == "GET"
    assert line["status"] == 404
    assert line["client"] == "127.0.0.1"
    assert line["duration_ms"] > 0


def test_access_log_errors_mode_skips_successes(
    database_url: str, tmp_path: Path, auth_env: dict[str, str]
) -> None:
    log = tmp_path / "server.log"
    with serve(database_url, log, auth_env, ACCESS_LOG="errors") as base:
        httpx.get(f"{base}/healthz", headers={"x-request-id": "ok-request"})
        httpx.get(f"{base}/nowhere", headers={"x-request-id": "missing-request"})
    text = log.read_text()
    assert "ok-request" not in text
    assert '"route": "<unmatched>"' in text or '"route":"<unmatched>"' in text


def test_over_the_concurrency_limit_the_server_answers_a_fast_503_problem(
    database_url: str, tmp_path: Path, auth_env: dict[str, str]
) -> None:
    with serve(database_url, tmp_path / "server.log", auth_env, LIMIT_CONCURRENCY="2") as base:
        port = int(base.rsplit(":", 1)[1])
        # One connection held open (it counts against the limit), then a second one is refused.
        with socket.create_connection(("127.0.0.1", port)) as held:
            held.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            assert held.recv(4096).startswith(b"HTTP/1.1 200")
            response = httpx.get(f"{base}/healthz")
    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == "1"
    assert response.json()["status"] == 503
