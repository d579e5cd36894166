"""`make bench`: the generated service side by side with three reference apps, on one machine.

Bakes the default service, starts it (all production middleware on) and the reference apps in
bench/apps pinned to core 0, PostgreSQL and wrk on core 1, seeds 100k rows, then drives every app
with every workload, interleaving the apps round after round. Writes JSON, Markdown and a PNG.
"""

import argparse
import asyncio
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil

from bench.driver import LOAD_CORE, POOL_SIZE, SERVER_CORE, migrate, prepare
from bench.report import summarise, write_reports
from bench.workloads import NAMES, Workloads
from tests.baking import bake, load_dev_module, tool_env
from tests.serving import wait_until_answering

ROOT = Path(__file__).resolve().parents[1]
APPS = ("generated", "generated_log_off", "ceiling", "minimal", "baseline")
# Rows seeded ahead of each delete run, per second of it: more than any app deletes in a second.
DELETABLE_PER_SECOND = 40_000
_TUNED = ["--loop", "uvloop", "--http", "httptools", "--no-access-log", "--no-server-header",
          "--no-proxy-headers"]  # fmt: skip


def _commands(project: Path, port: int) -> dict[str, list[str]]:
    uvicorn = [sys.executable, "-m", "uvicorn", "--port", str(port)]
    return {
        "generated": [sys.executable, "-m", "inventory_service"],
        # The same service with ACCESS_LOG=off: the price of one access line per request.
        "generated_log_off": [sys.executable, "-m", "inventory_service"],
        "ceiling": [*uvicorn, *_TUNED, "bench.apps.ceiling:app"],
        "minimal": [*uvicorn, *_TUNED, "bench.apps.minimal_fastapi:app"],
        # uvicorn's defaults: asyncio loop (uvloop is opt-in on the command line), access log on.
        "baseline": [*uvicorn, "--loop", "asyncio", "bench.apps.baseline_orm:app"],
    }


def _start(
    name: str, project: Path, database_url: str, port: int, logs: Path
) -> subprocess.Popen[bytes]:
    env = tool_env(project, DATABASE_URL=database_url, PORT=str(port), POOL_SIZE=str(POOL_SIZE),
                   POOL_MIN_SIZE=str(POOL_SIZE), POOL_MAX_SIZE=str(POOL_SIZE), APP_ENV="prod",
                   METRICS_PORT="0")  # fmt: skip
    env["PYTHONPATH"] = f"{project / 'src'}{os.pathsep}{ROOT}"
    if name == "generated_log_off":
        env["ACCESS_LOG"] = "off"
    log = (logs / f"{name}.log").open("wb")
    command = ["taskset", "-c", str(SERVER_CORE), *_commands(project, port)[name]]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wait_until_answering(
        process, f"http://127.0.0.1:{port}/items/1", what=f"{name} (log: {logs / f'{name}.log'})"
    )
    return process


def _check_answers(name: str, base: str) -> None:
    """Every app must answer every workload correctly before it is timed."""
    with httpx.Client(base_url=base) as http:
        assert http.get("/items/7").json()["id"] == 7, name
        assert len(http.get("/items", params={"after": 10, "limit": 20}).json()["data"]) == 20, name
        created = http.post("/items", json={"name": "check", "price_cents": 1, "quantity": 2})
        assert created.status_code == 201, name
        assert created.json()["quantity"] == 2, name
        patched = http.patch("/items/9", json={"quantity": 5})
        assert patched.status_code == 200, name
        assert patched.json()["quantity"] == 5, name


async def _seed_deletable(url: str, count: int) -> int:
    """Insert `count` rows with consecutive ids for a delete run; return the first id."""
    connection = await asyncpg.connect(url)
    try:
        row = await connection.fetchrow(
            "WITH new AS (INSERT INTO items (name, price_cents) "
            "SELECT 'to delete', 1 FROM generate_series(1, $1) RETURNING id) "
            "SELECT min(id) AS first, max(id) AS last FROM new", count,
        )  # fmt: skip
        assert row is not None
        assert row["last"] - row["first"] + 1 == count, "the delete range must be contiguous"
        return int(row["first"])
    finally:
        await connection.close()


def _drive(
    base: str,
    workload: str,
    args: argparse.Namespace,
    url: str,
    duration: int,
    workloads: Workloads,
) -> dict[str, float]:
    """One wrk run of `workload`; an operation that uses each id once first gets rows of its own."""
    start = 1
    if workloads.consumes_ids(workload):
        start = asyncio.run(_seed_deletable(url, DELETABLE_PER_SECOND * duration))
    return workloads.run(
        base, workload, seconds=duration, connections=args.connections, start=start
    )


