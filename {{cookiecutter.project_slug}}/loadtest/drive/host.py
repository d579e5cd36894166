"""The host's speed on the server's core: the time of a fixed CPU loop, run there just after each
step. Steal time is one way a host slows; a busy hyperthread sibling, a lower clock or a
noisy neighbour's cache are others, and none of them shows in the service's own CPU figure.
`speed` = the fastest loop of the run so far / this loop: 1.0 at full speed, 0.7 when the same
work took 1.4 times as long."""

import contextlib
import os
import time
from collections.abc import Iterator

LOOP = 200_000  # about 5 ms of pure Python: short beside a step, long beside a timer's grain
TRIES = 3  # the fastest of three: a preemption in one does not count as a slow host


def _loop() -> float:
    started = time.perf_counter()
    total = 0
    for value in range(LOOP):
        total += value * value
    elapsed = time.perf_counter() - started
    assert total > 0
    return elapsed


@contextlib.contextmanager
def _on(core: int | None) -> Iterator[None]:
    """This thread on `core` for the block (None: where it runs already)."""
    if core is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {core})
    except OSError:  # a core this process may not use: measured where it runs
        yield
        return
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def loop_ms(core: int | None, tries: int = TRIES) -> float:
    with _on(core):
        return round(min(_loop() for _ in range(tries)) * 1000, 3)


class HostSpeed:
    """The loop's time on `core` at the run's start (the fastest of several), and each step's."""

    def __init__(self, core: int | None) -> None:
        self.core = core
        self.baseline_ms = loop_ms(core, tries=3 * TRIES)

    def measure(self) -> dict[str, float]:
        now = loop_ms(self.core)
        # Against the fastest loop of the run so far: a start on a busy host is no full speed.
        self.baseline_ms = min(self.baseline_ms, now)
        return {"loop_ms": now, "host_speed": round(self.baseline_ms / now, 3) if now else 0.0}
