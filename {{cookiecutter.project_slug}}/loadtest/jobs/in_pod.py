"""`python -m loadtest.jobs.in_pod` (`make bench-jobs-in-pod`): what a worker costs the API's
latency when it runs in the API's pod, on the API's one core, instead of in a pod of its own.

The server on core 0 (pinned) serves creates that enqueue their `created` event, open loop at
fixed rates (fractions of the creates' closed-loop throughput, measured first), in two places
taken in turn in every round:

- `none`: no worker on core 0, as with the chart's worker Deployment, whose pods have cores of
  their own (the jobs wait here; the queue is emptied before every step);
- `API's core`: a worker on core 0 beside the server, delivering the events to a local receiver,
  as a second process in the API's pod would on its 1-core CPU limit.

The worker is not measured on a core of its own here: on a 2-core machine that core is the one
PostgreSQL and the client run on, and its contention would be the client's, not the API's.

Per step: the creates' p50 and p99 (each latency from the request's scheduled start, so a stalled
server cannot hide its queue), the server's and the worker's CPU, the deliveries per second and
the jobs still queued at the end (a worker that falls behind). The table gives the median of the
rounds and the range of p99; the last lines the p99 with the worker on the API's core over the
p99 without it. DATABASE_URL names a migrated database (`make bench-jobs-in-pod` starts a
throwaway one). Results also go to loadtest/results/jobs-in-pod.json.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass

import psutil

from .. import project
from ..drive.engine import Engine
from ..drive.service import SERVER_CORE, can_pin, keep_client_off_server_core, started
from ..plan import SCENARIOS, Mix
from .processes import SECRET, cpu_seconds, queued, worker_process
from .receiver import Receiver, receiving

PLACES = ("none", "API's core")
RESULTS = project.ROOT / "loadtest" / "results" / "jobs-in-pod.json"
WARM_UP_S = 4.0  # the worker's start-up and the server's warm-up at the step's rate


@dataclass(frozen=True)
class Trial:
    rate: float
    place: str
    round: int
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    client_cpu: float  # percent of one core, every client process together
    server_cpu: float | None  # percent of one core
    worker_cpu: float | None  # percent of one core
    worker_cores: list[int] | None  # the cores the worker could run on
    delivered_per_s: float
    queued_after: int


def _create_mix() -> tuple[str, Mix]:
    name = next((name for name in SCENARIOS if name.endswith(".create")), None)
    if name is None:  # every resource has a unique field with no room for a fresh value
        raise SystemExit("no create scenario (loadtest/plan/declared.py: fresh_creates)")
    return name, SCENARIOS[name]


def _trial(
    engine: Engine,
    mix: Mix,
    database_url: str,
    receiver: Receiver,
    *,
    rate: float,
    place: str,
    seconds: float,
    round_: int,
) -> Trial:
    asyncio.run(queued(database_url, clear=True))
    receiver.reset()

    def measured(worker: psutil.Process | None) -> Trial:
        engine.run(mix, duration=WARM_UP_S, rate=rate)
        cpu_before = cpu_seconds(worker) if worker is not None else 0.0
        delivered_before, began = receiver.deliveries, time.perf_counter()
        step = engine.run(mix, duration=seconds, rate=rate)
        elapsed = time.perf_counter() - began
        worker_cpu = (
            round((cpu_seconds(worker) - cpu_before) / elapsed * 100, 1)
            if worker is not None
            else None
        )
        return Trial(
            rate=rate,
            place=place,
            round=round_,
            rps=step.rps,
            p50_ms=step.p50_ms,
            p99_ms=step.p99_ms,
            errors=step.errors,
            client_cpu=step.client_cpu,
            server_cpu=step.server_cpu,
            worker_cpu=worker_cpu,
            worker_cores=sorted(worker.cpu_affinity() or []) if worker is not None else None,
            delivered_per_s=round((receiver.deliveries - delivered_before) / elapsed, 1),
            queued_after=asyncio.run(queued(database_url)),
        )

    if place == "none":
        return measured(None)
    with worker_process(database_url, receiver.url) as worker:
        return measured(worker)


def _ceiling(engine: Engine, mix: Mix, seconds: float) -> float:
    """The creates' closed-loop throughput (8 connections, no worker)."""
    engine.run(mix, duration=2.0, concurrency=8)
    return engine.run(mix, duration=seconds, concurrency=8).rps