def _paced_p99(
    base: str, knee: float, args: argparse.Namespace, workloads: Workloads
) -> dict[str, float]:
    """p99 of by-id reads at 70 % of the knee: wrk paced by a fixed think time per connection."""
    target, delay_ms = 0.7 * knee, 10
    connections = max(1, math.ceil(target * (delay_ms + 0.5) / 1000))
    probe = workloads.run(base, "by_id", seconds=3, connections=connections, delay_ms=delay_ms)
    connections = max(1, min(args.max_in_flight - 4, round(connections * target / probe["rps"])))
    paced = workloads.run(
        base, "by_id", seconds=max(args.duration, 5), connections=connections, delay_ms=delay_ms
    )
    return {"target_rps": target, "connections": connections, **paced}


def _machine(pg_version: str) -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo
                if line.startswith("model name")), platform.processor())  # fmt: skip
    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True, check=False)
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "postgresql": pg_version,
        "wrk": (wrk_version.stdout + wrk_version.stderr).split("\n")[0].strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.sched_setaffinity(0, {LOAD_CORE})  # PostgreSQL and wrk inherit core 1 from here
    work = Path(tempfile.mkdtemp(prefix="bench-", dir=args.workdir))
    project = bake(work)
    workloads = Workloads(project, args.rows)
    devdb = load_dev_module(project, "devdb")
    processes: dict[str, subprocess.Popen[bytes]] = {}
    with devdb.ThrowawayPostgres(work / "pgdata") as postgres:
        migrate(project, postgres.url)
        pg_version = asyncio.run(prepare(postgres.url, args.rows))
        bases: dict[str, str] = {}
        try:
            for name in args.apps:
                port = devdb.free_port()
                processes[name] = _start(name, project, postgres.url, port, work)
                bases[name] = f"http://127.0.0.1:{port}"
                _check_answers(name, bases[name])
            runs: dict[str, dict[str, list[dict[str, float]]]] = {
                a: {w: [] for w in args.workloads} for a in args.apps
            }
            for workload in args.workloads:  # warm-up: JIT-free Python still fills caches and pools
                for name in args.apps:
                    _drive(bases[name], workload, args, postgres.url, args.warmup, workloads)
            for round_ in range(args.rounds):
                for workload in args.workloads:
                    order = (
                        args.apps[round_ % len(args.apps) :] + args.apps[: round_ % len(args.apps)]
                    )
                    for name in order:  # interleaved, and rotated each round
                        server = psutil.Process(processes[name].pid)
                        cpu_before = sum(server.cpu_times()[:2])
                        run_ = _drive(
                            bases[name], workload, args, postgres.url, args.duration, workloads
                        )
                        # Server CPU per request: the code's cost, whatever else the shared machine
                        # runs meanwhile (throughput moves with that, this much less).
                        cpu = sum(server.cpu_times()[:2]) - cpu_before
                        run_["cpu_us"] = cpu / max(run_["requests"], 1) * 1e6
                        runs[name][workload].append(run_)
                        print(
                            f"round {round_ + 1} {workload:7} {name:10} {run_['rps']:9.0f} rps "
                            f"{run_['cpu_us']:6.0f} us CPU/request",
                            flush=True,
                        )
            paced = None
            if "generated" in args.apps and "by_id" in args.workloads:
                knee = statistics.median(run["rps"] for run in runs["generated"]["by_id"])
                paced = _paced_p99(bases["generated"], knee, args, workloads)
            rss = {
                name: psutil.Process(process.pid).memory_info().rss / 2**20
                for name, process in processes.items()
            }
        finally:
            for process in processes.values():
                process.terminate()
                process.wait(timeout=30)
    settings = {
        key: getattr(args, key) for key in ("duration", "warmup", "rounds", "connections", "rows")
    }
    return {"machine": _machine(pg_version), "settings": {**settings, "pool_size": POOL_SIZE},
            "runs": runs, "paced_by_id": paced, "rss_mb": rss}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=int, default=5, help="seconds per timed run")
    parser.add_argument(
        "--warmup", type=int, default=2, help="seconds of warm-up per app and workload"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--max-in-flight", type=int, default=64, help="the service's MAX_IN_FLIGHT")
    parser.add_argument("--apps", nargs="+", default=list(APPS), choices=APPS)
    parser.add_argument("--workloads", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    results = run(args)
    results["summary"] = summarise(results)
    print(write_reports(results, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
