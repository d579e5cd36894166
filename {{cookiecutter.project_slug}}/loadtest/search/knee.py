"""The knee of a closed-loop sweep, and whether the client or the server set it.

THE KNEE RULE. Steps are sorted by concurrency. The knee is the first step whose successor
(twice the concurrency, typically) adds less than 10 % throughput, among the steps that already
reach 80 % of the best throughput of the sweep (so an early dip from noise is not taken for the
knee). Beyond the knee, more in-flight requests only queue: throughput is flat and latency grows
with concurrency (Little's law: latency = concurrency / throughput), which is where p99 climbs.
If no step qualifies, the sweep never saturated the service and there is no knee ("not-reached").
THE p99 GUARD. Only steps before p99 starts climbing are candidates: the climb starts at the first
step whose p99 exceeds max(4 x the sweep's lowest p99, 10 ms). The last step before the climb is
the knee if it is near the peak of the candidates, even when a noisy machine lets throughput rise
further while latency explodes: past that point extra concurrency is paid for in queueing.

THE CLIENT RULE. The client's capacity is measured first, against /healthz: the requests per
second it would sustain on the cores it has, extrapolated from the CPU it spent per request
(capacity = probe RPS x cores / client CPU share). A knee is "client-bound", and no knee is claimed,
when the load generator was saturated (the knee's throughput reached 80 % of that capacity, or its
processes used 90 % of their cores) while the server was not (under 85 % of one core). A
client-bound run reports "client-bound" instead of a wrong, too-low knee.
"""

import enum
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

MIN_GAIN = 0.10
NEAR_PEAK = 0.80
CLIENT_SHARE_OF_CAPACITY = 0.80
CLIENT_CPU_SATURATED = 0.90
SERVER_CPU_SATURATED = 85.0
CLIMB_FACTOR = 4.0
CLIMB_FLOOR_MS = 10.0


class Verdict(enum.StrEnum):
    KNEE = "knee"
    NOT_REACHED = "not-reached"
    CLIENT_BOUND = "client-bound"


@dataclass(frozen=True)
class Point:
    """One closed-loop step, as much as the rules need."""

    concurrency: int
    rps: float
    client_cpu: float | None = None  # percent of one core, summed over the client's processes
    server_cpu: float | None = None  # percent of one core
    p99_ms: float | None = None


def _first_climbing_step(points: Sequence[Point]) -> int:
    """Index of the first step whose p99 has started climbing, len(points) when none has."""
    known = [point.p99_ms for point in points if point.p99_ms is not None]
    if not known:
        return len(points)
    limit = max(CLIMB_FACTOR * min(known), CLIMB_FLOOR_MS)
    return next(
        (index for index, point in enumerate(points) if (point.p99_ms or 0.0) > limit), len(points)
    )


def find_knee(points: Sequence[Point]) -> int | None:
    """Index of the knee in `points` (sorted by concurrency), None when not reached."""
    if any(a.concurrency >= b.concurrency for a, b in itertools.pairwise(points)):
        raise ValueError("points must be sorted by concurrency")
    if not points:
        return None
    climb = _first_climbing_step(points) or len(points)  # a slow first step guards nothing
    peak = max(point.rps for point in points[:climb])
    for index, (point, following) in enumerate(itertools.pairwise(points[: climb + 1])):
        latency_climbs_next = index + 1 == climb
        flat_next = following.rps < (1 + MIN_GAIN) * point.rps
        if point.rps >= NEAR_PEAK * peak and (flat_next or latency_climbs_next):
            return index
    return None


def client_capacity(probe_rps: float, probe_client_cpu: float, client_cores: int) -> float:
    """Requests per second the client could send on `client_cores` cores, from a probe step that
    used `probe_client_cpu` percent of one core to send `probe_rps`."""
    return probe_rps * 100 * client_cores / max(probe_client_cpu, 1.0)


def is_client_bound(knee: Point, client_capacity_rps: float, client_cores: int) -> bool:
    client_saturated = knee.rps >= CLIENT_SHARE_OF_CAPACITY * client_capacity_rps or (
        knee.client_cpu is not None and knee.client_cpu >= CLIENT_CPU_SATURATED * 100 * client_cores
    )
    server_saturated = knee.server_cpu is not None and knee.server_cpu >= SERVER_CPU_SATURATED
    return client_saturated and not server_saturated


def judge(
    points: Sequence[Point], client_capacity_rps: float, client_cores: int
) -> tuple[Verdict, int]:
    """The verdict and the index of the step the rest of the run is based on: the knee, or the
    best step when the sweep did not saturate the service."""
    index = find_knee(points)
    if index is None:
        best = max(range(len(points)), key=lambda position: points[position].rps)
        candidate, verdict = best, Verdict.NOT_REACHED
    else:
        candidate, verdict = index, Verdict.KNEE
    if is_client_bound(points[candidate], client_capacity_rps, client_cores):
        return Verdict.CLIENT_BOUND, candidate
    return verdict, candidate
