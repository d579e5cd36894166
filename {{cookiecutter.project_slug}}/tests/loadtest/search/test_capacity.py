"""Pod sizing from an SLO capacity: the arithmetic on known inputs, and the Helm values."""

from pathlib import Path

import pytest
from loadtest.plan.budget import CapacityAssumptions, parse
from loadtest.search.capacity import (
    Capacity,
    capacity_from,
    describe,
    helm_values,
    size,
    write_helm_values,
)
from loadtest.search.memory import size_memory

ASSUMPTIONS = CapacityAssumptions(
    scenario="mixed", think_time_s=5.0, session_minutes=10.0, peak_hour_share=0.15
)


def _sizing(peak_rss_mib: float | None = None) -> Capacity:
    return size(
        scenario="mixed",
        slo_rps=1000.0,
        knee_rps=1300.0,
        knee_concurrency=16,
        serving_fraction=0.7,
        serving_p50_ms=10.0,
        max_p99_ms=50.0,
        assumptions=ASSUMPTIONS,
        peak_rss_mib=peak_rss_mib,
    )


def test_the_pod_serves_at_the_serving_fraction_of_its_slo_capacity() -> None:
    sizing = _sizing()
    assert sizing.serve_at_rps == 700
    assert sizing.target_rps_per_pod == 700


def test_the_in_flight_limit_is_what_the_slo_capacity_drains_within_the_p99_budget() -> None:
    assert _sizing().max_in_flight == 50  # 1,000 RPS x 0.050 s


def test_the_in_flight_limit_is_above_the_knee_even_for_a_tiny_capacity() -> None:
    sizing = size(
        scenario="x", slo_rps=20, knee_rps=30, knee_concurrency=4, serving_fraction=0.7,
        serving_p50_ms=5, max_p99_ms=50, assumptions=ASSUMPTIONS,
    )  # fmt: skip
    assert sizing.max_in_flight == 5


def test_the_pool_holds_what_is_busy_at_serving_load_up_to_the_knee_concurrency() -> None:
    sizing = _sizing()
    assert sizing.pool_max_size == 16
    assert sizing.pool_min_size == 7  # Little's law: 700 RPS x 0.010 s


def test_users_follow_littles_law_for_the_stated_think_time() -> None:
    sizing = _sizing()
    assert sizing.concurrent_users == 3507  # 700 x (5 + 0.010)
    # 3,507 x 6 sessions an hour / 0.15 of the day's users in the peak hour
    assert sizing.daily_active_users == pytest.approx(3507 * 6 / 0.15, rel=1e-3)


def test_the_helm_override_uses_the_chart_keys(tmp_path: Path) -> None:
    path = write_helm_values(
        _sizing(), "loadtest/results/x.json", tmp_path / "chart" / "values-capacity.yaml"
    )
    text = path.read_text()
    assert text == helm_values(_sizing(), "loadtest/results/x.json")
    for line in ("server:", "  maxInFlight: 50", "database:", "  poolMinSize: 7",
                 "  poolMaxSize: 16", "autoscaling:", "  targetRPSPerPod: 700"):  # fmt: skip
        assert f"\n{line}\n" in text
    # The listen queue is not a request queue: the chart's default stays.
    assert "backlog" not in text
    # The target is written with the switch that makes the HPA use it, off until an adapter serves
    # the metric: the file says the HPA stays on CPU rather than implying otherwise.
    assert "\n  rpsMetric:\n    enabled: false\n" in text


def test_the_helm_override_sets_the_measured_memory_as_request_and_limit_and_leaves_the_cpu() -> (
    None
):
    sized = _sizing(peak_rss_mib=300.0)
    assert sized.memory == size_memory(300.0, headroom=2.0)
    quantity = f"{sized.memory.mib}Mi"
    text = helm_values(sized, "loadtest/results/x.json")
    resources = (
        f"\nresources:\n  requests:\n    memory: {quantity}\n  limits:\n    memory: {quantity}\n"
    )
    assert resources in text
    assert "cpu" not in text  # the chart's, exactly one core
    assert f"memory              {quantity} (peak RSS 300.0 MiB x 2 +" in describe(sized)
    assert sized.as_dict()["memory"]["mib"] == sized.memory.mib


def test_without_a_peak_rss_the_helm_override_leaves_the_charts_memory() -> None:
    sized = _sizing()
    assert sized.memory is None
    assert "resources:" not in helm_values(sized, "loadtest/results/x.json")
    assert "memory              not sized: the results hold no peak RSS" in describe(sized)


def _scenario(slo_rps: float, peak_rss_mib: float | None = None) -> dict[str, object]:
    step = {"rps": slo_rps * 1.2, "concurrency": 8, "p50_ms": 2.0}
    return {
        "peak_rss_mib": peak_rss_mib,
        "verdict": "knee",
        "steps": [step],
        "knee_index": 0,
        "search": {"slo_rps": slo_rps, "repeats": [step]},
        "budget": {"serving_fraction": 0.7, "max_p99_ms": 50.0},
    }


def test_the_capacity_scenario_named_by_its_operation_is_the_first_resources() -> None:
    results = {"scenarios": {
        "items.by_id": _scenario(2000), "items.mixed": _scenario(900), "orders.mixed": _scenario(700),
    }}  # fmt: skip
    budget = parse({"scenarios": {"mixed": {"min_rps": 1}}, "capacity": {"scenario": "mixed"}})
    sizing = capacity_from(results, budget)
    assert sizing is not None
    assert (sizing.scenario, sizing.slo_rps) == ("items.mixed", 900)
    named = parse(
        {"scenarios": {"mixed": {"min_rps": 1}}, "capacity": {"scenario": "orders.mixed"}}
    )
    sizing = capacity_from(results, named)
    assert sizing is not None
    assert (sizing.scenario, sizing.slo_rps) == ("orders.mixed", 700)


def test_the_helm_values_come_from_the_capacity_whose_serving_runs_held_not_the_slo_capacity() -> (
    None
):
    stepped_down = _scenario(1989) | {"capacity_rps": 1273.0}
    missed = _scenario(2500) | {"capacity_rps": None}
    budget = parse({"scenarios": {"mixed": {"min_rps": 1}}, "capacity": {"scenario": "mixed"}})
    sizing = capacity_from({"scenarios": {"items.mixed": stepped_down}}, budget)
    assert sizing is not None
    assert sizing.slo_rps == 1273.0
    assert round(sizing.serve_at_rps) == round(0.7 * 1273.0)
    assert capacity_from({"scenarios": {"items.mixed": missed}}, budget) is None


def test_the_memory_comes_from_the_runs_highest_peak_rss_with_the_budgets_headroom() -> None:
    """Every scenario ran on the same server, as every route runs in the pod: the page scenario's
    peak sizes the pod even when the mixed one sizes its rate."""
    results = {"scenarios": {
        "items.mixed": _scenario(900, peak_rss_mib=81.0), "items.page": _scenario(700, 240.5),
        "items.by_id": _scenario(2000),
    }}  # fmt: skip
    budget = parse({"scenarios": {"mixed": {"min_rps": 1}}, "capacity": {"memory_headroom": 3.0}})
    sizing = capacity_from(results, budget)
    assert sizing is not None
    assert sizing.memory is not None
    assert sizing.scenario == "items.mixed"
    assert sizing.memory == size_memory(240.5, headroom=3.0)
