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

from {{ cookiecutter.package_name }}.devdb import free_port

BASE = "/{{ cookiecutter.resource_plural }}"
TEMPLATE = "/{{ cookiecutter.resource_plural }}/{{ '{' }}{{ cookiecutter.resource }}_id{{ '}' }}"


@contextmanager
def serve(database_url: str, log: Path, auth_env: dict[str, str], **env: str) -> Iterator[str]:
    """`python -m {{ cookiecutter.package_name }}` on a free port, its stdout (the log) in `log`."""
    port = free_port()
    variables = {**os.environ, **auth_env, "DATABASE_URL": database_url, "PORT": str(port), **env}
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


async def test_a_small_chunked_body_passes(client: httpx.AsyncClient) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"name": "chunked", '
        yield b'"price_cents": 3}'

    response = await client.post(BASE, content=chunks(), headers={"content-type": "application/json"})
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
