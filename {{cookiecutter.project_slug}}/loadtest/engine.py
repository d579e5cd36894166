"""The load engine: several client processes, a closed loop or an open (fixed-rate) loop each.

One Python process tops out near the service's own speed, so the load is spread over processes
(spawned once, reused for every step) and each measures with a perf_counter of its own. The
coordinator starts every step at an agreed wall-clock instant and samples the CPU time of the
client processes and of the server (psutil) over exactly the step's window.

Open loop: requests are *scheduled* at a fixed rate and each latency is measured from its scheduled
start, so a stalled server cannot slow the client down and hide its own queue (coordinated
omission). A request that finds no idle connection opens one; the wait counts in its latency.
"""

import asyncio
import contextlib
import math
import multiprocessing
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Self

import numpy as np
import psutil

from .http import Op, build_mix, exchange

START_DELAY_S = 0.5  # time for every worker to receive its job and connect before the start
Connection_ = tuple[asyncio.StreamReader, asyncio.StreamWriter]
IO_ERRORS = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError)


@dataclass(frozen=True)
class Job:
    mix: tuple[tuple[str, int], ...]
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


@dataclass(frozen=True)
class Step:
    """One measured step: closed loop (concurrency) or open loop (rate)."""

    concurrency: int | None
    rate: float | None
    seconds: float
    requests: int
    errors: int
    rps: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    client_cpu: float  # percent of one core, all client processes together
    server_cpu: float | None  # percent of one core; None when the server's process is unknown

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 1.0


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

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.host, self.port)

    async def _one(
        self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None, started: float
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
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
        conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = await self._connect()
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


def _serve_jobs(channel: Connection, host: str, port: int, prefix: str, ids: Sequence[int]) -> None:
    """A client process: run each job received and send back its raw measurements."""
    with contextlib.suppress(ImportError):  # uvloop: a dependency of the service, not on Windows
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    channel.send("ready")
    while (job := channel.recv()) is not None:
        run = _Run(host, port, build_mix(job.mix, prefix, ids), job)
        asyncio.run(run.open() if job.rate else run.closed())
        channel.send(Part(run.latencies, run.errors, run.unanswered))


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


class Engine:
    """`processes` client processes against http://host:port; use as a context manager."""

    def __init__(
        self,
        base_url: str,
        *,
        prefix: str,
        ids: Sequence[int],
        processes: int,
        server_pid: int | None = None,
    ) -> None:
        address = base_url.removeprefix("http://").rstrip("/")
        host, _, port = address.partition(":")
        context = multiprocessing.get_context("spawn")  # no fork of a process that has threads
        self._channels: list[Connection] = []
        self._processes = []
        for _ in range(processes):
            mine, theirs = context.Pipe()
            process = context.Process(
                target=_serve_jobs,
                args=(theirs, host, int(port or 80), prefix, list(ids)),
                daemon=True,
            )
            process.start()
            self._channels.append(mine)
            self._processes.append(process)
        for channel in self._channels:  # spawned interpreters import for a while: wait for them
            if not channel.poll(60) or channel.recv() != "ready":
                raise RuntimeError("a client process did not start")
        self._clients = [psutil.Process(process.pid) for process in self._processes]
        self._server = psutil.Process(server_pid) if server_pid else None

    @property
    def processes(self) -> int:
        return len(self._processes)

    def close(self) -> None:
        for channel in self._channels:
            with contextlib.suppress(OSError):
                channel.send(None)
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _cpu(self) -> tuple[float, float | None]:
        client = sum(_cpu_seconds(process) for process in self._clients)
        server = None
        if self._server is not None:
            with contextlib.suppress(psutil.Error):
                server = _cpu_seconds(self._server)
        return client, server

    def run(
        self,
        mix: tuple[tuple[str, int], ...],
        *,
        duration: float,
        concurrency: int = 0,
        rate: float = 0.0,
        connections: int = 0,
    ) -> Step:
        """One step: `concurrency` connections in a closed loop, or `rate` requests/s open loop
        over `connections` connections (default: one per request in flight at 20 ms each)."""
        if (concurrency > 0) == (rate > 0):
            raise ValueError("give either concurrency or rate")
        if rate:
            connections = max(connections or math.ceil(rate * 0.02), self.processes)
        count = min(self.processes, concurrency or connections)
        start_at = time.time() + START_DELAY_S
        for index, channel in enumerate(self._channels[:count]):
            total = concurrency or connections
            share = total // count + (1 if index < total % count else 0)
            seed = int.from_bytes(os.urandom(4), "big")
            channel.send(Job(mix, start_at, duration, share, rate / count if rate else 0.0, seed))
        time.sleep(max(0.0, start_at - time.time()))  # the measurement window opens now
        client_before, server_before = self._cpu()
        time.sleep(duration)
        client_after, server_after = self._cpu()
        parts: list[Part] = [channel.recv() for channel in self._channels[:count]]
        latencies = np.array([value for part in parts for value in part.latencies_ms])
        errors = sum(part.errors for part in parts)
        p50, p95, p99, top = (
            np.percentile(latencies, [50, 95, 99, 100]) if latencies.size else [math.nan] * 4
        )
        server_cpu = None
        if server_before is not None and server_after is not None:
            server_cpu = round((server_after - server_before) / duration * 100, 1)
        return Step(
            concurrency=concurrency or None,
            rate=rate or None,
            seconds=duration,
            requests=int(latencies.size) + sum(part.unanswered for part in parts),
            errors=errors,
            rps=round(latencies.size / duration, 1),
            p50_ms=round(float(p50), 2),
            p95_ms=round(float(p95), 2),
            p99_ms=round(float(p99), 2),
            max_ms=round(float(top), 2),
            client_cpu=round((client_after - client_before) / duration * 100, 1),
            server_cpu=server_cpu,
        )
