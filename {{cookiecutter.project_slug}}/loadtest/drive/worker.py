"""A client process of the load engine: one step's share of the load, in its own event loop.

Open loop: requests are *scheduled* at a fixed rate and each latency is measured from its scheduled
start, so a stalled server cannot slow the client down and hide its own queue (coordinated
omission). A request that finds no idle connection opens one; the wait counts in its latency.
"""

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection

from ..plan import Mix
from .http import Op, build_mix, exchange

Connection_ = tuple[asyncio.StreamReader, asyncio.StreamWriter]
IO_ERRORS = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError)


@dataclass(frozen=True)
class Job:
    mix: Mix
    start_at: float  # wall clock (time.time)
    duration: float
    connections: int = 1  # closed loop: the concurrency; open loop: the connections to use
    rate: float = 0.0  # open loop (requests per second) when > 0, else closed loop
    seed: int = 0


@dataclass(frozen=True)
class Part:
    latencies_ms: list[float]  # every response, whatever its status
    errors: int  # unexpected statuses and requests that got no response
    unanswered: int  # requests that got no response (not in latencies_ms)


class _Run:
    """One worker's share of a step, inside its event loop."""

    def __init__(self, host: str, port: int, op: Op, job: Job) -> None:
        self.host, self.port, self.op, self.job = host, port, op, job
        self.rng = random.Random(job.seed)
        self.latencies: list[float] = []
        self.errors = self.unanswered = 0
        offset = job.start_at - time.time()
        self.start = time.perf_counter() + offset
        self.end = self.start + job.duration
        # Closed loop: the window's throughput. Open loop: every scheduled request counts.
        self.record_until = math.inf if job.rate else self.end

    async def _connect(self) -> Connection_:
        return await asyncio.open_connection(self.host, self.port)

    async def _one(self, conn: Connection_ | None, started: float) -> Connection_ | None:
        """One request on `conn` (or a new connection); the connection to reuse, if any."""
        request, expected = self.op(self.rng)
        try:
            if conn is None:
                conn = await self._connect()
            status, closing = await exchange(conn[0], conn[1], request)
        except IO_ERRORS:
            self.errors += 1
            self.unanswered += 1
            if conn is not None:
                conn[1].close()
            await asyncio.sleep(0.01)  # back off: a refused connection would spin the loop
            return None
        done = time.perf_counter()
        if done <= self.record_until:
            self.latencies.append((done - started) * 1000)
            if status != expected:
                self.errors += 1
        if closing:
            conn[1].close()
            return None
        return conn

    async def _closed_connection(self) -> None:
        conn: Connection_ | None = await self._connect()
        await asyncio.sleep(max(0.0, self.start - time.perf_counter()))
        while (now := time.perf_counter()) < self.end:
            conn = await self._one(conn, now)
        if conn is not None:
            conn[1].close()

    async def closed(self) -> None:
        await asyncio.gather(*(self._closed_connection() for _ in range(self.job.connections)))

    async def open(self) -> None:
        """Requests at fixed intervals over `connections` keep-alive connections, like a load
        balancer's upstream pool; a request waiting for a free one waits from its scheduled start."""
        pool: asyncio.Queue[Connection_ | None] = asyncio.Queue()
        for _ in range(self.job.connections):
            pool.put_nowait(await self._connect())
        tasks: set[asyncio.Task[None]] = set()

        async def scheduled(at: float) -> None:
            conn = await pool.get()
            pool.put_nowait(await self._one(conn, at))

        interval = 1 / self.job.rate
        for index in range(math.ceil(self.job.duration * self.job.rate)):
            at = self.start + index * interval
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(scheduled(at))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.wait(set(tasks), timeout=max(1.0, self.job.duration))
        late = sum(1 for task in tasks if not task.done())  # never answered: a failure
        self.errors += late
        self.unanswered += late
        for task in list(tasks):
            task.cancel()
        while not pool.empty():
            if (conn := pool.get_nowait()) is not None:
                conn[1].close()


def serve_jobs(
    channel: Connection,
    host: str,
    port: int,
    ids: Mapping[str, Sequence[int]],
    headers: Mapping[str, str],
) -> None:
    """A client process: run each job received and send back its raw measurements."""
    with contextlib.suppress(ImportError):  # uvloop: a dependency of the service, not on Windows
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    channel.send("ready")
    while (job := channel.recv()) is not None:
        run = _Run(host, port, build_mix(job.mix, ids, headers), job)
        asyncio.run(run.open() if job.rate else run.closed())
        channel.send(Part(run.latencies, run.errors, run.unanswered))
