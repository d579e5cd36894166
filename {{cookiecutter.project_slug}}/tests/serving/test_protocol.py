"""serving/protocol.py: a request the protocol refuses (no Host, too many or too large header
fields, a head or a chunked body the parser cannot read) behind others pipelined on its
connection is answered after their answers, in order, then the connection closes: a client never
reads the refusal alone while a request it sent before was served. Driven with a stand-in
transport and raw bytes, and over TCP against the served process."""

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from {{ cookiecutter.package_name }}.serving.protocol import guarded_protocol
from {{ cookiecutter.package_name }}.settings import Settings

from ..conftest import BASE, count_rows
from ..declared import new_body
from .test_uvicorn_contract import _Transport

GET = b"GET /things/%d HTTP/1.1\r\nHost: test\r\n\r\n"
# Each refused request as the writes that carry it, and its status.
REFUSED = {
    "no-host": ([b"GET /things/9 HTTP/1.1\r\n\r\n"], 400),
    "two-hosts": ([b"GET /things/9 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"], 400),
    "too-many-fields": (
        [
            b"GET /things/9 HTTP/1.1\r\nHost: test\r\n"
            + b"".join(b"X-%d: 1\r\n" % number for number in range(6))
            + b"\r\n"
        ],
        431,
    ),
    # A head that never ends, still arriving: refused on the write that takes it past the limit.
    "head-too-large": ([b"GET /things/9 HTTP/1.1\r\nHost: test\r\nX-Big: ", b"a" * 2048], 431),
    "not-http": ([b"GET /things/9 HTTP/1.1\r\nHost: test\r\nNo colon\r\n\r\n"], 400),
}
# A request whose head is valid and whose chunked body is not HTTP (a chunk size of "zz").
BROKEN_BODY = (
    b"POST /things/9 HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\nzz\r\n"
)


class _Held:
    """An app whose answers wait until the test lets them go."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.paths.append(scope["path"])
        await self.release.wait()
        body = scope["path"].encode()
        start = {"type": "http.response.start", "status": 200}
        await send({**start, "headers": [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def _protocol(settings: Settings, app: Any) -> Any:
    limited = settings.model_copy(update={"max_request_headers": 5, "max_request_head_bytes": 1024})
    cls = guarded_protocol(limited)
    config = uvicorn.Config(app, http=cls, lifespan="off", log_config=None, timeout_keep_alive=30)
    config.load()
    return cls(
        config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop()
    )


def _responses(written: bytes) -> list[tuple[int, bytes, bytes]]:
    """(status, head, body) of each response written, in order."""
    found = []
    while written:
        head, _, rest = written.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.lower().split(b"\r\n")
            if line.startswith(b"content-length:")
        )
        found.append((int(head[9:12]), head, rest[:length]))
        written = rest[length:]
    return found


async def _settled(protocol: Any) -> None:
    """Until the protocol's request tasks are done."""
    for _ in range(1000):
        await asyncio.sleep(0)
        if not protocol.tasks and not protocol.pipeline:
            return
    raise AssertionError("the requests never finished")


@pytest.mark.parametrize("case", list(REFUSED))
@pytest.mark.parametrize("earlier", [1, 2])
async def test_a_refusal_pipelined_behind_requests_is_answered_after_theirs(
    settings: Settings, case: str, earlier: int
) -> None:
    app = _Held()
    protocol = _protocol(settings, app)
    transport = _Transport()
    protocol.connection_made(transport)
    (first, *more), status = REFUSED[case]
    protocol.data_received(b"".join(GET % number for number in range(earlier)) + first)
    for write in more:
        protocol.data_received(write)
    await asyncio.sleep(0)
    assert transport.written == b""  # nothing may answer before the first request does
    assert not transport.closed
    app.release.set()
    await _settled(protocol)
    answers = _responses(transport.written)
    assert [answer[0] for answer in answers] == [200] * earlier + [status]
    assert [body for _, _, body in answers[:-1]] == [b"/things/%d" % n for n in range(earlier)]
    assert b"application/problem+json" in answers[-1][1]
    assert app.paths == [f"/things/{number}" for number in range(earlier)]  # never the refused
    assert transport.closed


