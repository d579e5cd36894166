"""budget.toml: parsed as documented, and checked with one clear line per item missed."""

from pathlib import Path
from typing import Any

import pytest
from loadtest import project
from loadtest.plan.budget import ScenarioBudget, load, parse
from loadtest.search.knee import Verdict
from loadtest.search.verdict import Outcome, check

LIMITS = ScenarioBudget(min_rps=1000, max_p99_ms=50, max_error_rate=0.0, serving_fraction=0.7)


def _outcome(**changes: object) -> Outcome:
    values: dict[str, object] = {"verdict": Verdict.KNEE, "slo_rps": 1500.0, "error_rate": 0.0}
    return Outcome(**(values | changes))  # type: ignore[arg-type]


def test_the_shipped_budget_holds_the_1_core_defaults() -> None:
    budget = load(project.BUDGET)
    assert budget.scenarios["by_id"].min_rps == 1000
    assert budget.scenarios["page"].min_rps == 800
    assert budget.scenarios["create"].min_rps == 400
    assert {item.max_p99_ms for item in budget.scenarios.values()} == {50.0}
    assert {item.serving_fraction for item in budget.scenarios.values()} == {0.7}
    assert budget.scenarios["filtered"].min_rps == 600
    assert set(budget.scenarios) == {"by_id", "page", "filtered", "create", "patch", "mixed"}


def test_a_scenario_may_override_a_default(tmp_path: Path) -> None:
    path = tmp_path / "budget.toml"
    path.write_text(
        "[defaults]\nmax_p99_ms = 80\n[scenarios.slow]\nmin_rps = 5\nmax_p99_ms = 200\n"
    )
    budget = load(path)
    assert budget.scenarios["slow"].max_p99_ms == 200


def test_every_resources_scenario_is_judged_by_its_operations_budget_unless_it_has_its_own() -> (
    None
):
    budget = parse({
        "defaults": {"max_p99_ms": 80},
        "scenarios": {"page": {"min_rps": 800}, "by_id": {"min_rps": 1000}},
        "resources": {"orders": {"page": {"min_rps": 500}}},
    })  # fmt: skip
    assert budget.of("items.page") == budget.scenarios["page"]
    assert budget.of("orders.by_id") == budget.scenarios["by_id"]
    own = budget.of("orders.page")
    assert (own.min_rps, own.max_p99_ms) == (500, 80)  # the rest from [scenarios.page], [defaults]
    assert budget.covers("line_items.page")
    assert not budget.covers("orders.delete")


def test_a_resources_own_budget_is_checked_like_any_other() -> None:
    with pytest.raises(ValueError, match="max_p99_ms"):
        parse({
            "scenarios": {"page": {"min_rps": 1}},
            "resources": {"orders": {"page": {"max_p99_ms": -1}}},
        })  # fmt: skip


def test_a_serving_fraction_above_one_is_refused() -> None:
    with pytest.raises(ValueError, match="serving_fraction"):
        parse({"scenarios": {"x": {"min_rps": 1, "serving_fraction": 1.5}}})


def test_a_run_within_budget_has_no_miss() -> None:
    assert check("by_id", LIMITS, _outcome()) == []


def test_each_missed_item_gets_its_own_line() -> None:
    misses = check("by_id", LIMITS, _outcome(slo_rps=800.0, error_rate=0.02))
    assert misses == [
        "MISS by_id: SLO capacity 800 RPS (p99 <= 50 ms, errors <= 0.00%) < budget 1,000 RPS",
        "MISS by_id: error rate 2.00% > budget 0.00%",
    ]


def test_the_budget_is_judged_on_the_slo_capacity_not_the_knee() -> None:
    assert check("by_id", LIMITS, _outcome(slo_rps=1000.0)) == []
    (miss,) = check("by_id", LIMITS, _outcome(slo_rps=999.0))
    assert "SLO capacity 999 RPS" in miss


def test_a_client_bound_run_is_a_miss_not_a_pass() -> None:
    (miss,) = check("page", LIMITS, _outcome(verdict=Verdict.CLIENT_BOUND))
    assert miss.startswith("MISS page: client-bound")
    (search_miss,) = check("page", LIMITS, _outcome(client_bound=True))
    assert search_miss.startswith("MISS page: client-bound")


def test_a_run_where_no_rate_met_the_slo_says_so() -> None:
    (miss,) = check("by_id", LIMITS, _outcome(slo_rps=None))
    assert "no arrival rate met the SLO (p99 <= 50 ms" in miss


def test_the_shipped_budget_searches_with_repeats() -> None:
    search = load(project.BUDGET).search
    assert search.repeats >= 3
    assert 0 < search.precision <= 0.1
    assert search.growth > 1


@pytest.mark.parametrize(
    ("document", "named"),
    [
        ({"scenarios": {"a": {"min_rps": 1, "max_p99_ms": -5}}}, "max_p99_ms"),
        ({"scenarios": {"a": {"min_rps": "many"}}}, "min_rps"),
        ({"scenarios": {"a": {"min_rps": 1, "max_p99": 5}}}, "max_p99"),
        ({"scenarios": {"a": {"min_rps": 1}}, "search": {"growth": 0.5}}, "growth"),
        ({"scenarios": {"a": {"min_rps": 1}}, "sweep": {"concurrency": [0, 4]}}, "concurrency"),
    ],
    ids=["negative-p99", "not-a-number", "unknown-key", "growth-below-one", "zero-concurrency"],
)
def test_a_bad_budget_value_is_refused_naming_its_key(document: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        parse(document)
