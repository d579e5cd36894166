"""The regression gate's verdict (loadtest/gate/figures.py), on given runs."""

from loadtest.gate.figures import Runs, regressions, summarise, table


def _run(cpu_us: float, errors: int = 0) -> dict[str, float]:
    return {"cpu_us": cpu_us, "rps": 1000.0, "requests": 1000.0, "errors": errors}


def _runs(base: list[float], head: list[float], head_errors: int = 0) -> Runs:
    return {
        "base": {"items.by_id": [_run(us) for us in base]},
        "head": {"items.by_id": [_run(us, head_errors) for us in head]},
    }


def test_the_gate_judges_the_median_of_each_rounds_head_over_base() -> None:
    # One round's pair is far off (a neighbour in that round only): the median ignores it.
    summary = summarise(_runs([100, 200, 100, 100, 100], [104, 400, 103, 106, 96]))
    cell = summary["items.by_id"]
    assert cell["ratio"] == 1.04
    assert cell["round_ratios"] == [1.04, 2.0, 1.03, 1.06, 0.96]
    assert regressions(summary, margin=10) == []


def test_a_scenario_dearer_than_the_margin_fails_naming_it_and_by_how_much() -> None:
    summary = summarise(_runs([100, 100, 100], [125, 120, 130]))
    (failure,) = regressions(summary, margin=10)
    assert failure.startswith("items.by_id costs +25.0 % server CPU per request")
    assert "over the margin of +10 %" in failure
    assert "SLOWER" in table(summary, margin=10)


def test_a_scenario_within_the_margin_passes_and_errors_on_head_fail_it() -> None:
    assert regressions(summarise(_runs([100, 100, 100], [109, 108, 110])), margin=10) == []
    (failure,) = regressions(summarise(_runs([100], [90], head_errors=3)), margin=10)
    assert failure == "items.by_id: 3 error answers on head"
