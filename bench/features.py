"""The price of authentication, tracing and the rate limit: the generated service with each one on,
side by side.

Bakes the service with auth=none, api_key and jwt, serves each variant below pinned to core 0
(PostgreSQL, wrk and the JWKS server on core 1), seeds the same rows, and drives them in
interleaved, rotated rounds with the same wrk workload (default: GET by id). Prints requests per
second per variant (median of the rounds), the ratio to `off` and the server's CPU per request,
and writes them as JSON.

  off             auth=none, tracing off: the reference
  api_key         auth=api_key, X-API-Key on every request
  jwt             auth=jwt, one RS256 bearer token on every request, JWT_CACHE_SIZE=0
  jwt_cached      the same with the verified-token cache (the default, 4096)
  tracing_0.1     auth=none, TRACING=true, 10 % of traces sampled (the default), no exporter
  tracing_1.0     the same with every request sampled
  rate_limit      auth=none, RATE_LIMIT_RPS on (a rate never reached: a token taken per request,
                  none refused), the client keyed by its address
  api_key_rate_limit  auth=api_key with the rate limit, the client keyed by its key's digest

`--workload create create_keyed --variants off` measures the price of an Idempotency-Key instead:
each variant with each workload, interleaved the same way, `create_keyed` the create with a fresh
key per request (`make bench` writes it to docs/bench/idempotency.json). Beside the server's CPU
per request, wrk's (the client's) and PostgreSQL's (its postmaster and backends).

Spans are made but not exported (OTEL_TRACES_EXPORTER=none): the price measured is the service's,
not a collector's. Run: `.venv/bin/python -m bench.features` (about 3 minutes; `make bench` runs it
after the side-by-side benchmark).
"""

import argparse
import asyncio
import contextlib
import hashlib
import importlib.util
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
from bench.workloads import Workloads
from tests.baking import bake, load_dev_module, tool_env
from tests.serving import wait_until_answering

API_KEY = "bench-api-key-0123456789"
# The limiter's bookkeeping on every request, and no refusal: wrk is one client far below it.
_UNREACHED_RATE = {"RATE_LIMIT_RPS": "1000000", "RATE_LIMIT_BURST": "1000000"}
VARIANTS: dict[str, tuple[str, dict[str, str]]] = {
    "off": ("none", {}),
    "api_key": ("api_key", {"API_KEY_HASHES": hashlib.sha256(API_KEY.encode()).hexdigest()}),
    "jwt": ("jwt", {"JWT_CACHE_SIZE": "0"}),
    "jwt_cached": ("jwt", {}),
    "tracing_0.1": ("none", {"TRACING": "true", "OTEL_TRACES_EXPORTER": "none"}),
    "tracing_1.0": (
        "none",
        {"TRACING": "true", "OTEL_TRACES_EXPORTER": "none", "OTEL_TRACES_SAMPLER_ARG": "1"},
    ),
    "rate_limit": ("none", _UNREACHED_RATE),
    "api_key_rate_limit": (
        "api_key",
        {"API_KEY_HASHES": hashlib.sha256(API_KEY.encode()).hexdigest(), **_UNREACHED_RATE},
    ),
}


def _issuer(project: Path) -> Any:
    """The jwt bake's own issuer (loadtest/drive/issuer.py): keys, tokens and a JWKS server."""
    spec = importlib.util.spec_from_file_location(
        "bench_issuer", project / "loadtest" / "drive" / "issuer.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Issuer()


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
    projects = {auth: bake(work / auth, auth=auth) for auth in ("none", "api_key", "jwt")}
    devdb = load_dev_module(projects["none"], "devdb")
    workloads = Workloads(projects["none"], args.rows)
    processes: list[subprocess.Popen[bytes]] = []
    with devdb.ThrowawayPostgres(work / "pgdata") as postgres, _issuer(projects["jwt"]) as issuer:
        migrate(projects["none"], postgres.url)
        asyncio.run(prepare(postgres.url, args.rows))
        jwt_env = {name.upper(): str(value) for name, value in issuer.settings().items()}
        token = issuer.token(scope="items:read items:write", lifetime=3600)
        headers = {
            "api_key": {"X-API-Key": API_KEY},
            "jwt": {"Authorization": f"Bearer {token}"},
            "none": {},
        }
        bases: dict[str, str] = {}
        pids: dict[str, int] = {}
        try:
            for name in args.variants:
                auth, env = VARIANTS[name]
                port = devdb.free_port()
                env = {"DATABASE_URL": postgres.url, **(jwt_env if auth == "jwt" else {}), **env}
                processes.append(_start(projects[auth], env, port, work / f"{name}.log"))
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
                _rps(bases[name], headers[VARIANTS[name][0]], args, workload, workloads)
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
                        bases[name], headers[VARIANTS[name][0]], args, workload, workloads,
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
