"""The knee rule and the client rule of the load test, on sweeps with known answers."""

import pytest
from loadtest.search.knee import Point, Verdict, client_capacity, find_knee, is_client_bound, judge


def _sweep(*rps: float) -> list[Point]:
    return [Point(2**index, value) for index, value in enumerate(rps)]


def test_knee_is_the_first_step_after_which_doubling_adds_under_10_percent() -> None:
    points = _sweep(500, 950, 1500, 1900, 2000, 2010, 1990, 1980)
    assert points[find_knee(points) or 0].concurrency == 8  # 1,900 -> 2,000 is +5 %


def test_a_gain_of_exactly_10_percent_still_counts_as_rising() -> None:
    points = _sweep(1000, 1100, 1100)
    assert find_knee(points) == 1


def test_an_early_dip_far_below_the_peak_is_not_the_knee() -> None:
    points = _sweep(400, 380, 900, 1600, 1650, 1640)
    assert find_knee(points) == 3


def test_a_sweep_still_rising_at_its_last_step_has_no_knee() -> None:
    assert find_knee(_sweep(100, 200, 400, 800)) is None


def test_a_sweep_must_be_sorted_by_concurrency() -> None:
    with pytest.raises(ValueError, match="sorted"):
        find_knee([Point(4, 10), Point(2, 20)])


def test_client_capacity_extrapolates_the_cpu_spent_per_request() -> None:
    # 5,000 RPS for a quarter of one core: 20,000 RPS per core, 40,000 on two.
    assert client_capacity(5000, 25, 2) == pytest.approx(40_000)


def test_a_knee_near_the_client_capacity_with_an_idle_server_is_client_bound() -> None:
    knee = Point(16, 9000, client_cpu=60, server_cpu=40)
    assert is_client_bound(knee, client_capacity_rps=10_000, client_cores=1)


def test_a_saturated_client_does_not_hide_a_saturated_server() -> None:
    knee = Point(16, 9000, client_cpu=95, server_cpu=97)
    assert not is_client_bound(knee, client_capacity_rps=10_000, client_cores=1)


def test_a_client_using_90_percent_of_its_cores_is_saturated() -> None:
    knee = Point(16, 1000, client_cpu=185, server_cpu=50)
    assert is_client_bound(knee, client_capacity_rps=100_000, client_cores=2)
    assert not is_client_bound(knee, client_capacity_rps=100_000, client_cores=4)


def test_judge_reports_client_bound_instead_of_a_knee() -> None:
    points = [
        Point(c, rps, client_cpu=99, server_cpu=30) for c, rps in ((1, 500), (2, 900), (4, 950))
    ]
    assert judge(points, client_capacity_rps=1000, client_cores=1) == (Verdict.CLIENT_BOUND, 1)


def test_judge_falls_back_to_the_best_step_when_the_knee_is_not_reached() -> None:
    points = [
        Point(c, rps, client_cpu=10, server_cpu=60) for c, rps in ((1, 100), (2, 300), (4, 500))
    ]
    assert judge(points, client_capacity_rps=50_000, client_cores=1) == (Verdict.NOT_REACHED, 2)


def _measured(*steps: tuple[float, float]) -> list[Point]:
    return [Point(2**index, rps, p99_ms=p99) for index, (rps, p99) in enumerate(steps)]


def test_the_knee_comes_before_p99_starts_climbing() -> None:
    # A noisy sweep: throughput peaks again at 64 while p99 has long climbed past 10 ms at 32.
    points = _measured(
        (2312, 0.6), (3361, 0.8), (3563, 1.4), (4681, 2.3), (3911, 5.4), (4817, 39.3), (6084, 49.8)
    )
    assert points[find_knee(points) or 0].concurrency == 8


def test_the_last_step_before_the_climb_is_the_knee_even_if_throughput_still_rises() -> None:
    points = _measured((1000, 1.0), (1900, 1.2), (3000, 2.0), (3400, 30.0), (3500, 60.0))
    assert points[find_knee(points) or 0].concurrency == 4


def test_p99_under_the_floor_is_not_a_climb() -> None:
    # 0.5 -> 8 ms is 16x, but under 10 ms: the plain throughput rule decides.
    points = _measured((1000, 0.5), (1900, 1.0), (2500, 4.0), (2550, 8.0))
    assert find_knee(points) == 2
