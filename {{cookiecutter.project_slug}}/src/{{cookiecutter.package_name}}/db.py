"""The asyncpg pool: created once in the lifespan, warmed, handed to routes, closed on shutdown."""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from .settings import Settings

# Repositories see these names; routes never see asyncpg at all.
Record = asyncpg.Record
if TYPE_CHECKING:
    Connection = PoolConnectionProxy[Record]
else:
    Connection = PoolConnectionProxy


class Database:
    """A pool plus the acquire timeout every request must respect."""

    def __init__(self, pool: "asyncpg.Pool[Record]", acquire_timeout: float) -> None:
        self.pool = pool
        self._acquire_timeout = acquire_timeout

    @classmethod
    async def connect(cls, settings: Settings, application_name: str) -> "Database":
        # create_pool opens min_size connections before returning: the pool is warm at start-up.
        pool = await asyncpg.create_pool(
            settings.dsn,
            min_size=settings.pool_min_size,
            max_size=settings.pool_max_size,
            timeout=settings.pool_acquire_timeout,
            # 0 behind PgBouncer transaction pooling: a named statement prepared on one server
            # connection is missing on the next (PgBouncer < 1.21 does not track them).
            statement_cache_size=settings.statement_cache_size,
            server_settings={
                "application_name": application_name,
                "statement_timeout": str(settings.statement_timeout_ms),
            },
        )
        return cls(pool, settings.pool_acquire_timeout)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        async with self.pool.acquire(timeout=self._acquire_timeout) as connection:
            yield connection

    async def ping(self, within: float) -> None:
        """Raise unless a pooled connection answers SELECT 1 within `within` seconds."""
        async with self.pool.acquire(timeout=within) as connection:
            await connection.fetchval("SELECT 1", timeout=within)

    async def close(self, within: float = 10.0) -> None:
        # close() waits for borrowed connections; a stuck one must not block shutdown forever.
        try:
            await asyncio.wait_for(self.pool.close(), within)
        except TimeoutError:
            self.pool.terminate()
