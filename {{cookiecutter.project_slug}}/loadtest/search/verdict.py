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
    if outcome.error_rate > budget.max_error_rate:
        misses.append(
            f"MISS {name}: error rate {outcome.error_rate:.2%} > budget {budget.max_error_rate:.2%}"
        )
    return misses
