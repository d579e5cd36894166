"""db.release: a connection goes back to the pool without asyncpg's shield task when nothing on
the way back waits, and through asyncpg's own shielded release whenever something does, or when
a piece of asyncpg it reads (asyncpg_internals.py) is missing."""

import asyncio
from types import SimpleNamespace
from typing import Any

import asyncpg
import pytest
from structlog.testing import capture_logs

from {{ cookiecutter.package_name }}.asyncpg_internals import queued_connections, quick_release_holder
from {{ cookiecutter.package_name }}.db import Database


@pytest.fixture
def shields(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every asyncio.shield call asyncpg makes while the test runs."""
    made: list[Any] = []
    shield = asyncio.shield

    def counting(awaitable: Any) -> Any:
        made.append(awaitable)
        return shield(awaitable)

    monkeypatch.setattr(asyncio, "shield", counting)  # asyncpg.pool calls asyncio.shield
    return made


async def test_a_clean_release_runs_in_the_request_task(
    database: Database, shields: list[Any]
) -> None:
    async with database.connection() as connection:
        backend = connection.get_server_pid()
        assert await connection.fetchval("SELECT 1") == 1
    assert shields == []
    assert database.pool.get_idle_size() == 1
    async with database.connection() as connection:
        assert connection.get_server_pid() == backend  # back in the pool, and reused


async def test_a_release_inside_a_transaction_takes_the_shielded_rollback(
    database: Database, shields: list[Any]
) -> None:
    async with database.connection() as connection:
        await connection.execute("BEGIN")
    assert len(shields) == 1
    async with database.connection() as connection:
        assert not connection.is_in_transaction()


async def test_a_pool_with_a_reset_callback_takes_the_shielded_release(
    database: Database, shields: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    reset: list[Any] = []

    async def remember(connection: Any) -> None:
        reset.append(connection)

    monkeypatch.setattr(database.pool, "_reset", remember)
    async with database.connection() as connection:
        await connection.fetchval("SELECT 1")
    assert len(shields) == 1
    assert len(reset) == 1


async def test_a_connection_the_server_dropped_never_reaches_the_next_lease(
    database: Database, database_url: str
) -> None:
    async with database.connection() as connection:
        backend = connection.get_server_pid()
    killer = await asyncpg.connect(database_url)
    # What the query raises depends on when the termination reaches the protocol.
    dropped = (
        asyncpg.PostgresConnectionError,
        asyncpg.InterfaceError,
        asyncpg.InternalClientError,
        OSError,
    )
    failed: BaseException | None = None
    try:
        async with database.connection() as connection:  # the lease sees the error
            await killer.fetchval("SELECT pg_terminate_backend($1)", backend)
            await connection.fetchval("SELECT pg_sleep(0.2)")
    except dropped as error:
        failed = error
    finally:
        await killer.close()
    assert failed is not None, "the query on the dropped connection failed"
    async with database.connection() as connection:
        assert connection.get_server_pid() != backend
        assert await connection.fetchval("SELECT 1") == 1


async def test_the_quick_release_reads_only_what_it_finds(database: Database) -> None:
    async with database.connection() as connection:
        assert quick_release_holder(database.pool, connection) is not None
        await connection.execute("BEGIN")
        assert quick_release_holder(database.pool, connection) is None
        await connection.execute("ROLLBACK")
    # An asyncpg whose connection proxy or holder looks otherwise: its own release, said once.
    reshaped = SimpleNamespace(_con=SimpleNamespace(_protocol=object()), _holder=object())
    with capture_logs() as logs:
        assert quick_release_holder(database.pool, reshaped) is None
    assert [log["event"] for log in logs] == ["asyncpg_release_shielded"] * len(logs)
    assert logs, "a missing piece of asyncpg is logged"


async def test_a_release_without_a_time_limit_enters_no_timeout_and_still_rolls_back(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered: list[float | None] = []
    timeout = asyncpg.compat.timeout

    def counting(delay: float | None) -> Any:
        entered.append(delay)
        return timeout(delay)

    monkeypatch.setattr(asyncpg.compat, "timeout", counting)  # Connection.reset enters it
    async with database.connection() as connection:
        assert await connection.fetchval("SELECT 1") == 1
    assert entered == []
    async with database.connection() as connection:
        await connection.execute("BEGIN")
    async with database.connection() as connection:
        assert not connection.is_in_transaction()
    await database.pool.release(
        await database.pool.acquire(timeout=5.0)  # a time limit: asyncpg's own reset, timed
    )
    assert entered == [5.0]


async def test_the_lease_arms_its_timer_only_when_no_connection_is_free(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    armed: list[float | None] = []
    timeout = asyncio.timeout

    def counting(delay: float | None) -> Any:
        armed.append(delay)
        return timeout(delay)

    monkeypatch.setattr(asyncio, "timeout", counting)  # the lease's acquire timer
    async with database.connection() as connection:
        assert await connection.fetchval("SELECT 1") == 1
    assert armed == [], "a free connection is taken without a timer"
    held = await database.pool.acquire()  # the pool's one connection: the next lease waits
    try:
        with pytest.raises(TimeoutError):
            async with database.connection():
                pass
    finally:
        await database.pool.release(held)
    assert armed == [database.acquire_timeout]


def test_without_asyncpgs_queue_a_lease_counts_no_free_connection_and_says_so() -> None:
    with capture_logs() as logs:
        assert queued_connections(SimpleNamespace()) == 0  # 0: the lease arms its timer
    assert [log["event"] for log in logs] == ["acquire_timer_always_armed"]
