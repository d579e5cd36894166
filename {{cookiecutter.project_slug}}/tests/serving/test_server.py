"""The production entry point, served over real TCP; the server's limits on each connection."""

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from devdb import free_port
from starlette.types import Receive, Scope, Send

from {{ cookiecutter.package_name }}.serving.server import http_config
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, serve
from ..declared import new_body


def test_served_process_creates_and_reads_over_tcp(
    served_url: str, auth_headers: dict[str, str]
) -> None:
    with httpx.Client(base_url=served_url, headers=auth_headers) as http:
        created = http.post(BASE, json=new_body())
        assert created.status_code == 201
        fetched = http.get(created.headers["location"])
    assert fetched.status_code == 200
    assert fetched.json() == created.json()
    assert "server" not in fetched.headers


def test_head_answers_the_headers_of_get_without_the_body(
    served_url: str, auth_headers: dict[str, str]
) -> None:
    with httpx.Client(base_url=served_url, headers=auth_headers) as http:
        location = http.post(BASE, json=new_body()).headers["location"]
        got, head = http.get(location), http.head(location)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["etag"] == got.headers["etag"]
    assert head.headers["content-length"] == str(len(got.content))


def _start_with(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "{{ cookiecutter.package_name }}"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


DB = {"DATABASE_URL": "postgresql://u@127.0.0.1/db"}
BAD_SETTINGS = {
    "port-not-a-number": ({**DB, "PORT": "eighty"}, "PORT"),
    "no-database-url-outside-dev": ({"APP_ENV": "prod"}, "DATABASE_URL"),
    "pool-min-above-max": ({**DB, "POOL_MIN_SIZE": "9", "POOL_MAX_SIZE": "3"}, "POOL_MIN_SIZE"),
    "proxy-that-is-no-address": (
        {**DB, "FORWARDED_ALLOW_IPS": "10.0.0.0/8, proxy.example"},
        "FORWARDED_ALLOW_IPS",
    ),
    "metrics-on-the-traffic-port": ({**DB, "PORT": "8000", "METRICS_PORT": "8000"}, "METRICS_PORT"),
    # Every client would choose the address its rate limit and logs see.
    "every-peer-a-trusted-proxy-in-prod": (
        {**DB, "APP_ENV": "prod", "FORWARDED_ALLOW_IPS": "10.0.0.0/8, *"},
        "FORWARDED_ALLOW_IPS",
    ),
}


@pytest.mark.parametrize(("env", "variable"), BAD_SETTINGS.values(), ids=BAD_SETTINGS.keys())
def test_a_bad_setting_stops_the_process_with_one_line_naming_it(
    env: dict[str, str], variable: str
) -> None:
    result = _start_with(env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert variable in lines[0]


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


@asynccontextmanager
async def _serving(**limits: object) -> AsyncIterator[int]:
    """The service's own server configuration (server.http_config) around a five-line app."""
    port = free_port()
    settings = Settings(app_env="dev", port=port, log_level="warning", **limits)  # type: ignore[arg-type]
    config = http_config(settings, _ok)
    config.lifespan = "off"
    server = uvicorn.Server(config)
    # Listening before serving: a connection made while the server starts waits in the backlog.
    listener = config.bind_socket()
    listener.listen()
    task = asyncio.create_task(server.serve(sockets=[listener]))
    # Our own listener holds a connection in its backlog even when the server failed to start:
    # without this wait, a test would then read an answer that never comes.
    while not server.started:
        if task.done():
            await task  # the reason it stopped
            raise RuntimeError("the server stopped before it started")
        await asyncio.sleep(0.01)  # uvicorn.Server offers no event for `started`
    try:
        yield port
    finally:
        server.should_exit = True
        await task


async def _closed_after(reader: asyncio.StreamReader) -> float:
    began = time.monotonic()
    assert await reader.read() == b""
    return time.monotonic() - began


async def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout() -> None:
    async with _serving(timeout_request_head=0.5) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        waited = await asyncio.wait_for(_closed_after(reader), 5)
        writer.close()
    assert 0.4 <= waited < 2


async def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_the_head_timeout() -> None:
    async with _serving(timeout_request_head=0.5) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        closing = asyncio.create_task(_closed_after(reader))
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ":
            if closing.done():
                break
            writer.write(bytes([byte]))
            await asyncio.sleep(0.1)  # the slow client under test: its pace is the point
        assert await asyncio.wait_for(closing, 5) < 2
        writer.close()


async def test_a_connection_served_in_time_is_kept_alive() -> None:
    async with _serving(timeout_request_head=0.5) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(2):
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await reader.readuntil(b"ok")).startswith(b"HTTP/1.1 200")
        writer.close()


def _head_answer(port: int, head: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(head)
        return connection.recv(4096)


async def test_an_oversize_request_head_gets_431_even_while_it_is_still_being_sent() -> None:
    async with _serving(max_request_head_bytes=16384) as port:
        big = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (8 << 20) + b"\r\n\r\n"
        answer = await asyncio.to_thread(_head_answer, port, big)
        just_fits = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 16000 + b"\r\n\r\n"
        fits = await asyncio.to_thread(_head_answer, port, just_fits)
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b"content-type: application/problem+json" in answer
    assert b'"max_head_bytes":16384' in answer
    assert fits.startswith(b"HTTP/1.1 200")


async def test_a_head_with_too_many_fields_gets_431() -> None:
    async with (
        _serving(max_request_headers=100) as port,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http,
    ):
        many = await http.get("/", headers=[(f"x-{n}", "v") for n in range(5000)])
        enough = await http.get("/", headers=[(f"x-{n}", "v") for n in range(90)])
    assert many.status_code == 431
    assert many.json()["max_headers"] == 100
    assert enough.status_code == 200


def test_served_process_discloses_no_server_version(served_url: str) -> None:
    with httpx.Client(base_url=served_url) as http:
        for response in (http.get("/healthz"), http.get("/nowhere"), http.get(f"{BASE}/abc")):
            assert "server" not in response.headers
            assert "x-powered-by" not in response.headers
            assert "uvicorn" not in response.text.lower()
            assert "python" not in response.text.lower()


def test_over_the_concurrency_limit_the_server_answers_a_fast_503_problem(
    database_url: str, tmp_path: Path, auth_env: dict[str, str]
) -> None:
    env = {**auth_env, "DATABASE_URL": database_url, "LIMIT_CONCURRENCY": "2"}
    with serve(tmp_path / "server.log", **env) as base:
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
