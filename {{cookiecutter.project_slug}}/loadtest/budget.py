"""`budget.toml` as typed values, and the budget check: one clear line for each item missed."""

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .knee import Verdict


@dataclass(frozen=True)
class ScenarioBudget:
    min_rps: float
    max_p99_ms: float
    max_error_rate: float
    serving_fraction: float


@dataclass(frozen=True)
class Sweep:
    concurrency: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    step_seconds: float = 5.0
    warmup_seconds: float = 2.0
    seed_rows: int = 100_000


@dataclass(frozen=True)
class RateSearch:
    """[search]: the open-loop rate search for the SLO capacity (loadtest/search.py)."""

    step_seconds: float = 5.0
    connections: int = 32
    start_fraction: float = 0.6
    growth: float = 1.25
    precision: float = 0.05
    repeats: int = 3


@dataclass(frozen=True)
class CapacityAssumptions:
    scenario: str = "mixed"
    think_time_s: float = 5.0
    session_minutes: float = 10.0
    peak_hour_share: float = 0.15


@dataclass(frozen=True)
class Budget:
    scenarios: dict[str, ScenarioBudget]
    sweep: Sweep = field(default_factory=Sweep)
    search: RateSearch = field(default_factory=RateSearch)
    capacity: CapacityAssumptions = field(default_factory=CapacityAssumptions)


def parse(document: dict[str, Any]) -> Budget:
    defaults = {"serving_fraction": 0.7, "max_p99_ms": 50.0, "max_error_rate": 0.0}
    defaults |= document.get("defaults", {})
    scenarios = {
        name: ScenarioBudget(**(defaults | table)) for name, table in document["scenarios"].items()
    }
    for name, item in scenarios.items():
        if not 0 < item.serving_fraction <= 1 or not 0 <= item.max_error_rate <= 1:
            raise ValueError(f"{name}: serving_fraction must be in (0, 1], max_error_rate in [0, 1]")
    sweep = dict(document.get("sweep", {}))
    if "concurrency" in sweep:
        sweep["concurrency"] = tuple(sorted(int(value) for value in sweep["concurrency"]))
    return Budget(
        scenarios=scenarios,
        sweep=Sweep(**sweep),
        search=RateSearch(**document.get("search", {})),
        capacity=CapacityAssumptions(**document.get("capacity", {})),
    )


def load(path: Path) -> Budget:
    with path.open("rb") as file:
        return parse(tomllib.load(file))


@dataclass(frozen=True)
class Outcome:
    """What the budget needs to know about one scenario's run."""

    verdict: Verdict  # of the closed-loop sweep: client-bound means the client set the ceiling
    slo_rps: float | None  # the SLO capacity; None when no rate met the p99 and error budget
    error_rate: float  # over the sweep up to the knee and the repeats at the SLO capacity
    client_bound: bool = False  # the search's client was saturated while the server was not


def check(name: str, budget: ScenarioBudget, outcome: Outcome) -> list[str]:
    """A line per budget item missed; empty when the scenario is within budget."""
    if outcome.verdict is Verdict.CLIENT_BOUND or outcome.client_bound:
        return [
            f"MISS {name}: client-bound: the load generator, not the service, set the ceiling;"
            " no capacity can be claimed (give the client more cores or use --url from another host)"
        ]
    misses = []
    slo = f"p99 <= {budget.max_p99_ms:g} ms, errors <= {budget.max_error_rate:.2%}"
    if outcome.slo_rps is None:
        misses.append(f"MISS {name}: no arrival rate met the SLO ({slo})")
    elif outcome.slo_rps < budget.min_rps:
        misses.append(
            f"MISS {name}: SLO capacity {outcome.slo_rps:,.0f} RPS ({slo})"
            f" < budget {budget.min_rps:,.0f} RPS"
        )
    if outcome.error_rate > budget.max_error_rate:
        misses.append(
            f"MISS {name}: error rate {outcome.error_rate:.2%} > budget {budget.max_error_rate:.2%}"
        )
    return misses
