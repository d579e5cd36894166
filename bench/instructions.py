"""`make bench-instructions`: instructions per request of every app and workload, counted by
valgrind's callgrind: a measure the shared machine's stolen time and neighbours do not move.

CPU time per request (`make bench`) moves 20-50 % from run to run where the host steals time; the
count of instructions a server executes for a request does not (two runs agree within 2 %).
Each app of `make bench` is started under callgrind (about fifty times slower), warmed, and for each
workload its counters are zeroed, `wrk` drives it for a few seconds over TCP, and the counters are
dumped: user-space instructions of the whole server process (uvicorn, the event loop, the app,
asyncpg), divided by the requests wrk completed. The kernel's share (system calls) is not
counted; `make bench` measures it with the rest.

The options (`--options`: all four; or some named in `--apps`, e.g. `--apps generated jwt`) are
the generated service with one option on, each served the way bench/variants.py serves it to
bench.features (its bake, its settings, the credentials wrk sends): their price is their count
beside the generated service's. `--options` also counts the production configuration (every
option on; `--apps production production_fastapi` alone) beside FastAPI doing the same the usual
way. `make bench-instructions` passes `--options`. Writes
docs/bench/instructions.{json,md}, keeping the figures of every app this run did not count with
the date of the run that did.
"""

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from bench.driver import ROOT, migrate, prepare, seed_deletable, server_env, service_command
from bench.instructions_report import markdown, merged
from bench.run import app_commands, app_env
from bench.variants import Variants
from bench.workloads import NAMES, Workloads
from tests.baking import load_dev_module
from tests.serving import wait_until_answering

APPS = ("generated", "generated_log_off", "ceiling", "fastapi_floor", "minimal")
# The generated service with one option on (bench/instructions_report.py's OPTION_LABELS say
# which): the variant of bench/variants.py that serves it, and the workloads it applies to
# (`create_keyed`, a fresh Idempotency-Key per create, is counted beside `create`).
OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "api_key": ("api_key", NAMES),
    "jwt": ("jwt_cached", NAMES),
    "tracing_0.1": ("tracing_0.1", NAMES),
    "idempotent_create": ("off", ("create_keyed",)),
}
# The production configuration (bench/variants.py's `production`: auth=jwt and tracing at 10 %,
# with a fresh Idempotency-Key on every create): the generated service, and FastAPI doing the same
# the usual way (bench/apps/production_fastapi.py, as bench.run serves it), with the same settings
# and the same token; the report sets them side by side (bench/instructions_report.py).
PRODUCTION_WORKLOADS = ("by_id", "page", "create_keyed", "patch", "delete")
PRODUCTION: dict[str, tuple[str, tuple[str, ...]]] = {
    "production": ("production", PRODUCTION_WORKLOADS),
    "production_fastapi": ("production", PRODUCTION_WORKLOADS),
}
# What is served with a variant's bake, settings and credentials.
WITH_VARIANT = {**OPTIONS, **PRODUCTION}
# Rows seeded for each delete run: under callgrind a server deletes at most a few hundred a second.
DELETABLE = 5_000
# How long wrk waits for an answer (its own limit is 2 s): a request's latency under callgrind is
# no figure here, its instructions are. The production app's by-id, an RS256 token verified on
# each request, took 1.6-1.9 s at 8 connections on a busy 2-core host, and one went unanswered.
REQUEST_TIMEOUT_S = 60

# Not instrumented until the server answers: start-up and imports run several times faster on a
# loaded host (a server there took longer than the 600 s start-up wait), and nothing before the
# warm-up and the zero is counted anyway.
CALLGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]


class CallgrindServer:
    """One app's server under callgrind, with its counters zeroed and read around each run."""

    def __init__(self, command: list[str], env: dict[str, str], out: Path) -> None:
        self._out = out
        # Named after the whole name: with_suffix would give every app (and "tracing_0.1") one log.
        self._log = out.parent / f"{out.name}.log"
        self._process = subprocess.Popen(
            [*CALLGRIND, f"--callgrind-out-file={out}.%p", *command],
            cwd=ROOT,
            env=env,
            stdout=self._log.open("wb"),
            stderr=subprocess.STDOUT,
        )

    def wait_until_answering(self, url: str, seconds: float) -> None:
        # Python's start-up and imports run many times slower under valgrind.
        wait_until_answering(self._process, url, what=f"server (log: {self._log})", seconds=seconds)

    def _control(self, *flags: str) -> None:
        subprocess.run(["callgrind_control", *flags, str(self._process.pid)], check=True,
                       capture_output=True)  # fmt: skip

    def instrument(self) -> None:
        """Count from now on (callgrind translates the code again: warm up after this)."""
        self._control("-i", "on")

    def zero(self) -> None:
        self._control("-z")

    def instructions_since_zero(self) -> int:
        """Dump the counters and return the instructions executed since the last zero."""
        before = set(self._out.parent.glob(f"{self._out.name}.*"))
        self._control("-d")
        (dump,) = set(self._out.parent.glob(f"{self._out.name}.*")) - before
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
        raise ValueError(f"{dump}: no totals line")

    def stop(self) -> None:
        self._process.terminate()
        self._process.wait(timeout=300)


