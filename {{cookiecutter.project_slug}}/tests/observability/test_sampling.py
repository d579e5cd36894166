"""sampling.py: ServiceSampler decides as the SDK's own ParentBased and TraceIdRatioBased do, for
every sampler the settings accept, with and without a parent, on trace ids drawn at random."""

import random
from typing import get_args

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.trace import (
    INVALID_SPAN_CONTEXT,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from {{ cookiecutter.package_name }}.observability.sampling import ServiceSampler, sdk_sampler
from {{ cookiecutter.package_name }}.settings import Settings

SAMPLERS = get_args(Settings.model_fields["otel_traces_sampler"].annotation)
STATE = TraceState([("vendor", "value")])


def _parents(draw: random.Random) -> list[SpanContext]:
    """No parent, and remote and local parents, sampled and not, with and without a state."""
    parents = [INVALID_SPAN_CONTEXT]
    for remote in (True, False):
        for flags in (TraceFlags.DEFAULT, TraceFlags.SAMPLED):
            for state in (None, STATE):
                trace_id, span_id = draw.getrandbits(128) or 1, draw.getrandbits(64) or 1
                parents.append(SpanContext(trace_id, span_id, remote, TraceFlags(flags), state))
    return parents


@pytest.mark.parametrize("ratio", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("name", SAMPLERS)
def test_the_service_sampler_decides_as_the_sdks_sampler(name: str, ratio: float) -> None:
    settings = Settings(app_env="dev", otel_traces_sampler=name, otel_traces_sampler_arg=ratio)
    ours, theirs = ServiceSampler(settings), sdk_sampler(settings)
    draw = random.Random(f"{name} {ratio}")
    decided = set()
    for parent in _parents(draw):
        context = (
            Context()
            if parent is INVALID_SPAN_CONTEXT
            else set_span_in_context(NonRecordingSpan(parent))
        )
        for _ in range(300):
            trace_id = parent.trace_id if parent.is_valid else draw.getrandbits(128) or 1
            expected = theirs.should_sample(context, trace_id, "GET /", SpanKind.SERVER, {"a": 1})
            result = ours.should_sample(context, trace_id, "GET /", SpanKind.SERVER, {"a": 1})
            assert result.decision == expected.decision
            assert dict(result.attributes) == dict(expected.attributes)
            assert result.trace_state == expected.trace_state
            sampled = expected.decision is Decision.RECORD_AND_SAMPLE
            assert ours.sampled(parent, trace_id) == sampled
            decided.add(sampled)
    assert ours.get_description() == theirs.get_description()
    if name.endswith("traceidratio") and 0 < ratio < 1:
        assert decided == {True, False}  # the ratio was put to the test, both ways
