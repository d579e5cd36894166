"""Several load-test runs side by side: how far each scenario's SLO capacity moved between them, and
its p99 at the serving rate, over every run and over the runs whose host ran at full speed.

One run on a shared machine says little: the hypervisor, a busy sibling core or a neighbour's
cache slow the server's core for seconds at a time, and a capacity found in a slow spell is a
third lower. Each step records the host's speed on the server's core (drive/host.py: the fastest
fixed loop of the run over this step's); a run "at full speed" is one whose SLO repeats and
serving-rate runs all ran at `FULL_SPEED` or better. `python -m loadtest runs` prints this table
for the latest three results (or the JSON files named); the figures are only ever the runs'.
"""

import json
import statistics
from pathlib import Path
from typing import Any

FULL_SPEED = 0.9  # host speed (1.0: the run's fastest loop) that counts as full speed

HEAD = (
    "| scenario | SLO capacity RPS, run by run | spread | p99 at the serving rate ms, run by run |"
    " median p99 ms | at full speed: runs, spread, median p99 ms |"
)
RULE = "|---|---:|---:|---:|---:|---|"


def _speeds(scenario: dict[str, Any]) -> list[float]:
    steps = [*scenario["search"].get("repeats", []), *scenario["serving"].get("runs", [])]
    return [
        step["evidence"]["host_speed"]
        for step in steps
        if (step.get("evidence") or {}).get("host_speed") is not None
    ]


def at_full_speed(scenario: dict[str, Any]) -> bool:
    """Whether every repeat and serving-rate run of this scenario ran at full speed."""
    speeds = _speeds(scenario)
    return bool(speeds) and min(speeds) >= FULL_SPEED


def spread(capacities: list[float]) -> float | None:
    """(highest - lowest) / median of the capacities; None for fewer than two."""
    if len(capacities) < 2:
        return None
    return (max(capacities) - min(capacities)) / statistics.median(capacities)


def _serving_p99(scenario: dict[str, Any]) -> float | None:
    value = (scenario.get("serving") or {}).get("p99_median_ms")
    return float(value) if value is not None else None


def _figures(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    scenarios = [run["scenarios"][name] for run in runs if name in run["scenarios"]]
    capacities = [float(scenario["search"]["slo_rps"]) for scenario in scenarios]
    p99s = [p99 for scenario in scenarios if (p99 := _serving_p99(scenario)) is not None]
    full = [scenario for scenario in scenarios if at_full_speed(scenario)]
    full_p99s = [p99 for scenario in full if (p99 := _serving_p99(scenario)) is not None]
    return {
        "capacities": capacities,
        "spread": spread(capacities),
        "p99s": p99s,
        "p99_median": statistics.median(p99s) if p99s else None,
        "full_runs": len(full),
        "full_spread": spread([float(scenario["search"]["slo_rps"]) for scenario in full]),
        "full_p99_median": statistics.median(full_p99s) if full_p99s else None,
    }


def _number(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def table(runs: list[dict[str, Any]]) -> str:
    """The Markdown table of these runs, one row per scenario of the first run."""
    lines = [HEAD, RULE]
    for name in runs[0]["scenarios"]:
        figures = _figures(name, runs)
        lines.append(
            f"| {name} | {' / '.join(f'{rps:,.0f}' for rps in figures['capacities'])}"
            f" | {_number(figures['spread'], '.0%')}"
            f" | {' / '.join(f'{p99:.1f}' for p99 in figures['p99s'])}"
            f" | {_number(figures['p99_median'], '.1f')}"
            f" | {figures['full_runs']} of {len(runs)}, {_number(figures['full_spread'], '.0%')},"
            f" {_number(figures['full_p99_median'], '.1f')} |"
        )
    return "\n".join(lines)


def describe(paths: list[Path]) -> str:
    runs = [json.loads(path.read_text()) for path in paths]
    named = ", ".join(path.name for path in paths)
    return (
        f"Runs: {named}. Spread: (highest - lowest) / median of the SLO capacities;"
        f" full speed: every repeat and serving-rate run at host speed >= {FULL_SPEED:.0%}.\n\n"
        + table(runs)
    )
