"""Pod sizing from a measured SLO capacity: what to set, and how many users that serves.

The SLO capacity (the highest open-loop rate served within the p99 and error budget) sets the
serving load, the HPA target, the admission limit and the users; the closed-loop knee sets only
the pool ceiling (in-flight requests beyond it only queue); the server's peak RSS over the run
sets the pod's memory (search/memory.py).

Every number here is arithmetic on the measurement; the assumptions (think time, session length,
peak-hour share, headroom) are stated in budget.toml [capacity] and printed with the result.
"""

import math
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..plan import Budget, CapacityAssumptions
from .knee import Verdict
from .memory import Memory, size_memory


@dataclass(frozen=True)
class Capacity:
    scenario: str
    slo_rps: float
    max_p99_ms: float
    knee_rps: float
    knee_concurrency: int
    serving_fraction: float
    serve_at_rps: float
    max_in_flight: int
    pool_min_size: int
    pool_max_size: int
    target_rps_per_pod: int
    concurrent_users: int
    daily_active_users: int
    assumptions: dict[str, float | str]
    # None when the results hold no peak RSS (a server found at --url, a kernel without the figure,
    # results older than the measurement): the chart's default memory then holds.
    memory: Memory | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def size(
    *,
    scenario: str,
    slo_rps: float,
    knee_rps: float,
    knee_concurrency: int,
    serving_fraction: float,
    serving_p50_ms: float,
    max_p99_ms: float,
    assumptions: CapacityAssumptions,
    peak_rss_mib: float | None = None,
) -> Capacity:
    serve_at = slo_rps * serving_fraction
    # Admission: a request admitted behind N others waits about N / capacity seconds; past
    # capacity x the p99 budget it would miss the budget anyway, so it is refused at once instead.
    # Never below the knee concurrency, where the pod reaches its best throughput.
    max_in_flight = max(knee_concurrency + 1, math.ceil(slo_rps * max_p99_ms / 1000))
    # No BACKLOG here: the listen queue holds connections not yet accepted, not requests. The
    # loop accepts them within microseconds, and MAX_IN_FLIGHT turns excess requests into fast
    # 503s; a short queue would only drop the SYNs of a burst of new connections (a client
    # retrying after a second), so the chart's large default stays.
    # Each in-flight request holds at most one connection: the knee concurrency is the most the
    # pool can usefully have. Warm connections = those busy at the serving load (Little's law).
    pool_max = max(2, knee_concurrency)
    pool_min = min(pool_max, max(1, math.ceil(serve_at * serving_p50_ms / 1000)))
    # Little's law for users: N = X * (Z + R), one request per user action.
    users = serve_at * (assumptions.think_time_s + serving_p50_ms / 1000)
    per_peak_hour = users * 60 / assumptions.session_minutes
    return Capacity(
        scenario=scenario,
        slo_rps=round(slo_rps, 1),
        max_p99_ms=max_p99_ms,
        knee_rps=round(knee_rps, 1),
        knee_concurrency=knee_concurrency,
        serving_fraction=serving_fraction,
        serve_at_rps=round(serve_at, 1),
        max_in_flight=max_in_flight,
        pool_min_size=pool_min,
        pool_max_size=pool_max,
        target_rps_per_pod=math.floor(serve_at),
        concurrent_users=math.floor(users),
        daily_active_users=math.floor(per_peak_hour / assumptions.peak_hour_share),
        assumptions={
            "think_time_s": assumptions.think_time_s,
            "session_minutes": assumptions.session_minutes,
            "peak_hour_share": assumptions.peak_hour_share,
            "memory_headroom": assumptions.memory_headroom,
        },
        memory=(
            size_memory(peak_rss_mib, headroom=assumptions.memory_headroom)
            if peak_rss_mib is not None
            else None
        ),
    )


NOT_SIZED = "not sized: the results hold no peak RSS of the server (the chart's default stays)"


