"""The SLO capacity search on services whose p99 at each rate is known exactly."""

import math
from collections.abc import Callable

import pytest
from loadtest.drive.engine import Step
from loadtest.search.slo import Limits, Plan, passes, search

LIMITS = Limits(max_p99_ms=50.0, max_error_rate=0.0)


def _step(rate: float, p99_ms: float, errors: int = 0) -> Step:
    return Step(
        concurrency=None, rate=rate, seconds=5.0, requests=round(rate * 5), errors=errors,
        rps=rate, p50_ms=p99_ms / 4, p95_ms=p99_ms / 2, p99_ms=p99_ms, max_ms=p99_ms * 2,
        client_cpu=30.0, server_cpu=80.0,
    )  # fmt: skip


def _service(capacity: float, tried: list[float]) -> Callable[[float], Step]:
    """A service whose p99 is within budget up to `capacity` and far beyond it above."""

    def trial(rate: float) -> Step:
        tried.append(rate)
        return _step(rate, 5.0 if rate <= capacity else 400.0)

    return trial


def test_the_search_lands_within_its_precision_below_the_true_capacity() -> None:
    for capacity, start in ((1234.0, 700.0), (1234.0, 5000.0), (88.0, 60.0)):
        tried: list[float] = []
        found = search(_service(capacity, tried), start, LIMITS, Plan(precision=0.05))
        assert found.slo_rps is not None
        assert 0.95 * capacity <= found.slo_rps <= capacity, (capacity, start, tried)
        assert len(found.repeats) == 3
        assert all(step.rate == found.slo_rps for step in found.repeats)


def test_a_final_step_that_fails_on_repeat_is_not_claimed() -> None:
    calls: list[float] = []

    def flaky(rate: float) -> Step:
        calls.append(rate)
        # Passes up to 1,000 RPS the first time it is asked, but every repeat above 900 fails.
        repeated = calls.count(rate) > 1
        ok = rate <= (900 if repeated else 1000)
        return _step(rate, 5.0 if ok else 400.0)

    found = search(flaky, 600.0, LIMITS, Plan(precision=0.05))
    assert found.slo_rps is not None
    assert found.slo_rps <= 900
    assert all(passes(step, LIMITS) for step in found.repeats)


def test_one_unlucky_repeat_out_of_three_steps_the_claim_down_and_stays_in_the_report() -> None:
    repeats_at_top: list[float] = []

    def noisy(rate: float) -> Step:
        if rate > 1000:
            return _step(rate, 400.0)
        if rate == 1000:
            repeats_at_top.append(rate)
        unlucky = len(repeats_at_top) == 3  # one slow window, as a shared machine has
        return _step(rate, 90.0 if unlucky and rate == 1000 else 5.0)

    found = search(noisy, 1000.0, LIMITS, Plan(precision=0.05))
    # The verdict names the highest rate whose repeats ALL held: 1,000 RPS did not; 950 did, and
    # the middle of the two, 975, held too and is within 5 % of the rate that missed.
    assert found.confirmed_at == [1000.0, 950.0, 975.0]
    assert found.slo_rps == 975.0
    assert all(passes(step, LIMITS) for step in found.repeats)
    assert any(step.rate == 1000.0 and step.p99_ms == 90.0 for step in found.trials)
    assert sum(step.rate == 950.0 for step in found.trials) == 3  # superseded, still reported


def test_each_failed_confirmation_steps_down_twice_as_far_as_the_one_before() -> None:
    def slowed_host(rate: float) -> Step:
        slowed_host.calls.append(rate)  # type: ignore[attr-defined]
        # The first trial of a rate passes up to 1,000 RPS; a repeat only up to 700 RPS.
        first = slowed_host.calls.count(rate) == 1  # type: ignore[attr-defined]
        return _step(rate, 5.0 if rate <= (1000 if first else 700) else 400.0)

    slowed_host.calls = []  # type: ignore[attr-defined]
    found = search(slowed_host, 1000.0, LIMITS, Plan(precision=0.05))
    assert found.confirmed_at[0] == 1000.0
    steps = [b / a for a, b in zip(found.confirmed_at, found.confirmed_at[1:], strict=False)]
    assert steps[:3] == [pytest.approx(0.95), pytest.approx(0.9), pytest.approx(0.8)]
    # 684 RPS held; the bisection up from it, toward 855 that missed, ends with the claim within
    # 5 % of the lowest rate whose repeats missed (and so within 5 % of 700).
    assert found.confirmed_at[3] == pytest.approx(1000 * 0.95 * 0.9 * 0.8)
    assert found.slo_rps is not None
    lowest_missed = min(rate for rate in found.confirmed_at if rate > found.slo_rps)
    assert lowest_missed - found.slo_rps <= 0.05 * found.slo_rps, found.confirmed_at
    assert 0.95 * 700 <= found.slo_rps <= 700, found.confirmed_at


def test_errors_fail_a_trial_even_with_a_good_p99() -> None:
    assert not passes(_step(100, 5.0, errors=1), LIMITS)
    assert passes(_step(100, 5.0), LIMITS)
    assert not passes(_step(100, math.nan), LIMITS)


