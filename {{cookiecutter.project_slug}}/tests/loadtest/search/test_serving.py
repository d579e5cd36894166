"""The verdict at the serving rate: a capacity is claimed only when every run at its
serving rate held the budget; otherwise it steps down, bounded, to one whose runs held."""

from collections.abc import Callable

from loadtest.drive.engine import Step
from loadtest.plan.budget import ScenarioBudget
from loadtest.search.knee import Verdict
from loadtest.search.serving import MAX_STEPS_DOWN, confirm
from loadtest.search.slo import Limits
from loadtest.search.verdict import Outcome, check

LIMITS = Limits(max_p99_ms=50.0, max_error_rate=0.0)
BUDGET = ScenarioBudget(min_rps=1000.0, max_p99_ms=50.0, max_error_rate=0.0, serving_fraction=0.7)


def _step(rate: float, p99_ms: float) -> Step:
    return Step(
        concurrency=None, rate=rate, seconds=5.0, requests=round(rate * 5), errors=0,
        rps=rate, p50_ms=p99_ms / 4, p95_ms=p99_ms / 2, p99_ms=p99_ms, max_ms=p99_ms * 2,
        client_cpu=30.0, server_cpu=80.0,
    )  # fmt: skip


def _slowed(above: float, tried: list[float]) -> Callable[[float], Step]:
    """A service deliberately slowed above `above` RPS: its third run at such a rate stalls
    (p99 837 ms, as the issue's run at 1,392 RPS did), the others are quick."""

    def run(rate: float) -> Step:
        tried.append(rate)
        stalled = rate > above and tried.count(rate) == 3
        return _step(rate, 836.8 if stalled else 6.5)

    return run


def test_a_serving_rate_that_misses_in_one_run_steps_the_capacity_down_to_one_that_held() -> None:
    tried: list[float] = []
    found = confirm(
        _slowed(1100.0, tried), 1989.0, fraction=0.7, runs=3, limits=LIMITS,
        budget_rps=400.0, growth=1.25,
    )  # fmt: skip
    rates = [round(attempt.rate) for attempt in found.attempts]
    assert rates == [1392, 1114, 891]  # 70 % of 1,989, then of 1,989 / 1.25, of / 1.25 again
    assert [attempt.held(LIMITS) for attempt in found.attempts] == [False, False, True]
    assert found.capacity_rps is not None
    assert round(found.capacity_rps) == 1273
    assert found.stepped_down
    outcome = Outcome(
        verdict=Verdict.KNEE, slo_rps=1989.0, error_rate=0.0, held_rps=found.capacity_rps,
        serving_tried=tuple(attempt.rate for attempt in found.attempts),
    )  # fmt: skip
    assert check("items.patch", BUDGET, outcome) == []


def test_the_step_down_is_bounded_and_never_claims_below_the_budgets_rate() -> None:
    tried: list[float] = []
    found = confirm(
        _slowed(0.0, tried), 3000.0, fraction=0.7, runs=3, limits=LIMITS,
        budget_rps=1000.0, growth=1.25,
    )  # fmt: skip
    assert found.capacity_rps is None
    assert len(found.attempts) <= MAX_STEPS_DOWN + 1
    assert min(attempt.capacity_rps for attempt in found.attempts) == 1000.0
    outcome = Outcome(
        verdict=Verdict.KNEE, slo_rps=3000.0, error_rate=0.0, held_rps=None,
        serving_tried=tuple(attempt.rate for attempt in found.attempts),
    )  # fmt: skip
    [miss] = check("items.patch", BUDGET, outcome)
    assert miss.startswith("MISS items.patch: at the serving rate the budget did not hold")


def test_a_serving_rate_whose_every_run_held_claims_the_slo_capacity_itself() -> None:
    found = confirm(
        _slowed(5000.0, []), 1989.0, fraction=0.7, runs=3, limits=LIMITS,
        budget_rps=400.0, growth=1.25,
    )  # fmt: skip
    assert found.capacity_rps == 1989.0
    assert len(found.attempts) == 1
