"""db.py `Database.close`: the probe's connection and the pool close within one bound, the one
the chart's grace period counts (CLOSE_SECONDS), however stuck both are."""

import time

from {{ cookiecutter.package_name }}.db import CLOSE_SECONDS, Database
from {{ cookiecutter.package_name }}.settings import Settings

from .silent_proxy import silent_proxy

# What a loaded machine may add to a bound of asyncio's timers.
SLACK_SECONDS = 0.5


def test_the_close_bound_is_the_default_of_close() -> None:
    assert Database.close.__defaults__ == (CLOSE_SECONDS,)


async def test_close_ends_within_its_bound_with_the_probe_connection_and_a_borrowed_one_stuck(
    settings: Settings, database_url: str
) -> None:
    """A borrowed connection never released holds Pool.close to its bound; the probe's
    connection, on a database that no longer answers, would take its own second on top."""
    within = 2.0
    async with silent_proxy(database_url) as (proxy, through_proxy):
        single = settings.model_copy(
            update={"database_url": through_proxy, "pool_min_size": 1, "pool_max_size": 1}
        )
        database = await Database.connect(single, "close-test")
        await database.probe.ping(5)  # the probe's connection is open
        await database.pool.acquire()  # borrowed, never released
        proxy.fall_silent()
        began = time.monotonic()
        await database.close(within=within)
        took = time.monotonic() - began
    assert within <= took < within + SLACK_SECONDS
