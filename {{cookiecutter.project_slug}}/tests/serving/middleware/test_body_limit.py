"""The body limit (middleware/body_limit.py): the 413 reaches a client still sending its body."""

import socket
from collections.abc import AsyncIterator

import httpx
import orjson
from starlette.types import Message, Receive, Scope, Send

from {{ cookiecutter.package_name }}.serving.middleware.body_limit import BodySizeLimitMiddleware

from ...conftest import BASE
from ...declared import new_body


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
        body = orjson.dumps(new_body())
        yield body[:5]
        yield body[5:]

    response = await client.post(
        BASE, content=chunks(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 201, response.text
