"""`make perf-gate BASE=<rev> [MARGIN=<pct>]`: the working tree's service against BASE's, side by
side, on server CPU per request; exit 1 naming each scenario that costs more than MARGIN % over
base.

BASE is checked out in a git worktree and served from its src/ with this project's environment
(the same dependencies); each side migrates and seeds a database of its own on DATABASE_URL's
server (`make perf-gate` starts a throwaway one when it is unset) and is sent its own scenario
table's requests (loadtest/gate/side.py) by wrk on 127.0.0.1. Each round starts both services
afresh, the first started swapped each round, and drives every scenario at both sides in turn
(which goes first swapped too): a second of warm-up each, then A B B A, `--seconds` each. The
figure is the server process's CPU time over the measured runs divided by the requests answered:
on a shared machine or CI runner throughput moves with the neighbours, CPU per request much less.
Per scenario the gate judges the median over the rounds of head/base.
"""

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import psutil

from .. import project
from ..drive import credentials, service, wrk
from ..plan import given
from ..report import say
from .figures import SIDES, Runs, regressions, summarise, table

# A/A runs on a shared 2-core VM kept busy by other jobs (docs/performance-gate.md) put a
# scenario's median head/base as high as 1.12 with 5 rounds: 15 % stays clear of that noise.
MARGIN = 15.0


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=project.ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def base_commit(rev: str) -> tuple[str | None, str]:
    """(the commit `rev` names, "") or (None, one line saying what is missing): the gate needs
    a git repository holding BASE (a fresh bake is none until `git init`)."""
    try:
        _git("rev-parse", "--git-dir")
    except (OSError, subprocess.CalledProcessError):
        return None, (
            f"perf-gate: {project.ROOT} is not a git repository; BASE must be a revision of it"
            " (git init && git add -A && git commit -m 'first', then BASE=HEAD or a branch)"
        )
    try:
        return _git("rev-parse", "--verify", "--quiet", rev + "^{commit}"), ""
    except subprocess.CalledProcessError:
        return (
            None,
            f"perf-gate: no commit {rev!r} in this repository (git fetch it, or name another)",
        )


@contextlib.contextmanager
def _worktree(commit: str) -> Iterator[Path]:
    """`commit` checked out, detached, in a temporary folder; removed after."""
    folder = Path(tempfile.mkdtemp(prefix="perf-gate-")) / "base"
    _git("worktree", "add", "--detach", "--quiet", str(folder), commit)
    try:
        # The bake may live in a subfolder of its repository: the same subfolder of the worktree.
        yield folder / project.ROOT.relative_to(_git("rev-parse", "--show-toplevel"))
    finally:
        _git("worktree", "remove", "--force", str(folder))


async def _admin(server_url: str, statement: str) -> None:
    connection = await asyncpg.connect(server_url)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


