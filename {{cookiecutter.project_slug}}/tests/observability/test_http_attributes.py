"""http_attributes.py: a kept request span's name, attributes and status are those OpenTelemetry's
ASGI middleware gives (its own functions, on the same requests and answers)."""

from typing import Any

import pytest
from opentelemetry.instrumentation.asgi import (
    collect_request_attributes,
    get_default_span_details,
    set_status_code,
)
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from {{ cookiecutter.package_name }}.observability.http_attributes import (
    request_attributes,
    set_response_status,
    span_name,
)

_HOST = (b"host", b"api.example.com")


def _scope(**changes: Any) -> dict[str, Any]:
    scope: dict[str, Any] = {
        "type": "http",
        "http_version": "1.1",
        "scheme": "http",
        "method": "GET",
        "path": "/items/7",
        "query_string": b"",
        "server": ("10.0.0.5", 8000),
        "client": ("10.0.0.9", 51234),
        "headers": [_HOST, (b"user-agent", b"curl/8.5"), (b"accept", b"*/*")],
    }
    scope.update(changes)
    return scope


SCOPES = {
    "plain GET": _scope(),
    "a query": _scope(query_string=b"limit=5&after=10"),
    "an encoded query": _scope(query_string=b"q=caf%C3%A9&x=%2F"),
    "a query to redact": _scope(query_string=b"Signature=secret&sig=s&AWSAccessKeyId=k&a=1"),
    "credentials in the host": _scope(headers=[(b"host", b"user:pw@api.example.com")]),
    "a question mark in the path": _scope(path="/items/a?b"),
    "no host header": _scope(headers=[(b"user-agent", b"wrk")]),
    "two host headers": _scope(headers=[_HOST, (b"host", b"other.example.com")]),
    "a host header in capitals": _scope(headers=[(b"Host", b"api.example.com")]),
    "a host that is not UTF-8": _scope(headers=[(b"host", b"caf\xe9.example.com")]),
    "port 80": _scope(server=("10.0.0.5", 80)),
    "no server": _scope(server=None),
    "no client": _scope(client=None),
    "https": _scope(scheme="https"),
    "HTTP/2": _scope(http_version="2"),
    "no user agent": _scope(headers=[_HOST]),
    "an empty user agent": _scope(headers=[_HOST, (b"user-agent", b"")]),
    "a bot": _scope(headers=[_HOST, (b"user-agent", b"Googlebot/2.1")]),
    "a test agent": _scope(headers=[_HOST, (b"user-agent", b"alwayson-probe")]),
    "two user agents": _scope(headers=[_HOST, (b"user-agent", b"a"), (b"user-agent", b"b")]),
    "POST": _scope(method="POST", path="/items"),
    "a method of its own": _scope(method="PURGE"),
    "a method in lower case": _scope(method="get"),
    "spaces around the path": _scope(path=" /items/7 "),
    "the root path": _scope(path="/"),
    "no path": _scope(path=""),
}


def test_a_header_the_middleware_cannot_decode_is_read_as_latin_1() -> None:
    # Not UTF-8, and a backslash escape cut short: the middleware's decoding raises on it.
    scope = _scope(headers=[_HOST, (b"user-agent", b"caf\xe9 \\x")])
    with pytest.raises(UnicodeDecodeError):
        collect_request_attributes(scope)  # type: ignore[no-untyped-call]
    assert request_attributes(scope)["http.user_agent"] == "caf\xe9 \\x"


@pytest.mark.parametrize("scope", SCOPES.values(), ids=SCOPES.keys())
def test_the_attributes_are_the_middlewares(scope: dict[str, Any]) -> None:
    assert request_attributes(scope) == collect_request_attributes(scope)  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("scope", SCOPES.values(), ids=SCOPES.keys())
def test_the_name_is_the_middlewares(scope: dict[str, Any]) -> None:
    assert span_name(scope) == get_default_span_details(scope)[0]


@pytest.mark.parametrize("status", [100, 200, 201, 204, 304, 399, 400, 404, 499, 500, 503, 599, 99])
def test_the_status_is_the_middlewares(status: int) -> None:
    provider, exporter = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer(__name__)
    for set_status in (set_response_status, set_status_code):
        span = tracer.start_span("GET /")
        set_status(span, status)
        span.end()
    ours, theirs = exporter.get_finished_spans()
    assert dict(ours.attributes or {}) == dict(theirs.attributes or {})
    assert ours.status.status_code == theirs.status.status_code
    assert ours.status.description == theirs.status.description
