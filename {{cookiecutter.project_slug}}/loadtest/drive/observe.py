"""Everything measured around one step besides the load itself, in the step's `evidence`: the
service's suspects from its /metrics (evidence.py), its database's (database.py), the host's speed
on the server's core (host.py), and the service's CPU per request; and, when a step missed, which
of them moved against a passing one (`moved`), each in a few words."""

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import database, evidence
from .engine import Step
from .host import HostSpeed

# CPU per request counts as risen at a quarter more than the reference's; the host as slowed
# when its loop ran at under 85 % of the run's start (a frequency step or a busy sibling).
CPU_ROSE = 1.25
HOST_SLOW = 0.85


def cpu_us_per_request(step: Step) -> float | None:
    if step.server_cpu is None or not step.requests:
        return None
    return round(step.server_cpu / 100 * step.seconds / step.requests * 1e6, 1)


class Observer:
    """`observer.run(lambda: engine.run(...))`: the step with its evidence. Each source is
    optional: no /metrics (a service found at --url without it), no database (--url without
    DATABASE_URL), no core to pin to."""

    def __init__(
        self, metrics_url: str | None, database_url: str | None, server_core: int | None
    ) -> None:
        self.metrics_url = metrics_url
        self.database_url = database_url
        self.host = HostSpeed(server_core)

    def run(self, step: Callable[[], Step]) -> Step:
        before = evidence.scrape(self.metrics_url) if self.metrics_url else None
        if self.database_url:
            with database.Sampler(self.database_url) as sampled:
                measured = step()
            db = sampled.result
        else:
            measured, db = step(), None
        seen: dict[str, Any] = {}
        if before is not None and self.metrics_url:
            seen = evidence.between(before, evidence.scrape(self.metrics_url), measured.seconds)
        seen |= {
            "stolen_pct": measured.stolen,
            "stolen_elsewhere_pct": measured.stolen_elsewhere,
            "cpu_us_per_request": cpu_us_per_request(measured),
            **self.host.measure(),
            "db": db,
        }
        return replace(measured, evidence=seen)


def moved(now: dict[str, Any], baseline: dict[str, Any] | None) -> list[str]:
    """The service's suspects that moved (evidence.moved), then, when the pool wait moved, what
    the database did over the step, and when CPU per request rose, whether the host or the
    service slowed."""
    found = evidence.moved(now, baseline) if "loop_lag_max_ms" in now else []
    base = baseline or {}
    if any(item.startswith("pool wait") for item in found):
        found.append(database.describe(now.get("db")))
    cost, then = now.get("cpu_us_per_request"), base.get("cpu_us_per_request")
    if cost and then and cost > CPU_ROSE * then:
        speed = now.get("host_speed") or 1.0
        rise = f"CPU/request {then:g} -> {cost:g} µs"
        if speed < HOST_SLOW:
            found.append(f"host slowed: {rise}, its loop at {speed:.0%} of its best")
        else:
            found.append(f"service slowed: {rise} at full host speed ({speed:.0%})")
    return found
