"""Clients that stall or misbehave on the wire, against the served process over TCP: a
request whose body never comes holds no MAX_IN_FLIGHT slot and gets 408 at TIMEOUT_REQUEST_BODY;
the /metrics listener has the traffic port's limits; what the parser or the server refuses is
problem+json; a body over the limit is refused before any 100 Continue; a dropped upload is a 499,
not a 500."""

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from devdb import free_port

from ..conftest import BASE, PROBLEM, serve

LIMIT = 4  # MAX_IN_FLIGHT of the server under test
BODY_TIMEOUT = 1.5  # TIMEOUT_REQUEST_BODY, seconds
HEAD_TIMEOUT = 1.5  # TIMEOUT_REQUEST_HEAD, seconds
METRICS_CONNECTIONS = 8  # the /metrics listener's connection cap (metrics_listener.py)
MAX_BODY = 65536  # MAX_BODY_BYTES, the default


@dataclass(frozen=True)
class Served:
    base: str
    port: int
    metrics_port: int
    log: Path


@pytest.fixture(scope="module")
def served(
    database_url: str, auth_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """A server process with small limits, for this module only."""
    log = tmp_path_factory.mktemp("stalled") / "server.log"
    metrics_port = free_port()
    env = {
        **auth_env,
        "DATABASE_URL": database_url,
        "METRICS_PORT": str(metrics_port),
        "MAX_IN_FLIGHT": str(LIMIT),
        "TIMEOUT_REQUEST_BODY": str(BODY_TIMEOUT),
        "TIMEOUT_REQUEST_HEAD": str(HEAD_TIMEOUT),
        "LOG_LEVEL": "info",
    }
    with serve(log, **env) as base:
        yield Served(base, int(base.rsplit(":", 1)[1]), metrics_port, log)


@asynccontextmanager
async def _connections(
    port: int, count: int, first_bytes: bytes = b""
) -> AsyncIterator[list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]:
    """`count` connections to 127.0.0.1:`port`, each having sent `first_bytes`, closed after."""
    opened = [await asyncio.open_connection("127.0.0.1", port) for _ in range(count)]
    try:
        for _, writer in opened:
            writer.write(first_bytes)
            await writer.drain()
        yield opened
    finally:
        for _, writer in opened:
            writer.close()


async def _answer_then_close(reader: asyncio.StreamReader) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took."""
    began = time.monotonic()
    return await asyncio.wait_for(reader.read(), 10), time.monotonic() - began


def _head(method: str, target: str, *lines: str) -> bytes:
    return "\r\n".join([f"{method} {target} HTTP/1.1", "Host: test", *lines, "", ""]).encode()


def _problem(answer: bytes, status: int) -> dict[str, object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), answer[:200]
    assert f"content-type: {PROBLEM}".encode() in head.lower()
    problem: dict[str, object] = json.loads(body)
    assert problem["status"] == status
    return problem


STALLED_BODIES = {
    "post-declared-length": _head(
        "POST", BASE, "Content-Type: application/json", "Content-Length: 100"
    ),
    "post-chunked-no-chunk": _head(
        "POST", BASE, "Content-Type: application/json", "Transfer-Encoding: chunked"
    ),
    "patch-part-of-its-body": _head(
        "PATCH", BASE + "/1", "Content-Type: application/json", "Content-Length: 100"
    )
    + b'{"name": ',
}


@pytest.mark.parametrize("stalled", STALLED_BODIES.values(), ids=STALLED_BODIES.keys())
async def test_requests_waiting_for_their_bodies_hold_no_slot_and_get_408_at_the_deadline(
    served: Served, auth_headers: dict[str, str], stalled: bytes
) -> None:
    # Twice as many stalled requests as MAX_IN_FLIGHT: none of them holds a slot.
    async with (
        _connections(served.port, 2 * LIMIT, stalled) as held,
        httpx.AsyncClient(base_url=served.base, headers=auth_headers, timeout=5) as http,
    ):
        began = time.monotonic()
        listed = await http.get(BASE)
        answered_after = time.monotonic() - began
        closes = await asyncio.gather(*(_answer_then_close(reader) for reader, _ in held))
    assert listed.status_code == 200, listed.text
    assert answered_after < BODY_TIMEOUT  # served while every stalled request still waits
    for answer, waited in closes:
        problem = _problem(answer, 408)
        assert problem["timeout_seconds"] == BODY_TIMEOUT
        assert waited < BODY_TIMEOUT + 3


async def test_a_body_that_arrives_whole_after_a_pause_is_served(
    served: Served, auth_headers: dict[str, str]
) -> None:
    body = json.dumps({"missing": "fields"}).encode()  # 422 is an answer of the app: it ran
    credentials = [f"{name}: {value}" for name, value in auth_headers.items()]
    head = _head(
        "POST", BASE, *credentials, "Content-Type: application/json", f"Content-Length: {len(body)}"
    )
    async with _connections(served.port, 1, head) as [(reader, writer)]:
        await asyncio.sleep(BODY_TIMEOUT / 3)  # the slow client under test: its pace is the point
        writer.write(body)
        status_line = await asyncio.wait_for(reader.readline(), 5)
    assert status_line.startswith(b"HTTP/1.1 422"), status_line


async def _scrape_status(metrics_port: int) -> int:
    async with httpx.AsyncClient(timeout=5) as http:
        return (await http.get(f"http://127.0.0.1:{metrics_port}/metrics")).status_code


async def test_silent_connections_to_the_metrics_port_are_closed_at_the_head_deadline(
    served: Served,
) -> None:
    # As many silent connections as the listener keeps: a scrape still gets in (the oldest
    # silent one makes room), and the others are closed at the head deadline.
    async with _connections(served.metrics_port, METRICS_CONNECTIONS) as held:
        assert await _scrape_status(served.metrics_port) == 200
        closed = await asyncio.gather(*(_answer_then_close(reader) for reader, _ in held))
    assert all(answer == b"" for answer, _ in closed)
    assert max(took for _, took in closed) < HEAD_TIMEOUT + 3


async def test_an_endless_header_line_on_the_metrics_port_gets_431(
    served: Served, auth_headers: dict[str, str]
) -> None:
    async with _connections(served.metrics_port, 1, b"GET /metrics HTTP/1.1\r\nX-A: ") as [
        (reader, writer)
    ]:
        answering = asyncio.create_task(reader.read())
        sent = 0
        # Without the head limit the listener takes all 64 MB (and its memory grows with them).
        while not answering.done() and sent < 64 << 20:
            try:
                writer.write(b"a" * 65536)
                await asyncio.wait_for(writer.drain(), 5)
            except ConnectionError:
                break  # closed after its answer: what the answer says is read below
            sent += 65536
            await asyncio.sleep(0)  # let the reader see the answer as soon as it comes
        answer = await asyncio.wait_for(answering, 5)
    assert _problem(answer, 431)["max_head_bytes"] == 16384
    assert sent < 8 << 20
    async with httpx.AsyncClient(base_url=served.base, headers=auth_headers) as http:
        assert (await http.get(BASE)).status_code == 200


async def _raw_answer(port: int, request: bytes) -> bytes:
    """The whole answer: its head, then as many bytes as its Content-Length says.

    The server may write the head and the body in two segments, so one read could
    return the head alone.
    """
    async with _connections(port, 1, request) as [(reader, _)]:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        declared = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        length = int(declared.group(1)) if declared else 0
        return head + await asyncio.wait_for(reader.readexactly(length), 5)


HOSTS = {
    "no-host": b"GET /healthz HTTP/1.1\r\n\r\n",
    "two-hosts": b"GET /healthz HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n",
}


@pytest.mark.parametrize("request_bytes", HOSTS.values(), ids=HOSTS.keys())
async def test_an_http11_request_without_exactly_one_host_gets_400_problem(
    served: Served, request_bytes: bytes
) -> None:
    problem = _problem(await _raw_answer(served.port, request_bytes), 400)
    assert "Host" in str(problem["detail"])


async def test_an_http10_request_needs_no_host(served: Served) -> None:
    answer = await _raw_answer(served.port, b"GET /healthz HTTP/1.0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200")


async def test_what_the_parser_refuses_gets_400_problem(served: Served) -> None:
    answer = await _raw_answer(served.port, b"GET /healthz HTTP/1.1\r\nHost: t\r\nNo colon\r\n\r\n")
    _problem(answer, 400)


async def test_a_websocket_upgrade_is_answered_as_plain_http_with_a_problem(
    served: Served,
) -> None:
    upgrade = _head(
        "GET",
        "/nowhere",
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    )
    _problem(await _raw_answer(served.port, upgrade), 404)


async def test_a_body_over_the_limit_with_expect_100_continue_is_refused_at_once(
    served: Served, auth_headers: dict[str, str]
) -> None:
    credentials = [f"{name}: {value}" for name, value in auth_headers.items()]
    head = _head(
        "POST",
        BASE,
        *credentials,
        "Content-Type: application/json",
        f"Content-Length: {MAX_BODY + 1}",
        "Expect: 100-continue",
    )
    async with _connections(served.port, 1, head) as [(reader, _)]:
        began = time.monotonic()
        status_line = await asyncio.wait_for(reader.readline(), 10)
        waited = time.monotonic() - began
    assert status_line.startswith(b"HTTP/1.1 413"), status_line
    assert waited < 1


async def test_a_dropped_upload_is_counted_as_499_not_as_an_error(
    served: Served, auth_headers: dict[str, str]
) -> None:
    credentials = [f"{name}: {value}" for name, value in auth_headers.items()]
    head = _head(
        "POST", BASE, *credentials, "Content-Type: application/json", "Content-Length: 100"
    )
    async with _connections(served.port, 1, head + b'{"name": "half') as [(_, writer)]:
        await asyncio.sleep(0.2)  # the body has been read in part: the request is under way
        writer.close()
        await writer.wait_closed()
    async with httpx.AsyncClient(timeout=5) as http:
        scraped = ""
        for _ in range(50):  # the server sees the close within a few milliseconds
            scraped = (await http.get(f"http://127.0.0.1:{served.metrics_port}/metrics")).text
            if 'status="499"' in scraped:
                break
            await asyncio.sleep(0.1)  # polling: no event tells when the server has seen it
    counted = [line for line in scraped.splitlines() if line.startswith("http_requests_total{")]
    assert any('status="499"' in line for line in counted), counted
    assert not any('status="500"' in line for line in counted), counted
    assert "unhandled_error" not in served.log.read_text()
