"""PostgreSQL measured over a step: a write scenario against the real service while the
database is made to stall mid-step, and the step's report names what the backends waited on."""

import asyncio
import threading
from collections.abc import Iterator

import asyncpg
import pytest
from loadtest.drive import credentials, service
from loadtest.drive.database import Sampler
from loadtest.drive.engine import Engine
from loadtest.drive.evidence import describe
from loadtest.drive.observe import Observer, moved
from loadtest.plan.declared import plural
from loadtest.plan.scenarios import SCENARIOS

from ...declared import first_resource

RESOURCE = first_resource()
PATCH = f"{plural(RESOURCE)}.patch"
STALL_S = 1.5  # the lock is held this long, from about a second into a four-second step


async def _hold_lock(url: str, table: str, begun: threading.Event) -> None:
    connection = await asyncpg.connect(url)
    try:
        async with connection.transaction():
            await connection.execute(f'LOCK TABLE "{table}" IN ACCESS EXCLUSIVE MODE')
            begun.set()
            await asyncio.sleep(STALL_S)
    finally:
        await connection.close()


def _stall_after(url: str, delay: float, begun: threading.Event) -> threading.Thread:
    def hold() -> None:
        # The step's start is the engine's own (its workers start together after a delay);
        # the lock only has to fall inside the step, which the assertion on `begun` checks.
        threading.Event().wait(delay)
        asyncio.run(_hold_lock(url, RESOURCE.table, begun))

    return threading.Thread(target=hold, daemon=True)


@pytest.fixture(scope="module")
def served(database_url: str) -> Iterator[tuple[str, Engine, str | None]]:
    with (
        credentials.for_started_service({}) as (headers, settings),
        service.started(database_url, max_concurrency=8, pin=False, settings=settings) as target,
    ):
        ids = service.seed_ids(database_url, target.url, 200, headers, [plural(RESOURCE)])
        with Engine(
            target.url, ids=ids, processes=1, server_pid=target.pid, headers=headers
        ) as engine:
            yield database_url, engine, target.metrics_url


def test_a_write_step_stalled_by_a_lock_on_its_table_names_the_lock_wait(
    served: tuple[str, Engine, str | None],
) -> None:
    database_url, engine, metrics_url = served
    observer = Observer(metrics_url, database_url, None)
    engine.run(SCENARIOS[PATCH], rate=100, duration=1, connections=32)  # warm: not the baseline
    quiet = observer.run(lambda: engine.run(SCENARIOS[PATCH], rate=100, duration=2, connections=32))
    assert quiet.evidence is not None
    assert quiet.evidence["db"] is not None
    assert "Lock:relation" not in quiet.evidence["db"]["waits"]

    begun = threading.Event()
    stall = _stall_after(database_url, 1.0, begun)
    stall.start()
    stalled = observer.run(
        # More connections than the pool (8): requests behind the lock wait for a connection.
        lambda: engine.run(SCENARIOS[PATCH], rate=100, duration=4, connections=32)
    )
    stall.join()
    assert begun.is_set()
    assert stalled.evidence is not None
    waits = stalled.evidence["db"]["waits"]
    assert "Lock:relation" in waits, waits
    assert stalled.p99_ms > 1000 * STALL_S / 2  # the requests queued behind the lock
    # The step's line names the wait; a miss whose pool wait moved names it among what moved.
    assert "Lock:relation" in describe(stalled.evidence)
    said = moved(stalled.evidence, quiet.evidence)
    assert any(item.startswith("pool wait") for item in said), (said, stalled.evidence)
    assert any("Lock:relation" in item for item in said), said


def test_the_sampler_counts_the_wal_written_by_the_services_commits(
    served: tuple[str, Engine, str | None],
) -> None:
    database_url, engine, _ = served
    with Sampler(database_url) as sampled:
        engine.run(SCENARIOS[PATCH], rate=100, duration=1, connections=4)
    assert sampled.result is not None
    assert (sampled.result["wal_bytes"] or 0) > 0
    assert (sampled.result["wal_syncs"] or 0) > 0
    assert sampled.result["samples"] >= 5
