"""`budget.toml` as typed values (the check against it is search/verdict.py).

The tables are pydantic dataclasses: a value of the wrong type, out of its range or under an
unknown key is refused when the file is read, with the key named.
"""

import dataclasses
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

_TABLE = ConfigDict(extra="forbid")
Positive = Annotated[float, Field(gt=0)]
Share = Annotated[float, Field(gt=0, le=1)]


@dataclass(frozen=True, config=_TABLE)
class ScenarioBudget:
    min_rps: Annotated[float, Field(ge=0)]
    max_p99_ms: Positive
    max_error_rate: Annotated[float, Field(ge=0, le=1)]
    serving_fraction: Share


@dataclass(frozen=True, config=_TABLE)
class Sweep:
    concurrency: tuple[Annotated[int, Field(ge=1)], ...] = (1, 2, 4, 8, 16, 32, 64, 128)
    step_seconds: Positive = 5.0
    warmup_seconds: Annotated[float, Field(ge=0)] = 2.0
    seed_rows: Annotated[int, Field(ge=0)] = 100_000


@dataclass(frozen=True, config=_TABLE)
class RateSearch:
    """[search]: the open-loop rate search for the SLO capacity (loadtest/search/slo.py)."""

    step_seconds: Positive = 5.0
    connections: Annotated[int, Field(ge=1)] = 32
    start_fraction: Positive = 0.6
    growth: Annotated[float, Field(gt=1)] = 1.25
    precision: Share = 0.05
    repeats: Annotated[int, Field(ge=1)] = 3


@dataclass(frozen=True, config=_TABLE)
class CapacityAssumptions:
    scenario: str = "mixed"
    think_time_s: Annotated[float, Field(ge=0)] = 5.0
    session_minutes: Positive = 10.0
    peak_hour_share: Share = 0.15
    memory_headroom: Annotated[float, Field(ge=1)] = 2.0


@dataclass(frozen=True, config=_TABLE)
class Budget:
    scenarios: dict[str, ScenarioBudget]  # by operation (`by_id`): the budget of every resource's
    # One resource's own budgets, by plural then operation: [resources.<plural>.<operation>].
    resources: dict[str, dict[str, ScenarioBudget]] = dataclasses.field(default_factory=dict)
    sweep: Sweep = dataclasses.field(default_factory=Sweep)
    search: RateSearch = dataclasses.field(default_factory=RateSearch)
    capacity: CapacityAssumptions = dataclasses.field(default_factory=CapacityAssumptions)

    def covers(self, scenario: str) -> bool:
        return scenario.rpartition(".")[2] in self.scenarios

    def of(self, scenario: str) -> ScenarioBudget:
        """The budget of scenario `<plural>.<operation>`: the resource's own, else the operation's."""
        resource, _, operation = scenario.rpartition(".")
        own = self.resources.get(resource, {}).get(operation)
        return own if own is not None else self.scenarios[operation]


def parse(document: dict[str, Any]) -> Budget:
    defaults = {"serving_fraction": 0.7, "max_p99_ms": 50.0, "max_error_rate": 0.0}
    defaults |= document.get("defaults", {})
    operations = document["scenarios"]
    scenarios = {name: ScenarioBudget(**(defaults | table)) for name, table in operations.items()}
    resources = {
        resource: {
            name: ScenarioBudget(**(defaults | operations.get(name, {}) | table))
            for name, table in tables.items()
        }
        for resource, tables in document.get("resources", {}).items()
    }
    sweep = dict(document.get("sweep", {}))
    if "concurrency" in sweep:
        sweep["concurrency"] = tuple(sorted(int(value) for value in sweep["concurrency"]))
    return Budget(
        scenarios=scenarios,
        resources=resources,
        sweep=Sweep(**sweep),
        search=RateSearch(**document.get("search", {})),
        capacity=CapacityAssumptions(**document.get("capacity", {})),
    )


def load(path: Path) -> Budget:
    with path.open("rb") as file:
        return parse(tomllib.load(file))
