"""Database spans (TRACING=true): one client span per statement run under a recording span.

`traced(NoResetConnection, spans)` is the pool's connection class when tracing is on: the five
methods OpenTelemetry's asyncpg instrumentation wraps (execute, executemany, fetch, fetchval,
fetchrow; asyncpg's transactions run BEGIN and COMMIT through execute) each ask first whether
the request is one the sampler dropped, then whether the current span records. Under a dropped
request, or outside any recording span (the probes, the idempotency-key sweep), a statement runs
as it does without tracing, after those questions. OpenTelemetry's instrumentation patched asyncpg
process-wide and, on every statement, built its attributes and started a span through the
sampler before it knew. Under a recording span a statement gets the span that instrumentation
makes, as a child of the current span: its name (the statement's first word), kind, attributes
(the conventions in their default mode), times, and on failure its error status and exception
event (tests/test_query_spans.py holds them to the instrumentation's own). It is recorded whole
when the statement ends (observability/recorded_spans.py): nothing sees it while it runs.
"""

import re
from collections.abc import Callable, Coroutine
from time import time_ns
{% if cookiecutter.python_version == "3.11" -%}
from typing import Any, TypeVar, cast
{%- else -%}
from typing import Any, cast
{%- endif %}

from opentelemetry.trace import SpanKind, get_current_span

from .asyncpg_internals import connection_target
from .observability.recorded_spans import SpanRecorder
from .observability.request_spans import UNRECORDED

TRACED_METHODS = ("execute", "executemany", "fetch", "fetchval", "fetchrow")
_LEADING_COMMENT = re.compile(r"^/\*.*?\*/")
{%- if cookiecutter.python_version == "3.11" %}
ConnectionClass = TypeVar("ConnectionClass", bound=type)
{%- endif %}


def span_name(query: str, database: str | None) -> str:
    """The statement's first word, after a leading /* comment */; the database's name for none."""
    text = query or (database if database is not None else "postgresql")
    words = _LEADING_COMMENT.sub("", text).split()
    return words[0] if words else ""


def span_attributes(connection: Any, query: str) -> dict[str, Any]:
    address, database, user = connection_target(connection)
    attributes: dict[str, Any] = {"db.system": "postgresql"}
    if database:
        attributes["db.name"] = database
    if user:
        attributes["db.user"] = user
    if isinstance(address, tuple):
        attributes["net.peer.name"] = address[0]
        attributes["net.peer.port"] = address[1]
        attributes["net.transport"] = "ip_tcp"
    elif isinstance(address, str):
        attributes["net.peer.name"] = address
        attributes["net.transport"] = "other"
    if query is not None:
        attributes["db.statement"] = query
    return attributes


async def _in_span(
    spans: SpanRecorder, connection: Any, query: str, statement: Coroutine[Any, Any, Any]
) -> Any:
    parent = get_current_span().get_span_context()
    attributes = span_attributes(connection, query)
    name = span_name(query, attributes.get("db.name"))
    start = time_ns()
    try:
        result = await statement
    except Exception as error:
        spans.record(name, parent, SpanKind.CLIENT, attributes, (start, time_ns()), error)
        raise
    except BaseException:
        # Cancelled (a deadline): the span ends without an error, as the instrumentation's does.
        spans.record(name, parent, SpanKind.CLIENT, attributes, (start, time_ns()))
        raise
    spans.record(name, parent, SpanKind.CLIENT, attributes, (start, time_ns()))
    return result


def _traced(method: Callable[..., Any], spans: SpanRecorder) -> Callable[..., Any]:
    # A plain function returning asyncpg's coroutine: a statement of a dropped request pays one
    # call and one context variable, no coroutine of its own.
    def call(self: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        if UNRECORDED.get() or not get_current_span().is_recording():
            return method(self, query, *args, **kwargs)
        return _in_span(spans, self, query, method(self, query, *args, **kwargs))

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


{% if cookiecutter.python_version == "3.11" -%}
def traced(base: ConnectionClass, spans: SpanRecorder) -> ConnectionClass:
{%- else -%}
def traced[ConnectionClass: type](base: ConnectionClass, spans: SpanRecorder) -> ConnectionClass:
{%- endif %}
    """`base` (the pool's connection class) with a span per statement under a recording span."""
    methods = {name: _traced(getattr(base, name), spans) for name in TRACED_METHODS}
    return cast(ConnectionClass, type(f"Traced{base.__name__}", (base,), methods))
