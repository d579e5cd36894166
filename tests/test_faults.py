"""Faults against the real server process of a baked service, on a PostgreSQL of its own that the
tests stop, start and lock: database outage, pool exhaustion, statement timeout, graceful shutdown
and overload. Each test records what it measured (see figures.py and docs/reliability.md)."""

import asyncio
import csv
import io
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest

from .baking import load_dev_module, run
from .figures import Figures, percentile
from .serving import PINNED, Served, fetch, start_service

APPLICATION_NAME = "inventory-service"  # the default bake's project_slug
ITEMS = "/items"
PROBLEM = "application/problem+json"

pytestmark = pytest.mark.slow


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


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> Figures:
    return Figures(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def postgres(default_project: Path) -> Iterator[Postgres]:
    """A PostgreSQL these tests may stop: never the shared one of the other suites.

    Its data lives outside pytest's temporary root: a pytest session starting meanwhile resets
    that root to 0700, which would stop the server's own user from reaching it on a restart.
    """
    devdb = load_dev_module(default_project, "devdb")
    folder = Path(tempfile.mkdtemp(prefix="faults-pg-"))
    server = devdb.ThrowawayPostgres(folder / "data")
    server.start()
    try:
        url = server.url.rsplit("/", 1)[0] + "/faults"
        asyncio.run(fetch(server.url, "CREATE DATABASE faults"))
        migrated = run(
            default_project, sys.executable, "-m", "alembic", "upgrade", "head", DATABASE_URL=url
        )
        assert migrated.returncode == 0, migrated.stderr
        yield Postgres(server, url)
    finally:
        server.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def service(
    default_project: Path, postgres: Postgres, tmp_path: Path
) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(**env: str) -> Served:
        served = start_service(
            default_project, postgres.url, tmp_path / f"service-{len(started)}.log", **env
        )
        started.append(served)
        return served

    yield start
    for served in started:
        if served.process.poll() is None:
            served.process.terminate()
            served.process.wait(timeout=30)


async def wait_for(condition: Callable[[], Awaitable[bool]], within: float) -> float:
    """Seconds until `condition` holds, polled every 50 ms; fails after `within` seconds."""
    began = time.monotonic()
    while not await condition():
        assert time.monotonic() - began < within, f"condition not met within {within} s"
        await asyncio.sleep(0.05)
    return time.monotonic() - began


async def lock_waiters(url: str) -> int:
    rows = await fetch(
        url,
        "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
        APPLICATION_NAME,
    )
    return int(rows[0]["n"])


@asynccontextmanager
async def row_locked(url: str, item_id: int) -> AsyncIterator[asyncpg.Connection]:
    """Hold a row lock from outside the service: its statements on that row wait, as slow ones do."""
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


async def steady_load(
    url: str, request: Callable[[httpx.AsyncClient, float, int], Awaitable[Outcome]], stop: asyncio.Event,
    workers: int, load: Load, *, stop_on_refusal: bool = False,
) -> None:  # fmt: skip
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


def test_database_outage_fails_fast_with_503_and_recovers_without_a_restart(
    service: Callable[..., Served], postgres: Postgres, figures: Figures
) -> None:
    served = service(
        POOL_MIN_SIZE="4", POOL_MAX_SIZE="8", POOL_ACQUIRE_TIMEOUT="1", STATEMENT_TIMEOUT_MS="2000"
    )
    acquire_timeout, statement_timeout = 1.0, 2.0

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            item = await create_item(http, "outage")
            load, stop = Load(), asyncio.Event()
            probes: list[tuple[float, str, int]] = []

            async def read(client: httpx.AsyncClient, began: float, _: int) -> Outcome:
                return await timed(client, "GET", f"{ITEMS}/{item}", began)

            async def probe() -> None:
                while not stop.is_set():
                    for path in ("/readyz", "/healthz"):
                        response = await http.get(path)
                        probes.append((time.monotonic(), path, response.status_code))
                    await asyncio.sleep(0.05)

            began = time.monotonic()
            traffic = asyncio.gather(steady_load(served.url, read, stop, 8, load), probe())
            await asyncio.sleep(1.0)  # healthy traffic before the fault
            stop_began = time.monotonic()
            await asyncio.to_thread(postgres.server.stop, "fast")
            stopped = time.monotonic()
            await asyncio.sleep(3.0)  # the outage
            restart_began = time.monotonic()
            await asyncio.to_thread(postgres.server.start)
            restarted = time.monotonic()

            async def serving_again() -> bool:
                ready = [s for t, p, s in probes if p == "/readyz" and t > restarted]
                reads = [
                    o for o in load.outcomes if o.started > restarted - began and o.status == 200
                ]
                return bool(ready) and ready[-1] == 200 and bool(reads)

            recovery = await wait_for(serving_again, within=15)
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


def test_exhausted_pool_answers_503_with_retry_after_within_the_acquire_timeout(
    service: Callable[..., Served], postgres: Postgres, figures: Figures
) -> None:
    acquire_timeout = 1.0
    served = service(
        POOL_MIN_SIZE="2",
        POOL_MAX_SIZE="2",
        POOL_ACQUIRE_TIMEOUT=str(acquire_timeout),
        STATEMENT_TIMEOUT_MS="20000",
    )

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            held, other = await create_item(http, "held"), await create_item(http, "other")
            async with row_locked(postgres.url, held):
                # Two PATCHes wait on the lock and hold both pooled connections, as slow queries do.
                patches = [
                    asyncio.ensure_future(http.patch(f"{ITEMS}/{held}", json={"quantity": n}))
                    for n in (1, 2)
                ]
                await wait_for(lambda: _equals(lock_waiters(postgres.url), 2), within=10)
                began = time.monotonic()
                reads = asyncio.gather(
                    *(timed(http, "GET", f"{ITEMS}/{other}", began) for _ in range(10))
                )
                health = asyncio.gather(*(timed(http, "GET", "/healthz", began) for _ in range(5)))
                starved, healthz = await asyncio.gather(reads, health)
            patched = await asyncio.gather(*patches)
            after = await http.get(f"{ITEMS}/{other}")

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


async def _equals(value: Awaitable[int], expected: int) -> bool:
    return await value == expected


def test_statement_timeout_cancels_the_query_answers_503_and_keeps_the_connection(
    service: Callable[..., Served], postgres: Postgres, figures: Figures
) -> None:
    timeout_ms = 500
    served = service(
        POOL_MIN_SIZE="1",
        POOL_MAX_SIZE="1",
        STATEMENT_TIMEOUT_MS=str(timeout_ms),
        POOL_ACQUIRE_TIMEOUT="3",
    )
    backends = "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND backend_type = 'client backend'"

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            item = await create_item(http, "slow")
            before = {row["pid"] for row in await fetch(postgres.url, backends, APPLICATION_NAME)}
            async with row_locked(postgres.url, item):
                began = time.monotonic()
                cancelled = await http.patch(f"{ITEMS}/{item}", json={"quantity": 9})
                elapsed = time.monotonic() - began
            after_patch = await http.patch(f"{ITEMS}/{item}", json={"quantity": 5})
            ready = await http.get("/readyz")
            after = {row["pid"] for row in await fetch(postgres.url, backends, APPLICATION_NAME)}

        assert cancelled.status_code == 503, cancelled.text
        assert cancelled.headers["content-type"] == PROBLEM
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


def test_sigterm_under_write_load_completes_in_flight_requests_and_loses_no_acknowledged_write(
    service: Callable[..., Served], postgres: Postgres, figures: Figures
) -> None:
    grace = 10.0
    served = service(
        TIMEOUT_GRACEFUL_SHUTDOWN=str(int(grace)), STATEMENT_TIMEOUT_MS="20000", LOG_LEVEL="info"
    )
    acknowledged: dict[str, int] = {}
    sent: Counter[int] = Counter()

    async def scenario() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
            held = await create_item(http, "in flight at shutdown")
            load, stop = Load(), asyncio.Event()

            async def write(client: httpx.AsyncClient, began: float, worker: int) -> Outcome:
                sent[worker] += 1
                number = sent[worker]
                name = f"shutdown-{worker}-{number}"
                body = {
                    "name": name,
                    "price_cents": worker * 1_000_000 + number,
                    "quantity": number,
                }
                outcome = await timed(client, "POST", ITEMS, began, json=body)
                if outcome.status == 201:
                    acknowledged[name] = number
                return outcome

            async with row_locked(postgres.url, held):
                traffic = asyncio.ensure_future(
                    steady_load(served.url, write, stop, 8, load, stop_on_refusal=True)
                )
                in_flight = asyncio.ensure_future(
                    http.patch(f"{ITEMS}/{held}", json={"quantity": 7})
                )
                await wait_for(lambda: _equals(lock_waiters(postgres.url), 1), within=10)
                await asyncio.sleep(1.5)  # steady writes before the signal
                served.process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                refused_after = await wait_for(lambda: _refused(served.port), within=3)
                assert served.process.poll() is None, "exited before its in-flight request finished"
                assert not in_flight.done()
                await asyncio.sleep(1.0)  # the in-flight request is still waiting on the lock
            finished = await in_flight  # the lock is released: it may now complete
            await asyncio.to_thread(served.process.wait, grace + 5)
            exited = time.monotonic() - signalled
            stop.set()
            await traffic

        names = [f"shutdown-{w}-{n}" for w in sent for n in range(1, sent[w] + 1)]
        rows = await fetch(
            postgres.url,
            "SELECT name, price_cents, quantity FROM items WHERE name = ANY($1::text[])",
            names,
        )
        connections = await fetch(
            postgres.url,
            "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1",
            APPLICATION_NAME,
        )
        held_row = await fetch(
            postgres.url, "SELECT quantity, version FROM items WHERE id = $1", held
        )
        return {
            "load": load, "finished": finished, "exited": exited, "refused_after": refused_after,
            "rows": rows, "connections": int(connections[0]["n"]), "held_row": held_row[0],
        }  # fmt: skip

    result = asyncio.run(scenario())
    load: Load = result["load"]
    found = {row["name"]: row for row in result["rows"]}
    unanswered = [o for o in load.outcomes if o.status is None and o.error != "ConnectError"]
    assert result["finished"].status_code == 200  # in flight at SIGTERM, completed
    assert (result["held_row"]["quantity"], result["held_row"]["version"]) == (7, 2)
    # uvicorn re-raises the captured SIGTERM once shutdown is complete, so -15 is a clean exit.
    assert served.process.returncode in (0, -signal.SIGTERM), served.output()[-3000:]
    assert result["exited"] < grace
    assert result["connections"] == 0, "the pool was not closed"
    assert "pool_closed" in served.output()
    assert acknowledged, "no write was acknowledged: the test proved nothing"
    missing = [name for name in acknowledged if name not in found]
    assert missing == []
    for name, row in found.items():  # every stored row is whole: all its fields from one request
        worker, number = (int(part) for part in name.split("-")[1:])
        assert (row["price_cents"], row["quantity"]) == (worker * 1_000_000 + number, number)
    # A row found but never acknowledged can only be a request whose answer the client lost.
    assert len(found) - len(acknowledged) <= len(unanswered)
    assert {o.status for o in load.outcomes if o.status is not None} == {201}
    figures.record(
        "graceful_shutdown",
        writes_sent=len(load.outcomes),
        by_status=dict(load.statuses()),
        acknowledged_writes=len(acknowledged),
        rows_found=len(found),
        acknowledged_but_missing=len(missing),
        in_flight_request_status=result["finished"].status_code,
        new_connections_refused_after_s=round(result["refused_after"], 2),
        exit_after_sigterm_s=round(result["exited"], 2),
        grace_period_s=grace,
        exit_code=served.process.returncode,
        connections_left_open=result["connections"],
    )


async def _refused(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        return True
    writer.close()
    return False


def _hey(url: str, concurrency: int, seconds: float) -> list[tuple[float, int, float]]:
    """(seconds, status, offset from the start) of every request `hey` made."""
    command = ["hey", "-c", str(concurrency), "-z", f"{seconds}s", "-t", "10", "-o", "csv", url]
    if PINNED:
        command = ["taskset", "-c", "1", *command]
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 60, check=True
    )
    rows = csv.DictReader(io.StringIO(result.stdout))
    return [
        (float(row["response-time"]), int(row["status-code"]), float(row["offset"])) for row in rows
    ]


class _RssSampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.peak = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(0.1):
            self.peak = max(self.peak, self.process.memory_info().rss)


@pytest.mark.skipif(shutil.which("hey") is None, reason="hey (the load generator) is not installed")
def test_overload_at_5x_the_in_flight_limit_is_shed_with_fast_503s(
    service: Callable[..., Served], figures: Figures
) -> None:
    limit, seconds = 16, 4.0
    served = service(
        MAX_IN_FLIGHT=str(limit), POOL_MIN_SIZE="4", POOL_MAX_SIZE="8", LOG_LEVEL="error"
    )
    with httpx.Client(base_url=served.url, timeout=10) as http:
        created = http.post(ITEMS, json={"name": "hot", "price_cents": 1})
        target = f"{served.url}{ITEMS}/{created.json()['id']}"
        baseline = _hey(target, limit // 2, 2.0)  # below the limit: what admitted requests cost
        rss_before = psutil.Process(served.process.pid).memory_info().rss
        sampler = _RssSampler(served.process.pid)
        sampler.start()
        burst = _hey(target, 5 * limit, seconds)
        sampler.halt.set()
        sampler.join()
        after = [http.get(f"{ITEMS}/{created.json()['id']}") for _ in range(200)]
        ready = http.get("/readyz").status_code

    statuses = Counter(status for _, status, _ in burst)
    admitted = [latency for latency, status, _ in burst if status == 200]
    shed = [latency for latency, status, _ in burst if status == 503]
    base_p99 = percentile([latency for latency, status, _ in baseline if status == 200], 0.99)
    # A queue that grows shows as a later half slower than the first; a bounded one does not.
    halves = [
        percentile(
            [t for t, status, offset in burst if status == 200 and (offset >= seconds / 2) == late],
            0.99,
        )
        for late in (False, True)
    ]
    figures.record(
        "overload",
        max_in_flight=limit,
        load_concurrency=5 * limit,
        seconds=seconds,
        requests=len(burst),
        by_status={str(status): count for status, count in sorted(statuses.items())},
        admitted_rps=round(len(admitted) / seconds),
        admitted_p50_ms=round(percentile(admitted, 0.5) * 1000, 1),
        admitted_p99_ms=round(percentile(admitted, 0.99) * 1000, 1),
        below_limit_p99_ms=round(base_p99 * 1000, 1),
        admitted_p99_first_half_ms=round(halves[0] * 1000, 1),
        admitted_p99_second_half_ms=round(halves[1] * 1000, 1),
        shed_p50_ms=round(percentile(shed, 0.5) * 1000, 1),
        shed_p99_ms=round(percentile(shed, 0.99) * 1000, 1),
        rss_before_mb=round(rss_before / 2**20, 1),
        rss_peak_mb=round(sampler.peak / 2**20, 1),
        requests_after_burst_200=sum(response.status_code == 200 for response in after),
        pinned=PINNED,
    )
    assert served.process.poll() is None
    assert set(statuses) <= {200, 503}, statuses
    assert admitted, "nothing was admitted"
    assert shed, "nothing was shed: the load did not exceed the limit"
    # A refusal is answered in milliseconds: nothing but the admission check runs for it. One core
    # both serves and refuses, so tails stretch; but in fractions of a second, not the seconds a
    # queue would add, and no worse at the end of the burst than at its start.
    assert percentile(shed, 0.5) < 0.05
    assert percentile(shed, 0.99) < 0.5
    assert percentile(admitted, 0.99) < 0.5
    assert halves[1] < 2 * halves[0] + 0.05
    assert sampler.peak - rss_before < 64 * 2**20
    assert [response.status_code for response in after] == [200] * 200
    assert ready == 200
