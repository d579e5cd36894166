"""The same scenario through wrk, back to back with this engine: the engine's own calibration."""

import statistics
from collections.abc import Mapping
from typing import Any

from ..plan import SCENARIOS
from . import wrk
from .engine import Engine

AGREEMENT = 0.15
KIND = "by_id"  # the scenario checked: the first by-id scenario run


def whole_seconds(seconds: float) -> int:
    """wrk takes whole seconds; the engine runs for the same number."""
    return max(1, round(seconds))


def cross_check(
    engine: Engine,
    name: str,
    url: str,
    ids: list[int],
    concurrency: int,
    step_seconds: float,
    threads: int,
    headers: Mapping[str, str],
) -> dict[str, Any]:
    """This engine and wrk alternately (engine, wrk, engine, wrk, engine) on by-id scenario `name` at
    `concurrency` (the knee), within a minute or so; medians compared, so that one noisy run cannot
    decide. The ids must be contiguous: wrk draws them from their range."""
    mix = SCENARIOS[name]
    seconds = whole_seconds(step_seconds)
    lua = wrk.script(mix, low=min(ids), high=max(ids))
    engine_runs: list[float] = []
    wrk_runs: list[dict[str, float]] = []
    for turn in range(5):
        if turn % 2 == 0:
            engine_runs.append(engine.run(mix, concurrency=concurrency, duration=seconds).rps)
        else:
            wrk_runs.append(
                wrk.run(
                    url,
                    lua,
                    connections=concurrency,
                    seconds=seconds,
                    threads=threads,
                    headers=headers,
                )
            )
    engine_rps = statistics.median(engine_runs)
    wrk_rps = statistics.median(run["rps"] for run in wrk_runs)
    ratio = engine_rps / wrk_rps if wrk_rps else 0.0
    return {
        "scenario": name,
        "concurrency": concurrency,
        "seconds": seconds,
        "engine_rps": round(engine_rps, 1),
        "engine_runs_rps": engine_runs,
        "wrk_rps": round(wrk_rps, 1),
        "wrk_runs_rps": [round(run["rps"], 1) for run in wrk_runs],
        "wrk_errors": sum(run["errors"] for run in wrk_runs),
        "ratio": round(ratio, 4),
        "agree": abs(ratio - 1) <= AGREEMENT,
    }
