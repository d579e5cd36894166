"""Spans recorded whole at their end and handed to the provider's span processors, for work that
no code can see while it runs (a database statement: query_spans.py).

The SDK's tracer makes a span object that code may read and change while it is current: 104
thousand instructions for one without attributes, 4 more for each attribute it checks (callgrind,
one core), most of a sampled request's price. A statement's span is never current and nothing
touches it: its name, attributes, times and outcome are known when it ends. `SpanRecorder.record`
gives the span processors (the exporter's batch) the SDK's own ReadableSpan of it, as the SDK's
span would have handed over at its end, with the provider's resource, an instrumentation scope,
an id from the provider's generator and the exception event the SDK records; the processors'
on_start, called with the live span, is not called for it.
"""

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)


def exception_event(error: BaseException, timestamp: int) -> Event:
    """The event the SDK's Span.record_exception adds for `error`."""
    module, qualname = type(error).__module__, type(error).__qualname__
    return Event(
        "exception",
        {
            "exception.type": f"{module}.{qualname}"
            if module and module != "builtins"
            else qualname,
            "exception.message": str(error),
            "exception.stacktrace": "".join(traceback.format_exception(error)),
            "exception.escaped": "False",
        },
        timestamp,
    )


@dataclass(frozen=True, slots=True)
class SpanRecorder:
    """Where recorded spans go: the provider's span processors, resource and ids."""

    processor: SpanProcessor
    resource: Resource
    scope: InstrumentationScope
    ids: IdGenerator

    def record(
        self,
        name: str,
        parent: SpanContext,
        kind: SpanKind,
        attributes: Mapping[str, Any],
        times: tuple[int, int],
        error: BaseException | None = None,
    ) -> None:
        """A sampled child span of `parent` that started and ended at `times` (ns since the
        epoch), failed with `error` when given (status ERROR with its description, the
        exception's event), handed to the span processors."""
        context = SpanContext(
            parent.trace_id,
            self.ids.generate_span_id(),
            is_remote=False,
            trace_flags=_SAMPLED,
            trace_state=parent.trace_state,
        )
        status, events = _UNSET, cast(tuple[Event, ...], ())
        if error is not None:
            status = Status(StatusCode.ERROR, f"{type(error).__name__}: {error}")
            events = (exception_event(error, times[1]),)
        span = ReadableSpan(
            name,
            context,
            parent,
            self.resource,
            attributes,
            events,
            kind=kind,
            status=status,
            start_time=times[0],
            end_time=times[1],
            instrumentation_scope=self.scope,
        )
        self.processor.on_end(span)