@contextlib.contextmanager
def _database(server_url: str, name: str) -> Iterator[str]:
    """A database of its own on `server_url`'s server, dropped after; commits wait for no fsync,
    so that the disk of a CI runner does not pace one side's run."""
    asyncio.run(_admin(server_url, f'CREATE DATABASE "{name}"'))
    try:
        asyncio.run(_admin(server_url, f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        yield urlsplit(server_url)._replace(path=f"/{name}").geturl()
    finally:
        asyncio.run(_admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _prepared(root: Path, database_url: str, args: argparse.Namespace) -> dict[str, str]:
    """Migrate a side's database with its own migrations; seed it; its scenarios' wrk scripts."""
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(root / "src")}
    migrate = [sys.executable, "-m", "alembic", "upgrade", "heads"]
    subprocess.run(migrate, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    # Its src/ before this project's, which holds the client code: loadtest.gate.side.
    env["PYTHONPATH"] = os.pathsep.join([str(root / "src"), str(project.ROOT)])
    command = [
        sys.executable,
        "-m",
        "loadtest.gate.side",
        "--database-url",
        database_url,
        "--rows",
        str(args.rows),
    ] + (["--scenarios", ",".join(args.scenarios)] if args.scenarios else [])
    done = subprocess.run(command, cwd=project.ROOT, env=env, capture_output=True, check=True)
    scripts: dict[str, str] = json.loads(done.stdout)
    return scripts


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _drive(
    target: service.Target, lua: str, *, seconds: int, connections: int, headers: Mapping[str, str]
) -> dict[str, float]:
    """One wrk run; its figures and the server's CPU per request over it (`cpu_us`)."""
    assert target.pid is not None
    server = psutil.Process(target.pid)
    before = _cpu_seconds(server)
    figures = wrk.run(target.url, lua, connections=connections, seconds=seconds, headers=headers)
    cpu = _cpu_seconds(server) - before
    return {**figures, "cpu_s": cpu, "cpu_us": cpu / max(figures["requests"], 1) * 1e6}


def _combined(runs: list[dict[str, float]]) -> dict[str, float]:
    """Runs of one side taken as one: CPU over requests, their mean rate, every error."""
    requests = sum(run["requests"] for run in runs)
    cpu = sum(run["cpu_s"] for run in runs)
    return {
        "requests": requests,
        "errors": sum(run["errors"] for run in runs),
        "rps": sum(run["rps"] for run in runs) / len(runs),
        "cpu_us": cpu / max(requests, 1) * 1e6,
    }


def _measure(
    sides: dict[str, tuple[Path, str, dict[str, str]]],
    names: list[str],
    args: argparse.Namespace,
    headers: Mapping[str, str],
    settings: Mapping[str, str],
) -> Runs:
    runs: Runs = {side: {name: [] for name in names} for side in SIDES}
    for round_ in range(args.rounds):
        # Fresh processes each round, the first started swapped: kept up for a whole comparison,
        # the process started second spent 6-9 % more CPU per request in A/A runs of the
        # template's bench-compare; each process also draws its own hash seed and memory layout.
        started = SIDES if round_ % 2 == 0 else SIDES[::-1]
        with contextlib.ExitStack() as servers:
            targets = {
                side: servers.enter_context(
                    service.started(
                        sides[side][1],
                        max_concurrency=args.connections,
                        pin=not args.no_pin,
                        settings=settings,
                        source=sides[side][0] / "src",
                    )
                )
                for side in started
            }
            for index, name in enumerate(names):
                order = started if index % 2 == 0 else started[::-1]
                lua = {side: sides[side][2][name] for side in SIDES}
                for side in order:  # warm-up: the pool's connections, the statement caches
                    _drive(
                        targets[side],
                        lua[side],
                        seconds=1,
                        connections=args.connections,
                        headers=headers,
                    )
                # A B B A: what the neighbours do over the four runs weighs on both sides alike
                # (a drift cancels), and each side's figure is its two runs' CPU over requests.
                pair: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
                for side in (*order, *order[::-1]):
                    pair[side].append(
                        _drive(
                            targets[side],
                            lua[side],
                            seconds=args.seconds,
                            connections=args.connections,
                            headers=headers,
                        )
                    )
                for side in order:
                    run = _combined(pair[side])
                    runs[side][name].append(run)
                    say(
                        f"round {round_ + 1} {name} {side}: {run['cpu_us']:.0f} us CPU/request "
                        f"({run['rps']:.0f} req/s, {run['errors']:.0f} errors)"
                    )
    return runs


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.gate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base", required=True, help="git revision to compare the working tree to")
    parser.add_argument("--margin", type=float, default=MARGIN, help="percent, default %(default)s")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=int, default=2, help="each of the A B B A runs")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--rows", type=int, default=10_000, help="seeded per resource")
    parser.add_argument("--scenarios", type=lambda text: text.split(","), help="default: all")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the servers to core 0")
    parser.add_argument("--results", type=Path, default=project.RESULTS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # A cancelled CI job is sent SIGTERM: leave through the ExitStack, which stops both services,
    # drops both databases and removes the worktree.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    commit, missing = base_commit(args.base)
    if commit is None:
        say(missing)
        return 2
    server_url = os.environ.get("DATABASE_URL")
    if not server_url or not wrk.available():
        say("perf-gate needs DATABASE_URL (`make perf-gate` starts a PostgreSQL) and wrk")
        return 2
    args.no_pin = args.no_pin or not service.can_pin()
    if not args.no_pin:
        service.keep_client_off_server_core()  # wrk and PostgreSQL off the servers' core
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(_worktree(commit))
        roots = {"base": base, "head": project.ROOT}
        sides = {}
        for side, root in roots.items():
            url = stack.enter_context(_database(server_url, f"perf_gate_{side}_{os.getpid()}"))
            sides[side] = (root, url, _prepared(root, url, args))
        names = [name for name in sides["head"][2] if name in sides["base"][2]]
        if not names:
            say("no scenario in common between base and head")
            return 2
        headers, settings = stack.enter_context(credentials.for_started_service(given()))
        runs = _measure(sides, names, args, headers, settings)
    summary = summarise(runs)
    say(
        f"\nbase {args.base}, head: the working tree; {args.rounds} rounds of {args.seconds} s, "
        f"{args.connections} connections; server CPU per request, medians"
    )
    say(table(summary, args.margin))
    failures = regressions(summary, args.margin)
    args.results.mkdir(parents=True, exist_ok=True)
    out = args.results / f"perf-gate-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(
        json.dumps(
            {
                "base": args.base,
                "settings": vars(args) | {"results": None},
                "runs": runs,
                "summary": summary,
                "failures": failures,
            },
            indent=2,
            default=str,
        )
        + "\n"
    )
    for failure in failures:
        say(f"perf-gate: {failure}")
    if not failures:
        say(f"perf-gate: no scenario costs more than +{args.margin:g} % over {args.base}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
