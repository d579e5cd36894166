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
    open_loop_seconds: float = 10.0
    seed_rows: int = 100_000


@dataclass(frozen=True)
class CapacityAssumptions:
    scenario: str = "mixed"
    limit_headroom: float = 1.25
    think_time_s: float = 5.0
    session_minutes: float = 10.0
    peak_hour_share: float = 0.15


@dataclass(frozen=True)
class Budget:
    scenarios: dict[str, ScenarioBudget]
    sweep: Sweep = field(default_factory=Sweep)
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
        capacity=CapacityAssumptions(**document.get("capacity", {})),
    )


def load(path: Path) -> Budget:
    with path.open("rb") as file:
        return parse(tomllib.load(file))


@dataclass(frozen=True)
class Outcome:
    """What the budget needs to know about one scenario's run."""

    verdict: Verdict
    knee_rps: float | None
    serving_rps: float | None
    serving_p99_ms: float | None
    error_rate: float


def check(name: str, budget: ScenarioBudget, outcome: Outcome) -> list[str]:
    """A line per budget item missed; empty when the scenario is within budget."""
    if outcome.verdict is Verdict.CLIENT_BOUND:
        return [
            f"MISS {name}: client-bound: the load generator, not the service, set the ceiling;"
            " no knee can be claimed (give the client more cores or use --url from another host)"
        ]
    misses = []
    if outcome.knee_rps is None or outcome.knee_rps < budget.min_rps:
        found = "no throughput" if outcome.knee_rps is None else f"{outcome.knee_rps:,.0f} RPS"
        misses.append(f"MISS {name}: knee at {found} < budget {budget.min_rps:,.0f} RPS")
    if outcome.serving_p99_ms is None:
        misses.append(f"MISS {name}: no open-loop step at the serving load, p99 unknown")
    elif outcome.serving_p99_ms > budget.max_p99_ms:
        misses.append(
            f"MISS {name}: p99 {outcome.serving_p99_ms:.1f} ms at the serving load"
            f" ({outcome.serving_rps or 0:,.0f} RPS) > budget {budget.max_p99_ms:g} ms"
        )
    if outcome.error_rate > budget.max_error_rate:
        misses.append(
            f"MISS {name}: error rate {outcome.error_rate:.2%} > budget {budget.max_error_rate:.2%}"
        )
    return misses
