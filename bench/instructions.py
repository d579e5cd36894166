"""`make bench-instructions`: instructions per request of every app and workload, counted by
valgrind's callgrind: a measure the shared machine's stolen time and neighbours do not move.

CPU time per request (`make bench`) moves 20-50 % from run to run where the host steals time; the
count of instructions a server executes for a request does not (two runs agree within 2 %).
Each app of `make bench` is started under callgrind (about fifty times slower), warmed, and for each
workload its counters are zeroed, `wrk` drives it for a few seconds over TCP, and the counters are
dumped: user-space instructions of the whole server process (uvicorn, the event loop, the app,
asyncpg), divided by the requests wrk completed. The kernel's share (system calls) is not
counted; `make bench` measures it with the rest. Writes docs/bench/instructions.{json,md}.
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
from typing import Any

from bench.driver import ROOT, migrate, prepare, seed_deletable, server_env
from bench.report import LABELS
from bench.run import app_commands, app_env
from bench.workloads import NAMES, Workloads
from tests.baking import bake, load_dev_module
from tests.serving import wait_until_answering

APPS = ("generated", "generated_log_off", "ceiling", "fastapi_floor", "minimal")
# Rows seeded for each delete run: under callgrind a server deletes at most a few hundred a second.
DELETABLE = 5_000
RATIOS = (  # (numerator, denominator): a ratio above 1 means the numerator runs fewer instructions
    ("generated", "minimal"),
    ("generated", "ceiling"),
    ("generated", "fastapi_floor"),
    ("fastapi_floor", "minimal"),
    ("fastapi_floor", "ceiling"),
    ("generated", "generated_log_off"),
)


# Not instrumented until the server answers: start-up and imports run several times faster on a
# loaded host (a server there took longer than the 600 s start-up wait), and nothing before the
# warm-up and the zero is counted anyway.
CALLGRIND = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]


class CallgrindServer:
    """One app's server under callgrind, with its counters zeroed and read around each run."""

    def __init__(self, command: list[str], env: dict[str, str], out: Path) -> None:
        self._out = out
        self._process = subprocess.Popen(
            [*CALLGRIND, f"--callgrind-out-file={out}.%p", *command],
            cwd=ROOT,
            env=env,
            stdout=(out.with_suffix(".log")).open("wb"),
            stderr=subprocess.STDOUT,
        )

    def wait_until_answering(self, url: str, seconds: float) -> None:
        # Python's start-up and imports run many times slower under valgrind.
        log = self._out.with_suffix(".log")
        wait_until_answering(self._process, url, what=f"server (log: {log})", seconds=seconds)

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


def _measure(
    name: str, project: Path, database_url: str, workloads: Workloads, args: argparse.Namespace,
    work: Path,
) -> dict[str, dict[str, float]]:  # fmt: skip
    port = load_dev_module(project, "devdb").free_port()
    command = app_commands(project, port)[name]
    env = server_env(project, database_url, port, **app_env(name))
    base = f"http://127.0.0.1:{port}"
    server = CallgrindServer(command, env, work / f"callgrind.{name}")
    figures: dict[str, dict[str, float]] = {}
    try:
        server.wait_until_answering(f"{base}/items/1", args.start_timeout)
        server.instrument()
        for workload in args.workloads:
            start = 1
            if workloads.consumes_ids(workload):
                start = asyncio.run(seed_deletable(database_url, DELETABLE))
            workloads.run(base, workload, seconds=args.warmup, connections=args.connections,
                          start=start)  # fmt: skip
            if workloads.consumes_ids(workload):
                start = asyncio.run(seed_deletable(database_url, DELETABLE))
            server.zero()
            run = workloads.run(base, workload, seconds=args.duration, connections=args.connections,
                                start=start)  # fmt: skip
            instructions = server.instructions_since_zero()
            if run["errors"] or not run["requests"]:
                raise RuntimeError(f"{name} {workload}: {run}")
            figures[workload] = {
                "requests": run["requests"],
                "instructions": instructions,
                "per_request": instructions / run["requests"],
            }
            thousands = figures[workload]["per_request"] / 1000
            print(f"{workload:7} {name:18} {thousands:8.1f} k instructions/request "
                  f"({int(run['requests'])} requests)", flush=True)  # fmt: skip
    finally:
        server.stop()
    return figures


def markdown(results: dict[str, Any]) -> str:
    per = results["apps"]
    workloads = results["workloads"]
    lines = [
        f"callgrind, {results['date']}: user-space instructions per request of each server "
        f"process (thousands), wrk over TCP with {results['connections']} connections, "
        f"{results['duration']} s per app and workload after {results['warmup']} s of warm-up.",
        "",
        "| app | " + " | ".join(workloads) + " |",
        "|---|" + "---:|" * len(workloads),
    ]
    for name in per:
        cells = [f"{per[name][w]['per_request'] / 1000:,.0f}" for w in workloads]
        lines.append(f"| {LABELS[name]} | " + " | ".join(cells) + " |")
    lines += ["", "| ratio (fewer instructions is faster) | " + " | ".join(workloads) + " |",
              "|---|" + "---:|" * len(workloads)]  # fmt: skip
    for top, bottom in RATIOS:
        if top in per and bottom in per:
            cells = [
                f"{per[bottom][w]['per_request'] / per[top][w]['per_request']:.2f}x"
                for w in workloads
            ]
            lines.append(f"| {top}/{bottom} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=int, default=8, help="seconds counted per workload")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rows", type=int, default=100_000)
    # As many as the pool has connections: at `make bench`'s 32, a server slowed down fifty times
    # keeps requests past wrk's 2 s timeout. An acquire then never waits (its timer is not counted).
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--apps", nargs="+", default=list(APPS), choices=APPS)
    parser.add_argument("--workloads", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench")
    # On a host busy with other work a server under valgrind took more than ten minutes to start.
    parser.add_argument("--start-timeout", type=float, default=600, help="seconds to start")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench.instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench-instructions-"))
    project = bake(work)
    workloads = Workloads(project, args.rows)
    devdb = load_dev_module(project, "devdb")
    with devdb.ThrowawayPostgres(work / "pgdata") as postgres:
        migrate(project, postgres.url)
        asyncio.run(prepare(postgres.url, args.rows))
        apps = {name: _measure(name, project, postgres.url, workloads, args, work)
                for name in args.apps}  # fmt: skip
    results = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "duration": args.duration,
        "warmup": args.warmup,
        "connections": args.connections,
        "workloads": args.workloads,
        "apps": apps,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "instructions.json").write_text(json.dumps(results, indent=2) + "\n")
    text = markdown(results)
    (args.out / "instructions.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
