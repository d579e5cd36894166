"""What the fault tests share (test_faults_*.py): the service's address book, load generators
that record every outcome, a row lock held from outside the service, and polling with a deadline.
Their fixtures (a PostgreSQL they may stop, the service started on it) are in conftest.py."""

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import httpx

from .serving import fetch

APPLICATION_NAME = "inventory-service"  # the default bake's project_slug
ITEMS = "/items"
PROBLEM = "application/problem+json"


@dataclass
class Postgres:
    server: Any  # the baked project's ThrowawayPostgres
    url: str  # the migrated database of these tests


@dataclass
class Outcome:
    started: float  # seconds since the load began
    seconds: float
    status: int | None  # None: a transport error, named in `error`
    error: str = ""
    problem_ok: bool = True  # a 503 came as problem+json with Retry-After


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)

    def statuses(self, start: float = 0, end: float = float("inf")) -> Counter[str]:
        return Counter(str(o.status or o.error) for o in self.outcomes if start <= o.started < end)


async def wait_for(condition: Callable[[], Awaitable[bool]], within: float) -> float:
    """Seconds until `condition` holds, polled every 50 ms; fails after `within` seconds."""
    began = time.monotonic()
    while not await condition():
        assert time.monotonic() - began < within, f"condition not met within {within} s"
        await asyncio.sleep(0.05)
    return time.monotonic() - began


async def waiting_on_a_lock(url: str, count: int) -> bool:
    """Whether exactly `count` of the service's statements wait on a lock."""
    rows = await fetch(
        url,
        "SELECT count(*) AS n FROM pg_stat_activity"
        " WHERE application_name = $1 AND wait_event_type = 'Lock'",
        APPLICATION_NAME,
    )
    return int(rows[0]["n"]) == count


@asynccontextmanager
async def row_locked(url: str, item_id: int) -> AsyncIterator[asyncpg.Connection]:
    """Hold a row lock from outside the service: its statements on that row wait, as slow ones
    do."""
    connection = await asyncpg.connect(url)
    transaction = connection.transaction()
    await transaction.start()
    try:
        await connection.execute("SELECT 1 FROM items WHERE id = $1 FOR UPDATE", item_id)
        yield connection
    finally:
        if not connection.is_closed():
            await transaction.rollback()
            await connection.close()


async def create_item(http: httpx.AsyncClient, name: str) -> int:
    response = await http.post(ITEMS, json={"name": name, "price_cents": 1})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


async def timed(
    http: httpx.AsyncClient, method: str, path: str, began: float, **kwargs: Any
) -> Outcome:
    start = time.monotonic()
    try:
        response = await http.request(method, path, **kwargs)
    except httpx.TransportError as error:
        return Outcome(start - began, time.monotonic() - start, None, type(error).__name__)
    problem_ok = response.status_code != 503 or (
        response.headers.get("content-type") == PROBLEM
        and response.headers.get("retry-after", "").isdigit()
    )
    return Outcome(start - began, time.monotonic() - start, response.status_code, "", problem_ok)


Request = Callable[[httpx.AsyncClient, float, int], Awaitable[Outcome]]
"""One request of a worker: (client, when the load began, worker number) -> its outcome."""


async def steady_load(
    url: str, request: Request, stop: asyncio.Event, workers: int, load: Load, *,
    stop_on_refusal: bool = False,
) -> None:  # fmt: skip
    """`workers` clients sending `request` back to back until `stop` is set, each outcome kept."""
    began = time.monotonic()
    limits = httpx.Limits(max_connections=workers, max_keepalive_connections=workers)

    async def worker(number: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:
            while not stop.is_set():
                outcome = await request(http, began, number)
                load.outcomes.append(outcome)
                if stop_on_refusal and outcome.error == "ConnectError":
                    return

    await asyncio.gather(*(worker(number) for number in range(workers)))