class _Served(NamedTuple):
    command: list[str]
    env: dict[str, str]
    ready: str  # a path that answers 200 once the server is up
    headers: dict[str, str]
    workloads: list[str]


def _served(
    name: str, variants: Variants, database_url: str, port: int, args: argparse.Namespace
) -> _Served:
    """How app or option `name` is served on `port`, and which of the run's workloads drive it."""
    if name not in WITH_VARIANT:
        project = variants.project("off")
        env = server_env(project, database_url, port, **app_env(name))
        return _Served(app_commands(project, port)[name], env, "/items/1", {}, args.workloads)
    variant, applies = WITH_VARIANT[name]
    project = variants.project(variant)
    env = server_env(project, database_url, port, **variants.env(variant))
    # A reference app of bench/apps under the variant's settings, or else the variant's service.
    command = app_commands(project, port).get(name, service_command(project))
    workloads = [w for w in applies if w.removesuffix("_keyed") in args.workloads]
    # /healthz: an auth bake answers /items/1 without credentials with a 401.
    return _Served(command, env, "/healthz", variants.headers(variant), workloads)


def _measure(
    name: str, variants: Variants, database_url: str, workloads: Workloads,
    args: argparse.Namespace, work: Path,
) -> dict[str, dict[str, float]]:  # fmt: skip
    port = load_dev_module(variants.project("off"), "devdb").free_port()
    served = _served(name, variants, database_url, port, args)
    if not served.workloads:
        return {}
    base = f"http://127.0.0.1:{port}"
    server = CallgrindServer(served.command, served.env, work / f"callgrind.{name}")
    figures: dict[str, dict[str, float]] = {}
    try:
        server.wait_until_answering(base + served.ready, args.start_timeout)
        server.instrument()
        for workload in served.workloads:
            start = 1
            if workloads.consumes_ids(workload):
                start = asyncio.run(seed_deletable(database_url, DELETABLE))
            workloads.run(base, workload, seconds=args.warmup, connections=args.connections,
                          start=start, headers=served.headers,
                          request_timeout_s=REQUEST_TIMEOUT_S)  # fmt: skip
            if workloads.consumes_ids(workload):
                start = asyncio.run(seed_deletable(database_url, DELETABLE))
            server.zero()
            run = workloads.run(base, workload, seconds=args.duration, connections=args.connections,
                                start=start, headers=served.headers,
                                request_timeout_s=REQUEST_TIMEOUT_S)  # fmt: skip
            instructions = server.instructions_since_zero()
            if run["errors"] or not run["requests"]:
                raise RuntimeError(f"{name} {workload}: {run}")
            figures[workload] = {
                "requests": run["requests"],
                "instructions": instructions,
                "per_request": instructions / run["requests"],
            }
            thousands = figures[workload]["per_request"] / 1000
            print(f"{workload:12} {name:18} {thousands:8.1f} k instructions/request "
                  f"({int(run['requests'])} requests)", flush=True)  # fmt: skip
    finally:
        server.stop()
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=int, default=8, help="seconds counted per workload")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rows", type=int, default=100_000)
    # As many as the pool has connections: at `make bench`'s 32, a server slowed down fifty times
    # keeps requests past wrk's 2 s timeout. An acquire then never waits (its timer is not counted).
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--apps", nargs="+", default=list(APPS), choices=[*APPS, *WITH_VARIANT])
    parser.add_argument("--options", action="store_true", help=f"and {', '.join(WITH_VARIANT)}")
    parser.add_argument("--workloads", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench")
    # On a host busy with other work a server under valgrind took more than ten minutes to start.
    parser.add_argument("--start-timeout", type=float, default=600, help="seconds to start")
    args = parser.parse_args()
    if args.options:
        args.apps = [*dict.fromkeys([*args.apps, *WITH_VARIANT])]
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench.instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench-instructions-"))
    served_variants = (WITH_VARIANT[name][0] for name in args.apps if name in WITH_VARIANT)
    variants = Variants(work, ["off", *served_variants])
    workloads = Workloads(variants.project("off"), args.rows)
    devdb = load_dev_module(variants.project("off"), "devdb")
    with devdb.ThrowawayPostgres(work / "pgdata") as postgres, variants:
        migrate(variants.project("off"), postgres.url)
        asyncio.run(prepare(postgres.url, args.rows))
        # An option none of whose workloads was asked for is left out.
        apps = {
            name: figures
            for name in args.apps
            if (figures := _measure(name, variants, postgres.url, workloads, args, work))
        }
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = {
        "date": date,
        "duration": args.duration,
        "warmup": args.warmup,
        "connections": args.connections,
        "workloads": args.workloads,
        "apps": apps,
        "dates": dict.fromkeys(apps, date),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    written = args.out / "instructions.json"
    if written.exists():
        results = merged(results, json.loads(written.read_text()))
    written.write_text(json.dumps(results, indent=2) + "\n")
    text = markdown(results)
    (args.out / "instructions.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
