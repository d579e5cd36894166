"""bench.compare's figures and verdict on given runs: no bake, no server, no wrk."""

import pytest

from bench.compare_report import Runs, regressions, summarise


def _runs(base_cpu: list[float], head_cpu: list[float], head_errors: float = 0) -> Runs:
    def side(cpus: list[float], errors: float) -> list[dict[str, float]]:
        return [{"rps": 1e6 / cpu, "cpu_us": cpu, "errors": errors} for cpu in cpus]

    return {"base": {"by_id": side(base_cpu, 0)}, "head": {"by_id": side(head_cpu, head_errors)}}


def test_summary_holds_medians_their_ratio_and_each_rounds_pair() -> None:
    cell = summarise(_runs([100, 400, 110], [120, 121, 500]))["by_id"]
    assert cell["base"]["cpu_us"] == 110
    assert cell["head"]["cpu_us"] == 121
    assert cell["ratio"]["cpu_us"] == pytest.approx(1.1)
    assert cell["base"]["cpu_us_spread"] == pytest.approx(300 / 110)
    assert cell["round_ratios"]["cpu_us"] == pytest.approx([1.2, 121 / 400, 500 / 110])


def test_gate_names_a_workload_whose_cpu_per_request_rose_above_the_limit() -> None:
    failures = regressions(summarise(_runs([100, 100, 100], [108, 108, 108])), fail_above=5)
    assert failures == ["by_id: median CPU per request 108 us on head, 100 us on base: +8.0 % "
                        "(limit +5 %)"]  # fmt: skip


@pytest.mark.parametrize(
    ("head_cpu", "fail_above"),
    [([104, 104, 104], 5), ([90, 90, 90], 0), ([100, 100, 100], 0)],
    ids=["rise-within-limit", "faster", "unchanged-at-zero-limit"],
)
def test_gate_passes_a_workload_within_the_limit(head_cpu: list[float], fail_above: float) -> None:
    assert regressions(summarise(_runs([100, 100, 100], head_cpu)), fail_above) == []


def test_gate_refuses_a_head_that_answered_with_errors_however_cheap() -> None:
    failures = regressions(summarise(_runs([100, 100, 100], [50, 50, 50], head_errors=3)), 5)
    assert failures == ["by_id: 9 error answers or socket errors on head"]
