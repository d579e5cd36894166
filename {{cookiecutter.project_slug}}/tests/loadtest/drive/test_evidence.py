"""The service's own suspects over a step (loadtest/drive/evidence.py), read from the text its /metrics
serves."""

import psutil
import pytest
from loadtest.drive import evidence
from loadtest.drive.engine import _stolen
from prometheus_client import generate_latest

from {{ cookiecutter.package_name }}.observability.metrics import Metrics


def _text(metrics: Metrics) -> str:
    return generate_latest(metrics.registry).decode()


def test_a_step_reports_the_lag_collector_pauses_pool_waits_and_refusals_it_saw() -> None:
    metrics = Metrics()
    metrics.loop_lag.observe(0.0005)
    before = evidence.parse(_text(metrics))
    for lag in (0.0005, 0.08):
        metrics.loop_lag.observe(lag)
    metrics.gc_pause.labels("2").observe(0.02)
    metrics.gc_pause.labels("0").observe(0.0004)
    metrics.acquire_wait.observe(0.003)
    metrics.admission_refused.inc(3)
    seen = evidence.between(before, evidence.parse(_text(metrics)), seconds=2.0)
    assert seen["loop_lag_count"] == 2
    assert seen["loop_lag_max_ms"] == 100.0  # the bucket bound above 80 ms
    assert seen["gc_pause_count"] == 2
    assert seen["gc_pause_max_ms"] == 25.0
    assert abs(seen["gc_pause_ms_per_s"] - 10.2) < 1e-6
    assert (seen["pool_wait_count"], seen["pool_wait_max_ms"]) == (1, 5.0)
    assert seen["admission_refused"] == 3


def test_a_quiet_step_reports_no_worst_value() -> None:
    text = _text(Metrics())
    seen = evidence.between(evidence.parse(text), evidence.parse(text), seconds=5.0)
    assert seen["loop_lag_max_ms"] is None
    assert seen["gc_pause_ms_per_s"] == 0
    assert evidence.moved(seen, None) == []


def test_what_moved_is_named_against_the_lowest_passing_trial() -> None:
    baseline = {"loop_lag_max_ms": 1.0, "gc_pause_max_ms": 5.0, "gc_pause_ms_per_s": 0.5,
                "pool_wait_max_ms": 0.1, "admission_refused": 0}  # fmt: skip
    missed = baseline | {"loop_lag_max_ms": 100.0, "admission_refused": 2}
    assert evidence.moved(missed, baseline) == ["loop lag 1 -> 100 ms", "admission refused 2"]
    # The same figures as the baseline: nothing of the service's moved (the machine did).
    assert evidence.moved(baseline, baseline) == []
    described = evidence.describe(baseline | {"gc_pause_count": 0, "moved": []})
    assert described == "lag ≤1 ms, gc none, pool wait ≤0.1 ms, refused 0; moved: none of them"


def test_time_the_hypervisor_stole_from_the_server_core_is_measured_and_named_when_it_moved() -> (
    None
):
    times = psutil.cpu_times(percpu=True)[0]
    if not hasattr(times, "steal"):
        pytest.skip("this kernel does not report steal time")
    before = times._replace(**{name: 0.0 for name in times._fields})
    # 100 s of which 10 stolen; guest time is inside user time and not counted twice.
    after = before._replace(user=60.0, idle=30.0, steal=10.0, guest=20.0)
    assert _stolen(before, after) == 10.0
    assert _stolen(before, before) is None
    assert _stolen(None, None) is None  # unpinned: no other cores apart
    baseline = {"stolen_pct": 1.0, "loop_lag_max_ms": 1.0}
    assert evidence.moved(baseline | {"stolen_pct": 12.0}, baseline) == [
        "stolen CPU (server core) 1 -> 12 %"
    ]
    assert evidence.moved(baseline | {"stolen_elsewhere_pct": 20.0}, baseline) == [
        "stolen CPU (other cores) 0 -> 20 %"
    ]
    assert evidence.moved(baseline | {"stolen_pct": 2.5}, baseline) == []  # under the floor
