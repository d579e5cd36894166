"""`python -m loadtest.migrations [--rate N] [--seconds S] [--hold-seconds H]`: what
`make migrate-under-load` runs, on a database of its own created on DATABASE_URL's server."""

import argparse
import asyncio
import contextlib
import importlib
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg

from .. import project
from ..drive import Engine, credentials, service
from ..plan import BY_NAME, ENVIRONMENT, SCENARIOS, given, load, resource_of
from ..profile.run import MODEST_RATE, serving_rates
from ..report import say
from .phases import Migrations, go, phases
from .run import Outcome, run_phase

WARMUP_SECONDS = 2.0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadtest.migrations", description=__doc__)
    parser.add_argument("--budget", type=Path, default=project.BUDGET, help="budget file (TOML)")
    parser.add_argument("--results", type=Path, default=project.RESULTS, help="results folder")
    parser.add_argument("--scenario", help="the load (default: the first resource's mixed one)")
    parser.add_argument("--rate", type=float, help="requests/s (default: the serving rate)")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds a phase")
    parser.add_argument(
        "--hold-seconds", type=float, default=4.0, help="how long the long transaction lasts"
    )
    parser.add_argument("--seed-rows", type=int, help="rows in the table (default: the budget's)")
    parser.add_argument(
        "--phases",
        type=lambda value: [name for name in value.split(",") if name],
        help="comma-separated, of baseline,nullable,default,index,blocked (default: all)",
    )
    parser.add_argument(
        "--header", action="append", metavar="'NAME: VALUE'", help=f"after those of {ENVIRONMENT}"
    )
    return parser


async def _sql(url: str, statement: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextlib.contextmanager
def _scratch_database(server_url: str) -> Iterator[str]:
    name = f"migrate_under_load_{secrets.token_hex(4)}"
    asyncio.run(_sql(server_url, f'CREATE DATABASE "{name}"'))
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    finally:
        asyncio.run(_sql(server_url, f'DROP DATABASE "{name}" WITH (FORCE)'))


def _production_limits() -> dict[str, str]:
    """The admission limits the service runs with by default: a queue behind a blocked ALTER
    meets them as it would in production (the load test's own server raises them)."""
    fields = importlib.import_module(f"{project.PACKAGE}.settings").Settings.model_fields
    return {
        "MAX_IN_FLIGHT": str(fields["max_in_flight"].default),
        "LIMIT_CONCURRENCY": str(fields["limit_concurrency"].default),
    }


def _say_outcome(outcome: Outcome) -> None:
    step = outcome.step
    migrate = (
        "-"
        if outcome.migrate_code is None
        else (
            f"exit {outcome.migrate_code} after {outcome.migrate_seconds} s"
            if outcome.migrate_seconds is not None
            else f"exit {outcome.migrate_code}, after the step"
        )
    )
    say(
        f"  {outcome.phase}: {step.requests:,} requests, {step.errors} failed, p99 "
        f"{step.p99_ms:.1f} ms (limit {outcome.limit_ms:.0f}), max {step.max_ms:.1f} ms, client "
        f"CPU {step.client_cpu:.0f} %; "
        f"migrate {migrate}, {outcome.attempts} attempt(s) -> "
        f"{'held' if outcome.held else 'MISSED'}"
    )
    for line in outcome.report.splitlines():
        say(f"      {line}")


def main(args: argparse.Namespace) -> int:
    server_url = os.environ.get("DATABASE_URL")
    if not server_url:
        say("DATABASE_URL is not set: run `make migrate-under-load` (throwaway PostgreSQL)")
        return 2
    budget = load(args.budget)
    plural = resource_of(args.scenario) if args.scenario else next(iter(BY_NAME))
    scenario = args.scenario or f"{plural}.mixed"
    if scenario not in SCENARIOS:
        say(f"unknown scenario {scenario}: choose from {list(SCENARIOS)}")
        return 2
    rates, source = serving_rates(args.results)
    rate = args.rate or rates.get(scenario) or MODEST_RATE
    origin = (
        "--rate" if args.rate else f"serving rate in {source}" if scenario in rates else "modest"
    )
    table = BY_NAME[plural].table
    max_p99 = budget.of(scenario).max_p99_ms
    say(f"{scenario} at {rate:,.0f} requests/s ({origin}), {args.seconds:g} s a phase")
    outcomes: list[Outcome] = []
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(_scratch_database(server_url))
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="under-load-")))
        migrations = Migrations(folder)
        first = migrations.migrate({**os.environ, "DATABASE_URL": url})
        go(first)
        if first.wait() != 0:
            say(f"the project's migrations failed: {first.communicate()[1]}")
            return 1
        headers, settings = stack.enter_context(credentials.for_started_service(given(args.header)))
        target = stack.enter_context(
            service.started(
                url,
                max_concurrency=max(budget.sweep.concurrency),
                pin=service.can_pin(),
                settings={**settings, **_production_limits()},
            )
        )
        rows = budget.sweep.seed_rows if args.seed_rows is None else args.seed_rows
        ids = service.seed_ids(url, target.url, rows, headers, [plural])
        engine = stack.enter_context(
            Engine(target.url, ids=ids, processes=max(2, len(service.cores())),
                   server_pid=target.pid, headers=headers)
        )  # fmt: skip
        mix = SCENARIOS[scenario]
        engine.run(mix, rate=rate, duration=WARMUP_SECONDS)
        for phase in phases(table):
            if args.phases and phase.name not in args.phases:
                continue
            outcome = run_phase(
                phase, engine=engine, mix=mix, rate=rate, seconds=args.seconds,
                hold_seconds=args.hold_seconds, migrations=migrations, database_url=url,
                table=table, max_p99_ms=max_p99,
            )  # fmt: skip
            _say_outcome(outcome)
            outcomes.append(outcome)
    # A folder of its own: the load test's readers take every *.json of results/ for one of theirs.
    folder = args.results / "migrate-under-load"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"
    document = {"scenario": scenario, "rate": rate, "phases": [o.as_dict() for o in outcomes]}
    path.write_text(json.dumps(document, indent=2) + "\n")
    held = all(outcome.held for outcome in outcomes)
    shown = path.relative_to(project.ROOT) if path.is_relative_to(project.ROOT) else path
    say(f"{'every phase held' if held else 'a phase MISSED'}; {shown}")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main(_parser().parse_args()))
