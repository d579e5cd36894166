"""The budget check of one scenario: one clear line for each budget item missed."""

import dataclasses

from ..plan import ScenarioBudget
from .knee import Verdict


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the budget needs to know about one scenario's run."""

    verdict: Verdict  # of the closed-loop sweep: client-bound means the client set the ceiling
    slo_rps: float | None  # the SLO capacity; None when no rate met the p99 and error budget
    error_rate: float  # over the sweep up to the knee and the repeats at the SLO capacity
    client_bound: bool = False  # the search's client was saturated while the server was not
    # The capacity whose serving-rate runs all held (search/serving.py), and the serving rates
    # tried on the way down; () when none were run (no SLO capacity, or a caller of its own).
    held_rps: float | None = None
    serving_tried: tuple[float, ...] = ()


def check(name: str, budget: ScenarioBudget, outcome: Outcome) -> list[str]:
    """A line per budget item missed; empty when the scenario is within budget."""
    if outcome.verdict is Verdict.CLIENT_BOUND or outcome.client_bound:
        return [
            f"MISS {name}: client-bound: the load generator, not the service, set the ceiling;"
            " no capacity can be claimed (give the client more cores or use --url from another host)"
        ]
    misses = []
    slo = f"p99 <= {budget.max_p99_ms:g} ms, errors <= {budget.max_error_rate:.2%}"
    if outcome.slo_rps is None:
        misses.append(f"MISS {name}: no arrival rate met the SLO ({slo})")
    elif outcome.slo_rps < budget.min_rps:
        misses.append(
            f"MISS {name}: SLO capacity {outcome.slo_rps:,.0f} RPS ({slo})"
            f" < budget {budget.min_rps:,.0f} RPS"
        )
    elif outcome.serving_tried and outcome.held_rps is None:
        tried = ", ".join(f"{rate:,.0f}" for rate in outcome.serving_tried)
        misses.append(
            f"MISS {name}: at the serving rate the budget did not hold in every run"
            f" (tried {tried} RPS); no capacity is claimed"
        )
    elif outcome.held_rps is not None and outcome.held_rps < budget.min_rps:
        misses.append(
            f"MISS {name}: capacity whose serving runs held {outcome.held_rps:,.0f} RPS"
            f" < budget {budget.min_rps:,.0f} RPS"
        )
    if outcome.error_rate > budget.max_error_rate:
        misses.append(
            f"MISS {name}: error rate {outcome.error_rate:.2%} > budget {budget.max_error_rate:.2%}"
        )
    return misses
