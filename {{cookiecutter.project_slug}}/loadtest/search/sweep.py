"""One scenario of `make loadtest`: the closed-loop sweep and its knee, the SLO capacity search,
then the runs at the serving rate (stepping the capacity down until they hold), printed step by
step and judged against the scenario's budget."""

import statistics
from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from .. import report
from ..drive import Engine, Observer, Step, describe, moved
from ..plan import SCENARIOS, Budget
from ..report import say
from .knee import CLIENT_CPU_SATURATED, SERVER_CPU_SATURATED, Point, Verdict, judge
from .serving import confirm
from .slo import Limits, Plan, passes, search
from .verdict import Outcome, check

WARMUP_CONCURRENCY = 8


def sweep(
    engine: Engine,
    name: str,
    budget: Budget,
    capacity_rps: float,
    client_cores: int,
    observer: Observer,
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
    passed: list[Step] = []  # the steps within budget, for the baseline of what moved
    trial = _observed(engine, name, budget, observer, passed)
    found = _search(trial, name, budget, knee_rps, client_cores)
    serving = _at_serving_rate(trial, name, budget, found["slo_rps"]) if found["slo_rps"] else None
    judged = [*steps[: index + 1], *found["repeats"]]
    measured = [*steps, *found["trials"], *found["repeats"]]
    peak_rss = highest_peak_rss(
        [asdict(step) for step in measured] + (serving or {}).get("runs", [])
    )
    at_serving = serving["peak_rss_mib"] if serving else None
    say(f"server peak RSS: {_mib(peak_rss)}, {_mib(at_serving)} at the serving rate")
    requests = sum(step.requests for step in judged)
    error_rate = sum(step.errors for step in judged) / requests if requests else 1.0
    outcome = Outcome(
        verdict=verdict,
        slo_rps=found["slo_rps"],
        error_rate=error_rate,
        client_bound=found["client_bound"],
        held_rps=serving["capacity_rps"] if serving else None,
        serving_tried=tuple(attempt["rate"] for attempt in serving["attempts"]) if serving else (),
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
        # What the capacity report sizes the pod from: a capacity whose serving runs all held,
        # and the server's peak RSS over every step of the scenario.
        "capacity_rps": serving["capacity_rps"] if serving else None,
        "peak_rss_mib": peak_rss,
        "error_rate": error_rate,
        "misses": check(name, limits, outcome),
    }


def _observed(
    engine: Engine, name: str, budget: Budget, observer: Observer, passed: list[Step]
) -> Callable[[float, str], Step]:
    """One open-loop step at a rate, observed (loadtest/drive/observe.py), printed with a note;
    a miss says what moved against the lowest passing step."""
    limits, plan = budget.of(name), budget.search
    checked = Limits(limits.max_p99_ms, limits.max_error_rate)

    def trial(rate: float, note: str) -> Step:
        step = observer.run(
            lambda: engine.run(
                SCENARIOS[name], rate=rate, duration=plan.step_seconds, connections=plan.connections
            )
        )
        ok = passes(step, checked)
        if ok:
            passed.append(step)
        elif step.evidence is not None:
            lowest = min(passed, key=lambda other: other.rate or 0.0, default=None)
            seen = step.evidence | {
                "moved": moved(step.evidence, lowest.evidence if lowest else None)
            }
            step = replace(step, evidence=seen)
        say(
            report.row(
                asdict(step), f"{note or ('pass' if ok else 'FAIL')}  {describe(step.evidence)}"
            )
        )
        return step

    return trial


def _search(
    trial: Callable[[float, str], Step],
    name: str,
    budget: Budget,
    knee_rps: float,
    client_cores: int,
) -> dict[str, Any]:
    """The SLO capacity of one scenario (loadtest/search/slo.py), printed trial by trial, each with
    what was measured around it (loadtest/drive/observe.py)."""
    limits, plan = budget.of(name), budget.search
    checked = Limits(limits.max_p99_ms, limits.max_error_rate)
    start = plan.start_fraction * knee_rps if knee_rps > 0 else limits.min_rps
    say(
        f"SLO capacity search: p99 <= {limits.max_p99_ms:g} ms, errors <= {limits.max_error_rate:.2%}, {plan.step_seconds:g} s a trial over {plan.connections} connections"
    )
    searching = Plan(plan.growth, plan.precision, plan.repeats)
    found = search(lambda rate: trial(rate, ""), start, checked, searching, limits.min_rps)
    spread = found.spread()
    if found.slo_rps is None:
        say("SLO capacity: none (no rate met the budget, the budget's own rate included)")
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
        "confirmed_at": [round(rate, 1) for rate in found.confirmed_at],
        "client_bound": _client_bound(found.trials, checked, client_cores),
        "trials": found.trials,
        "repeats": found.repeats,
    }


def _at_serving_rate(
    trial: Callable[[float, str], Step], name: str, budget: Budget, slo_rps: float
) -> dict[str, Any]:
    """The verdict where the capacity report says to serve (loadtest/search/serving.py): every
    run at serving_fraction of the capacity holds the budget, else the capacity steps down."""
    limits, plan = budget.of(name), budget.search
    fraction = limits.serving_fraction
    found = confirm(
        lambda rate: trial(rate, f"at {fraction:.0%}"),
        slo_rps,
        fraction=fraction,
        runs=plan.repeats,
        limits=Limits(limits.max_p99_ms, limits.max_error_rate),
        budget_rps=limits.min_rps,
        growth=plan.growth,
    )
    attempts = []
    for attempt in found.attempts:
        p99s = sorted(step.p99_ms for step in attempt.runs)
        held = attempt.held(Limits(limits.max_p99_ms, limits.max_error_rate))
        say(
            f"at {fraction:.0%} of {attempt.capacity_rps:,.0f} RPS ({attempt.rate:,.0f} RPS): p99"
            f" {p99s[0]:.1f} .. {p99s[-1]:.1f} ms over {len(p99s)} runs: {'held' if held else 'MISSED'}"
        )
        attempts.append(
            {
                "capacity_rps": round(attempt.capacity_rps, 1),
                "rate": round(attempt.rate, 1),
                "held": held,
                "p99_median_ms": round(statistics.median(p99s), 2),
                "runs": len(attempt.runs),
            }
        )
    last = found.attempts[-1]
    return {
        "fraction": fraction,
        "rate": round(last.rate, 1),
        "p99_median_ms": attempts[-1]["p99_median_ms"],
        "peak_rss_mib": highest_peak_rss([asdict(step) for step in last.runs]),
        "capacity_rps": round(found.capacity_rps, 1) if found.capacity_rps else None,
        "attempts": attempts,
        "runs": [asdict(step) for attempt in found.attempts for step in attempt.runs],
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


def highest_peak_rss(steps: list[dict[str, Any]]) -> float | None:
    """The highest of the steps' server peak RSS (MiB); None when no step has one."""
    return max(
        (step["server_peak_rss_mib"] for step in steps if step.get("server_peak_rss_mib")),
        default=None,
    )


def _mib(value: float | None) -> str:
    return "not measured" if value is None else f"{value:,.1f} MiB"
