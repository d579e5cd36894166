"""`make bench`: the generated service side by side with four reference apps, on one machine.

Bakes the default service, starts it (all production middleware on) and the reference apps in
bench/apps pinned to core 0, PostgreSQL and wrk on core 1, seeds 100k rows, then drives every app
with every workload, interleaving the apps round after round. Writes JSON, Markdown and a PNG.
"""

import argparse
import asyncio
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

from bench.driver import (
    LOAD_CORE,
    POOL_SIZE,
    ROOT,
    check_answers,
    drive,
    machine,
    migrate,
    prepare,
    service_command,
    start_pinned,
)
from bench.report import summarise, write_reports
from bench.workloads import NAMES, Workloads
from tests.baking import bake, load_dev_module

APPS = ("generated", "generated_log_off", "ceiling", "fastapi_floor", "minimal", "baseline")
_TUNED = ["--loop", "uvloop", "--http", "httptools", "--no-access-log", "--no-server-header",
          "--no-proxy-headers"]  # fmt: skip


def app_commands(project: Path, port: int) -> dict[str, list[str]]:
    """The command that serves each app of the bench on `port`."""
    uvicorn = [sys.executable, "-m", "uvicorn", "--port", str(port)]
    return {
        "generated": service_command(project),
        # The same service with ACCESS_LOG=off: the price of one access line per request.
        "generated_log_off": service_command(project),
        "ceiling": [*uvicorn, *_TUNED, "bench.apps.ceiling:app"],
        "fastapi_floor": [*uvicorn, *_TUNED, "bench.apps.fastapi_floor:app"],
        "minimal": [*uvicorn, *_TUNED, "bench.apps.minimal_fastapi:app"],
        # Production's options on, the usual way: bench.instructions serves it with their settings.
        "production_fastapi": [*uvicorn, *_TUNED, "bench.apps.production_fastapi:app"],
        # uvicorn's defaults: asyncio loop (uvloop is opt-in on the command line), access log on.
        "baseline": [*uvicorn, "--loop", "asyncio", "bench.apps.baseline_orm:app"],
    }


def _start(
    name: str, project: Path, database_url: str, port: int, logs: Path
) -> subprocess.Popen[bytes]:
    command = app_commands(project, port)[name]
    return start_pinned(command, project, database_url, port, logs / f"{name}.log", **app_env(name))


def app_env(name: str) -> dict[str, str]:
    """What an app of the bench sets over the bench's server environment."""
    return {"ACCESS_LOG": "off"} if name == "generated_log_off" else {}


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
                check_answers(name, bases[name])
            runs: dict[str, dict[str, list[dict[str, float]]]] = {
                a: {w: [] for w in args.workloads} for a in args.apps
            }
            servers = {name: psutil.Process(process.pid) for name, process in processes.items()}
            # Warm-up: JIT-free Python still fills caches and pools.
            for workload in args.workloads if args.warmup > 0 else ():
                for name in args.apps:
                    drive(workloads, servers[name], bases[name], workload,
                          database_url=postgres.url, seconds=args.warmup,
                          connections=args.connections)  # fmt: skip
            for round_ in range(args.rounds):
                for workload in args.workloads:
                    order = (
                        args.apps[round_ % len(args.apps) :] + args.apps[: round_ % len(args.apps)]
                    )
                    for name in order:  # interleaved, and rotated each round
                        run_ = drive(workloads, servers[name], bases[name], workload,
                                     database_url=postgres.url, seconds=args.duration,
                                     connections=args.connections)  # fmt: skip
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
    return {"machine": machine(pg_version), "settings": {**settings, "pool_size": POOL_SIZE},
            "runs": runs, "paced_by_id": paced, "rss_mb": rss}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=int, default=5, help="seconds per timed run")
    parser.add_argument(
        "--warmup", type=int, default=2, help="seconds of warm-up per app and workload (0: none)"
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