@pytest.mark.parametrize("case", list(REFUSED))
async def test_a_refusal_with_nothing_before_it_is_answered_at_once(
    settings: Settings, case: str
) -> None:
    app = _Held()
    protocol = _protocol(settings, app)
    transport = _Transport()
    protocol.connection_made(transport)
    writes, status = REFUSED[case]
    for write in writes:
        protocol.data_received(write)
    assert transport.written.startswith(b"HTTP/1.1 %d " % status)
    assert transport.closed
    assert app.paths == []


async def test_a_refusal_after_answered_requests_on_a_kept_alive_connection_is_at_once(
    settings: Settings,
) -> None:
    app = _Held()
    app.release.set()
    protocol = _protocol(settings, app)
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(GET % 0)
    await _settled(protocol)
    protocol.data_received(REFUSED["no-host"][0][0])
    assert [answer[0] for answer in _responses(transport.written)] == [200, 400]
    assert transport.closed


@pytest.mark.parametrize("earlier", [1, 2])
async def test_a_body_the_parser_cannot_read_pipelined_behind_requests_is_refused_after_them(
    settings: Settings, earlier: int
) -> None:
    app = _Held()
    protocol = _protocol(settings, app)
    transport = _Transport()
    protocol.connection_made(transport)
    # Its head is valid, so it is queued behind the others; then its chunked body breaks.
    protocol.data_received(b"".join(GET % number for number in range(earlier)) + BROKEN_BODY)
    await asyncio.sleep(0)
    assert transport.written == b""  # nothing may answer before the first request does
    app.release.set()
    await _settled(protocol)
    answers = _responses(transport.written)
    assert [answer[0] for answer in answers] == [200] * earlier + [400]
    assert b"application/problem+json" in answers[-1][1]
    assert app.paths == [f"/things/{number}" for number in range(earlier)]  # never the broken one
    assert transport.closed


class _Reading:
    """An app that reads each request's whole body, then answers; the first answer waits until
    the test lets it go."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        while (message := await receive())["type"] == "http.request" and message["more_body"]:
            pass
        if message["type"] == "http.disconnect":
            return
        if not self.answered:
            await self.release.wait()
        self.answered += 1
        start = {"type": "http.response.start", "status": 200}
        await send({**start, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


async def test_a_body_queued_behind_an_answer_under_way_gets_its_deadline_from_its_own_turn(
    settings: Settings,
) -> None:
    app = _Reading()
    body_timeout = 0.2
    cls = guarded_protocol(settings.model_copy(update={"timeout_request_body": body_timeout}))
    config = uvicorn.Config(app, http=cls, lifespan="off", log_config=None, timeout_keep_alive=30)
    config.load()
    loop = asyncio.get_running_loop()
    protocol = cls(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport = _Transport()
    protocol.connection_made(transport)
    # Half a body behind a request being answered: uvicorn queues it and reads no more until its
    # turn, so the client cannot send the rest; its deadline must not run meanwhile.
    queued = b"POST /things/9 HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\n\r\nhello"
    protocol.data_received(GET % 0 + queued)
    await asyncio.sleep(3 * body_timeout)
    assert transport.written == b""  # no 408 before the first answer
    app.release.set()
    for _ in range(100):  # its deadline runs from its turn: the rest never comes, 408
        if transport.closed:
            break
        await asyncio.sleep(body_timeout / 4)
    assert [answer[0] for answer in _responses(transport.written)] == [200, 408]


@pytest.mark.parametrize(
    "refused",
    [b"GET /healthz HTTP/1.1\r\n\r\n", BROKEN_BODY],
    ids=["no-host", "chunked-body-not-http"],
)
async def test_over_tcp_a_post_pipelined_before_a_refused_request_gets_its_201_then_the_400(
    served_url: str, auth_headers: dict[str, str], database_url: str, refused: bytes
) -> None:
    before = await count_rows(database_url)
    body = json.dumps(new_body()).encode()
    fields = [f"{name}: {value}" for name, value in auth_headers.items()]
    fields += ["Host: test", "Content-Type: application/json", f"Content-Length: {len(body)}"]
    post = "\r\n".join([f"POST {BASE} HTTP/1.1", *fields, "", ""]).encode() + body
    address = urlsplit(served_url)
    reader, writer = await asyncio.open_connection(address.hostname, address.port)
    try:
        writer.write(post + refused)  # one write
        answered = await asyncio.wait_for(reader.read(), 10)  # until the server closes
    finally:
        writer.close()
    assert [status for status, _, _ in _responses(answered)] == [201, 400]
    assert await count_rows(database_url) == before + 1
