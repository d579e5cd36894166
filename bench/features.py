"""The price of authentication, tracing and the rate limit: the generated service with each one on,
side by side.

Bakes the service with each auth the variants use (none, api_key, jwt), serves each variant of
bench/variants.py pinned to core 0 (PostgreSQL, wrk and the JWKS server on core 1), seeds the same
rows, and drives them in interleaved, rotated rounds with the same wrk workload (default: GET by
id), each sent the credentials its variant asks for. Prints requests per second per variant
(median of the rounds), the ratio to `off` and the server's CPU per request, and writes them as
JSON. `make bench-instructions` counts the same variants' instructions per request.

`--workload create create_keyed --variants off` measures the price of an Idempotency-Key instead:
each variant with each workload, interleaved the same way, `create_keyed` the create with a fresh
key per request (`make bench` writes it to docs/bench/idempotency.json). Beside the server's CPU
per request, wrk's (the client's) and PostgreSQL's (its postmaster and backends).

Run: `.venv/bin/python -m bench.features` (about 3 minutes; `make bench` runs it after the
side-by-side benchmark).
"""

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil

from bench.driver import LOAD_CORE, POOL_SIZE, SERVER_CORE, migrate, prepare
from bench.variants import VARIANTS, Variants
from bench.workloads import Workloads
from tests.baking import load_dev_module, tool_env
from tests.serving import wait_until_answering