def test_a_service_that_never_meets_the_budget_has_no_slo_capacity() -> None:
    found = search(lambda rate: _step(rate, 400.0), 1000.0, LIMITS, Plan(floor_rps=10.0))
    assert found.slo_rps is None
    assert found.trials
    assert min(step.rate or 0 for step in found.trials) >= 10.0


def test_one_stalled_trial_below_the_capacity_does_not_cap_the_search() -> None:
    tried: list[float] = []

    def stalled_once(rate: float) -> Step:
        tried.append(rate)
        stall = len(tried) == 3  # the machine stalls during the third trial, well below capacity
        return _step(rate, 400.0 if stall or rate > 1234.0 else 5.0)

    found = search(stalled_once, 700.0, LIMITS, Plan(precision=0.05))
    assert found.slo_rps is not None
    assert 0.95 * 1234.0 <= found.slo_rps <= 1234.0, tried
    assert tried[2] == tried[3], "the missed trial was run again at its rate"


def test_a_rate_fails_when_its_second_trial_misses_too() -> None:
    tried: list[float] = []
    found = search(_service(1234.0, tried), 700.0, LIMITS, Plan(precision=0.05))
    failed = [rate for rate in tried if rate > 1234.0]
    assert failed, tried
    assert all(failed.count(rate) == 2 for rate in failed), tried
    assert found.slo_rps is not None


def _holds_on_repeat_up_to(held: float) -> Callable[[float], Step]:
    """A rate's first trial passes up to 4,000 RPS, but asked again only `held` RPS holds: a disk
    whose fsync stalls now and then, as on a shared machine."""
    seen: list[float] = []

    def trial(rate: float) -> Step:
        seen.append(rate)
        first = seen.count(rate) == 1
        return _step(rate, 5.0 if rate <= (4000 if first else held) else 400.0)

    return trial


def test_failed_repeats_halve_the_claim_down_to_the_budgets_rate_never_past_it() -> None:
    found = search(_holds_on_repeat_up_to(300.0), 3000.0, LIMITS, Plan(), budget_rps=400.0)
    ratios = [b / a for a, b in zip(found.confirmed_at, found.confirmed_at[1:], strict=False)]
    # 5 %, twice as far each time after, then halving: never a jump of more than half.
    assert ratios[:5] == pytest.approx([0.95, 0.9, 0.8, 0.6, 0.5])
    assert all(ratio >= 0.5 for ratio in ratios), found.confirmed_at
    assert found.confirmed_at[-1] == 400.0  # the budget's own rate is a step of its own
    assert found.slo_rps is None  # ... and when even it fails its repeats, nothing is claimed
    assert min(step.rate or 0 for step in found.trials) == 400.0


def test_a_claim_after_failed_repeats_is_within_precision_of_the_highest_rate_that_holds() -> None:
    # However far the steps down went past it (5 % to 50 % at a time), the bisection after them
    # brings the claim back to within 5 % below the highest rate whose repeats hold.
    for held in (3700.0, 3300.0, 2500.0, 1500.0, 600.0):
        found = search(_holds_on_repeat_up_to(held), 3000.0, LIMITS, Plan(), budget_rps=400.0)
        assert found.slo_rps is not None
        assert 0.95 * held <= found.slo_rps <= held, (held, found.confirmed_at)
        assert all(passes(step, LIMITS) for step in found.repeats)
        assert len(found.confirmed_at) <= 12, found.confirmed_at


def test_repeats_that_hold_only_below_the_next_step_end_on_the_budgets_rate() -> None:
    found = search(_holds_on_repeat_up_to(405.0), 3000.0, LIMITS, Plan(), budget_rps=400.0)
    assert found.slo_rps == 400.0
    assert found.confirmed_at[-1] == 400.0


def test_the_slo_capacity_is_none_only_when_the_budgets_own_rate_failed_its_repeats() -> None:
    def never_on_repeat(rate: float) -> Step:
        never_on_repeat.calls.append(rate)  # type: ignore[attr-defined]
        first = never_on_repeat.calls.count(rate) == 1  # type: ignore[attr-defined]
        return _step(rate, 5.0 if first and rate <= 2000 else 400.0)

    never_on_repeat.calls = []  # type: ignore[attr-defined]
    found = search(never_on_repeat, 1000.0, LIMITS, Plan(precision=0.05), budget_rps=300.0)
    assert found.slo_rps is None
    assert found.confirmed_at[-1] == 300.0


def test_a_budget_above_the_capacity_still_lets_failed_repeats_step_down_to_a_measured_one() -> (
    None
):
    calls: list[float] = []

    def flaky(rate: float) -> Step:
        calls.append(rate)
        ok = rate <= (900 if calls.count(rate) > 1 else 1000)  # repeats above 900 RPS fail
        return _step(rate, 5.0 if ok else 400.0)

    found = search(flaky, 600.0, LIMITS, Plan(precision=0.05), budget_rps=1_000_000.0)
    assert found.slo_rps is not None  # measured, and judged below the budget elsewhere
    assert found.slo_rps <= 900
