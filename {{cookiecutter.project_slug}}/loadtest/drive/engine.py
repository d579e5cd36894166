"""The load engine: several client processes, a closed loop or an open (fixed-rate) loop each.

One Python process tops out near the service's own speed, so the load is spread over processes
(spawned once, reused for every step; loadtest/drive/worker.py) and each measures with a perf_counter of
its own. The coordinator starts every step at an agreed wall-clock instant and samples the CPU
time of the client processes and of the server (psutil), and the server's peak RSS (memory.py),
over exactly the step's window.
"""

import contextlib
import math
import multiprocessing
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any, Self

import numpy as np
import psutil

from ..plan import Mix
from .memory import PeakMemory
from .worker import Job, Part, serve_jobs

START_DELAY_S = 0.5  # time for every worker to receive its job and connect before the start


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
    # The server's peak resident memory over the step, MiB (drive/memory.py): what `make capacity`
    # sizes the pod's memory from; None when the server's process or its kernel's figure is unknown.
    server_peak_rss_mib: float | None = None
    # Percent of the server's core's time the hypervisor gave to other machines over the step
    # (Linux's steal time); None where the kernel does not say. The server cannot run then, and
    # its CPU figure does not show it: a step with much of it measured the machine. With the
    # server pinned, `stolen_elsewhere` is the same of the other cores (PostgreSQL's and the
    # client's when `make loadtest` started them); unpinned, `stolen` is every core's.
    stolen: float | None = None
    stolen_elsewhere: float | None = None
    # The service's own suspects over the step (loadtest/drive/evidence.py), when its /metrics is known.
    evidence: dict[str, Any] | None = None

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 1.0


def _lists(ids: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    return {resource: list(seeded) for resource, seeded in ids.items()}


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


class Engine:
    """`processes` client processes against http://host:port, every request carrying `headers`
    (handed to each process over its pipe, never through a file), `ids` the seeded ids of each
    resource by its plural; use as a context manager."""

    def __init__(
        self,
        base_url: str,
        *,
        ids: Mapping[str, Sequence[int]],
        processes: int,
        server_pid: int | None = None,
        server_core: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        address = base_url.removeprefix("http://").rstrip("/")
        host, _, port = address.partition(":")
        context = multiprocessing.get_context("spawn")  # no fork of a process that has threads
        self._channels: list[Connection] = []
        self._processes = []
        for _ in range(processes):
            mine, theirs = context.Pipe()
            process = context.Process(
                target=serve_jobs,
                args=(theirs, host, int(port or 80), _lists(ids), dict(headers or {})),
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
        self._memory = PeakMemory(server_pid) if server_pid else None
        self._server_core = server_core  # None: the machine's cores together

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

    def _core_times(self) -> tuple[Any, Any | None]:
        """(the server's core's times, the other cores' summed); (every core's, None) unpinned."""
        if self._server_core is None:
            return psutil.cpu_times(), None
        cores = psutil.cpu_times(percpu=True)
        others = [times for core, times in enumerate(cores) if core != self._server_core]
        summed = type(cores[0])._make(map(sum, zip(*others, strict=True))) if others else None
        return cores[self._server_core], summed

    def _cpu(self) -> tuple[float, float | None]:
        client = sum(_cpu_seconds(process) for process in self._clients)
        server = None
        if self._server is not None:
            with contextlib.suppress(psutil.Error):
                server = _cpu_seconds(self._server)
        return client, server

    def run(
        self,
        mix: Mix,
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
        if self._memory is not None:
            self._memory.reset()
        client_before, server_before = self._cpu()
        core_before = self._core_times()
        time.sleep(duration)
        client_after, server_after = self._cpu()
        core_after = self._core_times()
        peak_rss = self._memory.peak_mib() if self._memory is not None else None
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
            server_peak_rss_mib=peak_rss,
            stolen=_stolen(core_before[0], core_after[0]),
            stolen_elsewhere=_stolen(core_before[1], core_after[1]),
        )


def _stolen(before: Any, after: Any) -> float | None:
    """Percent of a core's time (or the cores') stolen between two psutil.cpu_times readings."""
    if before is None or after is None or not hasattr(before, "steal"):
        return None
    # Guest time is counted in user time already (/proc/stat).
    counted = [name for name in before._fields if name not in ("guest", "guest_nice")]
    elapsed: float = sum(getattr(after, name) - getattr(before, name) for name in counted)
    if elapsed <= 0:
        return None
    stolen: float = after.steal - before.steal
    return round(stolen / elapsed * 100, 1)
