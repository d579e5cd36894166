"""`make bench-keyset`: what a list page costs at depth 1 and at depth 5,000 on a million rows.

Bakes a service whose resource marks a text, a money, an enum and a timestamp field `:filter:sort`
(or takes any bake whose first resource marks `:sort` fields: `python -m bench.keyset_depth
--project <bake>`), migrates a throwaway PostgreSQL, seeds 1,000,000 rows (the load test's seed
statement) and ANALYZEs. Then, for the id order, each sort order and a filtered sorted page, it runs
the page's one statement (the service's own, from kit/keyset.py) with EXPLAIN (ANALYZE) at the first
page and at the page 5,000 pages of 20 rows deep (the cursor the walk would hold there), several
times each, and prints the median execution time and the buffers read: a keyset page deep in the
walk costs what the first one costs. Then it serves the bake as `make bench` serves "generated" (one
core for the server, one for PostgreSQL and wrk) and drives the scenario table's by-id, id-order
page and filtered page (`items.filtered`: an enum filter, sorted by a timestamp, descending) round
after round: the medians of wrk's requests/s and of the server's CPU per request.
"""

import argparse
import asyncio
import json
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import asyncpg
import psutil

from bench.bakes import load_defining
from bench.driver import LOAD_CORE, drive, machine, migrate, service_command, start_pinned
from bench.workloads import Workloads
from tests.baking import bake, load_dev_module, load_loadtest

# The first sortable field is what items.filtered sorts by (filtered_query in
# loadtest/plan/declared.py).
FIELDS = (
    "paid_at:timestamp?:filter:sort name:str(200):filter:sort"
    " kind:enum(retail|wholesale|internal):filter:sort price_cents:money:filter:sort"
    " quantity:int(>=0)=0"
)
PAGE = 20
KEY = b"bench"
WORKLOADS = ("by_id", "page", "filtered")
# The pages of docs/performance.md, on a bake of FIELDS; another bake's are derived (_cases).
CASES = {
    "id order (after)": {},
    "sort=name": {"sort": "name"},
    "sort=-price_cents": {"sort": "-price_cents"},
    "sort=-paid_at": {"sort": "-paid_at"},
    "kind=retail&sort=-paid_at": {"kind": "retail", "sort": "-paid_at"},
}  # operations of the bake's scenario table


async def _measure(
    url: str,
    keyset: Any,
    query: Any,
    cases: dict[str, dict[str, str]],
    depth: int,
    runs: int,
    table: str,
    columns: str,
) -> list[dict[str, Any]]:
    connection = await asyncpg.connect(url)
    results = []
    try:
        for case, params in cases.items():
            first = query.model_validate({**params, "limit": str(PAGE)})
            sort = params.get("sort")
            column = (sort or "id").removeprefix("-")
            direction = " DESC" if sort and sort.startswith("-") else ""
            where = " AND ".join(f"{c.column} = $1" for c, _ in first.filters()) or "true"
            values = [value for _, value in first.filters()]
            # The last row of page `depth`: where the walk's cursor (or after) stands.
            row = await connection.fetchrow(
                f"SELECT {column}::text AS value, id FROM {table} WHERE {where}"  # noqa: S608
                f" ORDER BY {column}{direction}, id{direction} OFFSET {depth * PAGE - 1} LIMIT 1",
                *values,
            )
            assert row is not None, f"{case}: fewer than {depth} pages of rows"
            pages = {"depth 1": first}
            if sort is None:
                pages[f"depth {depth}"] = query.model_validate(
                    {**params, "after": str(row["id"]), "limit": str(PAGE)}
                )
            else:
                cursor = keyset.make_cursor(first, row["value"], row["id"], KEY, table=table)
                pages[f"depth {depth}"] = query.model_validate(
                    {**params, "cursor": cursor, "limit": str(PAGE)}
                )
            for label, page in pages.items():
                text, arguments = keyset.page_statement(table, columns, page, KEY)
                times, buffers = [], []
                for _ in range(runs):
                    plan = json.loads(
                        await connection.fetchval(
                            f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {text}", *arguments
                        )
                    )[0]
                    times.append(plan["Execution Time"])
                    buffers.append(
                        plan["Plan"].get("Shared Hit Blocks", 0)
                        + plan["Plan"].get("Shared Read Blocks", 0)
                    )
                results.append(
                    {
                        "case": case,
                        "page": label,
                        "median_ms": statistics.median(times),
                        "buffers": statistics.median(buffers),
                    }
                )
                print(
                    f"{case:40} {label:11} {statistics.median(times):7.3f} ms  "
                    f"{statistics.median(buffers):5.0f} buffers",
                    flush=True,
                )
    finally:
        await connection.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--depth", type=int, default=5_000, help="pages of 20 deep")
    parser.add_argument("--runs", type=int, default=15, help="EXPLAIN ANALYZE runs per page")
    parser.add_argument("--rounds", type=int, default=3, help="wrk rounds per workload")
    parser.add_argument("--seconds", type=int, default=8, help="seconds per wrk run")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument(
        "--project", type=Path, help="a baked project whose first resource marks :sort fields "
        "(default: bake one with FIELDS)"
    )  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        project = args.project or bake(work, fields=FIELDS)
        devdb = load_dev_module(project, "devdb")
        os.sched_setaffinity(0, {LOAD_CORE})  # PostgreSQL and wrk inherit core 1 from here
        with devdb.ThrowawayPostgres(work / "pgdata") as postgres:
            migrate(project, postgres.url)
            results: dict[str, Any] = {"pages": asyncio.run(_run(project, postgres.url, args))}
            results["pg_version"] = asyncio.run(_version(postgres.url))
            port = devdb.free_port()
            server = start_pinned(
                service_command(project), project, postgres.url, port, work / "server.log"
            )
            try:
                results["workloads"] = _drive(project, port, server.pid, postgres.url, args)
            finally:
                server.terminate()
                server.wait(timeout=30)
    results["machine"] = machine(results.pop("pg_version"))
    print(json.dumps(results["machine"]))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


