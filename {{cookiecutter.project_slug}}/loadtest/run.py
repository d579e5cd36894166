"""`make loadtest`: seed, measure the client, sweep each scenario and find its knee, search its SLO
capacity open loop, then report, size the pod and judge the budget."""

import contextlib
import os
import statistics
import sys
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import crosscheck, project, report, service
from .budget import Budget, Outcome, check
from .capacity import Capacity, describe, size, write_helm_values
from .engine import Engine, Step
from .knee import CLIENT_CPU_SATURATED, SERVER_CPU_SATURATED, Point, Verdict, client_capacity, judge
from .scenarios import PROBE, SCENARIOS
from .search import Limits, Plan, passes, search

PROBE_CONCURRENCY = 64
WARMUP_CONCURRENCY = 8


def _say(line: str) -> None:
    print(line, flush=True)


def _sweep(
    engine: Engine, name: str, budget: Budget, capacity_rps: float, client_cores: int
) -> dict[str, Any]:
    mix = SCENARIOS[name]
    limits = budget.scenarios[name]
    sweep = budget.sweep
    if sweep.warmup_seconds > 0:
        engine.run(mix, concurrency=WARMUP_CONCURRENCY, duration=sweep.warmup_seconds)
    _say(f"\n{name}\n{report.header()}")
    steps: list[Step] = []
    for concurrency in sweep.concurrency:
        steps.append(engine.run(mix, concurrency=concurrency, duration=sweep.step_seconds))
        _say(report.row(asdict(steps[-1])))
    points = [
        Point(step.concurrency or 0, step.rps, step.client_cpu, step.server_cpu, step.p99_ms)
        for step in steps
    ]
    verdict, index = judge(points, capacity_rps, client_cores)
    knee = steps[index]
    _say(f"{verdict}: {knee.rps:,.0f} RPS at {knee.concurrency} concurrent")
    found = _search(
        engine, name, budget, knee.rps if verdict is not Verdict.CLIENT_BOUND else 0.0, client_cores
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
        "error_rate": error_rate,
        "misses": check(name, limits, outcome),
    }


