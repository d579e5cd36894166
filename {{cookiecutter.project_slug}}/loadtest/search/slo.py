"""SLO capacity: the highest open-loop arrival rate one pod serves within its p99 and error budget.

THE SEARCH. Requests arrive at a fixed rate whatever the service does (open loop), over a fixed
pool of keep-alive connections like an ingress's, and each latency runs from the request's
scheduled start. A trial at a rate PASSES when its p99 is within `max_p99_ms` and its error rate
within `max_error_rate`; a trial that misses is run once more, and the rate FAILS only when both
miss (one stall of a shared machine would otherwise cap the search below the rate for good, since
nothing after it tries higher). From a starting rate the search steps up by `growth` while rates
pass (down while they fail) until one rate passes and the next fails, then bisects between the
two until they are within `precision` of each other. The last passing rate is then run `repeats`
more times: it is the SLO capacity when every repeat passes too (the verdict names the highest
rate whose repeats all held). Otherwise its repeats join the trials and the search steps down and
repeats again, by `precision` first and twice as far each time after up to half (a host that
slowed for a minute is outrun, not chased), halving on until the budget's own rate is the next
step: "none" then means that even the budget's rate failed its repeats. Once a rate's repeats
hold below one whose repeats missed, the search bisects between the two, repeats at each middle,
until they are within `precision`: the claim is the highest rate whose repeats all held, within
`precision` of the lowest whose repeats missed, however many unlucky repeats the steps down met
(without it, two missed confirmations on the way down cost 15 % of the claim and three cost
32 %, which was most of the spread between runs). The spread of the final repeats (their p99,
lowest to highest) is reported beside it, and every failed or superseded repeat stays in the
report's trials.

Why not the closed-loop knee: a closed loop slows down with the service (a client waits for each
answer), so it never sees the queue a real arrival stream builds; its knee moves with the noise of
the machine. The knee stays in the report as the diagnosis of where queueing starts.
"""

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from ..drive import Step

MAX_CONFIRMATIONS = 16  # the steps down and the bisection after them, bounded
MAX_TRIALS = 30  # a search that has not converged by now reports what it has


@dataclass(frozen=True)
class Limits:
    max_p99_ms: float
    max_error_rate: float


@dataclass(frozen=True)
class Plan:
    growth: float = 1.25
    precision: float = 0.05
    repeats: int = 3
    floor_rps: float = 10.0  # below this the service is declared unable to meet the budget


@dataclass
class Search:
    """What a search did: every trial in order, the confirmed rate and its repeats."""

    trials: list[Step] = field(default_factory=list)
    slo_rps: float | None = None
    repeats: list[Step] = field(default_factory=list)
    confirmed_at: list[float] = field(default_factory=list)  # each rate repeated, in order

    def spread(self) -> dict[str, float | None] | None:
        """The repeats at the SLO capacity: p99 (ms) lowest, median and highest, and the CPU of
        the client (all its processes, % of one core) and of the server."""
        if not self.repeats:
            return None
        p99 = [step.p99_ms for step in self.repeats]
        server = [step.server_cpu for step in self.repeats if step.server_cpu is not None]
        return {
            "p99_min_ms": min(p99),
            "p99_median_ms": statistics.median(p99),
            "p99_max_ms": max(p99),
            "client_cpu_max": max(step.client_cpu for step in self.repeats),
            "server_cpu_median": statistics.median(server) if server else None,
        }


def passes(step: Step, limits: Limits) -> bool:
    within_p99 = step.p99_ms <= limits.max_p99_ms  # False for NaN: no answer at all
    return step.requests > 0 and within_p99 and step.error_rate <= limits.max_error_rate


def search(
    trial: Callable[[float], Step],
    start_rps: float,
    limits: Limits,
    plan: Plan,
    budget_rps: float = 0.0,
) -> Search:
    """Find the SLO capacity with `trial(rate)` running one open-loop step at `rate`; when the
    repeats keep failing, the last confirmation is at `budget_rps` (the budget's own rate)."""
    result = Search()

    def run(rate: float) -> bool:
        for _ in range(2):  # a miss is tried again: the rate fails when both miss
            result.trials.append(trial(rate))
            if passes(result.trials[-1], limits):
                return True
        return False

    low, high = _bracket(run, max(start_rps, plan.floor_rps), plan)
    if low is None:
        return result
    while (
        high is not None and high - low > plan.precision * low and len(result.trials) < MAX_TRIALS
    ):
        middle = (low + high) / 2
        low, high = (middle, high) if run(middle) else (low, middle)
    missed: float | None = None  # the lowest rate whose repeats did not all hold
    step_down = plan.precision
    for _ in range(MAX_CONFIRMATIONS):
        repeats = [trial(low) for _ in range(plan.repeats)]
        result.confirmed_at.append(low)
        if all(passes(step, limits) for step in repeats):
            result.trials += result.repeats  # a lower rate that held, superseded by this one
            result.slo_rps, result.repeats = low, repeats
        else:
            result.trials += repeats  # a failed confirmation is shown with the trials
            missed = low
        if result.slo_rps is not None:
            if missed is None or missed - result.slo_rps <= plan.precision * result.slo_rps:
                break
            low = (result.slo_rps + missed) / 2
            continue
        if low == budget_rps:
            break  # the budget's own rate failed its repeats: nothing lower is claimed
        lower = low * (1 - step_down)
        # The budget's own rate is a step of its own, never skipped: a claim below it is no claim.
        low = budget_rps if lower < budget_rps < low else lower
        step_down = min(2 * step_down, 0.5)
        if low < plan.floor_rps:
            break
    return result


def _bracket(
    run: Callable[[float], bool], start: float, plan: Plan
) -> tuple[float | None, float | None]:
    """(a passing rate, the failing rate `growth` above it); (None, _) when nothing passes."""
    rate = start
    if run(rate):
        for _ in range(MAX_TRIALS):
            if not run(rate * plan.growth):
                return rate, rate * plan.growth
            rate *= plan.growth
        return rate, None  # never failed: the client's ceiling, not the service's
    while rate / plan.growth >= plan.floor_rps:
        rate /= plan.growth
        if run(rate):
            return rate, rate * plan.growth
    return None, rate