async def _version(url: str) -> str:
    connection = await asyncpg.connect(url)
    try:
        version: str = await connection.fetchval("SHOW server_version")
        return version
    finally:
        await connection.close()


def _drive(
    project: Path, port: int, pid: int, url: str, args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    workloads = Workloads(project, args.rows)
    base, server = f"http://127.0.0.1:{port}", psutil.Process(pid)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in WORKLOADS}
    for name in WORKLOADS:  # warm-up
        drive(workloads, server, base, name, database_url=url, seconds=2, connections=16)
    for round_ in range(args.rounds):
        for name in WORKLOADS:
            run = drive(workloads, server, base, name, database_url=url, seconds=args.seconds,
                        connections=16)  # fmt: skip
            runs[name].append(run)
            print(f"round {round_ + 1} {name:9} {run['rps']:8.0f} rps  p99 {run['p99_ms']:6.2f} ms"
                  f"  {run['cpu_us']:6.0f} us CPU/request  errors {run['errors']:.0f}",
                  flush=True)  # fmt: skip
    medians = {
        name: {key: statistics.median(run[key] for run in done) for key in done[0]}
        for name, done in runs.items()
    }
    for name, figures in medians.items():
        print(f"median  {name:9} {figures['rps']:8.0f} rps  p99 {figures['p99_ms']:6.2f} ms"
              f"  {figures['cpu_us']:6.0f} us CPU/request")  # fmt: skip
    return medians


async def _seed(url: str, statement: str, table: str, rows: int) -> None:
    connection = await asyncpg.connect(url)
    try:
        for low in range(1, rows + 1, 100_000):
            await connection.execute(statement, low, min(low + 99_999, rows))
        await connection.execute(f"VACUUM ANALYZE {table}")
    finally:
        await connection.close()


async def _cases(url: str, query: Any, table: str, depth: int) -> dict[str, dict[str, str]]:
    """The id order, each sort order of the resource (the first one descending too), and a
    filtered page sorted by the first field descending, when a filter's value has `depth` pages."""
    cases: dict[str, dict[str, str]] = {"id order (after)": {}}
    sortable = list(query.sortable)
    for name in sortable:
        cases[f"sort={name}"] = {"sort": name}
    if not sortable:
        return cases
    cases[f"sort=-{sortable[0]}"] = {"sort": f"-{sortable[0]}"}
    # The `=` filter whose most common value has the most rows (an enum's, on the default bake).
    connection = await asyncpg.connect(url)
    try:
        best: tuple[int, str, str] | None = None
        for condition in (c for c in query.conditions if c.operator == "="):
            common = await connection.fetchrow(
                f"SELECT {condition.column}::text AS value, count(*) AS rows FROM {table}"  # noqa: S608
                f" WHERE {condition.column} IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
            )
            if common is not None and (best is None or common["rows"] > best[0]):
                best = (common["rows"], condition.parameter, common["value"])
    finally:
        await connection.close()
    if best is not None and best[0] >= depth * PAGE:
        cases[f"{best[1]}={best[2]}&sort=-{sortable[0]}"] = {
            best[1]: best[2],
            "sort": f"-{sortable[0]}",
        }
    return cases


async def _run(project: Path, url: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    # The service's modules first, then the bake's loadtest: it imports them, and gets these.
    keyset = load_defining(project, "page_statement")
    list_query = load_defining(project, "list_query").list_query
    resource = load_defining(project, "RESOURCES").RESOURCES[0]
    seed_rows = load_loadtest(project, "plan.declared").seed_rows

    await _seed(url, seed_rows(resource), resource.table, args.rows)
    columns = ", ".join(
        ["id", *resource.fields.model_fields, "created_at", "updated_at", "version"]
    )
    query = list_query(resource.fields)
    parameters = {c.parameter for c in query.conditions} | {"sort"}
    fits = all(
        params.keys() <= parameters
        and params.get("sort", "id").lstrip("-") in {"id", *query.sortable}
        for params in CASES.values()
    )
    cases = CASES if fits else await _cases(url, query, resource.table, args.depth)
    return await _measure(url, keyset, query, cases, args.depth, args.runs, resource.table, columns)


if __name__ == "__main__":
    main()