def describe(capacity: Capacity) -> str:
    c = capacity
    a = c.assumptions
    return "\n".join(
        [
            f"Capacity of one pod, from the {c.scenario} SLO capacity: {c.slo_rps:,.0f} RPS with p99"
            f" <= {c.max_p99_ms:g} ms (closed-loop knee {c.knee_rps:,.0f} RPS at {c.knee_concurrency}"
            " concurrent):",
            f"  serve at            {c.serve_at_rps:,.0f} RPS ({c.serving_fraction:.0%} of the SLO capacity)",
            f"  MAX_IN_FLIGHT       {c.max_in_flight} (SLO capacity x p99 budget)",
            f"  pool size           {c.pool_min_size}..{c.pool_max_size}",
            f"  HPA target          {c.target_rps_per_pod} RPS per pod",
            f"  concurrent users    {c.concurrent_users:,} (think time {a['think_time_s']} s)",
            f"  daily active users  {c.daily_active_users:,} (sessions of {a['session_minutes']} min,"
            f" {a['peak_hour_share']:.0%} of a day's users in the peak hour)",
            f"  memory              {c.memory.describe() if c.memory else NOT_SIZED}",
        ]
    )


def helm_values(capacity: Capacity, source: str) -> str:
    """The Helm values override, as YAML (written by hand: a few scalars need no YAML library)."""
    return "\n".join(
        [
            f"# Written by `make capacity` from {source}: measured, do not edit by hand.",
            f"# {capacity.scenario} SLO capacity {capacity.slo_rps:,.0f} RPS with p99 <="
            f" {capacity.max_p99_ms:g} ms on one core.",
            "server:",
            f"  maxInFlight: {capacity.max_in_flight}",
            "database:",
            f"  poolMinSize: {capacity.pool_min_size}",
            f"  poolMaxSize: {capacity.pool_max_size}",
            "autoscaling:",
            "  # The HPA scales on CPU until the RPS metric is on: set rpsMetric.enabled to true once",
            "  # a metrics adapter serves http_requests_per_second (docs/deploying.md).",
            "  rpsMetric:",
            "    enabled: false",
            f"  targetRPSPerPod: {capacity.target_rps_per_pod}",
            *_resources(capacity.memory),
            "",
        ]
    )


def _resources(memory: Memory | None) -> list[str]:
    """The memory alone: Helm merges it with the chart's CPU, exactly one core."""
    if memory is None:
        return []
    quantity = f"{memory.mib}Mi"
    return [
        f"# Memory by loadtest/search/memory.py: {memory.describe()}.",
        "resources:",
        "  requests:",
        f"    memory: {quantity}",
        "  limits:",
        f"    memory: {quantity}",
    ]


def write_helm_values(capacity: Capacity, source: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(helm_values(capacity, source))
    return path


def capacity_from(results: dict[str, Any], budget: Budget) -> Capacity | None:
    """Pod sizing from the capacity scenario's SLO capacity (or the first scenario with one).
    The capacity scenario is `<plural>.<operation>`, or an operation alone: the first resource's."""
    scenarios = results["scenarios"]
    # Every scenario ran on the same server, as every route runs in the pod: the run's peak.
    peak_rss_mib = max(
        (
            scenario["peak_rss_mib"]
            for scenario in scenarios.values()
            if scenario.get("peak_rss_mib")
        ),
        default=None,
    )
    wanted = budget.capacity.scenario
    named = [name for name in scenarios if wanted in (name, name.rpartition(".")[2])]
    order = [*named, *scenarios]
    for name in order:
        scenario = scenarios.get(name)
        if (
            scenario
            and scenario["verdict"] != Verdict.CLIENT_BOUND
            and scenario.get("capacity_rps", scenario["search"]["slo_rps"])
        ):
            knee = scenario["steps"][scenario["knee_index"]]
            repeats = scenario["search"]["repeats"]
            return size(
                scenario=name,
                # The capacity whose serving runs held (search/serving.py): the measured SLO
                # capacity, or a step below it when its serving rate missed.
                slo_rps=scenario.get("capacity_rps", scenario["search"]["slo_rps"]),
                knee_rps=knee["rps"],
                knee_concurrency=knee["concurrency"],
                serving_fraction=scenario["budget"]["serving_fraction"],
                serving_p50_ms=statistics.median(step["p50_ms"] for step in repeats),
                max_p99_ms=scenario["budget"]["max_p99_ms"],
                assumptions=budget.capacity,
                peak_rss_mib=peak_rss_mib,
            )
    return None
