"""`make bench-compare BASE=REV`: the service of two template revisions, side by side.

Bakes the default service at `--base` and at `--head` (default: the template as it is on disk,
committed or not), migrates and seeds a database of its own for each on one throwaway PostgreSQL,
and serves both the way bench.run serves "generated" (access log on, pinned to core 0; PostgreSQL
and wrk on core 1). Each round starts both services afresh, the first started swapped each round,
and drives every workload at base and at head one after the other, the first driven swapped too.
Every run records wrk's requests/s and the server's CPU per request, the figure a noisy machine
moves least. Prints per workload the medians of each
side, head/base of each and their spread, and writes them as JSON.

With `--fail-above PCT` it exits 1 when a workload's median CPU per request on head is more than
PCT % above base's, or head answered a request with an error: the seed of a regression gate.
"""

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench.compare_report import SIDES, Runs, regressions, summarise, table
from bench.driver import (
    LOAD_CORE,
    ROOT,
    check_answers,
    drive,
    machine,
    migrate,
    prepare,
    service_command,
    start_pinned,
)
from bench.workloads import NAMES, Workloads
from tests.baking import TEMPLATE, bake, copy_of_template, git, load_dev_module
from tests.serving import scratch_database


@dataclass
class _Side:
    project: Path
    workloads: Workloads
    database_url: str
    base: str = ""
    server: psutil.Process | None = None


def _revision(rev: str | None) -> dict[str, str]:
    """What a side was baked from: a commit, or the working tree (HEAD and what differs)."""
    if rev is None:
        changed = git(TEMPLATE, "status", "--porcelain", "--untracked-files=normal")
        return {"revision": "working tree", "commit": git(TEMPLATE, "rev-parse", "HEAD"),
                "changed_files": str(len(changed.splitlines()))}  # fmt: skip
    return {"revision": rev, "commit": git(TEMPLATE, "rev-parse", "--verify", f"{rev}^{{commit}}")}


def _template(revision: dict[str, str], folder: Path) -> Path:
    """The template's files at `revision`, in `folder`."""
    folder.mkdir(parents=True)
    if revision["revision"] == "working tree":
        return copy_of_template(folder)
    archive = subprocess.run(["git", "archive", "--format=tar", revision["commit"]],
                             cwd=TEMPLATE, capture_output=True, check=True)  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


@contextlib.contextmanager
def _served(
    sides: dict[str, _Side], order: tuple[str, ...], devdb: Any, logs: Path
) -> Iterator[None]:
    """Both services started in `order`, each checked to answer every workload; stopped after."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for name in order:
            side, port = sides[name], devdb.free_port()
            command = service_command(side.project)
            log = logs / f"{name}.log"
            processes.append(start_pinned(command, side.project, side.database_url, port, log))
            side.base = f"http://127.0.0.1:{port}"
            side.server = psutil.Process(processes[-1].pid)
            check_answers(name, side.base)
        yield
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=30)


def _measure(sides: dict[str, _Side], devdb: Any, work: Path, args: argparse.Namespace) -> Runs:
    """Per side and workload, one run per round, base and head one after the other."""
    runs: Runs = {name: {workload: [] for workload in args.workloads} for name in sides}

    def one(name: str, workload: str, seconds: int) -> dict[str, float]:
        side = sides[name]
        assert side.server is not None
        return drive(side.workloads, side.server, side.base, workload,
                     database_url=side.database_url, seconds=seconds,
                     connections=args.connections)  # fmt: skip

    for round_ in range(args.rounds):
        # Fresh processes each round, started in alternating order: in A/A runs kept up for the
        # whole comparison the service started second spent 6-9 % more CPU per request (three of
        # three runs; 1-5 % less when started first), and each process draws its own hash seed
        # and memory layout.
        started = SIDES if round_ % 2 == 0 else SIDES[::-1]
        logs = work / f"round-{round_ + 1}"
        logs.mkdir()
        with _served(sides, started, devdb, logs):
            for index, workload in enumerate(args.workloads):
                # Which side runs first swaps too, so that neither always follows the other.
                order = started if index % 2 == 0 else started[::-1]
                for name in order:  # warm-up: the pool's connections, statement caches
                    one(name, workload, args.warmup)
                for name in order:
                    run = one(name, workload, args.duration)
                    runs[name][workload].append(run)
                    print(f"round {round_ + 1} {workload:7} {name:4} {run['rps']:8.0f} rps "
                          f"{run['cpu_us']:6.0f} us CPU/request", flush=True)  # fmt: skip
    return runs


def run(args: argparse.Namespace) -> dict[str, Any]:
    os.sched_setaffinity(0, {LOAD_CORE})  # PostgreSQL and wrk inherit core 1 from here
    revisions = {"base": _revision(args.base), "head": _revision(args.head)}
    work = Path(tempfile.mkdtemp(prefix="bench-compare-", dir=args.workdir))
    projects = {
        name: bake(work / name, template=_template(revision, work / f"template-{name}"))
        for name, revision in revisions.items()
    }
    devdb = load_dev_module(projects["head"], "devdb")
    with devdb.ThrowawayPostgres(work / "pgdata") as postgres, contextlib.ExitStack() as stack:
        sides: dict[str, _Side] = {}
        for name, project in projects.items():
            # Each bake migrates a database of its own: the revisions may differ in their schema.
            url = stack.enter_context(scratch_database(postgres.url, f"bench_{name}"))
            migrate(project, url)
            pg_version = asyncio.run(prepare(url, args.rows))
            # Each side sends its own scenario table's requests, as its own load test would.
            sides[name] = _Side(project, Workloads(project, args.rows), url)
        runs = _measure(sides, devdb, work, args)
    shutil.rmtree(work)
    settings = ("duration", "warmup", "rounds", "connections", "rows")
    return {"revisions": revisions, "machine": machine(pg_version),
            "settings": {key: getattr(args, key) for key in settings}, "runs": runs}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", required=True, help="git revision of the template to compare to")
    parser.add_argument("--head", help="git revision (default: the template as it is on disk)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=int, default=5, help="seconds per timed run")
    parser.add_argument(
        "--warmup", type=int, default=1, help="seconds per side and workload, each round"
    )
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--workloads", nargs="+", default=list(NAMES), choices=NAMES)
    parser.add_argument(
        "--fail-above", type=float, metavar="PCT", default=None,
        help="exit 1 when head's median CPU/request is over PCT %% above base's, or head erred",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results-compare.json")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    results = run(args)
    results["summary"] = summarise(results["runs"])
    print(table(results))
    failures = [] if args.fail_above is None else regressions(results["summary"], args.fail_above)
    results["gate"] = {"fail_above_pct": args.fail_above, "failures": failures}
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"JSON: {args.out}")
    for failure in failures:
        print(f"bench-compare: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
