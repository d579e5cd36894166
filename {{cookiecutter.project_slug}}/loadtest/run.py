"""`make loadtest`: seed, measure the client, sweep each scenario and find its knee, search its SLO
capacity open loop (loadtest/search/sweep.py), cross-check with wrk, then report, size the pod and judge
the budget."""

import contextlib
import os
import sys
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from . import report
from .drive import Engine, Observer, credentials, crosscheck, postgres, service, wrk
from .plan import (
    PROBE,
    SCENARIOS,
    Budget,
    HeadersError,
    given,
    kind_of,
    resource_of,
    resources_in,
    to_run,
)
from .report import say
from .search import (
    Verdict,
    capacity_from,
    client_capacity,
    describe_capacity,
    sweep,
    write_helm_values,
)

PROBE_CONCURRENCY = 64


def main(args: Any, budget: Budget) -> int:
    names = to_run(args.scenarios, budget)
    unknown = [name for name in names if name not in SCENARIOS or not budget.covers(name)]
    if unknown or not names:
        known = [name for name in SCENARIOS if budget.covers(name)]
        say(
            f"unknown scenario(s) {unknown}: choose from {known}"
            if known
            else "no scenario: serving/resources.py lists no resource"
        )
        return 2
    database_url = os.environ.get("DATABASE_URL")
    resources = resources_in(names)
    if not args.url and not database_url:
        say(
            "DATABASE_URL is not set: run `make loadtest` (it starts a throwaway PostgreSQL) or pass --url"
        )
        return 2
    pin = not args.no_pin and not args.url and service.can_pin()
    client_cores = service.keep_client_off_server_core() if pin else service.cores()
    with contextlib.ExitStack() as stack:
        try:
            headers = given(args.header)
            if args.url:
                target = service.running(args.url)
            else:
                headers, settings = stack.enter_context(credentials.for_started_service(headers))
                most = max(budget.sweep.concurrency)
                assert database_url is not None
                target = stack.enter_context(
                    service.started(database_url, max_concurrency=most, pin=pin, settings=settings)
                )
            ids = service.seed_ids(
                database_url, target.url, budget.sweep.seed_rows, headers, resources
            )
        except HeadersError as error:
            say(str(error))
            return 2
        processes = args.processes or max(2, len(client_cores))
        engine = stack.enter_context(
            Engine(
                target.url,
                ids=ids,
                processes=processes,
                server_pid=target.pid,
                server_core=service.SERVER_CORE if pin else None,
                headers=headers,
            )
        )
        say(
            f"target {target.url} (server {target.pinned}); {_seeded(ids)}; client: {processes} processes on cores {client_cores}"
        )
        probe = engine.run(PROBE, concurrency=PROBE_CONCURRENCY, duration=budget.sweep.step_seconds)
        capacity_rps = client_capacity(probe.rps, probe.client_cpu, len(client_cores))
        say(
            f"client capacity: {capacity_rps:,.0f} RPS (probe: {probe.rps:,.0f} RPS on /healthz at {PROBE_CONCURRENCY} concurrent,"
            f" client CPU {probe.client_cpu:.0f} %, server CPU {probe.server_cpu} %)"
        )
        database = _database(database_url)
        say(postgres.describe(database["settings"], database["fsync"]))
        observer = Observer(target.metrics_url, database_url, service.SERVER_CORE if pin else None)
        results: dict[str, Any] = {
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "target": asdict(target) | {"started_here": not args.url},
            "client": {
                "headers": sorted(headers),  # the names alone: a value may be a secret
                "idempotency_keys": bool(getattr(args, "idempotency_keys", False)),
                "processes": processes,
                "cores": client_cores,
                "capacity_rps": round(capacity_rps),
                "probe": asdict(probe),
            },
            "database": database,
            "host_loop_ms": observer.host.baseline_ms,
            "scenarios": {},
        }
        for name in names:
            if database_url and not args.url:  # a database of this run's own, not a shared one
                service.settle(database_url, resources)
            results["scenarios"][name] = sweep(
                engine, name, budget, capacity_rps, len(client_cores), observer
            )
        checked_name = next((name for name in names if kind_of(name) == crosscheck.KIND), None)
        checked = results["scenarios"].get(checked_name) if checked_name else None
        if (
            not args.no_wrk
            and wrk.available()
            and checked
            and checked["verdict"] != Verdict.CLIENT_BOUND
        ):
            concurrency = checked["steps"][checked["knee_index"]]["concurrency"]
            assert checked_name is not None
            found = crosscheck.cross_check(
                engine,
                checked_name,
                target.url,
                ids[resource_of(checked_name)],
                concurrency,
                budget.sweep.step_seconds,
                len(client_cores),
                headers,
            )
            say(
                f"\nwrk cross-check at {concurrency}: engine {found['engine_runs_rps']} RPS, wrk {found['wrk_runs_rps']} RPS"
            )
            results["wrk_check"] = found
    return finish(results, budget, args)


def _database(database_url: str | None) -> dict[str, Any]:
    """The database's settings that shape a write's tail and its disk's fsync time, read once."""
    if not database_url:
        return {"settings": {}, "fsync": {"skipped": "no DATABASE_URL"}}
    try:
        found = postgres.settings(database_url)
    except (OSError, asyncpg.PostgresError) as error:
        return {"settings": {}, "fsync": {"skipped": f"settings not read: {error}"}}
    return {"settings": found, "fsync": postgres.fsync_speed(found)}


def _seeded(ids: dict[str, list[int]]) -> str:
    return ", ".join(f"{len(seeded):,} seeded {resource}" for resource, seeded in ids.items())


def finish(results: dict[str, Any], budget: Budget, args: Any) -> int:
    misses = [miss for scenario in results["scenarios"].values() for miss in scenario["misses"]]
    results["misses"] = misses
    results["passed"] = not misses
    capacity = capacity_from(results, budget)
    results["capacity"] = capacity.as_dict() if capacity else None
    results["capacity_text"] = describe_capacity(capacity) if capacity else None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    paths = report.write(results, Path(args.results), stamp)
    say("")
    if capacity:
        say(describe_capacity(capacity))
        if args.write_helm_values:
            written = write_helm_values(
                capacity, f"loadtest/results/{paths['json'].name}", Path(args.helm_values)
            )
            say(f"wrote {written}")
    say(f"\nresults: {paths['json']}\nreport:  {paths['md']}\nchart:   {paths['png']}\n")
    if results.get("database"):
        say(postgres.describe(results["database"]["settings"], results["database"]["fsync"]))
    for miss in misses:
        say(miss)
    say("budget met" if not misses else f"budget missed: {len(misses)} item(s)")
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
