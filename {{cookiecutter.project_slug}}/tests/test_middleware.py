"""Request id, access log, body limit and overload answer: the pure ASGI middleware at work."""

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from starlette.types import Message, Receive, Scope, Send

from {{ cookiecutter.package_name }}.devdb import free_port
from {{ cookiecutter.package_name }}.middleware.body_limit import BodySizeLimitMiddleware

BASE = "/{{ cookiecutter.resource_plural }}"
TEMPLATE = "/{{ cookiecutter.resource_plural }}/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}"


@contextmanager
def serve(database_url: str, log: Path, **env: str) -> Iterator[str]:
    """`python -m {{ cookiecutter.package_name }}` on a free port, its stdout (the log) in `log`."""
    port = free_port()
    variables = {**os.environ, "DATABASE_URL": database_url, "PORT": str(port), **env}
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "{{ cookiecutter.package_name }}"],
            env=variables,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(log.read_text()[-2000:]) from None
                time.sleep(0.05)  # polling a process that is starting: no event to wait on
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


async def test_a_request_id_is_made_and_echoed(client: httpx.AsyncClient) -> None:
    first = (await client.get("/healthz")).headers["x-request-id"]
    second = (await client.get("/healthz")).headers["x-request-id"]
    assert len(first) == 32
    assert first != second


async def test_a_well_formed_incoming_request_id_is_kept(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz", headers={"x-request-id": "trace-42.abc"})
    assert response.headers["x-request-id"] == "trace-42.abc"


@pytest.mark.parametrize("bad", ["x" * 129, "has space", "semi;colon", "ünïcode"])
async def test_a_malformed_incoming_request_id_is_replaced(client: httpx.AsyncClient, bad: str) -> None:
    response = await client.get("/healthz", headers=[(b"x-request-id", bad.encode())])
    assert response.headers["x-request-id"] != bad
    assert len(response.headers["x-request-id"]) == 32


async def test_an_oversize_declared_body_is_a_413_problem(client: httpx.AsyncClient) -> None:
    response = await client.post(BASE, content=b"x" * 70_000, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["max_bytes"] == 65536


async def test_an_oversize_chunked_body_is_cut_off_with_a_413(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"x" * 1000

    response = await client.post(BASE, content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.headers["content-type"] == "application/problem+json"


def _answer(connection: socket.socket) -> bytes:
    """One whole response (head and Content-Length body) read from a raw socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += connection.recv(65536)
    return head


def test_a_3_mb_body_on_a_reused_connection_gets_its_413(served_url: str) -> None:
    port = int(served_url.rsplit(":", 1)[1])
    body = b"x" * (3 << 20)
    post = (
        f"POST {BASE} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        assert _answer(connection).startswith(b"HTTP/1.1 200")
        connection.sendall(post + body)  # the whole body, as clients send it, before reading
        assert _answer(connection).startswith(b"HTTP/1.1 413")
        # Drained whole, the body leaves the connection usable for the next request.
        connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        assert _answer(connection).startswith(b"HTTP/1.1 200")


async def test_a_refused_body_is_read_up_to_the_drain_allowance_before_the_413() -> None:
    chunks = [b"x" * 1000] * 10
    read: list[int] = []

    async def receive() -> Message:
        read.append(len(read))
        return {"type": "http.request", "body": chunks[len(read) - 1], "more_body": len(read) < 10}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        while (await receive())["more_body"]:  # an app reading its body, as routes do
            pass
        raise AssertionError("a refused body never reaches the app's handler")

    declared, chunked = [(b"content-length", b"10000")], [(b"transfer-encoding", b"chunked")]
    # (headers, drain allowance, chunks read, connection closed)
    cases = [(chunked, 20_000, 10, False), (chunked, 5_000, 6, True), (declared, 20_000, 10, False),
             (declared, 5_000, 0, True)]  # fmt: skip
    for headers, drain, reads, closes in cases:
        sent: list[Message] = []

        async def send(message: Message) -> None:
            sent.append(message)  # noqa: B023

        read.clear()
        scope = {"type": "http", "headers": headers}
        await BodySizeLimitMiddleware(app, max_bytes=100, drain_bytes=drain)(scope, receive, send)
        assert sent[0]["status"] == 413
        assert (dict(sent[0]["headers"]).get(b"connection") == b"close") is closes
        assert len(read) == reads


async def test_a_small_chunked_body_passes(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"name": "chunked", '
        yield b'"price_cents": 3}'

    response = await client.post(BASE, content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 201, response.text


def test_every_request_writes_one_json_access_line_with_the_route_template(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    with serve(database_url, log) as base:
        response = httpx.get(f"{base}{BASE}/987654321", headers={"x-request-id": "line-check-1"})
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


def test_access_log_errors_mode_skips_successes(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with serve(database_url, log, ACCESS_LOG="errors") as base:
        httpx.get(f"{base}/healthz", headers={"x-request-id": "ok-request"})
        httpx.get(f"{base}/nowhere", headers={"x-request-id": "missing-request"})
    text = log.read_text()
    assert "ok-request" not in text
    assert '"route": "<unmatched>"' in text or '"route":"<unmatched>"' in text


def test_over_the_concurrency_limit_the_server_answers_a_fast_503_problem(
    database_url: str, tmp_path: Path
) -> None:
    with serve(database_url, tmp_path / "server.log", LIMIT_CONCURRENCY="2") as base:
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
