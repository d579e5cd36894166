"""The uvicorn contract (serving/uvicorn_internals.py): every piece of uvicorn the server uses has
the shape it uses; without one the service does not start (one line naming it); and the
protocol, driven with a stand-in transport and raw bytes, applies the head limits and lets go of
a connection that was reset."""

import asyncio
import gc
import weakref
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http import httptools_impl
from uvicorn.server import ServerState

from {{ cookiecutter.package_name }}.__main__ import main
from {{ cookiecutter.package_name }}.serving import uvicorn_internals
from {{ cookiecutter.package_name }}.serving.protocol import guarded_protocol
from {{ cookiecutter.package_name }}.settings import Settings

GET = b"GET /things/1 HTTP/1.1\r\nHost: test\r\n\r\n"


def test_uvicorn_has_every_piece_the_server_uses() -> None:
    assert uvicorn_internals.protocol_problems() == []
    assert uvicorn_internals.listener_problems() == []
    assert uvicorn_internals.overload_problem() is None


def _settings_that_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # A database that is never reached, and dev: credentials would be required otherwise.
    monkeypatch.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/never")
    monkeypatch.setenv("APP_ENV", "dev")


@pytest.mark.parametrize(
    "method", [*uvicorn_internals.PROTOCOL_METHODS, "_unset_keepalive_if_required"]
)
def test_without_a_protocol_method_the_service_refuses_to_start_naming_it(
    method: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delattr(httptools_impl.HttpToolsProtocol, method)
    _settings_that_load(monkeypatch)
    assert main() == 2  # before anything is bound or connected
    (line,) = capsys.readouterr().err.splitlines()
    assert f"HttpToolsProtocol.{method} is missing" in line


@pytest.mark.parametrize(
    "piece",
    [
        (uvicorn.Config, "load"),
        (uvicorn.Config, "get_loop_factory"),
        (uvicorn.Server, "startup"),
        (httptools_impl, "STATUS_LINE"),
    ],
    ids=lambda piece: piece[1],
)
def test_without_another_piece_the_service_refuses_to_start(
    piece: tuple[Any, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delattr(*piece)
    _settings_that_load(monkeypatch)
    assert main() == 2
    assert piece[1] in capsys.readouterr().err


def test_an_attribute_uvicorn_no_longer_sets_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    names = (*uvicorn_internals.PROTOCOL_ATTRIBUTES, "attribute_of_a_future_uvicorn")
    monkeypatch.setattr(uvicorn_internals, "PROTOCOL_ATTRIBUTES", names)
    assert uvicorn_internals.protocol_problems() == [
        "HttpToolsProtocol sets no attribute_of_a_future_uvicorn"
    ]


class _Transport(asyncio.Transport):
    """What the protocol writes, and whether it closed: no socket."""

    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 5555), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def can_write_eof(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]}
    )
    await send({"type": "http.response.body", "body": b"ok"})


def _protocol(settings: Settings) -> Any:
    cls = guarded_protocol(settings)
    config = uvicorn.Config(_ok, http=cls, lifespan="off", log_config=None, timeout_keep_alive=30)
    config.load()
    return cls(
        config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop()
    )


async def test_a_head_above_the_limit_gets_431_and_the_connection_closes(
    settings: Settings,
) -> None:
    protocol = _protocol(settings.model_copy(update={"max_request_head_bytes": 1024}))
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: test\r\nX-Big: " + b"a" * 2048 + b"\r\n\r\n")
    assert transport.written.startswith(b"HTTP/1.1 431 ")
    assert b"application/problem+json" in transport.written
    assert transport.closed


async def test_too_many_header_fields_get_431(settings: Settings) -> None:
    protocol = _protocol(settings.model_copy(update={"max_request_headers": 5}))
    transport = _Transport()
    protocol.connection_made(transport)
    fields = b"".join(b"X-%d: 1\r\n" % number for number in range(6))
    protocol.data_received(b"GET / HTTP/1.1\r\nHost: test\r\n" + fields + b"\r\n")
    assert transport.written.startswith(b"HTTP/1.1 431 ")


async def _answered(transport: _Transport) -> None:
    for _ in range(100):  # the request runs in a task of its own: let it run
        if transport.written.endswith(b"ok"):
            return
        await asyncio.sleep(0)
    raise AssertionError(transport.written)


async def test_connections_reset_after_a_request_are_let_go_at_once(settings: Settings) -> None:
    # uvicorn cancels the keep-alive timer only on a clean close; after a reset the timer would
    # keep the protocol, its request and response alive for TIMEOUT_KEEP_ALIVE seconds.
    alive = []
    for _ in range(50):
        protocol = _protocol(settings)
        transport = _Transport()
        protocol.connection_made(transport)
        protocol.data_received(GET)
        await _answered(transport)
        assert protocol.timeout_keep_alive_task is not None  # kept alive for the next request
        protocol.connection_lost(ConnectionResetError())
        assert protocol.timeout_keep_alive_task is None
        alive.append(weakref.ref(protocol))
        del protocol, transport
    gc.collect()
    assert [ref for ref in alive if ref() is not None] == []


def test_a_cycle_attribute_uvicorn_no_longer_sets_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    names = (*uvicorn_internals.CYCLE_ATTRIBUTES, "attribute_of_a_future_uvicorn")
    monkeypatch.setattr(uvicorn_internals, "CYCLE_ATTRIBUTES", names)
    assert uvicorn_internals.protocol_problems() == [
        "RequestResponseCycle sets no attribute_of_a_future_uvicorn"
    ]


POST_HEAD = b"POST /things HTTP/1.1\r\nHost: test\r\nContent-Length: 2\r\n\r\n"


async def test_a_body_that_comes_with_its_head_arms_no_deadline(settings: Settings) -> None:
    protocol = _protocol(settings)
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(POST_HEAD + b"{}")
    assert protocol._body_timer is None
    await _answered(transport)


async def test_a_body_past_its_deadline_gets_408_and_the_app_sees_the_client_gone(
    settings: Settings,
) -> None:
    protocol = _protocol(settings.model_copy(update={"timeout_request_body": 7}))
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(POST_HEAD + b"{")  # half of the body
    timer = protocol._body_timer
    assert timer is not None
    assert timer.when() - asyncio.get_running_loop().time() == pytest.approx(7, abs=0.5)
    protocol._body_timed_out()  # what the loop runs at the deadline, run now: no wall clock
    assert transport.written.startswith(b"HTTP/1.1 408 ")
    assert b"application/problem+json" in transport.written
    assert b'"timeout_seconds":7' in transport.written
    assert transport.closed
    assert protocol.cycle.disconnected  # the app's receive() now returns http.disconnect
    protocol.data_received(b"}")  # what still comes is not read
    assert transport.written.count(b"HTTP/1.1") == 1


async def test_a_body_that_arrives_in_time_cancels_its_deadline(settings: Settings) -> None:
    protocol = _protocol(settings)
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(POST_HEAD + b"{")
    timer = protocol._body_timer
    protocol.data_received(b"}")
    assert timer is not None
    assert timer.cancelled()
    assert protocol._body_timer is None
    await _answered(transport)
