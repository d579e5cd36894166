"""The verdict where it lands: the rate the capacity report tells the autoscaler to serve.

The SLO capacity is measured at the edge of the budget; the Helm values serve `serving_fraction`
of it. A capacity counts only when every run at its serving rate holds the budget (p99 and
errors), every time: otherwise the capacity claimed steps down by `growth` and the serving rate
is run again, at most `MAX_STEPS_DOWN` times, the last to the budget's own rate, so the Helm
values come from a rate whose serving runs held, or from none. Each attempt is kept, to be
shown in the report.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from ..drive import Step
from .slo import Limits, passes

MAX_STEPS_DOWN = 3


@dataclass
class Attempt:
    """The runs at `rate`, the serving rate of a claimed capacity `capacity_rps`."""

    capacity_rps: float
    rate: float
    runs: list[Step]

    def held(self, limits: Limits) -> bool:
        return bool(self.runs) and all(passes(step, limits) for step in self.runs)


@dataclass
class Serving:
    """Every attempt in order; `capacity_rps` the claimed capacity whose serving runs all held."""

    attempts: list[Attempt] = field(default_factory=list)
    capacity_rps: float | None = None

    @property
    def stepped_down(self) -> bool:
        return len(self.attempts) > 1


def confirm(
    run: Callable[[float], Step],
    slo_rps: float,
    *,
    fraction: float,
    runs: int,
    limits: Limits,
    budget_rps: float,
    growth: float,
) -> Serving:
    """Run `runs` steps at `fraction` x the claimed capacity, from the SLO capacity down."""
    found = Serving()
    capacity = slo_rps
    for left in range(MAX_STEPS_DOWN, -1, -1):
        rate = capacity * fraction
        attempt = Attempt(capacity, rate, [run(rate) for _ in range(max(1, runs))])
        found.attempts.append(attempt)
        if attempt.held(limits):
            found.capacity_rps = capacity
            return found
        if capacity <= budget_rps or not left:
            break  # the budget's own rate failed at its serving rate: nothing lower is claimed
        # The last step down is to the budget's own rate: "none" means even that one missed.
        capacity = max(capacity / growth, budget_rps) if left > 1 else budget_rps
    return found