def _start(project: Path, env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    # METRICS_PORT=0: no metrics listener, or the variants would all ask for the same port.
    pool = str(POOL_SIZE)
    variables = tool_env(
        project, PORT=str(port), POOL_MIN_SIZE=pool, POOL_MAX_SIZE=pool, APP_ENV="prod",
        METRICS_PORT="0", **env,
    )  # fmt: skip
    command = ["taskset", "-c", str(SERVER_CORE), sys.executable, "-m", "inventory_service"]
    process = subprocess.Popen(
        command, cwd=project, env=variables, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    wait_until_answering(process, f"http://127.0.0.1:{port}/healthz", what=f"variant (log: {log})")
    return process


def _cpu_seconds(pid: int) -> float:
    """CPU time the process has used, user and system (as bench/driver.py's drive reads it)."""
    return float(sum(psutil.Process(pid).cpu_times()[:2]))


def _postgres_cpu_seconds(data_dir: Path) -> float:
    """CPU time of PostgreSQL's postmaster and its children (the pools' backends live through a
    run, so a difference is the run's); a child that exits meanwhile drops out."""
    main = psutil.Process(int((data_dir / "postmaster.pid").read_text().split()[0]))
    total = 0.0
    for process in [main, *main.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += float(sum(process.cpu_times()[:2]))
    return total


def _wrk_cpu_seconds() -> float:
    # The children this process has waited for: wrk's runs (the servers still run).
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _rps(
    base: str,
    headers: dict[str, str],
    args: argparse.Namespace,
    workload: str,
    workloads: Workloads,
    pid: int | None = None,
    pgdata: Path | None = None,
) -> tuple[float, float, float, float]:
    """Requests per second of one wrk run, and the CPU microseconds per request of the server
    (the price that other load on a shared machine moves least), of wrk and of PostgreSQL
    (NaN without `pid`: a warm-up); every answer must be a 2xx."""
    before = (
        (_cpu_seconds(pid), _wrk_cpu_seconds(), _postgres_cpu_seconds(pgdata))
        if pid and pgdata
        else None
    )
    duration = args.duration if pid else args.warmup
    result = workloads.run(
        base, workload, seconds=duration, connections=args.connections, headers=headers
    )
    if result["errors"]:
        raise RuntimeError(f"{base}: {result['errors']:.0f} non-2xx answers or socket errors")
    if before is None or pid is None or pgdata is None:
        return result["rps"], float("nan"), float("nan"), float("nan")
    after = (_cpu_seconds(pid), _wrk_cpu_seconds(), _postgres_cpu_seconds(pgdata))
    server, client, database = (
        1e6 * (b - a) / max(result["requests"], 1) for a, b in zip(before, after, strict=True)
    )
    return result["rps"], server, client, database


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.sched_setaffinity(0, {LOAD_CORE})  # PostgreSQL, wrk and the JWKS server inherit core 1
    work = Path(tempfile.mkdtemp(prefix="bench-features-", dir=args.workdir))
    variants = Variants(work, ["off", *args.variants])
    devdb = load_dev_module(variants.project("off"), "devdb")
    workloads = Workloads(variants.project("off"), args.rows)
    processes: list[subprocess.Popen[bytes]] = []
    with devdb.ThrowawayPostgres(work / "pgdata") as postgres, variants:
        migrate(variants.project("off"), postgres.url)
        asyncio.run(prepare(postgres.url, args.rows))
        bases: dict[str, str] = {}
        pids: dict[str, int] = {}
        try:
            for name in args.variants:
                port = devdb.free_port()
                env = {"DATABASE_URL": postgres.url, **variants.env(name)}
                processes.append(_start(variants.project(name), env, port, work / f"{name}.log"))
                bases[name], pids[name] = f"http://127.0.0.1:{port}", processes[-1].pid
            # Each variant with each workload, named by the variant alone with one workload.
            series = {
                (f"{name} {workload}" if len(args.workload) > 1 else name): (name, workload)
                for name in args.variants
                for workload in args.workload
            }
            for (
                name,
                workload,
            ) in series.values():  # warm-up, and a check that every answer is a 2xx
                _rps(bases[name], variants.headers(name), args, workload, workloads)
            labels = list(series)
            rps: dict[str, list[float]] = {label: [] for label in labels}
            cpu: dict[str, list[float]] = {label: [] for label in labels}
            client: dict[str, list[float]] = {label: [] for label in labels}
            database: dict[str, list[float]] = {label: [] for label in labels}
            for round_ in range(args.rounds):
                shift = round_ % len(labels)
                for label in labels[shift:] + labels[:shift]:
                    name, workload = series[label]
                    figures = _rps(
                        bases[name], variants.headers(name), args, workload, workloads,
                        pids[name], postgres.data_dir,
                    )  # fmt: skip
                    for values, figure in zip((rps, cpu, client, database), figures, strict=True):
                        values[label].append(figure)
                    print(
                        f"round {round_ + 1} {label:18} {figures[0]:8.0f} rps {figures[1]:7.1f} us "
                        f"CPU/request (wrk {figures[2]:.1f}, PostgreSQL {figures[3]:.1f})",
                        flush=True,
                    )
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=30)
    medians = {name: statistics.median(values) for name, values in rps.items()}
    cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
    # The reference: `off`, or with several workloads the first series (e.g. `off create`).
    reference = medians.get("off") if len(args.workload) == 1 else medians[labels[0]]
    return {
        "workload": args.workload[0] if len(args.workload) == 1 else args.workload,
        "settings": {
            key: getattr(args, key)
            for key in ("duration", "warmup", "rounds", "connections", "rows")
        },
        "runs": rps,
        "median_rps": medians,
        "cpu_us_per_request_runs": cpu,
        "median_cpu_us_per_request": cpu_medians,
        "median_wrk_cpu_us_per_request": {k: statistics.median(v) for k, v in client.items()},
        "median_postgres_cpu_us_per_request": {
            k: statistics.median(v) for k, v in database.items()
        },
        "ratio_to_off": {name: value / reference for name, value in medians.items()}
        if reference
        else {},
        "us_per_request_over_off": {
            name: 1e6 / value - 1e6 / reference for name, value in medians.items()
        }
        if reference
        else {},
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument(
        "--workload",
        nargs="+",
        default=["by_id"],
        choices=("by_id", "page", "create", "create_keyed"),
        help="several: each variant with each, side by side (create create_keyed: an "
        "Idempotency-Key's price)",
    )
    parser.add_argument("--duration", type=int, default=5, help="seconds per timed run")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "docs" / "bench" / "features.json",
    )
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    results = run(args)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        "| Variant | Median rps | Ratio to reference | us per request over it "
        "| CPU us/request: server | wrk | PostgreSQL |\n|---|---|---|---|---|---|---|"
    )
    for name, value in results["median_rps"].items():
        ratio = results["ratio_to_off"].get(name, float("nan"))
        extra = results["us_per_request_over_off"].get(name, float("nan"))
        cpu = results["median_cpu_us_per_request"][name]
        wrk = results["median_wrk_cpu_us_per_request"][name]
        pg = results["median_postgres_cpu_us_per_request"][name]
        print(
            f"| {name} | {value:.0f} | {ratio:.3f} | {extra:+.0f} "
            f"| {cpu:.1f} | {wrk:.1f} | {pg:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
