"""One scenario of `make loadtest`: the closed-loop sweep and its knee, then the SLO capacity
search, printed step by step and judged against the scenario's budget."""

import statistics
from dataclasses import asdict, replace
from typing import Any

from .. import report
from ..drive import Engine, Step, evidence
from ..plan import SCENARIOS, Budget
from ..report import say
from .knee import CLIENT_CPU_SATURATED, SERVER_CPU_SATURATED, Point, Verdict, judge
from .slo import Limits, Plan, passes, search
from .verdict import Outcome, check

WARMUP_CONCURRENCY = 8


def sweep(
    engine: Engine,
    name: str,
    budget: Budget,
    capacity_rps: float,
    client_cores: int,
    metrics_url: str | None = None,
) -> dict[str, Any]:
    mix = SCENARIOS[name]
    limits = budget.of(name)
    sweep = budget.sweep
    if sweep.warmup_seconds > 0:
        engine.run(mix, concurrency=WARMUP_CONCURRENCY, duration=sweep.warmup_seconds)
    say(f"\n{name}\n{report.header()}")
    steps: list[Step] = []
    for concurrency in sweep.concurrency:
        steps.append(engine.run(mix, concurrency=concurrency, duration=sweep.step_seconds))
        say(report.row(asdict(steps[-1])))
    points = [
        Point(step.concurrency or 0, step.rps, step.client_cpu, step.server_cpu, step.p99_ms)
        for step in steps
    ]
    verdict, index = judge(points, capacity_rps, client_cores)
    knee = steps[index]
    say(f"{verdict}: {knee.rps:,.0f} RPS at {knee.concurrency} concurrent")
    knee_rps = knee.rps if verdict is not Verdict.CLIENT_BOUND else 0.0
    found = _search(engine, name, budget, knee_rps, client_cores, metrics_url)
    serving = (
        _at_serving_rate(engine, name, budget, found["slo_rps"], metrics_url)
        if found["slo_rps"]
        else None
    )
    judged = [*steps[: index + 1], *found["repeats"]]
    requests = sum(step.requests for step in judged)
    error_rate = sum(step.errors for step in judged) / requests if requests else 1.0
    outcome = Outcome(
        verdict=verdict,
        slo_rps=found["slo_rps"],
        error_rate=error_rate,
        client_bound=found["client_bound"],
    )
    return {
        "budget": asdict(limits),
        "steps": [asdict(step) for step in steps],
        "verdict": str(verdict),
        "knee_index": index,
        "search": found
        | {
            "trials": [asdict(step) for step in found["trials"]],
            "repeats": [asdict(step) for step in found["repeats"]],
        },
        "serving": serving,
        "error_rate": error_rate,
        "misses": check(name, limits, outcome),
    }


def _search(
    engine: Engine,
    name: str,
    budget: Budget,
    knee_rps: float,
    client_cores: int,
    metrics_url: str | None,
) -> dict[str, Any]:
    """The SLO capacity of one scenario (loadtest/search/slo.py), printed trial by trial, each with
    the service's own suspects over it when its /metrics is known (loadtest/drive/evidence.py)."""
    limits, plan = budget.of(name), budget.search
    checked = Limits(limits.max_p99_ms, limits.max_error_rate)
    start = plan.start_fraction * knee_rps if knee_rps > 0 else limits.min_rps
    passed: list[Step] = []  # the trials within budget, for the baseline of what moved

    def trial(rate: float) -> Step:
        before = evidence.scrape(metrics_url) if metrics_url else None
        step = engine.run(
            SCENARIOS[name], rate=rate, duration=plan.step_seconds, connections=plan.connections
        )
        ok = passes(step, checked)
        if metrics_url and before is not None:
            seen = evidence.between(before, evidence.scrape(metrics_url), plan.step_seconds)
            seen["stolen_pct"] = step.stolen
            seen["stolen_elsewhere_pct"] = step.stolen_elsewhere
            if not ok:  # which suspects moved against the lowest passing trial
                lowest = min(passed, key=lambda other: other.rate or 0.0, default=None)
                seen["moved"] = evidence.moved(seen, lowest.evidence if lowest else None)
            step = replace(step, evidence=seen)
        if ok:
            passed.append(step)
        note = "pass" if ok else "FAIL"
        say(report.row(asdict(step), f"{note}  {evidence.describe(step.evidence)}"))
        return step

    say(
        f"SLO capacity search: p99 <= {limits.max_p99_ms:g} ms, errors <= {limits.max_error_rate:.2%}, {plan.step_seconds:g} s a trial over {plan.connections} connections"
    )
    found = search(trial, start, checked, Plan(plan.growth, plan.precision, plan.repeats))
    spread = found.spread()
    if found.slo_rps is None:
        say("SLO capacity: none (no rate met the budget)")
    elif spread:
        say(
            f"SLO capacity: {found.slo_rps:,.0f} RPS; {len(found.repeats)} repeats, p99 {spread['p99_min_ms']:.1f}"
            f" .. {spread['p99_max_ms']:.1f} ms, client CPU up to {spread['client_cpu_max']:.0f} %"
        )
    return {
        "slo_rps": round(found.slo_rps, 1) if found.slo_rps is not None else None,
        "start_rps": round(start, 1),
        "step_seconds": plan.step_seconds,
        "connections": plan.connections,
        "spread": spread,
        "client_bound": _client_bound(found.trials, checked, client_cores),
        "trials": found.trials,
        "repeats": found.repeats,
    }


def _at_serving_rate(
    engine: Engine, name: str, budget: Budget, slo_rps: float, metrics_url: str | None
) -> dict[str, Any]:
    """The tail where the capacity report says to serve (serving_fraction of the SLO capacity):
    the search's trial length and connections, run as often as its repeats, each with the
    service's own suspects over it. Reported, not judged: the budget is the SLO capacity's."""
    limits, plan = budget.of(name), budget.search
    rate = slo_rps * limits.serving_fraction
    runs: list[Step] = []
    for _ in range(max(1, plan.repeats)):
        before = evidence.scrape(metrics_url) if metrics_url else None
        step = engine.run(
            SCENARIOS[name], rate=rate, duration=plan.step_seconds, connections=plan.connections
        )
        if metrics_url and before is not None:
            seen = evidence.between(before, evidence.scrape(metrics_url), plan.step_seconds)
            step = replace(step, evidence=seen)
        runs.append(step)
        note = f"at {limits.serving_fraction:.0%}  {evidence.describe(step.evidence)}"
        say(report.row(asdict(step), note))
    p99s = sorted(step.p99_ms for step in runs)
    say(
        f"at {limits.serving_fraction:.0%} of the SLO capacity ({rate:,.0f} RPS): p99"
        f" {p99s[0]:.1f} .. {p99s[-1]:.1f} ms over {len(runs)} runs"
    )
    return {
        "fraction": limits.serving_fraction,
        "rate": round(rate, 1),
        "p99_median_ms": round(statistics.median(p99s), 2),
        "runs": [asdict(step) for step in runs],
    }


def _client_bound(trials: list[Step], limits: Limits, client_cores: int) -> bool:
    """The lowest rate that failed the budget failed with the client saturated and the server
    not: the ceiling the search found was the client's."""
    failed = sorted(
        (step for step in trials if not passes(step, limits)), key=lambda step: step.rate or 0.0
    )
    if not failed:
        return False
    first = failed[0]
    return first.client_cpu >= CLIENT_CPU_SATURATED * 100 * client_cores and (
        first.server_cpu is not None and first.server_cpu < SERVER_CPU_SATURATED
    )
