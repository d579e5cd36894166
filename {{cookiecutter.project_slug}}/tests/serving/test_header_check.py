"""Response headers checked once (serving/uvicorn_internals.py, server.py): uvicorn's two
per-header regular expressions are skipped for the names and values the service writes, checked
once against the same patterns; every other header is still checked, and a uvicorn that no longer
checks that way keeps its own check."""

import asyncio
import re
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http import httptools_impl
from uvicorn.server import ServerState

from {{ cookiecutter.package_name }}.serving import server, uvicorn_internals
from {{ cookiecutter.package_name }}.serving.protocol import guarded_protocol
from {{ cookiecutter.package_name }}.settings import Settings

from .test_uvicorn_contract import GET, _Transport


@pytest.fixture(autouse=True)
def uvicorns_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a test installs, uvicorn's own patterns are back afterwards."""
    for name in uvicorn_internals.HEADER_PATTERNS:
        monkeypatch.setattr(httptools_impl, name, getattr(httptools_impl, name))


class _Spy:
    def __init__(self, pattern: "re.Pattern[bytes]") -> None:
        self.pattern = pattern
        self.searched: list[bytes] = []

    def search(self, value: bytes) -> "re.Match[bytes] | None":
        self.searched.append(value)
        return self.pattern.search(value)


def test_uvicorn_checks_headers_with_the_two_patterns_the_server_stands_in_for() -> None:
    assert uvicorn_internals.header_check_problem() is None


def test_a_value_checked_once_is_not_searched_again_and_any_other_is() -> None:
    spy = _Spy(re.compile(b"[\x00-\x08\x0a-\x1f\x7f]"))
    checked = uvicorn_internals.CheckedOnce(spy, [b"nosniff", b"bad\nvalue"])  # type: ignore[arg-type]
    assert spy.searched == [b"nosniff", b"bad\nvalue"]
    assert checked.search(b"nosniff") is None
    assert checked.search(b"bad\nvalue") is not None  # failed its check: never admitted
    assert checked.search(b'"7"') is None
    assert spy.searched == [b"nosniff", b"bad\nvalue", b"bad\nvalue", b'"7"']


def _answering(headers: list[tuple[bytes, bytes]]) -> Any:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


async def _served(settings: Settings, headers: list[tuple[bytes, bytes]]) -> _Transport:
    cls = guarded_protocol(settings)
    config = uvicorn.Config(_answering(headers), http=cls, lifespan="off", log_config=None)
    config.load()
    protocol = cls(
        config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop()
    )
    transport = _Transport()
    protocol.connection_made(transport)
    protocol.data_received(GET)
    for _ in range(100):  # the request runs in a task of its own: let it run
        if transport.written.endswith(b"ok") or transport.closed:
            break
        await asyncio.sleep(0)
    return transport


@pytest.mark.parametrize(
    ("headers", "answered"),
    [
        pytest.param([(b"x-content-type-options", b"nosniff"), (b"etag", b'"1"')], True, id="ok"),
        pytest.param([(b"etag", b'"1"\r\nx-injected: 1')], False, id="known-name-bad-value"),
        pytest.param([(b"x-bad name", b"1")], False, id="unknown-bad-name"),
        pytest.param([(b"x-new", b"a\x00b")], False, id="unknown-name-bad-value"),
    ],
)
async def test_with_known_headers_checked_once_uvicorn_still_refuses_a_bad_one(
    settings: Settings, headers: list[tuple[bytes, bytes]], answered: bool
) -> None:
    server.check_known_headers_once()
    assert isinstance(httptools_impl.HEADER_RE, uvicorn_internals.CheckedOnce)
    assert isinstance(httptools_impl.HEADER_VALUE_RE, uvicorn_internals.CheckedOnce)
    transport = await _served(settings, headers)
    assert transport.written.startswith(b"HTTP/1.1 200 ") is answered, transport.written


def test_a_uvicorn_that_checks_headers_another_way_keeps_its_own_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def send(self: Any, message: Any) -> None:  # checks nothing by those names
        return None

    monkeypatch.setattr(httptools_impl.RequestResponseCycle, "send", send)
    problem = uvicorn_internals.check_headers_once([b"etag"], [b"nosniff"])
    assert problem is not None
    assert "no longer calls" in problem
    assert isinstance(httptools_impl.HEADER_RE, re.Pattern)
    assert isinstance(httptools_impl.HEADER_VALUE_RE, re.Pattern)
