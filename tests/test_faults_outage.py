"""A database outage under read load, against the real server process of a baked service on a
PostgreSQL of its own that the test stops and starts again: fast 503s, /readyz following the
database, /healthz not, and recovery without a restart. Recorded in docs/reliability.md."""

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from . import faults
from .figures import Figures, percentile
from .serving import Served

pytestmark = [pytest.mark.slow, pytest.mark.serial]


def test_database_outage_fails_fast_with_503_and_recovers_without_a_restart(
    serve: Callable[..., Served], stoppable_postgres: faults.Postgres, figures: Figures
) -> None:
    served = serve(
        POOL_MIN_SIZE="4", POOL_MAX_SIZE="8", POOL_ACQUIRE_TIMEOUT="1", STATEMENT_TIMEOUT_MS="2000"
    )
    acquire_timeout, statement_timeout = 1.0, 2.0

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            item = await faults.create_item(http, "outage")
            load, stop = faults.Load(), asyncio.Event()
            probes: list[tuple[float, str, int]] = []

            async def read(client: httpx.AsyncClient, began: float, _: int) -> faults.Outcome:
                return await faults.timed(client, "GET", f"{faults.ITEMS}/{item}", began)

            async def probe() -> None:
                while not stop.is_set():
                    for path in ("/readyz", "/healthz"):
                        response = await http.get(path)
                        probes.append((time.monotonic(), path, response.status_code))
                    await asyncio.sleep(0.05)

            began = time.monotonic()
            traffic = asyncio.gather(faults.steady_load(served.url, read, stop, 8, load), probe())
            await asyncio.sleep(1.0)  # healthy traffic before the fault
            stop_began = time.monotonic()
            await asyncio.to_thread(stoppable_postgres.server.stop, "fast")
            stopped = time.monotonic()
            await asyncio.sleep(3.0)  # the outage
            restart_began = time.monotonic()
            await asyncio.to_thread(stoppable_postgres.server.start)
            restarted = time.monotonic()

            async def serving_again() -> bool:
                ready = [s for t, p, s in probes if p == "/readyz" and t > restarted]
                reads = [
                    o for o in load.outcomes if o.started > restarted - began and o.status == 200
                ]
                return bool(ready) and ready[-1] == 200 and bool(reads)

            recovery = await faults.wait_for(serving_again, within=15)
            await asyncio.sleep(1.0)  # normal traffic after recovery
            stop.set()
            await traffic

        outage = [o for o in load.outcomes if stopped - began <= o.started < restart_began - began]
        first_not_ready = min(
            t for t, p, s in probes if p == "/readyz" and s == 503 and t >= stop_began
        )
        ready_again = min(t for t, p, s in probes if p == "/readyz" and s == 200 and t > restarted)
        assert served.process.poll() is None, "the service exited during the outage"
        assert {o.status for o in load.outcomes} <= {200, 503}, load.statuses()
        assert outage, "no request was made while PostgreSQL was down"
        assert {o.status for o in outage} == {503}, load.statuses(
            stopped - began, restart_began - began
        )
        assert all(o.problem_ok for o in load.outcomes)
        assert max(o.seconds for o in load.outcomes) < acquire_timeout + statement_timeout
        assert first_not_ready - stopped < 2.0
        assert {s for _, p, s in probes if p == "/healthz"} == {200}
        return {
            "requests": len(load.outcomes),
            "by_status": dict(load.statuses()),
            "requests_during_outage": len(outage),
            "outage_503_p50_ms": round(percentile([o.seconds for o in outage], 0.5) * 1000, 1),
            "outage_503_max_ms": round(max(o.seconds for o in outage) * 1000, 1),
            "slowest_request_ms": round(max(o.seconds for o in load.outcomes) * 1000, 1),
            "postgres_stop_took_s": round(stopped - stop_began, 2),
            "readyz_503_after_stop_began_s": round(first_not_ready - stop_began, 2),
            "readyz_200_after_restart_s": round(ready_again - restarted, 2),
            "reads_200_after_restart_s": round(recovery, 2),
            "healthz_probes": sum(1 for _, p, _ in probes if p == "/healthz"),
            "healthz_non_200": sum(1 for _, p, s in probes if p == "/healthz" and s != 200),
        }

    figures.record("database_outage", **asyncio.run(scenario()))