def _table(trials: list[Trial], rates: list[float], ceiling: float) -> list[str]:
    lines = [
        f"  {'rate':>7} {'of max':>6}  {'worker':<11}{'p50 ms':>8}{'p99 ms':>8}{'p99 range':>18}"
        f"{'client %':>10}{'server %':>10}{'worker %':>10}{'delivered/s':>13}{'µs/job':>8}"
        f"{'queued':>8}{'errors':>8}"
    ]
    for rate in rates:
        for place in PLACES:
            mine = [trial for trial in trials if trial.rate == rate and trial.place == place]
            p99s = [trial.p99_ms for trial in mine]
            worker = [trial.worker_cpu for trial in mine if trial.worker_cpu is not None]
            server = [trial.server_cpu for trial in mine if trial.server_cpu is not None]
            per_job = [  # the worker's CPU time per delivered job
                trial.worker_cpu * 10_000 / trial.delivered_per_s
                for trial in mine
                if trial.worker_cpu is not None and trial.delivered_per_s > 0
            ]
            lines.append(
                f"  {rate:>7,.0f} {rate / ceiling:>6.0%}  {place:<11}"
                f"{statistics.median(trial.p50_ms for trial in mine):>8.1f}"
                f"{statistics.median(p99s):>8.1f}"
                f"{f'{min(p99s):.1f} .. {max(p99s):.1f}':>18}"
                f"{max(trial.client_cpu for trial in mine):>10.0f}"
                f"{statistics.median(server) if server else float('nan'):>10.0f}"
                f"{statistics.median(worker) if worker else 0.0:>10.0f}"
                f"{statistics.median(trial.delivered_per_s for trial in mine):>13,.0f}"
                f"{f'{statistics.median(per_job):,.0f}' if per_job else '-':>8}"
                f"{max(trial.queued_after for trial in mine):>8,}"
                f"{sum(trial.errors for trial in mine):>8}"
            )
    return lines


def _ratio(trials: list[Trial], rate: float) -> float:
    def p99(place: str) -> float:
        return statistics.median(
            trial.p99_ms for trial in trials if trial.rate == rate and trial.place == place
        )

    return p99("API's core") / p99("none")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.jobs.in_pod", description=__doc__)
    parser.add_argument(
        "--fractions",
        default="0.1,0.25,0.5,0.7",
        help="the rates as fractions of the creates' closed-loop throughput (comma-separated)",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="one measured step")
    parser.add_argument("--rounds", type=int, default=3, help="each place at each rate")
    args = parser.parse_args(argv)
    if not can_pin():
        print("bench-jobs-in-pod needs two cores and taskset: the server's core and another")
        return 2
    database_url = os.environ["DATABASE_URL"]
    others = keep_client_off_server_core()
    name, mix = _create_mix()
    load_before = os.getloadavg()
    trials: list[Trial] = []
    with receiving() as receiver:
        settings = {"WEBHOOK_URL": receiver.url, "WEBHOOK_SECRET": SECRET}
        with (
            started(database_url, max_concurrency=64, pin=True, settings=settings) as target,
            Engine(
                target.url, ids={}, processes=2, server_pid=target.pid, server_core=SERVER_CORE
            ) as engine,
        ):
            ceiling = _ceiling(engine, mix, args.seconds)
            rates = [float(round(ceiling * float(part))) for part in args.fractions.split(",")]
            for round_ in range(1, args.rounds + 1):
                for rate in rates:
                    # Each round takes the places in another order: a drift of the host over
                    # the run does not fall on one of them.
                    shift = round_ % len(PLACES)
                    for place in PLACES[shift:] + PLACES[:shift]:
                        trials.append(
                            _trial(
                                engine,
                                mix,
                                database_url,
                                receiver,
                                rate=rate,
                                place=place,
                                seconds=args.seconds,
                                round_=round_,
                            )
                        )
    load_after = os.getloadavg()
    print(
        f"bench-jobs-in-pod: {os.cpu_count()} cores; the server on core {SERVER_CORE}; "
        f"PostgreSQL, the client and the receiver on cores {others}"
    )
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    print(f"{name} with its job: {ceiling:,.0f} rps closed loop (8 connections, no worker)")
    print()
    print(
        f"open loop, {args.rounds} rounds of {args.seconds:.0f} s per rate and place "
        "(medians; p99 range over the rounds; client %: the highest; queued: the most left at a "
        "step's end):"
    )
    for line in _table(trials, rates, ceiling):
        print(line)
    print()
    for rate in rates:
        print(
            f"  at {rate:,.0f} rps ({rate / ceiling:.0%}): p99 with the worker on the API's core "
            f"is {_ratio(trials, rate):.2f}x its p99 with no worker there"
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "scenario": name,
                "ceiling_rps": ceiling,
                "cores": os.cpu_count(),
                "load_average": [load_before[0], load_after[0]],
                "trials": [asdict(trial) for trial in trials],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwritten: {RESULTS.relative_to(project.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
