"""Slow statements against the real server process of a baked service, made slow by a row lock
held from outside it: an exhausted pool answers 503 with Retry-After within the acquire timeout,
and the statement timeout cancels a query without losing its connection. Recorded in
docs/reliability.md."""

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from . import faults
from .figures import Figures
from .serving import Served, fetch

pytestmark = [pytest.mark.slow, pytest.mark.serial]


def test_exhausted_pool_answers_503_with_retry_after_within_the_acquire_timeout(
    serve: Callable[..., Served], stoppable_postgres: faults.Postgres, figures: Figures
) -> None:
    acquire_timeout = 1.0
    served = serve(POOL_MIN_SIZE="2", POOL_MAX_SIZE="2", POOL_ACQUIRE_TIMEOUT=str(acquire_timeout),
                   STATEMENT_TIMEOUT_MS="20000")  # fmt: skip

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            held, other = (
                await faults.create_item(http, "held"),
                await faults.create_item(http, "other"),
            )
            async with faults.row_locked(stoppable_postgres.url, held):
                # Two PATCHes wait on the lock and hold both pooled connections, as slow queries do.
                patches = [
                    asyncio.ensure_future(
                        http.patch(f"{faults.ITEMS}/{held}", json={"quantity": n})
                    )
                    for n in (1, 2)
                ]
                await faults.wait_for(
                    lambda: faults.waiting_on_a_lock(stoppable_postgres.url, 2), within=10
                )
                began = time.monotonic()
                reads = asyncio.gather(
                    *(
                        faults.timed(http, "GET", f"{faults.ITEMS}/{other}", began)
                        for _ in range(10)
                    )
                )
                health = asyncio.gather(
                    *(faults.timed(http, "GET", "/healthz", began) for _ in range(5))
                )
                starved, healthz = await asyncio.gather(reads, health)
            patched = await asyncio.gather(*patches)
            after = await http.get(f"{faults.ITEMS}/{other}")

        waits = [o.seconds for o in starved]
        assert [o.status for o in starved] == [503] * 10
        assert all(o.problem_ok for o in starved)
        assert acquire_timeout * 0.9 <= min(waits)
        assert max(waits) < acquire_timeout + 1.0
        assert [o.status for o in healthz] == [200] * 5
        assert max(o.seconds for o in healthz) < 0.5
        assert sorted(response.status_code for response in patched) == [200, 200]
        assert after.status_code == 200
        return {
            "requests_while_exhausted": len(starved),
            "by_status": dict(Counter(str(o.status) for o in starved)),
            "acquire_timeout_s": acquire_timeout,
            "wait_before_503_min_ms": round(min(waits) * 1000, 1),
            "wait_before_503_max_ms": round(max(waits) * 1000, 1),
            "healthz_max_ms": round(max(o.seconds for o in healthz) * 1000, 1),
            "held_requests_completed_after_release": sum(r.status_code == 200 for r in patched),
        }

    figures.record("pool_exhaustion", **asyncio.run(scenario()))


def test_statement_timeout_cancels_the_query_answers_503_and_keeps_the_connection(
    serve: Callable[..., Served], stoppable_postgres: faults.Postgres, figures: Figures
) -> None:
    timeout_ms = 500
    # One pooled connection: the test checks it is the same one after the cancel.
    served = serve(STATEMENT_TIMEOUT_MS=str(timeout_ms), POOL_MIN_SIZE="1", POOL_MAX_SIZE="1",
                   POOL_ACQUIRE_TIMEOUT="3")  # fmt: skip

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            item = await faults.create_item(http, "slow")
            before = await _service_backends(stoppable_postgres.url)
            async with faults.row_locked(stoppable_postgres.url, item):
                began = time.monotonic()
                cancelled = await http.patch(f"{faults.ITEMS}/{item}", json={"quantity": 9})
                elapsed = time.monotonic() - began
            after_patch = await http.patch(f"{faults.ITEMS}/{item}", json={"quantity": 5})
            ready = await http.get("/readyz")
            after = await _service_backends(stoppable_postgres.url)

        assert cancelled.status_code == 503, cancelled.text
        assert cancelled.headers["content-type"] == faults.PROBLEM
        assert cancelled.headers["retry-after"].isdigit()
        assert "statement timeout" in cancelled.json()["detail"]
        assert timeout_ms / 1000 * 0.9 <= elapsed < timeout_ms / 1000 + 1.5
        assert after_patch.status_code == 200
        assert after_patch.json()["version"] == 2  # the cancelled update left nothing behind
        assert after_patch.json()["quantity"] == 5
        assert ready.status_code == 200
        assert len(before) == 1
        assert after == before  # the same connection served on: cancelled, not broken
        return {
            "statement_timeout_ms": timeout_ms,
            "answered_after_ms": round(elapsed * 1000, 1),
            "status": cancelled.status_code,
            "same_connection_afterwards": after == before,
            "next_request_status": after_patch.status_code,
        }

    figures.record("statement_timeout", **asyncio.run(scenario()))


async def _service_backends(url: str) -> set[int]:
    """Process ids of the service's connections to PostgreSQL."""
    rows = await fetch(
        url,
        "SELECT pid FROM pg_stat_activity"
        " WHERE application_name = $1 AND backend_type = 'client backend'",
        faults.APPLICATION_NAME,
    )
    return {int(row["pid"]) for row in rows}
