"""The request span (TRACING=true): a pure ASGI layer that pays for a span only when one is kept.

OpenTelemetry's ASGI middleware makes a span for every request and lets the sampler turn it into
a non-recording one: it collects the request's attributes, extracts the context through a getter
that decodes every header, wraps `send` and records its metrics before anything is decided, for
nine requests in ten that nobody will see (+645-714 thousand instructions a request at 10 %
sampling with its asyncpg instrumentation, `make bench-instructions`). This layer decides
first: it reads the propagation headers (the W3C ones found by a scan of the raw header names),
draws the trace id, and asks the provider's sampler (sampling.py). A request it drops gets what
it must propagate: a non-recording span of its trace as the current context, so that an outgoing
call made under it carries `traceparent` with the sampled flag off. A kept request gets the span
OpenTelemetry's middleware makes (its name, kind, attributes and status: http_attributes.py),
current while the app runs, ended with the response's last message, without the middleware's
receive and send spans; its trace id is bound to the request's log lines (the access line). The
database spans are made under it (query_spans.py).
"""

from collections.abc import Iterable
from contextvars import ContextVar, Token
from random import getrandbits
from typing import Any, cast

from opentelemetry import context as context_api
from opentelemetry import propagate
from opentelemetry.context import Context
from opentelemetry.instrumentation.asgi import asgi_getter, asgi_setter
from opentelemetry.instrumentation.propagators import get_global_response_propagator
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import (
    INVALID_SPAN_CONTEXT,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    TraceState,
    get_current_span,
    set_span_in_context,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.contextvars import bind_contextvars

from .http_attributes import request_attributes, set_response_status, span_name
from .sampling import ServiceSampler

# True while a request the sampler dropped runs. Nothing under it records (the service's samplers
# decide a child as its parent was decided, or on the same trace id), so a database statement
# there needs no span and no question about the current span (4.8 thousand instructions each,
# callgrind): query_spans.py reads this first.
UNRECORDED: ContextVar[bool] = ContextVar("unrecorded_request", default=False)
# The headers the W3C propagators (tracecontext, baggage: OTEL_PROPAGATORS' default) read, each
# only its own: without any of them, extracting gives the empty context, so it is not called.
_W3C_FIELDS = frozenset({"traceparent", "tracestate", "baggage"})
_ROOT = Context()  # what extracting gives a request without propagation headers
_UNSAMPLED = TraceFlags(TraceFlags.DEFAULT)


class DrawnIds(RandomIdGenerator):
    """The provider's id generator: random ids, except that a kept root request's span gets the
    trace id its sampling decision was made on (the sampler's ratio is a function of it)."""

    def __init__(self) -> None:
        self.next_trace_id = 0

    def generate_trace_id(self) -> int:
        drawn, self.next_trace_id = self.next_trace_id, 0
        return drawn or super().generate_trace_id()


def _random_id(bits: int) -> int:
    # RandomIdGenerator's ids without its two calls: never 0, the invalid id.
    while not (drawn := getrandbits(bits)):
        pass
    return drawn


class RequestSpans:
    """The request's span, or for a request the sampler drops, its non-recording context."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        tracer: Tracer,
        sampler: ServiceSampler,
        ids: DrawnIds,
        untraced: Iterable[str],
    ) -> None:
        self.app = app
        self._tracer = tracer
        self._sampler = sampler
        self._ids = ids
        self._untraced = frozenset(untraced)
        self._propagator: TextMapPropagator | None = None
        self._fields: frozenset[bytes] | None = None  # None: extract on every request
        # structlog's own context variable of `trace_id`, found on the first request from the
        # token bind_contextvars returns (as the edge does for the request id): set and reset
        # directly, two calls instead of structlog's keyword loops.
        self._trace_id_var: ContextVar[Any] | None = None

    def _parent(self, scope: Scope) -> Context:
        """The context the request's headers carry (OTEL_PROPAGATORS), or the empty one."""
        propagator = propagate.get_global_textmap()
        if propagator is not self._propagator:  # set once at start-up, unless a test swaps it
            self._propagator = propagator
            names = propagator.fields
            w3c = names <= _W3C_FIELDS
            self._fields = frozenset(name.encode() for name in names) if w3c else None
        fields = self._fields
        if fields is not None:
            for name, _ in scope["headers"]:
                if name in fields:
                    break
            else:
                return _ROOT
        try:
            return propagator.extract(cast(dict[str, Any], scope), getter=asgi_getter)
        except ValueError:
            # A header asgi_getter cannot decode (not UTF-8, with a backslash escape cut short):
            # a request carrying no trace, never a 500 before anything can answer it.
            return _ROOT

    def _bind_trace_id(self, trace_id: int) -> tuple[ContextVar[Any], Token[Any]]:
        value = f"{trace_id:032x}"
        variable = self._trace_id_var
        if variable is not None:
            return variable, variable.set(value)
        token = bind_contextvars(trace_id=value)["trace_id"]
        self._trace_id_var = token.var
        return token.var, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self._untraced:
            await self.app(scope, receive, send)
            return
        parent = self._parent(scope)
        remote = INVALID_SPAN_CONTEXT if parent is _ROOT else _span_context(parent)
        trace_id = remote.trace_id if remote.is_valid else _random_id(128)
        if self._sampler.sampled(remote, trace_id):
            await self._traced(scope, receive, send, parent, trace_id, remote.is_valid)
            return
        span = _DroppedSpan(trace_id, remote.trace_state if remote.is_valid else None)
        token = context_api.attach(set_span_in_context(span, parent))
        unrecorded = UNRECORDED.set(True)
        # A trace kept upstream (a sampled parent a ratio sampler dropped here) is named on the
        # access line; a dropped root names none: there is no trace to look up.
        bound = self._bind_trace_id(trace_id) if remote.trace_flags.sampled else None
        try:
            if get_global_response_propagator() is not None:  # type: ignore[no-untyped-call]
                send = _sending(span, send)
            await self.app(scope, receive, send)
        finally:
            if bound is not None:
                bound[0].reset(bound[1])
            UNRECORDED.reset(unrecorded)
            context_api.detach(token)

    async def _traced(
        self, scope: Scope, receive: Receive, send: Send, parent: Context, trace_id: int,
        child: bool,
    ) -> None:  # fmt: skip
        """The request with its span, current while the app runs, ended with the response."""
        if not child:
            self._ids.next_trace_id = trace_id  # the one the decision was made on
        try:
            span = self._tracer.start_span(
                span_name(scope),
                context=parent,
                kind=SpanKind.SERVER,
                attributes=request_attributes(scope),
            )
        finally:
            self._ids.next_trace_id = 0
        token = context_api.attach(set_span_in_context(span, parent))
        variable, trace_token = self._bind_trace_id(trace_id)
        try:
            await self.app(scope, receive, _sending(span, send))
        except Exception as error:
            # As trace.use_span around OpenTelemetry's middleware records it.
            if span.is_recording():
                span.record_exception(error)
                description = f"{type(error).__name__}: {error}"
                span.set_status(Status(StatusCode.ERROR, description))
            raise
        finally:
            variable.reset(trace_token)
            context_api.detach(token)
            if span.is_recording():  # a response that never finished
                span.end()


def _span_context(parent: Context) -> SpanContext:
    return get_current_span(parent).get_span_context()


class _DroppedSpan(NonRecordingSpan):
    """What the SDK's tracer makes for a span its sampler drops (a NonRecordingSpan of the trace,
    with a span id of its own, not sampled), its span context made when first asked for: by an
    outgoing call that propagates it, or by code that reads the current span. Nine requests in
    ten ask for none (a SpanContext and a span id: 6 thousand instructions)."""

    def __init__(self, trace_id: int, trace_state: TraceState | None) -> None:
        super().__init__(INVALID_SPAN_CONTEXT)
        self._trace_id = trace_id
        self._trace_state = trace_state
        self._made: SpanContext | None = None

    def get_span_context(self) -> SpanContext:
        if self._made is None:
            self._made = SpanContext(
                self._trace_id,
                _random_id(64),
                is_remote=False,
                trace_flags=_UNSAMPLED,
                trace_state=self._trace_state,
            )
        return self._made


def _sending(span: Span, send: Send) -> Send:
    """`send` that sets a kept span's status from the response and ends it with the response's
    last message, and adds the response propagator's headers when one is set."""
    trailers = False

    async def traced_send(message: Message) -> None:
        nonlocal trailers
        kind = message["type"]
        if kind == "http.response.start":
            trailers = bool(message.get("trailers", False))
            if span.is_recording():
                set_response_status(span, message["status"])
            propagator = get_global_response_propagator()  # type: ignore[no-untyped-call]
            if propagator is not None:
                message["headers"] = list(message.get("headers", ()))
                context = set_span_in_context(span, _ROOT)
                propagator.inject(message, context=context, setter=asgi_setter)
        await send(message)
        if span.is_recording() and (
            (kind == "http.response.body" and not trailers and not message.get("more_body", False))
            or (kind == "http.response.trailers" and not message.get("more_trailers", False))
        ):
            span.end()

    return traced_send