def _search(
    engine: Engine, name: str, budget: Budget, knee_rps: float, client_cores: int
) -> dict[str, Any]:
    """The SLO capacity of one scenario (loadtest/search.py), printed trial by trial."""
    limits, plan = budget.scenarios[name], budget.search
    checked = Limits(limits.max_p99_ms, limits.max_error_rate)
    start = plan.start_fraction * knee_rps if knee_rps > 0 else limits.min_rps

    def trial(rate: float) -> Step:
        step = engine.run(
            SCENARIOS[name], rate=rate, duration=plan.step_seconds, connections=plan.connections
        )
        _say(report.row(asdict(step), "pass" if passes(step, checked) else "FAIL"))
        return step

    _say(
        f"SLO capacity search: p99 <= {limits.max_p99_ms:g} ms, errors <= {limits.max_error_rate:.2%}, {plan.step_seconds:g} s a trial over {plan.connections} connections"
    )
    found = search(trial, start, checked, Plan(plan.growth, plan.precision, plan.repeats))
    spread = found.spread()
    if found.slo_rps is None:
        _say("SLO capacity: none (no rate met the budget)")
    elif spread:
        _say(
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


def capacity_from(results: dict[str, Any], budget: Budget) -> Capacity | None:
    """Pod sizing from the capacity scenario's SLO capacity (or the first scenario with one)."""
    scenarios = results["scenarios"]
    order = [budget.capacity.scenario, *scenarios]
    for name in order:
        scenario = scenarios.get(name)
        if (
            scenario
            and scenario["verdict"] != Verdict.CLIENT_BOUND
            and scenario["search"]["slo_rps"]
        ):
            knee = scenario["steps"][scenario["knee_index"]]
            repeats = scenario["search"]["repeats"]
            return size(
                scenario=name,
                slo_rps=scenario["search"]["slo_rps"],
                knee_rps=knee["rps"],
                knee_concurrency=knee["concurrency"],
                serving_fraction=scenario["budget"]["serving_fraction"],
                serving_p50_ms=statistics.median(step["p50_ms"] for step in repeats),
                max_p99_ms=scenario["budget"]["max_p99_ms"],
                assumptions=budget.capacity,
            )
    return None


def _wrk_check(
    engine: Engine,
    target: service.Target,
    ids: list[int],
    scenario: dict[str, Any],
    step_seconds: float,
    threads: int,
) -> dict[str, Any]:
    """This engine and wrk alternately (engine, wrk, engine, wrk, engine) at the knee concurrency,
    within a minute or so; medians compared, so that one noisy run cannot decide."""
    concurrency = scenario["steps"][scenario["knee_index"]]["concurrency"]
    seconds = crosscheck.whole_seconds(step_seconds)
    engine_runs: list[float] = []
    wrk_runs: list[dict[str, float]] = []
    for turn in range(5):
        if turn % 2 == 0:
            engine_runs.append(
                engine.run(SCENARIOS["by_id"], concurrency=concurrency, duration=seconds).rps
            )
        else:
            wrk_runs.append(
                crosscheck.wrk_by_id(
                    target.url,
                    project.PREFIX,
                    ids,
                    concurrency=concurrency,
                    seconds=seconds,
                    threads=threads,
                )
            )
    engine_rps = statistics.median(engine_runs)
    wrk_rps = statistics.median(run["rps"] for run in wrk_runs)
    ratio = engine_rps / wrk_rps if wrk_rps else 0.0
    _say(
        f"\nwrk cross-check at {concurrency}: engine {engine_runs} RPS, wrk {[round(run['rps'], 1) for run in wrk_runs]} RPS"
    )
    return {
        "concurrency": concurrency,
        "seconds": seconds,
        "engine_rps": round(engine_rps, 1),
        "engine_runs_rps": engine_runs,
        "wrk_rps": round(wrk_rps, 1),
        "wrk_runs_rps": [round(run["rps"], 1) for run in wrk_runs],
        "wrk_errors": sum(run["errors"] for run in wrk_runs),
        "ratio": round(ratio, 4),
        "agree": abs(ratio - 1) <= crosscheck.AGREEMENT,
    }


def main(args: Any, budget: Budget) -> int:
    names = args.scenarios or list(budget.scenarios)
    unknown = [name for name in names if name not in SCENARIOS or name not in budget.scenarios]
    if unknown:
        _say(f"unknown scenario(s) {unknown}: choose from {sorted(budget.scenarios)}")
        return 2
    database_url = os.environ.get("DATABASE_URL")
    if not args.url and not database_url:
        _say(
            "DATABASE_URL is not set: run `make loadtest` (it starts a throwaway PostgreSQL) or pass --url"
        )
        return 2
    pin = not args.no_pin and not args.url and service.can_pin()
    client_cores = service.keep_client_off_server_core() if pin else service.cores()
    rows = budget.sweep.seed_rows
    with contextlib.ExitStack() as stack:
        if args.url:
            target = service.running(args.url)
            ids = (
                service.seed(database_url, rows)
                if database_url
                else service.seed_over_http(target.url, rows)
            )
        else:
            assert database_url is not None
            ids = service.seed(database_url, rows)
            most = max(budget.sweep.concurrency)
            target = stack.enter_context(
                service.started(database_url, max_concurrency=most, pin=pin)
            )
        processes = args.processes or max(2, len(client_cores))
        engine = stack.enter_context(
            Engine(
                target.url,
                prefix=project.PREFIX,
                ids=ids,
                processes=processes,
                server_pid=target.pid,
            )
        )
        _say(
            f"target {target.url} (server {target.pinned}); {len(ids):,} seeded rows; client: {processes} processes on cores {client_cores}"
        )
        probe = engine.run(PROBE, concurrency=PROBE_CONCURRENCY, duration=budget.sweep.step_seconds)
        capacity_rps = client_capacity(probe.rps, probe.client_cpu, len(client_cores))
        _say(
            f"client capacity: {capacity_rps:,.0f} RPS (probe: {probe.rps:,.0f} RPS on /healthz at {PROBE_CONCURRENCY} concurrent,"
            f" client CPU {probe.client_cpu:.0f} %, server CPU {probe.server_cpu} %)"
        )
        results: dict[str, Any] = {
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "target": asdict(target) | {"started_here": not args.url},
            "client": {
                "processes": processes,
                "cores": client_cores,
                "capacity_rps": round(capacity_rps),
                "probe": asdict(probe),
            },
            "scenarios": {},
        }
        for name in names:
            results["scenarios"][name] = _sweep(
                engine, name, budget, capacity_rps, len(client_cores)
            )
        by_id = results["scenarios"].get("by_id")
        if (
            not args.no_wrk
            and crosscheck.available()
            and by_id
            and by_id["verdict"] != Verdict.CLIENT_BOUND
        ):
            results["wrk_check"] = _wrk_check(
                engine, target, ids, by_id, budget.sweep.step_seconds, len(client_cores)
            )
    return finish(results, budget, args)


def finish(results: dict[str, Any], budget: Budget, args: Any) -> int:
    misses = [miss for scenario in results["scenarios"].values() for miss in scenario["misses"]]
    results["misses"] = misses
    results["passed"] = not misses
    capacity = capacity_from(results, budget)
    results["capacity"] = capacity.as_dict() if capacity else None
    results["capacity_text"] = describe(capacity) if capacity else None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    paths = report.write(results, Path(args.results), stamp)
    _say("")
    if capacity:
        _say(describe(capacity))
        if args.write_helm_values:
            written = write_helm_values(
                capacity, f"loadtest/results/{paths['json'].name}", Path(args.helm_values)
            )
            _say(f"wrote {written}")
    _say(f"\nresults: {paths['json']}\nreport:  {paths['md']}\nchart:   {paths['png']}\n")
    for miss in misses:
        _say(miss)
    _say("budget met" if not misses else f"budget missed: {len(misses)} item(s)")
    return 0 if not misses else 1


def with_overrides(budget: Budget, args: Any) -> Budget:
    """The sweep of budget.toml with the command line's overrides (shorter steps, fewer of them)."""
    changes: dict[str, Any] = {}
    if args.concurrency:
        changes["concurrency"] = tuple(sorted(int(value) for value in args.concurrency.split(",")))
    for key in ("step_seconds", "warmup_seconds", "seed_rows"):
        if getattr(args, key) is not None:
            changes[key] = getattr(args, key)
    searching: dict[str, Any] = {}
    if args.search_seconds is not None:
        searching["step_seconds"] = args.search_seconds
    if args.repeats is not None:
        searching["repeats"] = args.repeats
    return replace(
        budget, sweep=replace(budget.sweep, **changes), search=replace(budget.search, **searching)
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run `python -m loadtest`")
