"""Spans recorded whole at their end and handed to the provider's span processors, for work that
no code can see while it runs (a database statement: query_spans.py).

The SDK's tracer makes a span object that code may read and change while it is current: 104
thousand instructions for one without attributes, 4 more for each attribute it checks (callgrind,
one core), most of a sampled request's price. A statement's span is never current and nothing
touches it: its name, attributes, times and outcome are known when it ends. `SpanRecorder.record`
gives the span processors (the exporter's batch) the SDK's own ReadableSpan of it, as the SDK's
span would have handed over at its end, with the provider's resource, an instrumentation scope,
an id from the provider's generator and the exception event the SDK records, each cut by the
provider's span limits (OTEL_*_LIMIT) as the SDK's span cuts its own; the processors' on_start,
called with the live span, is not called for it.
"""

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, SpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)
# The most attributes a span (query_spans.py) or its exception event here holds.
_MOST_ATTRIBUTES = 8


def cutting(limits: SpanLimits) -> SpanLimits | None:
    """`limits` when they can cut something a recorded span holds, else None (the SDK's defaults:
    no length limit, 128 attributes, 128 events): the spans then go as they are made. A limit of
    None is none ("unset")."""
    counts = (limits.max_span_attributes, limits.max_event_attributes)
    if (
        limits.max_span_attribute_length is None
        and limits.max_attribute_length is None
        and all(count is None or count >= _MOST_ATTRIBUTES for count in counts)
        and (limits.max_events is None or limits.max_events >= 1)
    ):
        return None
    return limits


def _limited(
    limits: SpanLimits, attributes: Mapping[str, Any], events: tuple[Event, ...]
) -> tuple[Mapping[str, Any], tuple[Event, ...]]:
    """The attributes and events as the SDK's span keeps them under `limits`."""
    bounded = BoundedAttributes(
        limits.max_span_attributes, attributes, max_value_len=limits.max_span_attribute_length
    )
    kept = tuple(
        Event(
            event.name,
            BoundedAttributes(
                limits.max_event_attributes,
                event.attributes,
                immutable=True,
                max_value_len=limits.max_attribute_length,
            ),
            event.timestamp,
        )
        for event in events[: limits.max_events]
    )
    return bounded, kept


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
    limits: SpanLimits | None = None  # the provider's, when they can cut a span (`cutting`)

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
        if self.limits is not None:
            attributes, events = _limited(self.limits, attributes, events)
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
