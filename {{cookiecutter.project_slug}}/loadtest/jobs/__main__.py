"""`python -m loadtest.jobs` (`make bench-jobs`): the create route with and without its job, and
the worker's jobs per second on one core (loadtest/jobs/__init__.py says how each is measured).

DATABASE_URL names a migrated database (`make bench-jobs` starts a throwaway one); its queue is
emptied first.
"""

import argparse
import asyncio
import os
import random
import sys
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import psutil

from ..drive.http import build_op, exchange
from ..drive.service import SERVER_CORE, can_pin, keep_client_off_server_core, started
from ..plan import OPERATIONS
from .processes import SECRET, cpu_seconds, queued, worker_process
from .receiver import Receiver, receiving


@dataclass(frozen=True)
class RouteCost:
    requests: int
    server_cpu_us: float  # per request
    wall_us: float  # per request, at the run's concurrency
    client_cpu_us: float  # per request


async def _drive(url: str, request: bytes, count: int, concurrency: int) -> None:
    parts = urlsplit(url)
    remaining = [count]

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        try:
            while remaining[0] > 0:
                remaining[0] -= 1
                status, _ = await exchange(reader, writer, request)
                if status != 201:
                    raise RuntimeError(f"a create answered {status}")
        finally:
            writer.close()

    await asyncio.gather(*(connection() for _ in range(concurrency)))


def _route_cost(database_url: str, webhook_url: str, requests: int, concurrency: int) -> RouteCost:
    # One request, sent again and again: a create with no unique field (`{u}`), else 409s.
    creates = [op for name, op in OPERATIONS.items() if name.endswith(".create")]
    create = next((op for op in creates if "{u}" not in (op.body or "")), None)
    if create is None:
        raise SystemExit("bench-jobs sends one create again and again: no resource without a unique field")
    request, _ = build_op(create, {})(random.Random(requests))
    settings = {"WEBHOOK_URL": webhook_url, "WEBHOOK_SECRET": SECRET}
    with started(database_url, max_concurrency=concurrency, pin=True, settings=settings) as target:
        assert target.pid is not None
        server, client = psutil.Process(target.pid), psutil.Process()
        asyncio.run(_drive(target.url, request, min(requests // 10, 200), concurrency))  # warm-up
        server_before, client_before = cpu_seconds(server), cpu_seconds(client)
        began = time.perf_counter()
        asyncio.run(_drive(target.url, request, requests, concurrency))
        wall = time.perf_counter() - began
        server_cpu, client_cpu = cpu_seconds(server), cpu_seconds(client)
    return RouteCost(
        requests,
        (server_cpu - server_before) / requests * 1e6,
        wall / requests * 1e6,
        (client_cpu - client_before) / requests * 1e6,
    )


def _drain(database_url: str, receiver: Receiver, jobs: int) -> tuple[float, float]:
    """Jobs per second (first delivery to last) and the worker's CPU per job (µs)."""
    receiver.reset()
    with worker_process(database_url, receiver.url) as worker:
        if not receiver.wait_for(1, 120):
            raise RuntimeError("the worker delivered nothing in 120 s")
        cpu_before, delivered_before = cpu_seconds(worker), len(receiver.event_ids)
        if not receiver.wait_for(jobs, 600):
            raise RuntimeError(f"the worker delivered {len(receiver.event_ids)} of {jobs} jobs")
        cpu = cpu_seconds(worker) - cpu_before
    assert receiver.first_at is not None
    assert receiver.last_at is not None
    measured = jobs - delivered_before
    per_second = (jobs - 1) / (receiver.last_at - receiver.first_at)
    return per_second, cpu / max(measured, 1) * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loadtest.jobs", description=__doc__)
    parser.add_argument("--requests", type=int, default=10_000, help="creates per run (and jobs)")
    parser.add_argument("--concurrency", type=int, default=8, help="client connections")
    args = parser.parse_args(argv)
    database_url = os.environ["DATABASE_URL"]
    pinned = can_pin()
    if pinned:
        keep_client_off_server_core()
    load_before = os.getloadavg()
    asyncio.run(queued(database_url, clear=True))
    with receiving() as receiver:
        without = _route_cost(database_url, "", args.requests, args.concurrency)
        with_job = _route_cost(database_url, receiver.url, args.requests, args.concurrency)
        jobs = asyncio.run(queued(database_url))
        per_second, worker_cpu_us = _drain(database_url, receiver, jobs)
    load_after = os.getloadavg()
    where = f"core {SERVER_CORE}" if pinned else "unpinned (fewer than 2 cores or no taskset)"
    print(f"bench-jobs: {os.cpu_count()} cores; server and worker on {where}, client elsewhere")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)")
    print()
    print(
        f"POST create, {args.requests} requests over {args.concurrency} connections, per request:"
    )
    print(f"  {'':<16}{'server CPU µs':>15}{'wall µs':>10}{'client CPU µs':>15}")
    for name, cost in (("without its job", without), ("with its job", with_job)):
        print(
            f"  {name:<16}{cost.server_cpu_us:>15.0f}{cost.wall_us:>10.0f}{cost.client_cpu_us:>15.0f}"
        )
    extra = with_job.server_cpu_us - without.server_cpu_us
    print(
        f"  the job adds {extra:.0f} µs of server CPU per create ({extra / without.server_cpu_us:+.0%})"
    )
    print()
    print(f"worker, one core: {jobs} jobs enqueued by those creates, delivered to a local receiver")
    print(
        f"  {per_second:,.0f} jobs/s (first delivery to last), {worker_cpu_us:.0f} µs of worker CPU per job"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
